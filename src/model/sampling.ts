// Token sampling on the GPU: repetition penalty → temperature → top-k → top-p → one draw of a
// counter-based RNG keyed by (seed, sequence, step), with the sampled token's log-prob. One
// dispatch per call (two for split rows), recorded into a Recorder with no readback, so a decode
// loop chains forward → sample → forward and reads back only the ids. The kernels are
// shaders/sampling.wgsl (one workgroup per row; on GPUs a large vocabulary's row split over
// several workgroups, then merged: see SPLIT_MIN_VOCAB) and, for CPU adapters,
// shaders/sampling_lane.wgsl (one invocation per row, no barriers; same semantics and bindings);
// the float64 oracle is sampling_reference.ts.
//
// Semantics (HF transformers' warpers, in HF's order):
//   z = penalty(x) / T over the full vocabulary. penalty: each distinct id in the row's history,
//     once: x > 0 → x / p, else x · p. T = 1 for greedy rows (temperature 0).
//   greedy: argmax z, lowest id among ties.
//   top-k: keep z ≥ the k-th largest z. top-p: keep the highest-z tokens until their mass, in
//     the top-k-renormalised distribution, reaches p (at least one token). Ties at either
//     threshold are all kept: the rule depends on values only, never on the order of equal ones
//     (HF's sort keeps an arbitrary subset of a tie, so it can keep fewer).
//   draw: u ∈ [0, 1) from Philox-4x32-10(counter = (sequence, step, 0, 0), key = (seed, "SAMP"))
//     with 24-bit resolution; the first kept token, in id order, whose cumulative probability
//     exceeds u. A row's result depends on its logits, parameters and history only.
//   logprobs[row] = log softmax(z)[id] over the full vocabulary: the policy's log-prob at the
//     sampling temperature (RL's old_logp). With truncatedLogprobs, logprobs[rows + row] is the
//     log-prob under the truncated, renormalised distribution (0 for greedy).
// Logits must be finite or −inf (masked); NaN, or a temperature so small that x / T overflows
// float32, is undefined. A row of only −inf gives id 0 with a NaN log-prob. Tokens below
// 2^-24 probability can be missed by the 24-bit draw, as with any float32 sampler.

import { type BufferRef, resolveRange } from "../gpu/buffers.ts";
import { GpuLimitError, KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel, KernelSpec } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { isPow2In32To256, tunedSamplerPicks } from "../ops/tuned_picks.ts";
import { ModelError } from "./errors.ts";

/** Per-row sampling parameters (HF names in camelCase). */
export interface SamplingParams {
  /** Softmax temperature; 0 = greedy. Default 1. */
  temperature?: number;
  /** Keep the k highest-scoring tokens (and ties of the k-th); 0 or ≥ vocab = off. Default 0. */
  topK?: number;
  /** Nucleus mass in [0, 1]; 1 = off, 0 keeps the top token (and its ties). Default 1. */
  topP?: number;
  /** HF repetition penalty (> 0) over the row's history; 1 = off. Default 1. */
  repetitionPenalty?: number;
  /** RNG seed (u32), e.g. one per run. */
  seed: number;
  /** Sequence id (u32): which rollout this row generates, independent of its row index. */
  sequence: number;
  /** Decoding step (u32) within the sequence. */
  step: number;
}

/**
 * The samplers' shape (shaders/sampling_common.wgsl's Shape, the uniform of sampling.wgsl and
 * sampling_lane.wgsl): rows, vocabulary, history capacity per row, flags (truncated log-probs,
 * append to the history) and the chunks a split row takes (sampling.wgsl's sample_chunks and
 * sample_merge; 1 elsewhere).
 */
export const SamplingShapeParams = uniformStruct("sampling_shape_params", "Shape", [
  ["rows", "u32"],
  ["vocab", "u32"],
  ["hist_cap", "u32"],
  ["flags", "u32"],
  ["chunks", "u32"],
]);

/** 32-bit words per row in the params buffer (see packSamplingParams for the layout). */
export const PARAM_WORDS = 8;

/** A sampling parameter is out of range; the message names the row and field. */
export class SamplingParamsError extends ModelError {}

const U32_MAX = 0xffffffff;

function checkRow(p: SamplingParams, i: number): void {
  const bad = (field: string, why: string) =>
    new SamplingParamsError(`sampling params row ${i}: ${field} ${why}`);
  const t = p.temperature ?? 1, k = p.topK ?? 0, topP = p.topP ?? 1, rp = p.repetitionPenalty ?? 1;
  if (!(Number.isFinite(t) && t >= 0)) {
    throw bad("temperature", `= ${t}; use a finite value ≥ 0 (0 = greedy)`);
  }
  if (!(Number.isInteger(k) && k >= 0 && k <= U32_MAX)) {
    throw bad("topK", `= ${k}; use an integer ≥ 0 (0 = off)`);
  }
  if (!(topP >= 0 && topP <= 1)) throw bad("topP", `= ${topP}; use a value in [0, 1] (1 = off)`);
  if (!(Number.isFinite(rp) && rp > 0)) {
    throw bad("repetitionPenalty", `= ${rp}; use a finite value > 0 (1 = off)`);
  }
  for (const f of ["seed", "sequence", "step"] as const) {
    const v = p[f];
    if (!(Number.isInteger(v) && v >= 0 && v <= U32_MAX)) {
      throw bad(f, `= ${v}; use an integer in [0, 2^32) (it keys the RNG, so set it explicitly)`);
    }
  }
}

/**
 * Packs per-row parameters, 8 words a row: temperature f32, topK u32, topP f32,
 * repetitionPenalty f32, seed u32, sequence u32, step u32, reserved (0). Upload with gpu.upload,
 * or gpu.write into a params buffer each step.
 */
export function packSamplingParams(rows: readonly SamplingParams[]): Uint32Array {
  const out = new Uint32Array(rows.length * PARAM_WORDS);
  const f32 = new Float32Array(out.buffer);
  rows.forEach((p, i) => {
    checkRow(p, i);
    const o = i * PARAM_WORDS;
    f32[o] = p.temperature ?? 1;
    out[o + 1] = p.topK ?? 0;
    f32[o + 2] = p.topP ?? 1;
    f32[o + 3] = p.repetitionPenalty ?? 1;
    out[o + 4] = p.seed;
    out[o + 5] = p.sequence;
    out[o + 6] = p.step;
  });
  return out;
}

/** Token ids seen by each row (prompt + generated), for the repetition penalty. */
export interface SamplerHistory {
  /** [rows, capacity] u32, row-major; the first counts[row] (at most capacity) are used. */
  ids: BufferRef;
  /** [rows] u32. Keeps counting past capacity; ids beyond capacity are not penalised. */
  counts: BufferRef;
  capacity: number;
  /** Append each sampled id to its row and count it, so chained steps need no CPU update. */
  append?: boolean;
}

export interface SampleArgs {
  rows: number;
  vocab: number;
  /** [rows, vocab] f32, read only. The binding is rounded up to 16 bytes (gpu.zeros pads). */
  logits: BufferRef;
  /** [rows, PARAM_WORDS] from packSamplingParams. */
  params: BufferRef;
  history?: SamplerHistory;
  /** Out: [rows] u32. */
  ids: BufferRef;
  /** Out: [rows] f32 full-vocabulary log-probs; [2, rows] when truncatedLogprobs is set. */
  logprobs: BufferRef;
  /** Also write the log-probs under the truncated distribution to logprobs[rows ..]. */
  truncatedLogprobs?: boolean;
}

/**
 * "workgroup": shaders/sampling.wgsl, one workgroup per row (GPUs, large vocabularies).
 * "lane": shaders/sampling_lane.wgsl, one invocation per row, no barriers (CPU adapters).
 * "auto": lane on CPU adapters while vocab ≤ laneMaxVocab, workgroup otherwise (per call).
 */
export type SamplerVariant = "auto" | "lane" | "workgroup";

/**
 * Largest vocabulary for which "auto" picks the lane kernel on CPU adapters. llvmpipe, 2 cores,
 * 8 and 32 rows: lane is 2-12× faster at V = 264 and 1.1-1.5× at V = 4096; at V = 8192 it still
 * wins greedy and plain temperature but loses top-k/top-p with 8 rows (one workgroup does all the
 * search passes on one core).
 */
export const LANE_MAX_VOCAB = 4096;

/** Search passes per stage in sampling_lane.wgsl (its MAX_PASSES). */
const LANE_MAX_PASSES = 48;
/** llvmpipe ends a shader's loops once their iterations together reach this (Mesa gallivm). */
const LLVMPIPE_LOOP_LIMIT = 65535;

/**
 * Worst-case loop iterations of one sampling_lane.wgsl invocation: llvmpipe silently cuts every
 * loop of an invocation once their iterations together reach 65535, so the lane kernel is used
 * only where this bound fits (at most 2 search stages of LANE_MAX_PASSES passes, 3 more passes,
 * each pass ⌈units / 4⌉ iterations; the penalty bitmap and history loops; Philox's 10 rounds and
 * makeSplits' 3, which llvmpipe unrolls, are counted anyway). About V ≤ 10k for short histories.
 */
export function laneLoopBound(vocab: number, historyCapacity: number): number {
  const units = Math.ceil(vocab / 4) + 1;
  const perPass = Math.ceil(units / 4);
  const searchLoops = 2 * LANE_MAX_PASSES * (1 + 3); // the pass loop and makeSplits' 3 per pass
  return 10 + (Math.ceil(vocab / 32) + 1) + historyCapacity + 2 + searchLoops +
    perPass * (3 + 2 * LANE_MAX_PASSES);
}

/**
 * Split rows (GPU-class adapters, "auto"): a row of at least SPLIT_MIN_VOCAB words is sampled by
 * ⌊units / SPLIT_UNITS⌋ workgroups (units = ⌈vocab / 4⌉, vec4s) and a merge, at most
 * capacity / SPLIT_SLOTS. One workgroup of 64 lanes took ~256 µs a row of a 151,936-word
 * vocabulary on an H100 (2026-11-27), at batch 1 and 8 alike: the rows are latency-bound walks,
 * and a batch of a few rows leaves most of the GPU idle. The thresholds are estimates, not yet
 * timed on a GPU. Every workgroup's share depends on the vocabulary only, never on the batch, so
 * a row's sample does not depend on the rest of the batch. `npx deno task tune` measures the split
 * on the user's GPU instead (src/model/sampler_tune.ts); its pick goes over this rule.
 */
export const SPLIT_MIN_VOCAB = 16384;
/** vec4 units a chunk of a split row takes ("auto"): 8 a lane at 64 lanes. */
export const SPLIT_UNITS = 512;
/** Top-k candidates a chunk hands to the merge (sampling.wgsl's KSLOTS): top-k ≤ this draws from them. */
export const SPLIT_SLOTS = 32;
/** Words per (row, chunk) in the split kernels' scratch: sampling.wgsl's CHUNK_HEAD + 2·KSLOTS. */
const CHUNK_WORDS = 8 + 2 * SPLIT_SLOTS;

/**
 * The built-in split of "auto" (before the clamp to the sampler's capacity and the row's vec4s):
 * ⌊⌈vocab / 4⌉ / SPLIT_UNITS⌋ workgroups a row on GPU-class adapters from SPLIT_MIN_VOCAB words,
 * else 1.
 */
export function builtInRowChunks(adapterClass: "cpu" | "gpu", vocab: number): number {
  return adapterClass === "cpu" || vocab < SPLIT_MIN_VOCAB
    ? 1
    : Math.floor(Math.ceil(vocab / 4) / SPLIT_UNITS);
}

export interface SamplerOptions {
  /**
   * Which kernel samples (default "auto"; tests pin either). "lane" still falls back to the
   * workgroup kernel where its loops would pass llvmpipe's limit (see Sampler.variantFor).
   */
  variant?: SamplerVariant;
  /** Rows per workgroup of the lane kernel (default 8). */
  laneWorkgroupSize?: number;
  /** Largest vocabulary "auto" samples with the lane kernel on CPU adapters. */
  laneMaxVocab?: number;
  /**
   * Threads per row of the workgroup kernel. Default: the size the tuner picked on this adapter
   * for `vocab` (src/model/sampler_tune.ts), else 32 on CPU adapters (llvmpipe runs a row on one
   * core, so more threads only add barrier and reduction work) and 64 on GPUs.
   */
  workgroupSize?: number;
  /**
   * The vocabulary this sampler will mostly sample (a generator's model's): the tuned workgroup
   * size for it is the default. Any vocabulary can still be sampled.
   */
  vocab?: number;
  /** Candidates held in workgroup memory (8 bytes each); a power of two ≥ 64. */
  capacity?: number;
  /**
   * Workgroups a row of the workgroup kernel is split over (sample_chunks, then sample_merge):
   * "auto" (default) takes the split the tuner measured on this adapter for the vocabulary at
   * this sampler's workgroup size (src/ops/tuned_picks.ts), else splits rows of SPLIT_MIN_VOCAB
   * words or more on GPU-class adapters into ⌊⌈vocab / 4⌉ / SPLIT_UNITS⌋ chunks and never on CPU
   * adapters (llvmpipe runs a workgroup on one core: a split only adds passes); a number splits
   * every workgroup-kernel row into that many (tests, the tuner); 1 never splits. At most
   * capacity / SPLIT_SLOTS and ⌈vocab / 4⌉.
   */
  rowChunks?: number | "auto";
  /**
   * Compile the sampling kernels only when `prepare` asks for them (default false: both now).
   * A generator whose steps sample inside the fused decode step never runs either, and on a CPU
   * adapter each costs seconds to compile.
   */
  lazy?: boolean;
}

const BINDINGS: readonly BindingKind[] = [
  "uniform",
  "read-only-storage",
  "read-only-storage",
  "storage",
  "storage",
  "storage",
  "storage",
  "storage",
];
const SPLIT_BINDINGS: readonly BindingKind[] = [...BINDINGS, "storage"];
const FLAG_TRUNCATED = 1, FLAG_APPEND = 2;

function isPow2(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

/**
 * Compiled sampling kernels plus the scratch they need (the repetition-penalty bitmap).
 *
 * A decode step, with no readback until the ids are wanted:
 *   gpu.write(params, packSamplingParams(rows.map((r) => ({ ...r.sampling, step }))));
 *   model.encodeForward(rec, ...);                      // writes logits [rows, vocab]
 *   sampler.encode(rec, { rows, vocab, logits, params, ids, logprobs,
 *                         history: { ids: seen, counts, capacity, append: true } });
 *   rec.submit(); const next = await readUint32(gpu.device, ids, rows);
 */
export class Sampler {
  private seen: GPUBuffer;
  /** Outgrown bitmaps stay alive: recorded plans may still bind them. */
  private retired: GPUBuffer[] = [];
  private dummies: GPUBuffer[];

  /** Split rows' per-chunk stats and candidates, grown on demand (outgrown ones retire too). */
  private chunkScratch: GPUBuffer;

  /** The kernels prepare has compiled (all at once unless the sampler is lazy). */
  private compiled = new Map<KernelSpec, Kernel>();

  private constructor(
    private gpu: Gpu,
    private sampleSpec: KernelSpec,
    private drawKernel: Kernel,
    private laneSpec: KernelSpec | null,
    private splitSpecs: readonly [KernelSpec, KernelSpec],
    private laneWg: number,
    private laneMaxVocab: number,
    private rowChunks: number | "auto",
    private maxChunks: number,
    /** "auto": the tuned split per vocabulary on this adapter (tuned_picks.ts), read at create. */
    private tunedChunks: Readonly<Record<string, number>>,
    /** Threads a row of the workgroup kernels. */
    readonly workgroupSize: number,
  ) {
    this.dummies = [0, 1, 2, 3].map((i) => gpu.zeros(4, `sampler:dummy${i}`));
    this.seen = gpu.zeros(4, "sampler:seen");
    this.chunkScratch = gpu.zeros(4, "sampler:chunks");
  }

  static async create(gpu: Gpu, options: SamplerOptions = {}): Promise<Sampler> {
    // The tuner's picks for this adapter, by vocabulary (tuned_picks.ts).
    const tuned = tunedSamplerPicks(gpu.ctx.info);
    const wg = options.workgroupSize ??
        (options.vocab !== undefined ? tuned[String(options.vocab)]?.workgroupSize : undefined) ??
        (gpu.adapterClass === "cpu" ? 32 : 64),
      cap = options.capacity ?? 1024;
    const variant = options.variant ?? "auto";
    const laneWg = options.laneWorkgroupSize ?? 8;
    if (!["auto", "lane", "workgroup"].includes(variant)) {
      throw new KernelArgumentError(`Sampler: variant "${variant}" is not auto, lane or workgroup`);
    }
    // "auto" keeps both kernels on CPU adapters and picks per call by vocabulary; "lane" keeps
    // the workgroup kernel too, for vocabularies past llvmpipe's loop limit (laneLoopBound).
    const laneMaxVocab = variant === "lane"
      ? Infinity
      : variant === "workgroup" || gpu.adapterClass !== "cpu"
      ? 0
      : options.laneMaxVocab ?? LANE_MAX_VOCAB;
    const useLane = laneMaxVocab > 0;
    if (!isPow2(laneWg) || laneWg > 256) {
      throw new KernelArgumentError(
        `Sampler: laneWorkgroupSize ${laneWg} must be a power of two in [1, 256]`,
      );
    }
    if (!isPow2In32To256(wg)) {
      throw new KernelArgumentError(
        `Sampler: workgroupSize ${wg} must be a power of two in [32, 256]`,
      );
    }
    if (!isPow2(cap) || cap < 64) {
      throw new KernelArgumentError(`Sampler: capacity ${cap} must be a power of two ≥ 64`);
    }
    const rowChunks = options.rowChunks ?? "auto";
    if (rowChunks !== "auto" && !(Number.isInteger(rowChunks) && rowChunks >= 1)) {
      throw new KernelArgumentError(
        `Sampler: rowChunks ${rowChunks} must be "auto" or an integer ≥ 1 (1 = never split)`,
      );
    }
    // cand (2·CAP words), table (16·WG), chunk_w and offs, res_f/res_u, sh_*.
    const bytes = 4 * (2 * cap + 16 * wg) + 8 * wg + 256 + 40;
    const limit = gpu.device.limits.maxComputeWorkgroupStorageSize;
    if (bytes > limit) {
      throw new GpuLimitError(
        `Sampler needs ${bytes} B of workgroup memory, the device allows ${limit}: ` +
          `use a smaller capacity or workgroupSize`,
      );
    }
    const sampleSpec: KernelSpec = {
      shader: "sampling",
      entry: "sample",
      bindings: BINDINGS,
      constants: { WG: wg, CAP: cap },
    };
    const laneSpec: KernelSpec | null = useLane
      ? {
        shader: "sampling_lane",
        entry: "sample_lane",
        bindings: BINDINGS,
        constants: { WG: laneWg },
      }
      : null;
    const split = (entry: string): KernelSpec => ({
      shader: "sampling",
      entry,
      bindings: SPLIT_BINDINGS,
      constants: { WG: wg, CAP: cap, KSLOTS: SPLIT_SLOTS },
    });
    const draws = await gpu.kernel({ shader: "sampling", entry: "draws", bindings: BINDINGS });
    // "auto" splits a vocabulary's rows as tuned where the tuner measured this workgroup size.
    const tunedChunks: Record<string, number> = {};
    for (const [v, p] of Object.entries(tuned)) {
      if (rowChunks === "auto" && p.workgroupSize === wg) tunedChunks[v] = p.rowChunks;
    }
    const s = new Sampler(
      gpu,
      sampleSpec,
      draws,
      laneSpec,
      [split("sample_chunks"), split("sample_merge")],
      laneWg,
      laneMaxVocab,
      rowChunks,
      cap / SPLIT_SLOTS, // the merge holds every chunk's candidates in CAP slots
      tunedChunks,
      wg,
    );
    if (!options.lazy) {
      // Split kernels only where some vocabulary would take them.
      const splits = rowChunks === 1 ||
          (rowChunks === "auto" && gpu.adapterClass === "cpu" &&
            !Object.values(tunedChunks).some((c) => c > 1))
        ? []
        : s.splitSpecs;
      await Promise.all(
        [sampleSpec, ...(laneSpec ? [laneSpec] : []), ...splits].map((k) => s.compile(k)),
      );
    }
    return s;
  }

  /** Compiles what encode needs for this vocabulary and history capacity (a lazy sampler's step). */
  async prepare(vocab: number, historyCapacity = 0): Promise<void> {
    await Promise.all(this.specsFor(vocab, historyCapacity).map((k) => this.compile(k)));
  }

  /** The kernels a call at this vocabulary and history capacity dispatches, in order. */
  private specsFor(vocab: number, historyCapacity: number): readonly KernelSpec[] {
    if (this.variantFor(vocab, historyCapacity) === "lane") return [this.laneSpec!];
    return this.chunksFor(vocab) > 1 ? this.splitSpecs : [this.sampleSpec];
  }

  /** The pipeline cache compiles a spec once; this keeps it where encode finds it. */
  private async compile(spec: KernelSpec): Promise<void> {
    this.compiled.set(spec, await this.gpu.kernel(spec));
  }

  /**
   * Workgroups each row of this vocabulary is split over (1: the one-workgroup kernel), by the
   * rowChunks option ("auto": the tuned split, else builtInRowChunks); the lane kernel's rows are
   * never split. Depends on the vocabulary only.
   */
  chunksFor(vocab: number, historyCapacity = 0): number {
    if (this.variantFor(vocab, historyCapacity) === "lane") return 1;
    const want = this.rowChunks !== "auto"
      ? this.rowChunks
      : this.tunedChunks[String(vocab)] ?? builtInRowChunks(this.gpu.adapterClass, vocab);
    return Math.max(1, Math.min(want, this.maxChunks, Math.ceil(vocab / 4)));
  }

  /**
   * The kernel encode uses for this vocabulary and history capacity: lane when the variant (or
   * "auto" on a CPU adapter up to laneMaxVocab) says so and its loops fit llvmpipe's limit
   * (laneLoopBound), else workgroup.
   */
  variantFor(vocab: number, historyCapacity = 0): "lane" | "workgroup" {
    return this.laneSpec && vocab <= this.laneMaxVocab &&
        laneLoopBound(vocab, historyCapacity) <= LLVMPIPE_LOOP_LIMIT
      ? "lane"
      : "workgroup";
  }

  /** Records one sampling step for every row. */
  encode(rec: Recorder, a: SampleArgs): void {
    const { rows, vocab } = a;
    if (!(Number.isInteger(rows) && rows > 0 && Number.isInteger(vocab) && vocab > 0)) {
      throw new KernelArgumentError(
        `sampling: rows=${rows}, vocab=${vocab} must be positive integers`,
      );
    }
    if (rows * vocab >= 2 ** 32 - 64) {
      throw new KernelArgumentError(
        `sampling: rows·vocab = ${rows * vocab} exceeds 32-bit indexing; split the batch`,
      );
    }
    const h = a.history;
    const cap = h?.capacity ?? 0;
    if (!Number.isInteger(cap) || cap < 0) {
      throw new KernelArgumentError(`sampling: history capacity ${cap} must be an integer ≥ 0`);
    }
    const need = this.need.bind(this);
    need("params", a.params, rows * PARAM_WORDS * 4);
    need("ids", a.ids, rows * 4);
    need("logprobs", a.logprobs, rows * 4 * (a.truncatedLogprobs ? 2 : 1));
    if (h) {
      need("history.ids", h.ids, rows * cap * 4);
      need("history.counts", h.counts, rows * 4);
    }
    const flags = (a.truncatedLogprobs ? FLAG_TRUNCATED : 0) | (h?.append ? FLAG_APPEND : 0);
    const lane = this.variantFor(vocab, cap) === "lane";
    const chunks = this.chunksFor(vocab, cap);
    const u = SamplingShapeParams.pack({ rows, vocab, hist_cap: cap, flags, chunks });
    const bindings = [
      null,
      this.vec4Binding(a.logits, rows * vocab),
      a.params,
      h && cap > 0 ? h.ids : this.dummies[0],
      h ? h.counts : this.dummies[1],
      this.seenBitmap(rows * vocab),
      a.ids,
      a.logprobs,
    ];
    const maxDim = this.gpu.device.limits.maxComputeWorkgroupsPerDimension;
    const kernels = this.specsFor(vocab, cap).map((k) => this.compiled.get(k));
    if (kernels.some((k) => !k)) {
      throw new KernelArgumentError(
        `sampling: the ${lane ? "lane" : "workgroup"} kernel is not compiled yet; ` +
          `await sampler.prepare(${vocab}${
            cap ? `, ${cap}` : ""
          }) before recording (a lazy sampler)`,
      );
    }
    if (chunks > 1) {
      const split = [...bindings, this.scratchFor(rows * chunks)];
      rec.dispatch(kernels[0]!, split, grid1d(rows * chunks, maxDim), u);
      rec.dispatch(kernels[1]!, split, grid1d(rows, maxDim), u);
      return;
    }
    rec.dispatch(
      kernels[0]!,
      bindings,
      grid1d(lane ? Math.ceil(rows / this.laneWg) : rows, maxDim),
      u,
    );
  }

  /** Records the uniform draw of each row into out[rows] f32 (to check the RNG against the CPU). */
  encodeDraws(rec: Recorder, rows: number, params: BufferRef, out: BufferRef): void {
    if (!(Number.isInteger(rows) && rows > 0)) {
      throw new KernelArgumentError(`sampling draws: rows=${rows} must be a positive integer`);
    }
    this.need("params", params, rows * PARAM_WORDS * 4);
    this.need("out", out, rows * 4);
    const [d0, d1, d2, d3] = this.dummies;
    const u = SamplingShapeParams.pack({ rows, vocab: 1, hist_cap: 0, flags: 0, chunks: 1 });
    rec.dispatch(
      this.drawKernel,
      [null, d0, params, d1, d2, this.seen, d3, out],
      grid1d(rows, this.gpu.device.limits.maxComputeWorkgroupsPerDimension),
      u,
    );
  }

  destroy(): void {
    for (const b of [this.seen, this.chunkScratch, ...this.retired, ...this.dummies]) b.destroy();
    this.retired = [];
  }

  /** The split kernels' scratch for this many (row, chunk) pairs, grown on demand. */
  private scratchFor(pairs: number): GPUBuffer {
    const bytes = pairs * CHUNK_WORDS * 4;
    if (this.chunkScratch.size < bytes) {
      this.retired.push(this.chunkScratch);
      this.chunkScratch = this.gpu.zeros(bytes / 4, "sampler:chunks");
    }
    return this.chunkScratch;
  }

  /** The penalty bitmap (one bit per logit), grown on demand and reused across calls. */
  private seenBitmap(elements: number): GPUBuffer {
    const bytes = (Math.ceil(elements / 32) + 1) * 4;
    if (this.seen.size < bytes) {
      this.retired.push(this.seen);
      this.seen = this.gpu.zeros(Math.ceil(bytes / 4), "sampler:seen");
    }
    return this.seen;
  }

  /** Checks a binding's size and its offset alignment (WebGPU's own error would be opaque). */
  private need(what: string, ref: BufferRef, bytes: number): void {
    const r = resolveRange(ref);
    const align = this.gpu.device.limits.minStorageBufferOffsetAlignment;
    if (r.offset % align !== 0) {
      throw new KernelArgumentError(
        `sampling: ${what} starts at byte ${r.offset}, not a multiple of ${align}; ` +
          `bind it at an aligned offset`,
      );
    }
    if (r.size < bytes) {
      throw new KernelArgumentError(
        `sampling: ${what} holds ${r.size} bytes but needs ${bytes}; allocate it larger`,
      );
    }
  }

  /** The logits bound as vec4s: the binding must cover whole vec4s, so it rounds up to 16 B. */
  private vec4Binding(ref: BufferRef, floats: number): BufferRef {
    this.need("logits", ref, floats * 4);
    const r = resolveRange(ref);
    const bytes = Math.ceil(floats / 4) * 16;
    if (r.offset + bytes > r.buffer.size) {
      throw new KernelArgumentError(
        `sampling: logits are read as whole vec4s, ${bytes} bytes from offset ${r.offset}, ` +
          `past the end of the ${r.buffer.size}-byte buffer. Allocate logits with gpu.zeros or ` +
          `the buffer pool, which pad to 16 bytes.`,
      );
    }
    return { buffer: r.buffer, offset: r.offset, size: bytes };
  }
}
