// Loss heads on the GPU: masked cross-entropy (SFT) and the GRPO policy loss (PPO clip ε_low/ε_high,
// verl's dual clip, optional k3 KL to a reference policy), each writing dL/dlogits [rows, V] for
// the backward pass and per-row stats whose totals (summed on the GPU, across micro-batches when
// asked) become the metrics: loss, clip fractions, approximate KL, entropy.
//
// Use: pack rows on the CPU (`loss.pack(batch)`, coefficients over the whole mini-batch), upload
// them (gpu.upload), `encode` after the forward that produced the logits, submit, and read
// `readMetrics()` once per step. See loss_rows.ts for the aggregation modes.

import { type BufferRef, resolveRange } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { registerSubgroupTwins, SUBGROUP_TWIN } from "../gpu/shaders.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { isPow2In32To256, tunedLossWorkgroupSize } from "../ops/tuned_picks.ts";
import { TrainConfigError } from "./errors.ts";
import {
  type CrossEntropyBatch,
  LOSS_AGG_MODES,
  type LossAggMode,
  packCrossEntropyRows,
  packPolicyRows,
  type PolicyBatch,
  ROW_FLOATS,
} from "./loss_rows.ts";

/**
 * Lanes per row (LossHeadOptions.workgroupSize's default): on a GPU a lane's share of a
 * 151,936-word row is a chain of cols / WG dependent steps, so more lanes shorten it; on a CPU
 * adapter a workgroup runs on one core, where more lanes only add reduction work.
 */
export const LOSS_WG = { cpu: 64, gpu: 256 } as const;
/**
 * The heads' shader, and its subgroup twin (losses_sg): the reductions of loss_reduce.wgsl
 * through subgroup operations (loss_reduce_sg.wgsl).
 */
const LOSS_SHADER = "losses";
registerSubgroupTwins([LOSS_SHADER], { loss_reduce: "loss_reduce_sg" });
/** Dual clip "off": larger than any −A·c that matters, finite so f32 arithmetic stays defined. */
const NO_DUAL_CLIP = 3e38;

/**
 * shaders/losses.wgsl's parameters (cross_entropy, policy_loss): rows of `cols` logits; in_place:
 * the gradient overwrites the logits; use_ref: the rows' reference log-probs are read (k3 KL);
 * PPO's clip range, clip_c the dual-clip c (verl clip_ratio_c; a huge value turns it off), the
 * KL coefficient, and inv_temp = 1/T (the loss reads logits z as z/T, the sampling temperature of
 * the log-probs it compares with).
 */
export const LossParams = uniformStruct("loss_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["in_place", "u32"],
  ["use_ref", "u32"],
  ["eps_low", "f32"],
  ["eps_high", "f32"],
  ["clip_c", "f32"],
  ["kl_coef", "f32"],
  ["inv_temp", "f32"],
]);

/** shaders/losses.wgsl's loss_totals parameters: accumulate 1 adds the sums to the totals. */
export const LossTotalsParams = uniformStruct("loss_totals_params", "TotalsParams", [
  ["rows", "u32"],
  ["accumulate", "u32"],
]);

export interface LossEncodeArgs {
  /** Rows in this call (≤ maxRows). */
  readonly rows: number;
  /** Packed rows [rows × 8] from `pack(...)`, uploaded to the GPU. */
  readonly rowData: BufferRef;
  /** Logits [rows, V], f32. */
  readonly logits: BufferRef;
  /**
   * Where dL/dlogits [rows, V] goes, or "in-place" to overwrite the logits with it (halves the
   * memory of a large vocabulary; the logits are gone afterwards).
   */
  readonly dlogits: BufferRef | "in-place";
  /** Add this call's totals to the previous ones (micro-batches of one step); default false. */
  readonly accumulate?: boolean;
}

export interface LossHeadOptions {
  /** Most rows one encode covers (sizes the per-row stats buffer). */
  readonly maxRows: number;
  readonly vocabSize: number;
  /**
   * Softmax temperature T > 0 (default 1): log-probs, entropy and the loss are of logits/T, the
   * distribution an RL rollout sampled from at that temperature (its old log-probs are of it too).
   */
  readonly temperature?: number;
  /**
   * Lanes per row, a power of two in [32, 256] (default: this adapter's tuned pick at this
   * vocabulary, src/train/loss_tune.ts, else LOSS_WG of the adapter's class).
   */
  readonly workgroupSize?: number;
  /**
   * Run the heads' subgroup twin (shaders/losses_sg: the workgroup reductions through subgroup
   * operations, one barrier each instead of log2(WG) + 1); default: where the adapter has
   * subgroups (Gpu.subgroups, Chrome's WebGPU). True on an adapter without them is an error.
   */
  readonly subgroups?: boolean;
}

/** What both heads are made of: kernels, per-row stats and totals. */
interface HeadParts {
  readonly gpu: Gpu;
  readonly kernel: Kernel;
  readonly totalsKernel: Kernel;
  readonly maxRows: number;
  readonly vocabSize: number;
  readonly temperature: number;
  /** Lanes a row. */
  readonly workgroupSize: number;
  /** Whether the kernels are the subgroup twins. */
  readonly subgroups: boolean;
  /** Per-row stats [maxRows, 8]; see shaders/losses.wgsl for the columns. */
  readonly rowStats: GPUBuffer;
  /** [8] column sums. */
  readonly totals: GPUBuffer;
  /** Bound as dlogits when the gradient goes in place. */
  readonly dummy: GPUBuffer;
}

async function buildHead(gpu: Gpu, entry: string, o: LossHeadOptions): Promise<HeadParts> {
  if (!Number.isInteger(o.maxRows) || o.maxRows <= 0) {
    throw new TrainConfigError(
      "maxRows",
      `${o.maxRows} must be a positive integer (token rows per call)`,
    );
  }
  if (!Number.isInteger(o.vocabSize) || o.vocabSize <= 0) {
    throw new TrainConfigError("vocabSize", `${o.vocabSize} must be the positive logits width`);
  }
  const temperature = o.temperature ?? 1;
  if (!(temperature > 0) || !Number.isFinite(temperature)) {
    throw new TrainConfigError(
      "temperature",
      `${temperature} must be a finite number > 0 (the sampling temperature; greedy rollouts have no log-probs to compare)`,
    );
  }
  const WG = o.workgroupSize ?? tunedLossWorkgroupSize(gpu.ctx.info, o.vocabSize) ??
    LOSS_WG[gpu.adapterClass];
  if (!isPow2In32To256(WG)) {
    throw new TrainConfigError("workgroupSize", `${WG} must be a power of two in [32, 256]`);
  }
  const subgroups = o.subgroups ?? gpu.subgroups;
  if (subgroups && !gpu.subgroups) {
    throw new TrainConfigError(
      "subgroups",
      "true, but this adapter has no subgroup operations (Gpu.subgroups); leave it unset",
    );
  }
  const shader = subgroups ? LOSS_SHADER + SUBGROUP_TWIN : LOSS_SHADER;
  const constants = { WG };
  const [kernel, totalsKernel] = await Promise.all([
    gpu.kernel({
      shader,
      entry,
      bindings: ["uniform", "read-only-storage", "storage", "storage", "storage"],
      constants,
    }),
    gpu.kernel({
      shader,
      entry: "loss_totals",
      bindings: ["uniform", "read-only-storage", "storage"],
      constants,
    }),
  ]);
  return {
    gpu,
    kernel,
    totalsKernel,
    maxRows: o.maxRows,
    vocabSize: o.vocabSize,
    temperature,
    workgroupSize: WG,
    subgroups,
    rowStats: gpu.zeros(o.maxRows * ROW_FLOATS, "loss:row-stats"),
    totals: gpu.zeros(8, "loss:totals"),
    dummy: gpu.zeros(4, "loss:no-dlogits"),
  };
}

/** Encoding, checks and totals shared by both heads. */
abstract class LossHead {
  protected constructor(protected readonly parts: HeadParts) {}

  get maxRows(): number {
    return this.parts.maxRows;
  }

  get vocabSize(): number {
    return this.parts.vocabSize;
  }

  /** Lanes a row (the option, else this adapter's tuned pick at this vocabulary, else LOSS_WG). */
  get workgroupSize(): number {
    return this.parts.workgroupSize;
  }

  /** Whether the heads run their subgroup twin (losses_sg). */
  get subgroups(): boolean {
    return this.parts.subgroups;
  }

  /** Per-row stats [maxRows, 8] of the last encode (column 7: log-prob of the target). */
  get rowStats(): GPUBuffer {
    return this.parts.rowStats;
  }

  /** The four Params words after rows/cols/in_place/use_ref: clip and KL settings. */
  protected abstract lossParams(): [number, number, number, number];
  protected abstract usesRef(): boolean;

  /** Records the loss, its gradient and the totals for `args.rows` rows. */
  encode(rec: Recorder, args: LossEncodeArgs): void {
    const { rows } = args;
    this.check(args);
    const inPlace = args.dlogits === "in-place";
    const [epsLow, epsHigh, clipC, kl] = this.lossParams();
    const u = LossParams.pack({
      rows,
      cols: this.vocabSize,
      in_place: inPlace ? 1 : 0,
      use_ref: this.usesRef() ? 1 : 0,
      eps_low: epsLow,
      eps_high: epsHigh,
      clip_c: clipC,
      kl_coef: kl,
      inv_temp: 1 / this.parts.temperature,
    });
    const p = this.parts;
    const maxPerDim = p.gpu.device.limits.maxComputeWorkgroupsPerDimension;
    const bindings = [
      null,
      args.rowData,
      args.logits,
      args.dlogits === "in-place" ? p.dummy : args.dlogits,
      p.rowStats,
    ];
    rec.dispatch(p.kernel, bindings, grid1d(rows, maxPerDim), u);
    const accumulate = args.accumulate ? 1 : 0;
    const t = LossTotalsParams.pack({ rows, accumulate });
    rec.dispatch(p.totalsKernel, [null, p.rowStats, p.totals], [1], t);
  }

  /** The 8 totals (sums of the stats columns; column 7 is Σ mask·logp). */
  protected async readTotals(): Promise<Float32Array> {
    return await this.parts.gpu.readFloat32(this.parts.totals, 8);
  }

  destroy(): void {
    for (const b of [this.parts.rowStats, this.parts.totals, this.parts.dummy]) b.destroy();
  }

  private check(a: LossEncodeArgs): void {
    if (!Number.isInteger(a.rows) || a.rows <= 0 || a.rows > this.maxRows) {
      throw new KernelArgumentError(
        `loss: rows ${a.rows} must be in [1, ${this.maxRows}] (maxRows given to create)`,
      );
    }
    const need = (name: string, ref: BufferRef, bytes: number, hint: string) => {
      if (resolveRange(ref).size < bytes) {
        throw new KernelArgumentError(
          `loss: ${name} holds ${resolveRange(ref).size} bytes, needs ${bytes}; ${hint}`,
        );
      }
    };
    const maxBinding = this.parts.gpu.device.limits.maxStorageBufferBindingSize;
    if (a.rows * this.vocabSize * 4 > maxBinding) {
      throw new KernelArgumentError(
        `loss: ${a.rows} rows × ${this.vocabSize} logits exceed this adapter's ${maxBinding}-byte binding ` +
          `limit; encode at most ${Math.floor(maxBinding / 4 / this.vocabSize)} rows per call`,
      );
    }
    need(
      "rowData",
      a.rowData,
      a.rows * ROW_FLOATS * 4,
      "upload the packed rows of exactly these tokens",
    );
    need(
      "logits",
      a.logits,
      a.rows * this.vocabSize * 4,
      `logits are [rows, ${this.vocabSize}] f32`,
    );
    if (a.dlogits !== "in-place") {
      const z = resolveRange(a.logits), g = resolveRange(a.dlogits);
      if (z.buffer === g.buffer && z.offset < g.offset + g.size && g.offset < z.offset + z.size) {
        throw new KernelArgumentError(
          `loss: dlogits overlaps logits; pass dlogits: "in-place" to overwrite them`,
        );
      }
    }
    if (a.dlogits !== "in-place") {
      need(
        "dlogits",
        a.dlogits,
        a.rows * this.vocabSize * 4,
        `dlogits are [rows, ${this.vocabSize}] f32`,
      );
    }
  }
}

export interface CrossEntropyMetrics {
  /** Σ w·nll / normalizer: the loss whose gradient was written. */
  readonly loss: number;
  /** Rows with weight > 0. */
  readonly tokens: number;
  /** Mean negative log-likelihood over those rows (unweighted; exp of it is the perplexity). */
  readonly meanNll: number;
  /** Mean entropy of the predicted distribution over those rows. */
  readonly entropy: number;
}

/** Masked cross-entropy for SFT: ℓ = −log softmax(z)[target], weighted mean over tokens. */
export class CrossEntropyLoss extends LossHead {
  static async create(gpu: Gpu, o: LossHeadOptions): Promise<CrossEntropyLoss> {
    return new CrossEntropyLoss(await buildHead(gpu, "cross_entropy", o));
  }

  /** Packed rows; `scale` multiplies the loss and its gradient (e.g. a task weight). */
  pack(b: CrossEntropyBatch, scale = 1): Float32Array {
    return packCrossEntropyRows(b, { vocabSize: this.vocabSize, scale });
  }

  async readMetrics(): Promise<CrossEntropyMetrics> {
    const t = await this.readTotals();
    const tokens = t[6];
    return {
      loss: t[0],
      tokens,
      meanNll: tokens > 0 ? -t[7] / tokens : 0,
      entropy: tokens > 0 ? t[5] / tokens : 0,
    };
  }

  protected lossParams(): [number, number, number, number] {
    return [0, 0, 0, 0];
  }

  protected usesRef(): boolean {
    return false;
  }
}

export interface PolicyLossConfig {
  /** PPO ε below 1 (verl clip_ratio_low; default 0.2). */
  readonly clipLow?: number;
  /** PPO ε above 1 (verl clip_ratio_high; default 0.2; DAPO's clip-higher raises it). */
  readonly clipHigh?: number;
  /** Dual-clip c > 1 for negative advantages (verl clip_ratio_c; default 3); null turns it off. */
  readonly dualClip?: number | null;
  /** β of the k3 KL to the reference policy (default 0: no KL term, as in the paper). */
  readonly klCoef?: number;
  /** Report the k3 KL even when klCoef is 0 (needs refLogp); default: only when klCoef > 0. */
  readonly reportKl?: boolean;
  /** Aggregation of token losses (default token-mean, the paper's). */
  readonly aggregation?: LossAggMode;
  /** seq-mean-token-sum-norm's divisor: the max response length (constant across steps). */
  readonly normLength?: number;
}

export interface PolicyLossMetrics {
  /** pgLoss + klCoef·klLoss: the loss whose gradient was written. */
  readonly loss: number;
  /** Aggregated clipped surrogate (verl pg_loss). */
  readonly pgLoss: number;
  /** Aggregated k3 KL to the reference (verl kl_loss); 0 without reference log-probs. */
  readonly klLoss: number;
  /** Masked mean of [clipped surrogate > unclipped] (verl pg_clipfrac). */
  readonly clipFrac: number;
  /** Masked mean of [A < 0 and the dual clip bound applied] (verl pg_clipfrac_lower). */
  readonly clipFracLower: number;
  /** Masked mean of old_logp − logp, log-ratio clamped to ±20: the k1 estimate (verl ppo_kl). */
  readonly approxKl: number;
  /** Masked mean of the full-softmax entropy per token. */
  readonly entropy: number;
  /** Σ mask: tokens in the loss. */
  readonly tokens: number;
}

/**
 * The policy loss's defaults (the paper's released settings), declared once: resolvePolicyConfig
 * fills them in, and the run config's schema (src/rl/config.ts) takes its defaults from here.
 */
export const POLICY_LOSS_DEFAULTS = {
  clipLow: 0.2,
  clipHigh: 0.2,
  dualClip: 3,
  klCoef: 0,
  aggregation: "token-mean",
} as const satisfies Partial<PolicyLossConfig>;

/** Validated settings with defaults filled in. */
type ResolvedPolicyConfig = Required<Omit<PolicyLossConfig, "normLength">> & {
  normLength?: number;
};

function resolvePolicyConfig(c: PolicyLossConfig): ResolvedPolicyConfig {
  const r: ResolvedPolicyConfig = {
    clipLow: c.clipLow ?? POLICY_LOSS_DEFAULTS.clipLow,
    clipHigh: c.clipHigh ?? POLICY_LOSS_DEFAULTS.clipHigh,
    dualClip: c.dualClip === undefined ? POLICY_LOSS_DEFAULTS.dualClip : c.dualClip,
    klCoef: c.klCoef ?? POLICY_LOSS_DEFAULTS.klCoef,
    reportKl: c.reportKl ?? false,
    aggregation: c.aggregation ?? POLICY_LOSS_DEFAULTS.aggregation,
    normLength: c.normLength,
  };
  if (!(r.clipLow >= 0 && r.clipLow < 1)) {
    throw new TrainConfigError(
      "clipLow",
      `${r.clipLow} must lie in [0, 1): the ratio floor is 1 − ε`,
    );
  }
  if (!(r.clipHigh >= 0) || !Number.isFinite(r.clipHigh)) {
    throw new TrainConfigError("clipHigh", `${r.clipHigh} must be ≥ 0`);
  }
  if (r.dualClip !== null && !(r.dualClip > 1)) {
    throw new TrainConfigError(
      "dualClip",
      `${r.dualClip} must be > 1 (verl asserts clip_ratio_c > 1), or null to turn it off`,
    );
  }
  if (!(r.klCoef >= 0) || !Number.isFinite(r.klCoef)) {
    throw new TrainConfigError("klCoef", `${r.klCoef} must be ≥ 0`);
  }
  if (!LOSS_AGG_MODES.includes(r.aggregation)) {
    throw new TrainConfigError(
      "aggregation",
      `unknown mode "${r.aggregation}"; use one of ${LOSS_AGG_MODES.join(", ")}`,
    );
  }
  return r;
}

/** The GRPO / PPO policy loss per token with verl's definitions (see shaders/losses.wgsl). */
export class PolicyLoss extends LossHead {
  private constructor(parts: HeadParts, private readonly cfg: ResolvedPolicyConfig) {
    super(parts);
  }

  static async create(gpu: Gpu, o: LossHeadOptions & PolicyLossConfig): Promise<PolicyLoss> {
    const cfg = resolvePolicyConfig(o);
    return new PolicyLoss(await buildHead(gpu, "policy_loss", o), cfg);
  }

  get config(): Readonly<ResolvedPolicyConfig> {
    return this.cfg;
  }

  /** Packed rows of a whole mini-batch (slice rows × 8 floats per micro-batch). */
  pack(b: PolicyBatch, scale = 1): Float32Array {
    return packPolicyRows(
      { ...b, normLength: b.normLength ?? this.cfg.normLength },
      { mode: this.cfg.aggregation, vocabSize: this.vocabSize, needRef: this.usesRef(), scale },
    );
  }

  async readMetrics(): Promise<PolicyLossMetrics> {
    const t = await this.readTotals();
    const tokens = t[6];
    const mean = (x: number) => (tokens > 0 ? x / tokens : 0);
    return {
      loss: t[0] + this.cfg.klCoef * t[1],
      pgLoss: t[0],
      klLoss: t[1],
      clipFrac: mean(t[2]),
      clipFracLower: mean(t[3]),
      approxKl: mean(t[4]),
      entropy: mean(t[5]),
      tokens,
    };
  }

  protected lossParams(): [number, number, number, number] {
    const c = this.cfg;
    return [c.clipLow, c.clipHigh, c.dualClip ?? NO_DUAL_CLIP, c.klCoef];
  }

  protected usesRef(): boolean {
    return this.cfg.klCoef > 0 || this.cfg.reportKl;
  }
}
