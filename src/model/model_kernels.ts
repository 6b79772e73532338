// The model's own kernels (embedding gather, RMSNorm, RoPE, KV cache, attention, SwiGLU),
// compiled once per model shape; encode* only records dispatches. The attention's forms and
// folds are src/model/attention_kernels.ts (`attn`: callers record attention through it).
// Dims: N rows, C hidden, NH heads, KV kv heads, D head_dim, P cache positions per slot.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { registerSubgroupTwins, SUBGROUP_TWIN } from "../gpu/shaders.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import type { AttentionFold } from "./attention_fold.ts";
import {
  AttentionKernels,
  type AttentionOptions,
  type AttentionVariant,
} from "./attention_kernels.ts";

export {
  attentionSplits,
  type AttentionVariant,
  FLASH_TILE,
  LANE_WG,
  laneAttentionFits,
  scoresFit,
  SPLIT_ROW_HEADS,
  VEC4_ATTENTION_BYTES,
} from "./attention_kernels.ts";

const EW = 256;
const RED_WG = 64;
/**
 * RMSNorm's workgroup entries have subgroup twins (NAME_sg: shaders/workgroup_reduce_sg.wgsl, one
 * barrier a reduce instead of 7), run where the device has subgroups (Gpu.subgroups: Chrome's).
 */
registerSubgroupTwins(["rmsnorm", "rmsnorm_pair"]);

/** shaders/gather_rows.wgsl's parameters: out [rows, cols] gathered from src [srcRows, cols]. */
export const GatherRowsParams = uniformStruct("gather_rows_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["srcRows", "u32"],
]);

/** shaders/kv_copy.wgsl's parameters: `pairs` (from, to, n) triples, n ≤ maxN positions each. */
export const KvCopyParams = uniformStruct("kv_copy_params", "Params", [
  ["KV", "u32"],
  ["P", "u32"],
  ["D", "u32"],
  ["pairs", "u32"],
  ["maxN", "u32"],
]);

/** shaders/rmsnorm.wgsl's parameters. */
export const RmsNormParams = uniformStruct("rmsnorm_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["eps", "f32"],
]);

/** shaders/rmsnorm_pair.wgsl's parameters. */
export const RmsNormPairParams = uniformStruct("rmsnorm_pair_params", "PairParams", [
  ["rows0", "u32"],
  ["rows1", "u32"],
  ["cols", "u32"],
  ["eps", "f32"],
]);

/** shaders/rope.wgsl's rope entry: x [rows, heads, D] rotated by positions < maxPos. */
export const RopeParams = uniformStruct("rope_params", "Params", [
  ["rows", "u32"],
  ["heads", "u32"],
  ["D", "u32"],
  ["maxPos", "u32"],
]);

/** shaders/rope.wgsl's rope_store entry: q [rows, NH·D], k and v [rows, KV·D], P cache positions. */
export const RopeStoreParams = uniformStruct("rope_store_params", "StoreParams", [
  ["rows", "u32"],
  ["NH", "u32"],
  ["KV", "u32"],
  ["D", "u32"],
  ["P", "u32"],
]);

/** shaders/swiglu.wgsl's and swiglu_bwd.wgsl's parameters: n elements. */
export const SwigluParams = uniformStruct("swiglu_params", "Params", [["n", "u32"]]);

export class ModelKernels {
  private constructor(
    private k:
      & Record<"gather" | "rmsnorm" | "ropeInv" | "ropeStore" | "swiglu" | "kvCopy", Kernel>
      & { gatherHalf?: Kernel; rmsnormPair?: Kernel },
    /** The attention kernels (src/model/attention_kernels.ts). */
    readonly attn: AttentionKernels,
    private maxPerDim: number,
    readonly cachePositions: number,
  ) {}

  /** One invocation per row for RMSNorm (CPU adapters' default); a workgroup per row on GPUs. */
  private serialNorm = false;
  /** RMSNorm with one invocation per row ("rows", CPU adapters) or a workgroup per row; the backward follows. */
  normVariant: "rows" | "workgroup" = "workgroup";
  /** Whether RMSNorm's workgroup entries (and Qwen3's pair) run their subgroup twins. */
  normSubgroups = false;

  /** The split decode attention's positions per split and splits per (row, head) (attn's). */
  get attnSplit(): { span: number; splits: number } {
    return this.attn.attnSplit;
  }
  /** The forward attention kernel in use; the backward's dQ kernel follows it (attn's). */
  get attentionVariant(): AttentionVariant {
    return this.attn.attentionVariant;
  }
  /** What attention's `fold` does of a decode step's inputs (attn's attentionFold). */
  get attentionFold(): AttentionFold {
    return this.attn.attentionFold;
  }
  /** Whether the vec4 attention kernels run their subgroup twins (attn's). */
  get attentionSubgroups(): boolean {
    return this.attn.attentionSubgroups;
  }
  /** Floats of the split attention's partial outputs and (max, Σ exp) pairs (attn's). */
  splitScratchFloats(headDim: number): { o: number; ml: number } {
    return this.attn.splitScratchFloats(headDim);
  }

  /** `cachePositions` (P) bounds the context: attention keeps P scores in workgroup memory. */
  static async create(
    gpu: Gpu,
    cachePositions: number,
    opts: AttentionOptions & {
      normVariant?: "rows" | "workgroup";
      /** Also the gather of a half-float embedding (GpuModelOptions.halfBase). */
      halfGather?: boolean;
      /** Also two RMSNorms in one dispatch (rmsnormPair: Qwen3's q and k norms). */
      normPair?: boolean;
    } = {},
  ): Promise<ModelKernels> {
    const serial =
      (opts.normVariant ?? (gpu.adapterClass === "cpu" ? "rows" : "workgroup")) === "rows";
    // RMSNorm's subgroup twins where the device has subgroups.
    const sg = gpu.subgroups ? SUBGROUP_TWIN : "";
    const s = gpu.kernelOf.bind(gpu);
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const [attn, gather, rmsnorm, ropeInv, ropeStore, swiglu, kvCopy] = await Promise.all([
      AttentionKernels.create(gpu, cachePositions, opts),
      s("gather_rows", "gather_rows", [u, ro, ro, rw], { WG: EW }),
      serial
        ? s("rmsnorm", "rmsnorm_rows", [u, ro, ro, rw, rw], { WG: RED_WG })
        : s(`rmsnorm${sg}`, "rmsnorm", [u, ro, ro, rw, rw], { WG: RED_WG }),
      s("rope", "rope", [u, rw, ro, ro, ro], { WG: EW, SIGN: -1 }),
      s("rope", "rope_store", [u, rw, rw, ro, ro, ro, ro, rw, rw], { WG: EW }),
      s("swiglu", "swiglu", [u, ro, ro, rw], { WG: EW }),
      s("kv_copy", "kv_copy", [u, ro, rw], { WG: EW }),
    ]);
    const gatherHalf = opts.halfGather
      ? await s("gather_rows_hb", "gather_rows", [u, ro, ro, rw], { WG: EW })
      : undefined;
    const rmsnormPair = opts.normPair
      ? await s(
        serial ? "rmsnorm_pair" : `rmsnorm_pair${sg}`,
        serial ? "rmsnorm_pair_rows" : "rmsnorm_pair",
        [u, ro, ro, rw, rw, ro, ro, rw, rw],
        { WG: RED_WG },
      )
      : undefined;
    const k = new ModelKernels(
      { gather, rmsnorm, ropeInv, ropeStore, swiglu, kvCopy, gatherHalf, rmsnormPair },
      attn,
      gpu.device.limits.maxComputeWorkgroupsPerDimension,
      cachePositions,
    );
    k.serialNorm = serial;
    k.normVariant = serial ? "rows" : "workgroup";
    k.normSubgroups = sg !== "" && !serial;
    return k;
  }

  private grid(n: number, wg = EW): [number, number] {
    return grid1d(Math.ceil(n / wg), this.maxPerDim);
  }

  /**
   * Copies positions 0 .. n − 1 of slot `from` to slot `to` in one layer's cache [S, KV, P, D],
   * for each of `pairs` (from, to, n, 0) u32 quadruples (no slot both a source and a destination).
   */
  kvCopy(
    rec: Recorder,
    KV: number,
    D: number,
    pairs: number,
    maxN: number,
    pairBuf: BufferRef,
    cache: BufferRef,
  ) {
    if (pairs === 0 || maxN === 0) return;
    const u = KvCopyParams.pack({ KV, P: this.cachePositions, D, pairs, maxN });
    rec.dispatch(this.k.kvCopy, [null, pairBuf, cache], this.grid(pairs * KV * maxN * D), u);
  }

  /** out[r] = src[idx[r]] for rows of `cols` floats (`half`: src holds half floats). */
  gather(
    rec: Recorder,
    rows: number,
    cols: number,
    srcRows: number,
    src: BufferRef,
    idx: BufferRef,
    out: BufferRef,
    half = false,
  ) {
    const k = half ? this.k.gatherHalf : this.k.gather;
    if (!k) throw new KernelArgumentError("gather: no half-float kernel (create with halfGather)");
    const u = GatherRowsParams.pack({ rows, cols, srcRows });
    rec.dispatch(k, [null, src, idx, out], this.grid(rows * cols), u);
  }

  /** out = rmsnorm(x)·w per row; rstd[r] = 1/rms saved for the backward. */
  rmsnorm(
    rec: Recorder,
    rows: number,
    cols: number,
    eps: number,
    x: BufferRef,
    w: BufferRef,
    out: BufferRef,
    rstd: BufferRef,
  ) {
    const u = RmsNormParams.pack({ rows, cols, eps });
    rec.dispatch(this.k.rmsnorm, [null, x, w, out, rstd], this.normGrid(rows), u);
  }

  /** The grid of the norm kernels: an invocation per row (serial form) or a workgroup per row. */
  private normGrid(rows: number): [number, number] {
    return grid1d(this.serialNorm ? Math.ceil(rows / RED_WG) : rows, this.maxPerDim);
  }

  /**
   * Two RMSNorms of `cols`-wide rows in one dispatch (Qwen3's q and k norms), each as rmsnorm
   * computes it, bit for bit: rows0 rows of x0 with w0 into out0 / rstd0, rows1 of x1 with w1
   * into out1 / rstd1. Needs the kernels created with normPair.
   */
  rmsnormPair(
    rec: Recorder,
    cols: number,
    eps: number,
    a: { rows: number; x: BufferRef; w: BufferRef; out: BufferRef; rstd: BufferRef },
    b: { rows: number; x: BufferRef; w: BufferRef; out: BufferRef; rstd: BufferRef },
  ) {
    if (!this.k.rmsnormPair) {
      throw new KernelArgumentError("rmsnormPair: create the kernels with normPair");
    }
    const u = RmsNormPairParams.pack({ rows0: a.rows, rows1: b.rows, cols, eps });
    rec.dispatch(
      this.k.rmsnormPair,
      [null, a.x, a.w, a.out, a.rstd, b.x, b.w, b.out, b.rstd],
      this.normGrid(a.rows + b.rows),
      u,
    );
  }

  /** Rotates x [rows, heads, D] in place back by each row's position (the inverse RoPE, for gradients). */
  ropeInverse(
    rec: Recorder,
    rows: number,
    heads: number,
    D: number,
    maxPos: number,
    x: BufferRef,
    meta: BufferRef,
    cos: BufferRef,
    sin: BufferRef,
  ) {
    const u = RopeParams.pack({ rows, heads, D, maxPos });
    rec.dispatch(this.k.ropeInv, [null, x, meta, cos, sin], this.grid(rows * heads * D / 2), u);
  }

  /**
   * RoPE of q [N, NH·D] and k [N, KV·D] in place, and k and v [N, KV·D] written into the caches
   * [S, KV, P, D] at each row's (slot, pos): one dispatch (rope.wgsl rope_store).
   */
  ropeStore(
    rec: Recorder,
    N: number,
    NH: number,
    KV: number,
    D: number,
    meta: BufferRef,
    q: BufferRef,
    k: BufferRef,
    v: BufferRef,
    cos: BufferRef,
    sin: BufferRef,
    kc: BufferRef,
    vc: BufferRef,
  ) {
    const u = RopeStoreParams.pack({ rows: N, NH, KV, D, P: this.cachePositions });
    rec.dispatch(
      this.k.ropeStore,
      [null, q, k, v, meta, cos, sin, kc, vc],
      this.grid(N * (NH + KV) * D / 2),
      u,
    );
  }

  /** out = silu(g) · u elementwise. */
  swiglu(rec: Recorder, n: number, g: BufferRef, up: BufferRef, out: BufferRef) {
    rec.dispatch(this.k.swiglu, [null, g, up, out], this.grid(n), SwigluParams.pack({ n }));
  }
}
