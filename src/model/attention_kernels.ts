// The model's attention kernels: the forward attention over the K/V cache in the form the
// adapter and the context call for (a lane per (row, head) on CPU adapters; a workgroup per
// (head, row) on GPUs, streaming its scores past workgroup memory, split over positions for few
// rows over a long cache), and a decode step's attention with RoPE, the cache write and Qwen2's
// biases or Qwen3's q/k norms folded in. ModelKernels owns one (ModelKernels.attn).
// Dims: N rows, NH heads, KV kv heads, D head_dim, P cache positions per slot.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { registerSubgroupTwins, SUBGROUP_TWIN } from "../gpu/shaders.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { tunedAttentionSplit } from "../ops/tuned_picks.ts";
import {
  ATTENTION_FIELDS,
  type AttentionFold,
  AttentionFoldParams,
  BIAS_FOLD_STORAGE,
  FOLD_WORKGROUP_BYTES,
  type FoldedInputs,
  foldSpan,
  QK_NORM_FOLD_STORAGE,
  ROPE_FOLD_STORAGE,
} from "./attention_fold.ts";

const ATT_WG = 64;
/**
 * The vec4 attention's shaders, whose workgroup sums and maxima have subgroup twins (NAME_sg:
 * shaders/workgroup_reduce_sg.wgsl, one barrier a reduce instead of 7), run where the device has
 * subgroups (Gpu.subgroups: Chrome's WebGPU).
 */
registerSubgroupTwins([
  "attention4",
  "attention4_rope",
  "attention4_rope_qkn",
  "attention4_rope_bias",
]);
/**
 * Workgroup bytes of the vec4 attention besides its scores: the reduce (the tree's 2 × WG floats,
 * the subgroup twin's 2 × 64), the query row, the lanes' partial outputs.
 */
export const VEC4_ATTENTION_BYTES = 4 * 2 * Math.max(ATT_WG, 64) + 16 * 64 + 16 * ATT_WG;
/** Positions per tile of the streaming attention kernels (attention4_flash, attn_dq, attn_dq4). */
export const FLASH_TILE = 256;
/**
 * The split decode attention (attention4_part + attention4_merge): used where a call's rows ×
 * heads are at most SPLIT_ROW_HEADS (decode at batch 1–4 of a 14-head model: one workgroup per
 * (head, row) would leave a GPU idle for a long context's whole loop) and the cache holds more
 * than SPLIT_MIN_SPAN positions; splits past a row's context return at once. Positions per
 * split: SPLIT_MIN_SPAN, or more so that a row has at most SPLIT_MAX splits (their partials are
 * scratch memory). Both thresholds are estimates for an H100; `npx deno task tune --attention`
 * measures a device's (src/model/attention_tune.ts), which AttentionKernels then use.
 */
export const SPLIT_ROW_HEADS = 64;
export const SPLIT_MIN_SPAN = 128;
const SPLIT_MAX = 64;
/**
 * Positions per split and splits per (row, head) for a cache of P positions (0 splits: none),
 * splits of at least `minSpan` positions (a multiple of 64).
 */
export function attentionSplits(
  P: number,
  minSpan = SPLIT_MIN_SPAN,
): { span: number; splits: number } {
  if (P <= minSpan) return { span: P, splits: 0 };
  const span = Math.max(minSpan, Math.ceil(P / SPLIT_MAX / 64) * 64);
  return { span, splits: Math.ceil(P / span) };
}

/** Invocations per workgroup of the lane kernels (llvmpipe runs 8 lanes per SIMD group). */
export const LANE_WG = 8;

/**
 * llvmpipe (Mesa 22.3) silently ends every loop of an invocation once its loops have run 65535
 * iterations in all; loops with a constant trip count of at most 32 are unrolled and do not
 * count. The lane kernels loop over positions (times the G heads sharing a kv head in dK/dV)
 * with head-dim loops of D4 = head_dim / 4 iterations, so they are used only where that stays
 * far below the cap: D4 ≤ 32 (unrolled) and positions · (G + 1) < 65535.
 */
export function laneAttentionFits(headDim: number, positions: number, kvGroups: number): boolean {
  return headDim % 4 === 0 && headDim / 4 <= 32 && positions * (kvGroups + 1) < 65535;
}

/** The forward attention's parameters (attention.wgsl, attention4.wgsl, attention_lane.wgsl). */
export const AttentionParams = uniformStruct("attention_params", "Params", ATTENTION_FIELDS);

/** Forward attention: "lane" (one invocation per (row, head), no barriers; CPU adapters) or "workgroup" (one workgroup per (row, head)). */
export type AttentionVariant = "lane" | "workgroup" | "flash";

/**
 * Whether the workgroup attention kernels that hold every position's score in workgroup memory
 * (attention4.wgsl's attention4 with vec4 heads, attention.wgsl otherwise) fit `positions`: their
 * scores plus the rest of their workgroup arrays (the query row, per-lane partial outputs).
 */
export function scoresFit(gpu: Gpu, positions: number, vec4: boolean, extra = 0): boolean {
  const rest = vec4 ? VEC4_ATTENTION_BYTES : 4 * ATT_WG;
  return 4 * positions + rest + extra <= gpu.device.limits.maxComputeWorkgroupStorageSize;
}

/** What AttentionKernels.create builds (ModelKernels.create takes these options too). */
/** One forward attention call (AttentionKernels.attention): shapes, buffers and options. */
export interface AttentionCall {
  /** Rows, query heads, kv heads, head dim. */
  N: number;
  NH: number;
  KV: number;
  D: number;
  /** Each row's (slot, pos). */
  meta: BufferRef;
  /** q [N, NH·D]. */
  q: BufferRef;
  /** The K and V caches [S, KV, P, D]. */
  kc: BufferRef;
  vc: BufferRef;
  /** out [N, NH·D] and lse [N, NH]. */
  out: BufferRef;
  lse: BufferRef;
  /** The split decode attention's scratch (splitScratchFloats); none: never split. */
  parts?: { o: BufferRef; ml: BufferRef } | null;
  /** The most positions any row attends to (default and cap: the cache's). */
  context?: number;
  /** A decode step's folded inputs (see attention). */
  fold?: FoldedInputs;
}

export interface AttentionOptions {
  /** The model's head_dim: vec4 kernels where it is a multiple of 4, at most 256. */
  headDim?: number;
  /** The form asked for (default lane on CPU adapters, workgroup on GPUs); see create. */
  attentionVariant?: AttentionVariant;
  /** Query heads per kv head: 2 takes the lane kernel's pair entry. */
  queryGroup?: number;
  /**
   * Decode attention split over positions for few rows × heads (attention4_part, default on
   * wherever the workgroup or flash vec4 kernels run and the cache is long enough).
   */
  attentionSplit?: boolean;
  /**
   * The split's thresholds: calls of at most `splitRowHeads` rows × heads split (0: none), over
   * splits of at least `splitMinSpan` positions (a multiple of 64). Default: this adapter's tuned
   * pick (src/ops/tuned_picks.ts), else SPLIT_ROW_HEADS and SPLIT_MIN_SPAN.
   */
  splitRowHeads?: number;
  splitMinSpan?: number;
  /**
   * Also decode attention with the most of this folded in that the model and adapter allow
   * (attention's `fold`; default "none"): "rope", RoPE and the cache write (attention4_rope.wgsl:
   * the workgroup vec4 kernels, ROPE_FOLD_STORAGE storage buffers a stage); "rope-bias", on a
   * model with q/k/v biases (`qkvBias`: Qwen2), those too (attention4_rope_bias.wgsl,
   * BIAS_FOLD_STORAGE); "qk-norm", the most: on a model with q/k norms (`qkNorm`: Qwen3),
   * those too (attention4_rope_qkn.wgsl, QK_NORM_FOLD_STORAGE), on one with biases, them.
   */
  attentionFold?: AttentionFold;
  qkNorm?: boolean;
  qkvBias?: boolean;
}

export class AttentionKernels {
  private constructor(
    private k: {
      attention: Kernel;
      attnPart?: Kernel;
      attnMerge?: Kernel;
      attnRope?: Kernel;
      attnRopePart?: Kernel;
    },
    private maxPerDim: number,
    readonly cachePositions: number,
  ) {}

  /**
   * The split decode attention's positions per split and splits per (row, head); splits 0 where
   * it is off (lane attention, scalar heads, short caches, `attentionSplit: false`).
   */
  attnSplit = { span: 0, splits: 0 };
  /** The most rows × heads a call may have to be split (the split scratch holds this many). */
  splitRowHeads = SPLIT_ROW_HEADS;
  /** Query heads one lane of the lane attention takes (2 for its pair entry), else 1. */
  private laneGroup = 1;
  /** The forward attention kernel in use; the backward's dQ kernel follows it. */
  attentionVariant: AttentionVariant = "workgroup";
  /** Whether the vec4 attention kernels run their subgroup twins (the device has subgroups). */
  attentionSubgroups = false;

  /** Floats of the split attention's partial outputs and (max, Σ exp) pairs (0 where off). */
  splitScratchFloats(headDim: number): { o: number; ml: number } {
    const n = this.splitRowHeads * this.attnSplit.splits;
    return { o: n * headDim, ml: 2 * n };
  }

  /** `cachePositions` (P) bounds the context: attention keeps P scores in workgroup memory. */
  static async create(
    gpu: Gpu,
    cachePositions: number,
    opts: AttentionOptions = {},
  ): Promise<AttentionKernels> {
    // vec4 attention where head_dim allows: a multiple of 4, at most 256. CPU adapters take the
    // barrier-free lane kernel (attention_lane.wgsl), GPUs the workgroup-parallel attention4.
    // Where the scores of every position do not fit workgroup memory, vec4 heads stream them
    // (attention4_flash); the plain kernel has no such form, so there the context is refused.
    const vec4Attention = opts.headDim !== undefined && opts.headDim % 4 === 0 &&
      opts.headDim <= 256;
    const asked = opts.attentionVariant ?? (gpu.adapterClass === "cpu" ? "lane" : "workgroup");
    const lane = vec4Attention && laneAttentionFits(opts.headDim!, cachePositions, 1) &&
      asked === "lane";
    const flash = vec4Attention && !lane &&
      (asked === "flash" || !scoresFit(gpu, cachePositions, true));
    if (!vec4Attention && !scoresFit(gpu, cachePositions, false)) {
      throw new KernelArgumentError(
        `maxLen ${cachePositions} exceeds what attention can hold in workgroup memory on this adapter ` +
          `(${gpu.device.limits.maxComputeWorkgroupStorageSize} bytes) for head_dim ${opts.headDim}: ` +
          `only heads of a multiple of 4 (at most 256) stream longer contexts`,
      );
    }
    // Two query heads per kv head: the lane kernel's pair entry loads each K/V vector once for both.
    const pair = lane && opts.queryGroup === 2;
    // The vec4 attention's subgroup twins where the device has subgroups.
    const sg = gpu.subgroups ? SUBGROUP_TWIN : "";
    // The vec4 attention's head_dim / 4, a pipeline constant (its head loops unroll).
    const HD4 = vec4Attention ? opts.headDim! / 4 : 0;
    const s = gpu.kernelOf.bind(gpu);
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const attention = await (
      pair
        ? s("attention_lane", "attention_lane_g2", [u, ro, ro, ro, ro, rw, rw], {
          WG: LANE_WG,
          D4: opts.headDim! / 4,
        })
        : lane
        ? s("attention_lane", "attention_lane", [u, ro, ro, ro, ro, rw, rw], {
          WG: LANE_WG,
          D4: opts.headDim! / 4,
        })
        : flash
        ? s(`attention4${sg}`, "attention4_flash", [u, ro, ro, ro, ro, rw, rw], {
          WG: ATT_WG,
          HD4,
          TILE: FLASH_TILE,
        })
        : vec4Attention
        ? s(`attention4${sg}`, "attention4", [u, ro, ro, ro, ro, rw, rw], {
          WG: ATT_WG,
          HD4,
          MAXP: cachePositions,
        })
        : s("attention", "attention", [u, ro, ro, ro, ro, rw, rw], {
          WG: ATT_WG,
          MAXP: cachePositions,
        })
    );
    const tuned = tunedAttentionSplit(gpu.ctx.info);
    const rowHeads = opts.splitRowHeads ?? tuned?.rowHeads ?? SPLIT_ROW_HEADS;
    const minSpan = opts.splitMinSpan ?? tuned?.minSpan ?? SPLIT_MIN_SPAN;
    if (
      !(Number.isInteger(rowHeads) && rowHeads >= 0) ||
      !(Number.isInteger(minSpan) && minSpan >= 64 && minSpan % 64 === 0)
    ) {
      throw new KernelArgumentError(
        `attention split: splitRowHeads ${rowHeads} must be an integer ≥ 0 and splitMinSpan ${minSpan} a multiple of 64`,
      );
    }
    const split = vec4Attention && !lane && (opts.attentionSplit ?? true) && rowHeads > 0
      ? attentionSplits(cachePositions, minSpan)
      : { span: 0, splits: 0 };
    const [attnPart, attnMerge] = split.splits > 0
      ? await Promise.all([
        s(`attention4${sg}`, "attention4_part", [u, ro, ro, ro, ro, rw, rw], {
          WG: ATT_WG,
          HD4,
          TILE: FLASH_TILE,
          SPAN: split.span,
        }),
        s("attention4_merge", "attention4_merge", [u, ro, ro, ro, rw, rw], {
          WG: ATT_WG,
          SPAN: split.span,
        }),
      ])
      : [undefined, undefined];
    const storage = gpu.device.limits.maxStorageBuffersPerShaderStage;
    const wanted = opts.attentionFold ?? "none";
    const fold: AttentionFold =
      wanted === "none" || !vec4Attention || lane || storage < ROPE_FOLD_STORAGE
        ? "none"
        : wanted === "qk-norm" && opts.qkNorm && storage >= QK_NORM_FOLD_STORAGE
        ? "qk-norm"
        : (wanted === "qk-norm" || wanted === "rope-bias") && opts.qkvBias &&
            storage >= BIAS_FOLD_STORAGE
        ? "rope-bias"
        : "rope";
    const foldShader =
      (fold === "qk-norm"
        ? "attention4_rope_qkn"
        : fold === "rope-bias"
        ? "attention4_rope_bias"
        : "attention4_rope") + sg;
    const foldBindings: BindingKind[] = [u, ro, ro, ro, ro, ro, rw, rw, rw, rw];
    if (fold !== "rope") foldBindings.push(ro); // the norms' or the biases' range
    // The fold holds more in workgroup memory: it streams the scores where attention4 just fits.
    const foldFlash = flash || !scoresFit(gpu, cachePositions, true, FOLD_WORKGROUP_BYTES[fold]);
    const [attnRope, attnRopePart] = fold !== "none"
      ? await Promise.all([
        s(foldShader, foldFlash ? "attention4_rope_flash" : "attention4_rope", foldBindings, {
          WG: ATT_WG,
          HD4,
          ...(foldFlash ? { TILE: FLASH_TILE } : { MAXP: cachePositions }),
        }),
        split.splits > 0
          ? s(foldShader, "attention4_rope_part", foldBindings, {
            WG: ATT_WG,
            HD4,
            TILE: FLASH_TILE,
            SPAN: split.span,
          })
          : undefined,
      ])
      : [undefined, undefined];
    const k = new AttentionKernels(
      { attention, attnPart, attnMerge, attnRope, attnRopePart },
      gpu.device.limits.maxComputeWorkgroupsPerDimension,
      cachePositions,
    );
    k.attnSplit = split;
    k.splitRowHeads = rowHeads;
    k.attentionFold = fold;
    k.maxBinding = gpu.maxBindingBytes;
    k.attentionVariant = lane ? "lane" : flash ? "flash" : "workgroup";
    k.laneGroup = pair ? 2 : 1;
    k.attentionSubgroups = sg !== "" && vec4Attention && !lane;
    return k;
  }

  private grid(n: number, wg: number): [number, number] {
    return grid1d(Math.ceil(n / wg), this.maxPerDim);
  }

  private attnFields(N: number, NH: number, KV: number, D: number) {
    return { N, NH, KV, D, P: this.cachePositions, scale: 1 / Math.sqrt(D) };
  }

  private attnUniform(N: number, NH: number, KV: number, D: number): ArrayBuffer {
    return AttentionParams.pack(this.attnFields(N, NH, KV, D));
  }

  /**
   * out [N, NH·D] = causal attention of q over the cache; lse [N, NH] saved. With `parts` (the
   * split scratch, splitScratchFloats), N · NH ≤ SPLIT_ROW_HEADS and a `context` (the most
   * positions any row can attend to, at most the cache's) over one split, split over positions.
   * With `fold` (a decode step: every row its own slot's one new position; attentionFold not
   * "none"), q and k are the raw projections: q and k rotated by each row's position as
   * ropeStore does (after Qwen2's biases, attentionFold "rope-bias", or Qwen3's per-head norms,
   * "qk-norm"), k and v written into the caches at (slot, pos), all in the attention's dispatch;
   * q and k are left as they are.
   */
  attention(rec: Recorder, call: AttentionCall) {
    const { N, NH, KV, D, meta, q, kc, vc, out, lse, parts, fold } = call;
    if (fold) {
      this.attentionFolded(rec, call, fold);
      return;
    }
    const { attnPart, attnMerge } = this.k;
    const splits = this.splitsFor(call);
    if (parts && attnPart && attnMerge && splits > 1) {
      const u = this.attnUniform(N, NH, KV, D);
      rec.dispatch(attnPart, [null, meta, q, kc, vc, parts.o, parts.ml], [NH, N, splits], u);
      rec.dispatch(attnMerge, [null, meta, parts.o, parts.ml, out, lse], [NH, N, 1], u);
      return;
    }
    if (this.attentionVariant === "lane") {
      if (NH !== KV * this.laneGroup && this.laneGroup > 1) {
        throw new KernelArgumentError(
          `attention: ${NH} heads over ${KV} kv heads; this kernel takes ${this.laneGroup} per kv head`,
        );
      }
      rec.dispatch(
        this.k.attention,
        [null, meta, q, kc, vc, out, lse],
        this.grid(N * NH / this.laneGroup, LANE_WG),
        this.attnUniform(N, NH, KV, D),
      );
      return;
    }
    const z = Math.ceil(N / 65535);
    rec.dispatch(
      this.k.attention,
      [null, meta, q, kc, vc, out, lse],
      [NH, Math.min(N, 65535), z],
      this.attnUniform(N, NH, KV, D),
    );
  }

  /** Splits of the split decode attention for this call (0 or 1: one workgroup per (head, row)). */
  private splitsFor(call: AttentionCall): number {
    const { span } = this.attnSplit;
    if (!call.parts || span === 0 || call.N * call.NH > this.splitRowHeads) return 0;
    return Math.ceil(Math.min(call.context ?? Infinity, this.cachePositions) / span);
  }

  /**
   * What attention's `fold` does of a decode step's attention inputs: "none" where it cannot record
   * (not asked for, or it does not apply), "rope" (RoPE and the cache write), "rope-bias" (Qwen2's
   * q/k/v biases added first too), "qk-norm" (Qwen3's q/k norms first too).
   */
  attentionFold: AttentionFold = "none";
  /** The largest storage binding (the fold's ranges must fit one). */
  private maxBinding = 0;

  /** attention's folded form (its `fold`): attention4_rope(_bias, _qkn).wgsl. */
  private attentionFolded(rec: Recorder, call: AttentionCall, qkv: FoldedInputs) {
    const { N, NH, KV, D, meta, q, kc, vc, out, lse, parts } = call;
    const { attnRope, attnRopePart, attnMerge } = this.k;
    if (!attnRope) {
      throw new KernelArgumentError(
        "attention's fold: create the kernels with an attentionFold (and see what it became)",
      );
    }
    const withNorms = this.attentionFold === "qk-norm";
    const withBiases = this.attentionFold === "rope-bias";
    if (withNorms !== (qkv.norms !== undefined) || withBiases !== (qkv.biases !== undefined)) {
      throw new KernelArgumentError(
        `attention's fold: these kernels fold ${this.attentionFold}; ` +
          (withNorms
            ? "pass the q/k norms and no biases"
            : withBiases
            ? "pass the q/k/v biases and no norms"
            : "they take no q/k norms or biases"),
      );
    }
    const u = this.attnUniform(N, NH, KV, D);
    const span = (what: string, refs: BufferRef[]) => {
      const s = foldSpan(refs, this.maxBinding);
      if (!s) {
        throw new KernelArgumentError(
          `attention's fold: the ${what} must lie in one buffer, in order (see foldSpan)`,
        );
      }
      return s;
    };
    const rope = span("RoPE tables", [qkv.cos, qkv.sin]);
    const norms = qkv.norms && span("q/k norm weights", [qkv.norms.q, qkv.norms.k]);
    const biases = qkv.biases && span("q/k/v biases", [qkv.biases.q, qkv.biases.k, qkv.biases.v]);
    const uf = AttentionFoldParams.pack({
      ...this.attnFields(N, NH, KV, D),
      sin_at: rope.at[1],
      eps: qkv.norms?.eps ?? 0,
      kn_at: norms?.at[1] ?? 0,
      kb_at: biases?.at[1] ?? 0,
      vb_at: biases?.at[2] ?? 0,
    });
    const tail = norms ? [norms.range] : biases ? [biases.range] : [];
    const inputs = [meta, q, qkv.k, qkv.v, rope.range, kc, vc];
    const splits = this.splitsFor(call);
    if (parts && attnRopePart && attnMerge && splits > 1) {
      const partials = [parts.o, parts.ml];
      rec.dispatch(attnRopePart, [null, ...inputs, ...partials, ...tail], [NH, N, splits], uf);
      rec.dispatch(attnMerge, [null, meta, parts.o, parts.ml, out, lse], [NH, N, 1], u);
      return;
    }
    const z = Math.ceil(N / 65535);
    rec.dispatch(attnRope, [null, ...inputs, out, lse, ...tail], [NH, Math.min(N, 65535), z], uf);
  }
}
