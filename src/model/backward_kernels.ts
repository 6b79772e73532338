// Kernels of the backward pass (RMSNorm, SwiGLU, attention, KV gather, embedding, bias sums),
// compiled once per model shape; encode* only records dispatches.
// Dims: N rows, C hidden, NH heads, KV kv heads, D head_dim, S slots, P cache positions.

import type { BufferRef } from "../gpu/buffers.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { registerSubgroupTwins, SUBGROUP_TWIN } from "../gpu/shaders.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import { ATTENTION_FIELDS } from "./attention_fold.ts";
import {
  type AttentionVariant,
  FLASH_TILE,
  LANE_WG,
  laneAttentionFits,
  SwigluParams,
} from "./model_kernels.ts";

const EW = 256, RED = 64, ATT = 64;
/** The RMSNorm backward's workgroup entries' subgroup twin (where the device has subgroups). */
registerSubgroupTwins(["rmsnorm_bwd"]);

/** shaders/rmsnorm_bwd.wgsl's parameters. */
export const RmsNormBwdParams = uniformStruct("rmsnorm_bwd_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
]);

/** shaders/colsum.wgsl's parameters. */
export const ColsumParams = uniformStruct("colsum_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
]);

/** shaders/embedding_bwd.wgsl's parameters: `unique` tokens, rows of `cols` floats. */
export const EmbeddingBwdParams = uniformStruct("embedding_bwd_params", "Params", [
  ["unique", "u32"],
  ["cols", "u32"],
]);

/** shaders/attention_delta.wgsl's parameters: rows = N·NH. */
export const AttentionDeltaParams = uniformStruct("attention_delta_params", "Params", [
  ["rows", "u32"],
  ["D", "u32"],
]);

/**
 * The attention backward's parameters (attention_bwd*.wgsl): the forward's, and S the cache
 * slots (no kernel reads S now).
 */
export const AttentionBwdParams = uniformStruct("attention_bwd_params", "Params", [
  ...ATTENTION_FIELDS,
  ["S", "u32"],
]);

/** shaders/kv_gather.wgsl's parameters. */
export const KvGatherParams = uniformStruct("kv_gather_params", "Params", [
  ["N", "u32"],
  ["KV", "u32"],
  ["D", "u32"],
  ["P", "u32"],
]);

type Names =
  | "normX"
  | "normXAcc"
  | "normW"
  | "swiglu"
  | "colsum"
  | "embed"
  | "delta"
  | "dq"
  | "dkv"
  | "kvGather";

export class BackwardKernels {
  private constructor(
    private k: Record<Names, Kernel>,
    private maxPerDim: number,
    readonly P: number,
    readonly S: number,
  ) {}

  /**
   * `variant` "lane": the attention backward as one invocation per (row, head) for dQ and per
   * cache entry for dK/dV, vec4, no barriers (CPU adapters; needs head_dim % 4 == 0), or
   * "workgroup": a workgroup per (row, head) and per entry (GPUs).
   */
  static async create(
    gpu: Gpu,
    slots: number,
    cachePositions: number,
    headDim: number,
    variant: AttentionVariant = "workgroup",
    kvGroups = 1,
    normVariant: "rows" | "workgroup" = "workgroup",
  ): Promise<BackwardKernels> {
    // attn_dkv gives each head dim a lane: its workgroup is at least head_dim wide.
    const kvWg = Math.max(ATT, 2 ** Math.ceil(Math.log2(headDim)));
    if (kvWg > gpu.device.limits.maxComputeInvocationsPerWorkgroup) {
      throw new KernelArgumentError(
        `head_dim ${headDim} exceeds this adapter's workgroup size for the attention backward`,
      );
    }
    // The vec4 dQ and dK/dV kernels need head_dim a multiple of 4 and at most 4·64 (their row
    // caches); the scalar ones take the rest.
    const vec4Dkv = headDim % 4 === 0 && headDim <= 256;
    const lane = vec4Dkv && variant === "lane" &&
      laneAttentionFits(headDim, cachePositions, kvGroups);
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const s = gpu.kernelOf.bind(gpu);
    const norm: BindingKind[] = [u, ro, ro, ro, ro, rw];
    const normX = normVariant === "rows" ? "rmsnorm_bwd_x_rows" : "rmsnorm_bwd_x";
    // The workgroup entries reduce across lanes: their subgroup twin where the device has them.
    const normShader = normVariant === "rows" || !gpu.subgroups
      ? "rmsnorm_bwd"
      : "rmsnorm_bwd" + SUBGROUP_TWIN;
    const entries = await Promise.all([
      s(normShader, normX, norm, { WG: RED, ACCUM: 0 }),
      s(normShader, normX, norm, { WG: RED, ACCUM: 1 }),
      normVariant === "rows"
        ? s(normShader, "rmsnorm_bwd_w", norm, { WG: RED })
        : s(normShader, "rmsnorm_bwd_w_cols", norm, { WG: 256 }),
      s("swiglu_bwd", "swiglu_bwd", [u, ro, ro, ro, rw, rw], { WG: EW }),
      s("colsum", "colsum", [u, ro, rw], { WG: RED }),
      s("embedding_bwd", "embedding_bwd", [u, ro, ro, ro, ro, rw], { WG: EW }),
      s("attention_delta", "attention_delta", [u, ro, ro, rw], { WG: RED }),
      lane
        ? s("attention_bwd_lane", "attn_dq_lane", [u, ro, ro, ro, ro, ro, ro, ro, rw], {
          WG: LANE_WG,
          D4: headDim / 4,
        })
        : vec4Dkv
        ? s("attention_bwd4", "attn_dq4", [u, ro, ro, ro, ro, ro, ro, ro, rw], {
          WG: ATT,
          TILE: FLASH_TILE,
          HD4: headDim / 4,
        })
        : s("attention_bwd", "attn_dq", [u, ro, ro, ro, ro, ro, ro, ro, rw], {
          WG: ATT,
          TILE: FLASH_TILE,
        }),
      lane
        ? s("attention_bwd_kv_lane", "attn_dkv_lane", [u, ro, ro, ro, ro, ro, ro, ro, ro, rw, rw], {
          WG: LANE_WG,
          D4: headDim / 4,
        })
        : vec4Dkv
        ? s("attention_bwd_kv4", "attn_dkv4", [u, ro, ro, ro, ro, ro, ro, ro, ro, rw, rw], {
          WG: ATT,
          HD4: headDim / 4,
        })
        : s("attention_bwd_kv", "attn_dkv", [u, ro, ro, ro, ro, ro, ro, ro, ro, rw, rw], {
          WG: kvWg,
        }),
      s("kv_gather", "kv_gather", [u, ro, ro, rw], { WG: EW }),
    ]);
    const names: Names[] = [
      "normX",
      "normXAcc",
      "normW",
      "swiglu",
      "colsum",
      "embed",
      "delta",
      "dq",
      "dkv",
      "kvGather",
    ];
    const k = Object.fromEntries(names.map((n, i) => [n, entries[i]])) as Record<Names, Kernel>;
    const bk = new BackwardKernels(
      k,
      gpu.device.limits.maxComputeWorkgroupsPerDimension,
      cachePositions,
      slots,
    );
    bk.lane = lane;
    bk.normRows = normVariant === "rows";
    bk.normSubgroups = normShader !== "rmsnorm_bwd";
    return bk;
  }

  private lane = false;
  private normRows = false;
  /** Whether the RMSNorm backward's workgroup entries run their subgroup twin. */
  normSubgroups = false;

  private grid(n: number, wg = EW): [number, number] {
    return grid1d(Math.ceil(n / wg), this.maxPerDim);
  }

  /** dx (= or += when accumulate) and dw += for y = rmsnorm(x)·w over [rows, cols]. */
  rmsnorm(
    rec: Recorder,
    rows: number,
    cols: number,
    dy: BufferRef,
    x: BufferRef,
    w: BufferRef,
    rstd: BufferRef,
    dx: BufferRef,
    dw: BufferRef | null,
    accumulate: boolean,
  ) {
    const u = RmsNormBwdParams.pack({ rows, cols });
    const grid = this.normRows ? this.grid(rows, RED) : grid1d(rows, this.maxPerDim);
    rec.dispatch(accumulate ? this.k.normXAcc : this.k.normX, [null, dy, x, w, rstd, dx], grid, u);
    // dw: one invocation per column (rows), or one workgroup per column (workgroup).
    const wGrid: [number] | [number, number] = this.normRows
      ? [Math.ceil(cols / RED)]
      : grid1d(cols, this.maxPerDim);
    if (dw) rec.dispatch(this.k.normW, [null, dy, x, w, rstd, dw], wGrid, u);
  }

  swiglu(
    rec: Recorder,
    n: number,
    dout: BufferRef,
    g: BufferRef,
    up: BufferRef,
    dg: BufferRef,
    du: BufferRef,
  ) {
    rec.dispatch(
      this.k.swiglu,
      [null, dout, g, up, dg, du],
      this.grid(n),
      SwigluParams.pack({ n }),
    );
  }

  /** out[c] += Σ_r x[r, c]. */
  colsum(rec: Recorder, rows: number, cols: number, x: BufferRef, out: BufferRef) {
    rec.dispatch(
      this.k.colsum,
      [null, x, out],
      [Math.ceil(cols / RED)],
      ColsumParams.pack({ rows, cols }),
    );
  }

  /** dE[tokens[u]] += Σ rows of dx listed for u (CSR). */
  embedding(
    rec: Recorder,
    unique: number,
    cols: number,
    dx: BufferRef,
    tokens: BufferRef,
    offsets: BufferRef,
    rows: BufferRef,
    dE: BufferRef,
  ) {
    const u = EmbeddingBwdParams.pack({ unique, cols });
    rec.dispatch(this.k.embed, [null, dx, tokens, offsets, rows, dE], this.grid(unique * cols), u);
  }

  private attnUniform(N: number, NH: number, KV: number, D: number): ArrayBuffer {
    return AttentionBwdParams.pack({
      N,
      NH,
      KV,
      D,
      P: this.P,
      scale: 1 / Math.sqrt(D),
      S: this.S,
    });
  }

  /** dq [N, NH·D], dKc/dVc [S, KV, P, D] (entries of rows in this call) from dOut. */
  attention(
    rec: Recorder,
    N: number,
    NH: number,
    KV: number,
    D: number,
    b: {
      meta: BufferRef;
      rowOf: BufferRef;
      seqLen: BufferRef;
      q: BufferRef;
      kc: BufferRef;
      vc: BufferRef;
      out: BufferRef;
      dout: BufferRef;
      lse: BufferRef;
      delta: BufferRef;
      dq: BufferRef;
      dkc: BufferRef;
      dvc: BufferRef;
      grid?: { slots: number; positions: number };
    },
  ) {
    rec.dispatch(
      this.k.delta,
      [null, b.dout, b.out, b.delta],
      this.grid(N * NH, RED),
      AttentionDeltaParams.pack({ rows: N * NH, D }),
    );
    const u = this.attnUniform(N, NH, KV, D);
    const dqGrid: [number, number] | [number, number, number] = this.lane
      ? this.grid(N * NH, LANE_WG)
      : [NH, Math.min(N, 65535), Math.ceil(N / 65535)];
    rec.dispatch(
      this.k.dq,
      [null, b.meta, b.q, b.kc, b.vc, b.dout, b.lse, b.delta, b.dq],
      dqGrid,
      u,
    );
    const positions = b.grid?.positions ?? this.P, slots = b.grid?.slots ?? this.S;
    const dkvGrid: [number, number, number] = this.lane
      ? [Math.ceil(positions / LANE_WG), KV, slots]
      : [KV, positions, slots];
    rec.dispatch(
      this.k.dkv,
      [null, b.rowOf, b.seqLen, b.q, b.kc, b.vc, b.dout, b.lse, b.delta, b.dkc, b.dvc],
      dkvGrid,
      u,
    );
  }

  /** out [N, KV·D] = cache rows at each row's (slot, pos). */
  kvGather(
    rec: Recorder,
    N: number,
    KV: number,
    D: number,
    meta: BufferRef,
    cache: BufferRef,
    out: BufferRef,
  ) {
    const u = KvGatherParams.pack({ N, KV, D, P: this.P });
    rec.dispatch(this.k.kvGather, [null, meta, cache, out], this.grid(N * KV * D), u);
  }
}
