// LoRA adapters for GpuModel: several named adapters over one frozen base, selected per row
// (per sequence) so agents with different adapters share one forward; the forward adds
// scale·(x·Aᵀ)·Bᵀ to each targeted Linear, the backward gives dA, dB and the extra dX.
// All adapters live in one flat f32 array (and gradients in the same layout), grouped per
// (layer, module) with the adapters stacked, each block 64-float aligned: LoraLayout
// (src/model/lora_layout.ts, with the targets, PEFT's names and merging).

import type { BufferRef, ResolvedRange } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { tunedLoraFusedTarget } from "../ops/tuned_picks.ts";
import { align64, type LoraEntry, type LoraLayout } from "./lora_layout.ts";
import { envVar } from "../runtime.ts";

/**
 * The parameters of shaders/lora.wgsl, lora_grad.wgsl and lora_vec4.wgsl: N rows, one (layer,
 * module)'s in and out dims, rank r, `count` adapters stacked at strideA / strideB floats, and
 * scale = alpha / r.
 */
export const LoraParams = uniformStruct("lora_params", "Params", [
  ["N", "u32"],
  ["inDim", "u32"],
  ["outDim", "u32"],
  ["r", "u32"],
  ["count", "u32"],
  ["strideA", "u32"],
  ["strideB", "u32"],
  ["scale", "f32"],
]);

/** Entries of lora_vec4.wgsl, used for modules whose in, out and rank are multiples of 4. */
const VEC4_ENTRIES = ["lora4_down", "lora4_up", "lora4_du", "lora4_dx", "lora4_db", "lora4_da"];

/**
 * How the vec4 kernels with long reductions reduce: "lane", one invocation per 4×4 tile looping
 * over all of it (CPU adapters, where barriers are expensive); "workgroup", one workgroup per
 * tile whose lanes split it (GPUs, where one invocation per tile leaves most of the chip idle):
 * lora4_db_wg and lora4_da_wg over an adapter's rows, lora4_down_wg over in, lora4_du_wg over out.
 */
export type LoraReduce = "lane" | "workgroup";

const WG_ENTRIES = ["lora4_db_wg", "lora4_da_wg", "lora4_down_wg", "lora4_du_wg"];

/**
 * How the forward applies the adapters: "split", two dispatches per module (down into U, then up
 * into y); "fused", one dispatch per group of modules sharing an input (q/k/v, gate/up, o, down:
 * shaders/lora_fused.wgsl), the GPU class's default: a GPU spends a decode step's LoRA in
 * dispatch latency, not arithmetic. Modules the fused kernel cannot take run split.
 */
export type LoraForward = "split" | "fused";

/** The environment variable that overrides every adapter set's forward ("split" or "fused"). */
export const LORA_FORWARD_ENV = "PETTINGLLMS_LORA_FORWARD";

/**
 * The forward an adapter class runs by default: "fused" on GPUs, "split" on CPU adapters; in
 * Deno, PETTINGLLMS_LORA_FORWARD=split|fused overrides it (a GPU session times both).
 */
export function loraForwardFor(adapterClass: string): LoraForward {
  const v = envVar(LORA_FORWARD_ENV); // no --allow-env: the class's default
  if (v === "split" || v === "fused") return v;
  if (v !== undefined && v !== "") {
    throw new KernelArgumentError(`${LORA_FORWARD_ENV} must be "split" or "fused", got "${v}"`);
  }
  return adapterClass === "gpu" ? "fused" : "split";
}

/** The parameters of shaders/lora_fused.wgsl: up to three modules' offsets (floats) and dims. */
export const LoraGroupParams = uniformStruct("lora_group_params", "GroupParams", [
  ["N", "u32"],
  ["inDim", "u32"],
  ["r", "u32"],
  ["count", "u32"],
  ["nMods", "u32"],
  ["scale", "f32"],
  ["out0", "u32"],
  ["out1", "u32"],
  ["out2", "u32"],
  ["offA0", "u32"],
  ["strideA0", "u32"],
  ["offB0", "u32"],
  ["strideB0", "u32"],
  ["offA1", "u32"],
  ["strideA1", "u32"],
  ["offB1", "u32"],
  ["strideB1", "u32"],
  ["offA2", "u32"],
  ["strideA2", "u32"],
  ["offB2", "u32"],
  ["strideB2", "u32"],
  ["offU0", "u32"],
  ["offU1", "u32"],
  ["offU2", "u32"],
]);

/** lora_fused.wgsl's rows per workgroup and its workgroup U tile (floats): ROWS · Σ r ≤ UCAP. */
const FUSED_ROWS = 4, FUSED_UCAP = 1024;
/** lora_fused.wgsl's workgroup size (its WG override). */
const FUSED_WG = 256;
/**
 * Workgroups a fused LoRA dispatch aims for before splitting output columns (fusedColumnChunks):
 * the built-in target, an estimate from one H100's 132 SMs; `npx deno task tune` measures the
 * user's GPU's (src/model/lora_tune.ts) and LoraAdapters then use that.
 */
export const FUSED_TARGET_WORKGROUPS = 128;

/**
 * Workgroups each row tile of lora_fused.wgsl splits its `outs` output columns over: 1 where the
 * row tiles alone fill `target` workgroups (training), else enough to reach it, at most one
 * per FUSED_WG column quads. At a decode step's 1–8 rows one workgroup per 4 rows did all of a
 * group's up half alone (a gate/up group's whole B read by one SM: 17 µs a call on an H100);
 * each chunk recomputes its rows' U, rank × in multiply-adds a row.
 */
export function fusedColumnChunks(
  rowTiles: number,
  outs: number,
  target = FUSED_TARGET_WORKGROUPS,
): number {
  const most = Math.max(1, Math.ceil(outs / 4 / FUSED_WG));
  return Math.min(most, Math.max(1, Math.ceil(target / rowTiles)));
}

/** One module of a group for encodeForwardGroup: the module and its output y [N, out]. */
export interface LoraGroupPart {
  module: string;
  y: BufferRef;
}

/** The reduction an adapter class runs by default. */
export const loraReduceFor = (adapterClass: string): LoraReduce =>
  adapterClass === "gpu" ? "workgroup" : "lane";

/** Whether an entry can run the vec4 kernels (every dimension and stride a multiple of 4 floats). */
export function vec4Entry(e: LoraEntry, rank: number): boolean {
  return [e.inDim, e.outDim, rank, e.strideA, e.strideB, e.offsetA, e.offsetB].every((d) =>
    d % 4 === 0
  );
}

/** The adapters on the GPU: parameters, gradients and per-row selection. */
export class LoraAdapters {
  readonly params: GPUBuffer;
  readonly grads: GPUBuffer;
  private adapterOf: GPUBuffer;
  private ranges: GPUBuffer;
  /** Per layer, every targeted module's U [maxRows, r] (saved for the backward) in slots. */
  private uLayers: GPUBuffer[] = [];
  private u = new Map<string, ResolvedRange>(); // per entry: its slot of uLayers
  private spare: GPUBuffer[]; // the fused kernel's unused output slots
  private du: GPUBuffer;
  private rangesValid = false;
  /**
   * Workgroups the fused forward fills before splitting output columns (fusedColumnChunks): this
   * adapter's tuned target (src/ops/tuned_picks.ts), else FUSED_TARGET_WORKGROUPS. The tuner sets
   * it per candidate.
   */
  fusedTarget: number;

  private constructor(
    private gpu: Gpu,
    readonly layout: LoraLayout,
    private k: Record<string, Kernel>,
    readonly maxRows: number,
    data: Float32Array,
    readonly reduce: LoraReduce,
    readonly forward: LoraForward,
  ) {
    const r = layout.cfg.rank;
    this.params = gpu.upload(data, "lora.params");
    this.grads = gpu.zeros(layout.totalFloats, "lora.grads");
    this.adapterOf = gpu.zeros(maxRows, "lora.adapterOf");
    this.ranges = gpu.zeros(2 * layout.cfg.adapters.length, "lora.ranges");
    this.du = gpu.zeros(maxRows * r, "lora.dU");
    // Slots 64 floats aligned: a group's slots bind as one range at a 256-byte offset.
    const slot = align64(maxRows * r);
    for (let layer = 0; layer < layout.model.numLayers; layer++) {
      const es = layout.entries.filter((e) => e.layer === layer);
      if (!es.length) continue;
      const buf = gpu.zeros(es.length * slot, `lora.U.${layer}`);
      this.uLayers.push(buf);
      es.forEach((e, i) => {
        this.u.set(`${layer}:${e.module}`, { buffer: buf, offset: i * slot * 4, size: slot * 4 });
      });
    }
    this.spare = [gpu.zeros(4, "lora.spare1"), gpu.zeros(4, "lora.spare2")];
    this.fusedTarget = tunedLoraFusedTarget(gpu.ctx.info) ?? FUSED_TARGET_WORKGROUPS;
  }

  static async create(
    gpu: Gpu,
    layout: LoraLayout,
    maxRows: number,
    data?: Float32Array,
    reduce: LoraReduce = loraReduceFor(gpu.adapterClass),
    forward: LoraForward = loraForwardFor(gpu.adapterClass),
  ): Promise<LoraAdapters> {
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const b: BindingKind[] = [u, ro, ro, ro, rw];
    const k: Record<string, Kernel> = {};
    // The scalar kernels only for modules the vec4 ones cannot take (each pipeline is start-up
    // time, compiled one at a time by Chrome's SwiftShader).
    const vec4s = layout.entries.some((e) => vec4Entry(e, layout.cfg.rank));
    const scalars = layout.entries.some((e) => !vec4Entry(e, layout.cfg.rank));
    const entries = (shader: string, names: readonly string[]) =>
      names.map(async (e) => (k[e] = await gpu.kernel({
        shader,
        entry: e,
        bindings: b,
        constants: { WG: 64 },
      })));
    await Promise.all([
      ...(scalars ? entries("lora", ["lora_down", "lora_up", "lora_du", "lora_dx"]) : []),
      ...(scalars ? entries("lora_grad", ["lora_db", "lora_da"]) : []),
      ...(vec4s
        ? entries("lora_vec4", [...VEC4_ENTRIES, ...(reduce === "workgroup" ? WG_ENTRIES : [])])
        : []),
      ...(forward === "fused" && vec4s
        ? [(async () => (k.lora_group_fwd = await gpu.kernel({
          shader: "lora_fused",
          entry: "lora_group_fwd",
          bindings: [u, ro, ro, ro, rw, rw, rw, rw],
          constants: { WG: FUSED_WG },
        })))()]
        : []),
    ]);
    if (data && data.length !== layout.totalFloats) {
      throw new KernelArgumentError(
        `LoRA data has ${data.length} floats, the layout needs ${layout.totalFloats}`,
      );
    }
    return new LoraAdapters(gpu, layout, k, maxRows, data ?? layout.init(0), reduce, forward);
  }

  /**
   * Per-row adapter ids (≥ adapter count = base only). The backward also needs each adapter's
   * rows contiguous; otherwise only the forward may run.
   */
  /** [maxRows] u32: each row's adapter as setRows wrote it (≥ the adapter count: none). */
  get rowAdapters(): GPUBuffer {
    return this.adapterOf;
  }

  setRows(adapterIds: readonly number[]) {
    if (adapterIds.length > this.maxRows) {
      throw new KernelArgumentError(
        `${adapterIds.length} rows exceed the LoRA buffers' ${this.maxRows}`,
      );
    }
    const n = this.layout.cfg.adapters.length;
    const ids = Uint32Array.from(adapterIds, (a) => (a < 0 || a >= n ? n : a));
    const ranges = new Uint32Array(2 * n);
    this.rangesValid = true;
    for (let a = 0; a < n; a++) {
      const first = ids.indexOf(a), last = ids.lastIndexOf(a);
      if (first < 0) continue;
      for (let i = first; i <= last; i++) if (ids[i] !== a) this.rangesValid = false;
      ranges.set([first, last + 1], 2 * a);
    }
    this.gpu.write(this.adapterOf, ids);
    this.gpu.write(this.ranges, ranges);
  }

  private uniform(e: LoraEntry, N: number): ArrayBuffer {
    return LoraParams.pack({
      N,
      inDim: e.inDim,
      outDim: e.outDim,
      r: this.layout.cfg.rank,
      count: this.layout.cfg.adapters.length,
      strideA: e.strideA,
      strideB: e.strideB,
      scale: this.layout.scale,
    });
  }

  private stack(buf: GPUBuffer, offset: number, floats: number): BufferRef {
    return { buffer: buf, offset: offset * 4, size: floats * 4 };
  }

  private g(n: number): [number, number] {
    return grid1d(Math.ceil(n / 64), this.gpu.device.limits.maxComputeWorkgroupsPerDimension);
  }

  /**
   * A kernel with a long reduction over `tiles` 4×4 tiles, as this adapter set reduces: the lane
   * entry with one invocation per tile, or its `_wg` entry with one workgroup per tile.
   */
  private reducing(entry: string, tiles: number): [Kernel, [number, number]] {
    if (this.reduce === "lane") return [this.k[entry], this.g(tiles)];
    return [
      this.k[`${entry}_wg`],
      grid1d(tiles, this.gpu.device.limits.maxComputeWorkgroupsPerDimension),
    ];
  }

  /** y [N, out] += scale·(x·Aᵀ)·Bᵀ for each row's adapter, if (layer, module) is targeted. */
  encodeForward(
    rec: Recorder,
    N: number,
    layer: number,
    module: string,
    x: BufferRef,
    y: BufferRef,
  ) {
    const e = this.layout.entry(layer, module);
    if (!e) return;
    const n = this.layout.cfg.adapters.length, r = this.layout.cfg.rank, u = this.uniform(e, N);
    const U = this.u.get(`${layer}:${module}`)!;
    const A = this.stack(this.params, e.offsetA, n * e.strideA),
      B = this.stack(this.params, e.offsetB, n * e.strideB);
    if (vec4Entry(e, r)) {
      const tiles = Math.ceil(N / 4);
      const [down, grid] = this.reducing("lora4_down", tiles * (r / 4));
      rec.dispatch(down, [null, this.adapterOf, x, A, U], grid, u);
      rec.dispatch(
        this.k.lora4_up,
        [null, this.adapterOf, U, B, y],
        this.g(tiles * (e.outDim / 4)),
        u,
      );
      return;
    }
    rec.dispatch(this.k.lora_down, [null, this.adapterOf, x, A, U], this.g(N * r), u);
    rec.dispatch(this.k.lora_up, [null, this.adapterOf, U, B, y], this.g(N * e.outDim), u);
  }

  /**
   * y_m [N, out_m] += scale·(x·A_mᵀ)·B_mᵀ for each part's module m targeted in `layer`, all of
   * one input x [N, in] (q/k/v, gate/up, or one module): one fused dispatch where this adapter set
   * fuses and the group allows it (every module vec4, ROWS · Σ r within the kernel's tile, the
   * group's parameters within one binding), else encodeForward per module.
   */
  encodeForwardGroup(
    rec: Recorder,
    N: number,
    layer: number,
    parts: readonly LoraGroupPart[],
    x: BufferRef,
  ) {
    const r = this.layout.cfg.rank, n = this.layout.cfg.adapters.length;
    const found = parts.map((q) => ({ ...q, e: this.layout.entry(layer, q.module) }));
    const used = found.filter((q) => q.e !== undefined) as (LoraGroupPart & { e: LoraEntry })[];
    if (!used.length) return;
    const k = this.k.lora_group_fwd;
    const first = Math.min(...used.map((q) => q.e.offsetA));
    const end = Math.max(...used.map((q) => q.e.offsetB + n * q.e.strideB));
    const fits = k && used.length <= 3 &&
      used.every((q) => vec4Entry(q.e, r) && q.e.inDim === used[0].e.inDim) &&
      FUSED_ROWS * used.length * r <= FUSED_UCAP &&
      (end - first) * 4 <= this.gpu.device.limits.maxStorageBufferBindingSize;
    if (!fits) {
      for (const q of used) this.encodeForward(rec, N, layer, q.module, x, q.y);
      return;
    }
    const us = used.map((q) => this.u.get(`${layer}:${q.module}`)!);
    const uStart = Math.min(...us.map((b) => b.offset)),
      uEnd = Math.max(...us.map((b) => b.offset + b.size));
    const slot = (i: number) => {
      const q = used[i];
      if (!q) return { out: 0, offA: 0, strideA: 0, offB: 0, strideB: 0, offU: 0 };
      return {
        out: q.e.outDim,
        offA: q.e.offsetA - first,
        strideA: q.e.strideA,
        offB: q.e.offsetB - first,
        strideB: q.e.strideB,
        offU: (us[i].offset - uStart) / 4,
      };
    };
    const [s0, s1, s2] = [0, 1, 2].map(slot);
    const u = LoraGroupParams.pack({
      N,
      inDim: used[0].e.inDim,
      r,
      count: n,
      nMods: used.length,
      scale: this.layout.scale,
      out0: s0.out,
      out1: s1.out,
      out2: s2.out,
      offA0: s0.offA,
      strideA0: s0.strideA,
      offB0: s0.offB,
      strideB0: s0.strideB,
      offA1: s1.offA,
      strideA1: s1.strideA,
      offB1: s1.offB,
      strideB1: s1.strideB,
      offA2: s2.offA,
      strideA2: s2.strideA,
      offB2: s2.offB,
      strideB2: s2.strideB,
      offU0: s0.offU,
      offU1: s1.offU,
      offU2: s2.offU,
    });
    const ys = [0, 1, 2].map((i) => used[i]?.y ?? this.spare[i - 1]);
    const maxDim = this.gpu.device.limits.maxComputeWorkgroupsPerDimension;
    const tiles = grid1d(Math.ceil(N / FUSED_ROWS), maxDim);
    rec.dispatch(
      k,
      [
        null,
        this.adapterOf,
        x,
        this.stack(this.params, first, end - first),
        { buffer: us[0].buffer, offset: uStart, size: uEnd - uStart },
        ...ys,
      ],
      [
        ...tiles,
        fusedColumnChunks(
          tiles[0] * tiles[1],
          used.reduce((s, q) => s + q.e.outDim, 0),
          this.fusedTarget,
        ),
      ],
      u,
    );
  }

  /** dx += the LoRA path's input gradient; dA, dB += weight gradients (rows adapter-contiguous). */
  encodeBackward(
    rec: Recorder,
    N: number,
    layer: number,
    module: string,
    x: BufferRef,
    dy: BufferRef,
    dx: BufferRef,
  ) {
    const e = this.layout.entry(layer, module);
    if (!e) return;
    if (!this.rangesValid) {
      throw new KernelArgumentError(
        "LoRA backward needs each adapter's rows contiguous: order the batch by adapter",
      );
    }
    const n = this.layout.cfg.adapters.length, r = this.layout.cfg.rank, u = this.uniform(e, N);
    const U = this.u.get(`${layer}:${module}`)!;
    const A = this.stack(this.params, e.offsetA, n * e.strideA),
      B = this.stack(this.params, e.offsetB, n * e.strideB);
    const dA = this.stack(this.grads, e.offsetA, n * e.strideA),
      dB = this.stack(this.grads, e.offsetB, n * e.strideB);
    if (vec4Entry(e, r)) {
      const tiles = Math.ceil(N / 4);
      const du = this.reducing("lora4_du", tiles * (r / 4));
      rec.dispatch(du[0], [null, this.adapterOf, dy, B, this.du], du[1], u);
      rec.dispatch(
        this.k.lora4_dx,
        [null, this.adapterOf, this.du, A, dx],
        this.g(tiles * (e.inDim / 4)),
        u,
      );
      const db = this.reducing("lora4_db", n * (e.outDim / 4) * (r / 4));
      rec.dispatch(db[0], [null, this.ranges, dy, U, dB], db[1], u);
      const da = this.reducing("lora4_da", n * (r / 4) * (e.inDim / 4));
      rec.dispatch(da[0], [null, this.ranges, this.du, x, dA], da[1], u);
      return;
    }
    rec.dispatch(this.k.lora_du, [null, this.adapterOf, dy, B, this.du], this.g(N * r), u);
    rec.dispatch(this.k.lora_dx, [null, this.adapterOf, this.du, A, dx], this.g(N * e.inDim), u);
    rec.dispatch(this.k.lora_db, [null, this.ranges, dy, U, dB], this.g(n * e.outDim * r), u);
    rec.dispatch(this.k.lora_da, [null, this.ranges, this.du, x, dA], this.g(n * r * e.inDim), u);
  }

  encodeZeroGrads(rec: Recorder) {
    rec.clear(this.grads);
  }

  /** Adapter parameters back on the CPU (for checkpoints). */
  async read(): Promise<Float32Array> {
    return await this.gpu.readFloat32(this.params, this.layout.totalFloats);
  }

  destroy() {
    for (
      const b of [
        this.params,
        this.grads,
        this.adapterOf,
        this.ranges,
        this.du,
        ...this.uLayers,
        ...this.spare,
      ]
    ) b.destroy();
  }
}
