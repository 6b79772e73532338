// The fused decode forward (shaders/decode_forward_core.wgsl, bound by decode_forward.wgsl or,
// weights from the parameter atlas, decode_forward_atlas.wgsl): a small model's whole forward
// pass for one decode step (every row its own sequence) in one dispatch. The CPU-adapter decode
// backend (decode.ts) uses it, where a tiny model's step is bound by dispatch count rather than
// arithmetic. Rows' LoRA adapters apply inside it (a kernel variant per rank). Its entry point
// decode_sample also samples each row (shaders/sampling_lane_core.wgsl, the lane sampler's own
// code) and advances it, for several generation steps in one dispatch (Generator). Prefill,
// scoring, training forwards and models that do not fit take the per-op path.

import { KernelArgumentError } from "../../gpu/errors.ts";
import type { Gpu } from "../../gpu/mod.ts";
import type { BindingKind, Kernel } from "../../gpu/pipelines.ts";
import type { Recorder } from "../../gpu/recorder.ts";
import { uniformStruct } from "../../gpu/uniforms.ts";
import type { ModelConfig } from "../config.ts";
import type { BufferRange, GpuParams } from "../gpu_params.ts";
import type { ParamLayout, ParamTensor } from "../weights.ts";
import { type LoraAdapters, vec4Entry } from "../lora.ts";
import { LLAMA_LORA_MODULES as LORA_MODULES, type LoraLayout } from "../lora_layout.ts";
import { ParamAtlas } from "./param_atlas.ts";
import { ropeTable } from "../rope_table.ts";
import { laneLoopBound } from "../sampling.ts";
import type { DecodeSampleStep } from "../decode_backend.ts";

/**
 * The shader's limits (its `const`s of the same names; a test checks they agree): layers in the
 * uniform block, rows per workgroup, column groups per lane, a lane's projection accumulators
 * (rows · column groups) and weight rows (4 · column groups), head_dim / 4, query heads per kv
 * head, and a lane's attention registers (G · head_dim / 4 vec4s).
 */
export const DECODE_FORWARD_LIMITS = {
  MAXL: 32,
  MAXR: 16,
  MAXCG: 4,
  MAXT: 16,
  MAXW: 16,
  MAXD4: 16,
  MAXG: 8,
  QLEN: 32,
} as const;
const { MAXL, MAXR, MAXCG, MAXT, MAXD4, MAXG, QLEN } = DECODE_FORWARD_LIMITS;
/** Words of the shader's `Layer` struct: 16 offsets and flags, then (offA, strideA, offB, strideB) per LoRA module. */
const LAYER_WORDS = 16 + 4 * LORA_MODULES.length;
/**
 * The fused decode's uniform block (decode_forward_core.wgsl's Params): a per-step header, then
 * the layer table the host writes after it (`Layer` per layer, see uniformOffsets). Header:
 * rows, P cache positions, the RMSNorm eps and attention scale; the layer count and the vec4
 * offsets in W of the embedding, final norm and head; the vec4 distance between layers' caches;
 * C4, I4, V4 (hidden, intermediate, vocabulary / 4) and Q4 = NH·D4; rpg rows per workgroup
 * (≤ R); the LoRA adapter count and scale; decode_sample runs steps step .. step + inner − 1 of
 * `steps`; sinAt: where Rope's sines start (vec4s). The dims are uniforms, not override
 * constants, so that the loops over them stay loops: unrolled, the kernel took 40 s to compile
 * on llvmpipe.
 */
export const DecodeForwardParams = uniformStruct("decode_forward_params", "Params", [
  ["rows", "u32"],
  ["P", "u32"],
  ["eps", "f32"],
  ["scale", "f32"],
  ["layers", "u32"],
  ["embed", "u32"],
  ["finalNorm", "u32"],
  ["head", "u32"],
  ["cacheStride", "u32"],
  ["C4", "u32"],
  ["I4", "u32"],
  ["V4", "u32"],
  ["Q4", "u32"],
  ["rpg", "u32"],
  ["adapters", "u32"],
  ["loraScale", "f32"],
  ["step", "u32"],
  ["steps", "u32"],
  ["inner", "u32"],
  ["sinAt", "u32"],
], { tail: "layer: array<Layer, MAXL>" });
/** Words of the shader's Params before its layer table. */
const HEADER_WORDS = DecodeForwardParams.bytes / 4;
/**
 * Storage bindings of the forward (the adapter's maxStorageBuffersPerShaderStage must allow
 * them; SwiftShader in Chromium allows 10), and of decode_sample.
 */
const STORAGE_BINDINGS = 10;
const SAMPLE_STORAGE_BINDINGS = 12;
const FORWARD_BINDINGS: readonly BindingKind[] = [
  "uniform",
  "read-only-storage",
  "storage",
  "storage",
  "read-only-storage",
  "storage",
  "storage",
  "storage",
  "read-only-storage",
  "read-only-storage",
  "storage",
];

const variantKey = (rank4: number, sample: boolean) => `${rank4}${sample ? ":sample" : ""}`;

export interface DecodeForwardOptions {
  /**
   * The most rows (sequences) a workgroup takes, 1..16: each weight vec4 loaded serves its rows.
   * A step of N rows gives each workgroup ⌈N / cores⌉ of them (every core gets a workgroup), at
   * most this. Default 4. A kernel for up to 8 rows holds 16 accumulator vec4s a lane (with 8
   * columns): on llvmpipe's GL backend it was 7–8% faster than the 4-row kernel at 32 and 64
   * rows (a tie at 16), on its Vulkan backend 1.5× slower (tiny-llama, 32 rows, with the
   * parameter atlas: GL 0.90 against 0.97 ms a step, Vulkan 1.62–1.70 against 1.11; 8 rows of 4
   * columns: GL 1.13, Vulkan 1.29), so the default is the kernel that is good on both.
   */
  rows?: number;
  /**
   * Output columns a lane computes in each projection: 4, 8 or 16 (default 8 where it divides
   * the hidden, intermediate and kv widths, else 4), with rows × columns / 4 ≤ 16 (a lane's
   * accumulator vec4s). On llvmpipe every load costs a scalar access per lane and component, so
   * a wider tile loads each input vec4 for more columns, until the accumulators spill. Measured
   * on llvmpipe (2-core EPYC), tiny-llama, forward only: 8 columns 10-12% faster than 4 at 8 and
   * 32 rows; 16 columns (32 accumulators) 1.8× slower at 8 rows per workgroup, and 16 rows per
   * workgroup slower than 8 at any width; room for 16 accumulators rather than 64: 2-3% faster.
   */
  cols?: number;
  /**
   * The shader's name (default "decode_forward", or "decode_forward_atlas" with the atlas; the
   * kernel lab registers variants of them).
   */
  shader?: string;
  /**
   * Read the projection weights from the parameter atlas (param_atlas.ts: a texture copy of the
   * parameters) rather than their storage binding. Taken only where WGSL reads storage textures
   * (Gpu.readOnlyStorageTextures) and the parameters fit a texture. Default false; the decode
   * backend asks for it where decode steps use weight textures (GpuModelOptions.weightTextures).
   */
  atlas?: boolean;
  /**
   * Keep the projections' inputs in workgroup memory (default: where the adapter's limit holds
   * them); false keeps them in the storage scratch, as models too wide for it do.
   */
  workgroupInputs?: boolean;
  /** Workgroups a step should spread over at least (default: the host's logical cores). */
  cores?: number;
  /**
   * Invocations per workgroup (default 16). Not 8: a one-subgroup workgroup gave wrong results
   * on llvmpipe (Mesa 22.3), measured; 16 and more agree with the per-op path to 2e-7.
   */
  workgroup?: number;
}

/** The largest LoRA rank the fused kernel takes (its workgroup memory is planned for it). */
const MAX_RANK4 = 16;

/** Why rows' adapters of this layout cannot apply inside the fused kernel, or null. */
export function decodeLoraUnfit(l: LoraLayout): string | null {
  const r = l.cfg.rank;
  if (r % 4 || r / 4 > MAX_RANK4) {
    return `LoRA rank ${r} must be a multiple of 4 up to ${4 * MAX_RANK4}`;
  }
  if (l.entries.some((e) => !vec4Entry(e, r))) return "LoRA tensors must be vec4-aligned";
  return null;
}

/** Column groups (of four) per lane: `cols` / 4, or the default. */
function columnGroups(c: ModelConfig, opts: DecodeForwardOptions): number {
  if (opts.cols !== undefined) return opts.cols / 4;
  const widths = [c.hiddenSize, c.intermediateSize, c.numKvHeads * c.headDim].map((x) => x / 4);
  return [2, 1].find((cg) => widths.every((x) => x % cg === 0))!;
}

function sizes(c: ModelConfig, R: number, wg: number) {
  const C4 = c.hiddenSize / 4, I4 = c.intermediateSize / 4, D4 = c.headDim / 4;
  const NH = c.numHeads, KV = c.numKvHeads, G = NH / KV;
  const NCH = Math.max(1, Math.floor(wg / (R * KV)));
  const SPART = R * KV * NCH * G;
  const SU = R * 3 * MAX_RANK4;
  const SQ = R * NH * D4, SKV = R * KV * D4, SI = R * I4, SPACC = SPART * D4;
  // WS: the workgroup's scratch (vec4s) in the Scr binding.
  return {
    D4,
    NH,
    KV,
    NCH,
    SC: R * C4,
    SQ,
    SKV,
    SI,
    SPART,
    SPACC,
    WS: 2 * R * C4 + SQ + 2 * SKV + SI + SPACC + SU,
  };
}

/**
 * An upper bound on the loop iterations one invocation runs in a step. llvmpipe silently ends an
 * invocation's loops after 65535 iterations in all (see model_kernels.ts); loops over the
 * override dims (D4, G, R, NCH, CG, RANK4) are unrolled and do not count. `rank4`: rows' LoRA
 * adapters of rank 4·rank4 on every module (their x·Aᵀ loops).
 */
export function decodeForwardLoopBound(
  c: ModelConfig,
  cachePositions: number,
  R: number,
  wg: number,
  cg = 1,
  rank4 = 0,
): number {
  const s = sizes(c, R, wg),
    C4 = c.hiddenSize / 4,
    I4 = c.intermediateSize / 4,
    V4 = c.vocabSize / 4;
  const Q4 = c.numHeads * s.D4, K4 = c.numKvHeads * s.D4;
  const per = (n: number) => Math.ceil(n / wg); // iterations of a loop spread over the lanes
  const groups = (n: number) => per(Math.ceil(n / cg)); // a projection's column-group loop
  const norm = per(R) * 3 * C4;
  const layer = norm * 2 + groups(Q4 + 2 * K4) * (C4 + 1) + per(R * (c.numHeads + s.KV)) +
    per(R * s.KV * s.NCH) * (Math.ceil(cachePositions / s.NCH) + 1) + per(R * Q4) +
    groups(C4) * (Q4 + 1) +
    groups(I4) * 2 * (C4 + 1) + groups(C4) * (I4 + 1) + 1 +
    (rank4 ? per(R * rank4) * (5 * (C4 + 1) + (Q4 + 1) + (I4 + 1)) : 0);
  return per(R * C4) + c.numLayers * layer + norm + groups(V4) * (C4 + 1);
}

/** Stay this far under llvmpipe's 65535-iteration cap. */
const LOOP_LIMIT = 60000;

function workgroupBytes(c: ModelConfig, R: number, wg: number): number {
  return 8 * sizes(c, R, wg).SPART; // the attention chunks' maxima and sums; the rest is in Scr
}

/**
 * The override constants that place the projections' inputs (sX, sQ, sH) in workgroup memory
 * where the adapter's limit holds them beside the attention sums, else leave them in Scr.
 */
function inputPlacement(
  c: ModelConfig,
  R: number,
  wg: number,
  maxWorkgroupBytes: number,
  wanted: boolean,
) {
  const s = sizes(c, R, wg);
  const fits = wanted && workgroupBytes(c, R, wg) + 16 * (s.SC + s.SQ + s.SI) <= maxWorkgroupBytes;
  return fits ? { WGIN: 1, SCW: s.SC, SQW: s.SQ, SIW: s.SI } : { WGIN: 0, SCW: 1, SQW: 1, SIW: 1 };
}

/**
 * Why the fused forward cannot run this model on this placement (a sentence), or null when it
 * can: its shapes, the shader's limits, workgroup memory, and every parameter in one binding.
 */
export function decodeForwardUnfit(
  c: ModelConfig,
  cachePositions: number,
  params: Pick<GpuParams, "buffers" | "anySplit">,
  limits: { maxWorkgroupBytes: number; maxBindingBytes: number; maxStorageBuffers?: number },
  opts: DecodeForwardOptions = {},
): string | null {
  const R = opts.rows ?? 4,
    wg = opts.workgroup ?? 16,
    C = c.hiddenSize,
    I = c.intermediateSize,
    D = c.headDim;
  const G = c.numHeads / c.numKvHeads, cg = columnGroups(c, opts);
  if (c.modelType === "gpt2") {
    return "gpt2 (LayerNorm, learned positions, gelu_new) takes the per-op path";
  }
  if (!Number.isInteger(R) || R < 1 || R > MAXR) {
    return `rows per workgroup ${R} outside 1..${MAXR}`;
  }
  if (![1, 2, 4].includes(cg) || cg > MAXCG) return `columns per lane ${4 * cg} must be 4, 8 or 16`;
  if (R * cg > MAXT) {
    return `rows per workgroup ${R} × columns per lane ${4 * cg} exceed the lane's ${
      4 * MAXT
    } accumulators`;
  }
  if (!Number.isInteger(wg) || wg < 16 || wg % 8) {
    return `workgroup ${wg} must be a multiple of 8, at least 16`;
  }
  if (C % 4 || I % 4 || D % 8 || c.vocabSize % 4) {
    return `hidden ${C}, intermediate ${I} and vocabulary ${c.vocabSize} must be multiples of 4 and head_dim ${D} of 8`;
  }
  if ([C, I, c.numKvHeads * D].some((x) => (x / 4) % cg)) {
    return `columns per lane ${
      4 * cg
    } must divide hidden ${C}, intermediate ${I} and the kv width ${c.numKvHeads * D}`;
  }
  if (c.numLayers > MAXL) {
    return `${c.numLayers} layers exceed the ${MAXL} the kernel's uniform block holds`;
  }
  if (G > MAXG || G * D / 4 > QLEN || D / 4 > MAXD4) {
    return `${G} query heads per kv head of head_dim ${D} exceed the attention registers`;
  }
  if ((limits.maxStorageBuffers ?? STORAGE_BINDINGS) < STORAGE_BINDINGS) {
    return `needs ${STORAGE_BINDINGS} storage buffers per shader stage, the adapter allows ${limits.maxStorageBuffers}`;
  }
  const bytes = workgroupBytes(c, R, wg);
  if (bytes > limits.maxWorkgroupBytes) {
    return `needs ${bytes} bytes of workgroup memory, the adapter has ${limits.maxWorkgroupBytes}`;
  }
  const loops = decodeForwardLoopBound(c, cachePositions, R, wg, cg);
  if (loops > LOOP_LIMIT) {
    return `a lane would run up to ${loops} loop iterations a step, over llvmpipe's limit (${LOOP_LIMIT})`;
  }
  if (
    params.anySplit || params.buffers.length !== 1 ||
    params.buffers[0].size > limits.maxBindingBytes
  ) {
    return "the parameters do not fit one storage binding";
  }
  return null;
}

export class DecodeForwardKernel {
  /** Kernels by variant key (LoRA rank/4, 0 without; and whether it samples). */
  private kernels = new Map<string, Promise<Kernel>>();

  private constructor(
    private gpu: Gpu,
    private config: ModelConfig,
    private cachePositions: number,
    private offsets: number[],
    /** The most rows a workgroup takes (DecodeForwardOptions.rows). */
    private rows: number,
    private cores: number,
    private wg: number,
    private cg: number,
    private shader: string,
    /** Every workgroup's scratch: at most `slots` workgroups of the largest kernel's WS vec4s. */
    private scratch: GPUBuffer,
    /** Whether the adapter allows decode_sample's storage bindings. */
    private sampleBindings: boolean,
    /** The cos and sin tables one binding: cos [maxPos, D/2], then sin at sinAt floats. */
    private rope: GPUBuffer,
    private sinAt: number,
    /** The parameter atlas the kernels read their projection weights from, or null (W). */
    private atlas: ParamAtlas | null,
    /** Whether the projections' inputs may live in workgroup memory (where they fit). */
    private workgroupInputs: boolean,
  ) {
    this.noAdapters = gpu.zeros(4, "decode_forward.noAdapters");
  }

  /** Bound as AdapterOf when no adapters are attached. */
  private noAdapters: GPUBuffer;

  /** Frees the kernel's buffers (the model's destroy calls it). */
  destroy() {
    for (const b of [this.scratch, this.noAdapters, this.rope]) b.destroy();
    this.atlas?.destroy();
  }

  /**
   * The fused step for this model and `slots` concurrent sequences, its buffers made; `prepare`
   * compiles each variant it will run (none yet). `decodeForwardUnfit` must have returned null
   * for these options.
   */
  static create(
    gpu: Gpu,
    c: ModelConfig,
    layout: ParamLayout,
    params: GpuParams,
    cachePositions: number,
    slots: number,
    opts: DecodeForwardOptions = {},
  ): DecodeForwardKernel {
    const wg = opts.workgroup ?? 16;
    const cores = opts.cores ?? Math.max(1, globalThis.navigator?.hardwareConcurrency ?? 2);
    const rows = opts.rows ?? 4;
    // The RoPE tables as rope_table.ts makes them for the model (the same floats), in one binding.
    const rt = ropeTable(c.headDim, c.ropeTheta, cachePositions);
    const sinAt = Math.ceil(rt.cos.length / 4) * 4;
    const atlas = opts.atlas && gpu.readOnlyStorageTextures ? ParamAtlas.create(gpu, params) : null;
    const shader = opts.shader ?? (atlas ? "decode_forward_atlas" : "decode_forward");
    const k = new DecodeForwardKernel(
      gpu,
      c,
      cachePositions,
      uniformOffsets(c, layout, params),
      rows,
      cores,
      wg,
      columnGroups(c, opts),
      shader,
      gpu.zeros(4 * slots * sizes(c, rows, wg).WS, "decode_forward.scratch"),
      gpu.device.limits.maxStorageBuffersPerShaderStage >= SAMPLE_STORAGE_BINDINGS,
      gpu.upload(
        new Float32Array([...rt.cos, ...new Float32Array(sinAt - rt.cos.length), ...rt.sin]),
        "decode_forward.rope",
      ),
      sinAt,
      atlas,
      opts.workgroupInputs ?? true,
    );
    return k;
  }

  /**
   * Compiles the variant for these adapters (null: none), once; `sample`: the one that also
   * samples and advances each row (a generation step, see encode).
   */
  prepare(lora: LoraLayout | null, sample = false): Promise<unknown> {
    const rank4 = lora ? lora.cfg.rank / 4 : 0, key = variantKey(rank4, sample);
    let k = this.kernels.get(key);
    if (!k) {
      const forward: BindingKind[] = this.atlas
        ? [...FORWARD_BINDINGS, "texture-read"]
        : [...FORWARD_BINDINGS];
      const R = this.rows;
      k = this.gpu.kernel({
        shader: this.shader,
        entry: sample ? "decode_sample" : "decode_forward",
        bindings: sample ? [...forward, "storage", "storage"] : forward,
        constants: {
          WG: this.wg,
          R,
          CG: this.cg,
          ...sizes(this.config, R, this.wg),
          LORA: rank4 ? 1 : 0,
          RANK4: Math.max(1, rank4),
          SU: R * 3 * Math.max(1, rank4),
          ...(this.atlas ? { ATLAS_SHIFT: this.atlas.shift } : {}),
          ...inputPlacement(
            this.config,
            R,
            this.wg,
            this.gpu.device.limits.maxComputeWorkgroupStorageSize,
            this.workgroupInputs,
          ),
        },
      });
      this.kernels.set(key, k);
      k.then((kernel) => this.ready.set(key, kernel), () => this.kernels.delete(key));
    }
    return k;
  }

  private ready = new Map<string, Kernel>();

  /** The variants compiled or being compiled ("RANK4" or "RANK4:sample"; for tests). */
  get variants(): string[] {
    return [...this.kernels.keys()];
  }

  /** Whether `prepare` has finished for these adapters (and for sampling steps, `sample`). */
  readyFor(lora: LoraAdapters | null, sample = false): boolean {
    return this.ready.has(variantKey(lora ? lora.layout.cfg.rank / 4 : 0, sample));
  }

  /** The worst case of a step's loop iterations (decodeForwardLoopBound). */
  private loopBound(rank4: number): number {
    return decodeForwardLoopBound(
      this.config,
      this.cachePositions,
      this.rows,
      this.wg,
      this.cg,
      rank4,
    );
  }

  /** Whether rows' adapters of this rank fit the kernel's loops (else they take the per-op path). */
  loraFits(lora: LoraLayout): boolean {
    return this.loopBound(lora.cfg.rank / 4) <= LOOP_LIMIT;
  }

  /**
   * Generation steps one dispatch may chain (encode's sample.count) with these adapters: llvmpipe's
   * loop cap counts every loop iteration of an invocation over the whole dispatch, so the worst
   * case of a step (forward, adapters, lane sampler) divides it. 0: sampling inside the step
   * does not fit (or the adapter lacks the bindings).
   */
  stepsPerDispatch(lora: LoraLayout | null): number {
    if (!this.sampleBindings) return 0;
    return Math.floor(
      LOOP_LIMIT /
        (this.loopBound(lora ? lora.cfg.rank / 4 : 0) + laneLoopBound(this.config.vocabSize, 0) +
          1),
    );
  }

  /** The kernel and rows per workgroup for a step of N rows: a workgroup per core where rows allow. */
  private pick(N: number, key: string): { kernel: Kernel; rows: number } {
    return {
      kernel: this.ready.get(key)!,
      rows: Math.min(this.rows, Math.max(1, Math.ceil(N / this.cores))),
    };
  }

  /** Whether the kernels read their projection weights from the parameter atlas. */
  get usesAtlas(): boolean {
    return this.atlas !== null;
  }

  /**
   * Records the forward of N rows of distinct slots whose ids and (slot, pos) are in `ids` and
   * `meta`: caches written at each row's position, logits [N, V] written, each row's adapter
   * applied when `lora` is given (`readyFor` must hold). `cacheStride` is the float distance
   * between layers' caches in kc and vc. `paramsVersion` (the decode backend's count of parameter
   * changes): the atlas, where used, is copied from `params` now if it holds another version, so
   * the recorded step reads the parameters as they are when it is recorded.
   */
  encode(
    rec: Recorder,
    N: number,
    params: GpuParams,
    ids: GPUBuffer,
    meta: GPUBuffer,
    kc: GPUBuffer,
    vc: GPUBuffer,
    cacheStride: number,
    logits: BufferRange,
    lora: LoraAdapters | null,
    sample: DecodeSampleStep | null = null,
    paramsVersion = 0,
  ) {
    const c = this.config, L = lora?.layout ?? null;
    const count = sample?.count ?? 1, most = sample ? this.stepsPerDispatch(L) : 1;
    if (
      sample &&
      !(Number.isInteger(count) && count >= 1 && count <= most &&
        sample.step + count <= sample.steps)
    ) {
      throw new KernelArgumentError(
        `decode step: ${count} chained steps from step ${sample.step} of ${sample.steps} (at most ${most} a dispatch)`,
      );
    }
    const { kernel, rows: rpg } = this.pick(N, variantKey(L ? L.cfg.rank / 4 : 0, sample !== null));
    // Without adapters LW and AdapterOf are never read; AdapterOf must not alias Ids (writable
    // storage: a buffer bound writable may not be bound read-only in the same dispatch).
    const [lw, adapterOf] = lora
      ? [lora.params, lora.rowAdapters]
      : [params.buffers[0], this.noAdapters];
    // The block is the shader's Params: a per-step header, then the layer table (~6 KiB, the
    // same for every step with these adapters, so built once).
    const block = this.layerTable(L).slice(0);
    const header = DecodeForwardParams.pack({
      rows: N,
      P: this.cachePositions,
      eps: c.rmsNormEps,
      scale: 1 / Math.sqrt(c.headDim),
      layers: c.numLayers,
      embed: this.offsets[0],
      finalNorm: this.offsets[1],
      head: this.offsets[2],
      cacheStride: cacheStride / 4,
      C4: c.hiddenSize / 4,
      I4: c.intermediateSize / 4,
      V4: c.vocabSize / 4,
      Q4: c.numHeads * c.headDim / 4,
      rpg,
      adapters: L ? L.cfg.adapters.length : 0,
      loraScale: L ? L.scale : 0,
      step: sample?.step ?? 0,
      steps: sample?.steps ?? 0,
      inner: count,
      sinAt: this.sinAt / 4,
    });
    new Uint8Array(block).set(new Uint8Array(header));
    const bindings: Parameters<Recorder["dispatch"]>[1] = [
      null,
      params.buffers[0],
      meta,
      ids,
      this.rope,
      kc,
      vc,
      logits,
      lw,
      adapterOf,
      this.scratch,
    ];
    if (this.atlas) {
      this.atlas.ensure(params, paramsVersion);
      bindings.push(this.atlas.binding);
    }
    rec.dispatch(kernel, sample ? [...bindings, sample.params, sample.out] : bindings, [
      Math.ceil(N / rpg),
    ], block);
  }

  private tables = new Map<LoraLayout | null, ArrayBuffer>();

  /** The uniform block with its header zero and the layer table filled in for these adapters. */
  private layerTable(L: LoraLayout | null): ArrayBuffer {
    let t = this.tables.get(L);
    if (t) return t;
    const layers = this.offsets.slice(3);
    for (const e of L?.entries ?? []) {
      const m = LORA_MODULES.indexOf(e.module as typeof LORA_MODULES[number]),
        base = e.layer * LAYER_WORDS;
      layers[base + 15] |= 1 << (8 + m);
      layers.splice(
        base + 16 + 4 * m,
        4,
        e.offsetA / 4,
        e.strideA / 4,
        e.offsetB / 4,
        e.strideB / 4,
      );
    }
    const words = new Uint32Array(HEADER_WORDS + LAYER_WORDS * MAXL); // unused layers stay zero
    words.set(layers, HEADER_WORDS);
    this.tables.set(L, t = words.buffer);
    return t;
  }
}

/** embed, final norm, head, then per layer the LAYER_WORDS words of the shader's `Layer` (LoRA words zero). */
function uniformOffsets(c: ModelConfig, layout: ParamLayout, params: GpuParams): number[] {
  const at = (t: ParamTensor | null) => t ? params.chunks(t)[0].ref.offset / 16 : 0;
  const out = [at(layout.embed), at(layout.finalNorm), at(layout.lmHead)];
  for (let l = 0; l < c.numLayers; l++) {
    const v = layout.layerView(l);
    const flags = (v.qBias ? 1 : 0) | (v.oBias ? 2 : 0) | (v.qNorm ? 4 : 0);
    out.push(
      at(v.inputNorm),
      at(v.q),
      at(v.k),
      at(v.v),
      at(v.o),
      at(v.postNorm),
      at(v.gate),
      at(v.up),
      at(v.down),
      at(v.qBias),
      at(v.kBias),
      at(v.vBias),
      at(v.oBias),
      at(v.qNorm),
      at(v.kNorm),
      flags,
      ...Array(LAYER_WORDS - 16).fill(0),
    );
  }
  return out;
}
