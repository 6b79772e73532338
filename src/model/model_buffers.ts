// The GPU buffers a GpuModel records into, made once at creation: per-chunk scratch, each layer's
// activations (one shared set unless training), the residual streams, the per-slot K/V caches and
// the RoPE tables. Dims: N rows a chunk, C hidden, NH heads, KV kv heads, D head_dim, I the MLP
// width, S slots, P cache positions per slot.

import type { Gpu } from "../gpu/mod.ts";
import type { ModelConfig } from "./config.ts";
import type { BufferRange } from "./gpu_params.ts";
import { ropeTable } from "./rope_table.ts";
import { PARAM_ALIGN_FLOATS } from "./weights.ts";

/** What one layer saves for the backward pass (in inference all layers share one set). */
export interface LayerActs {
  xn1: GPUBuffer; // [N, C] input norm output
  rstd1: GPUBuffer; // [N]
  q: GPUBuffer; // [N, NH·D] projection (before q-norm and RoPE)
  k: GPUBuffer; // [N, KV·D]
  v: GPUBuffer; // [N, KV·D]
  qn: GPUBuffer; // [N, NH·D] after q-norm (Qwen3), then RoPE in place
  kn: GPUBuffer; // [N, KV·D]
  rstdq: GPUBuffer; // [N·NH]
  rstdk: GPUBuffer; // [N·KV]
  att: GPUBuffer; // [N, NH·D] attention output
  lse: GPUBuffer; // [N, NH]
  xmid: GPUBuffer; // [N, C] residual after attention
  xn2: GPUBuffer; // [N, C] post-attention norm output
  rstd2: GPUBuffer; // [N]
  gate: GPUBuffer; // [N, I]
  up: GPUBuffer; // [N, I]
  h: GPUBuffer; // [N, I] silu(gate)·up (gpt2: gelu_new(gate), gate holding c_fc's output)
  mean1: GPUBuffer; // [N] gpt2: ln_1's means (rstd1 its 1/std)
  mean2: GPUBuffer; // [N] gpt2: ln_2's means
  qkv: GPUBuffer; // [N, 3C] gpt2: c_attn's output (q, k, v side by side); 4 floats otherwise
}

/** Buffers of one chunk of rows that are not per layer. */
export interface Scratch {
  ids: GPUBuffer; // [N] u32
  meta: GPUBuffer; // [N] (slot, pos) u32 pairs
  sel: GPUBuffer; // [N] u32 rows whose logits are wanted
  proj: GPUBuffer; // [N, C] attention / MLP output before the residual add
  xs: GPUBuffer; // [N, C] selected rows of the final residual
  xf: GPUBuffer; // [N, C] final norm output
  rstdf: GPUBuffer; // [N]
  meanf: GPUBuffer; // [N] gpt2: ln_f's means
  logits: GPUBuffer; // [logitRows, V]
  pairs: GPUBuffer; // [slots, 4] u32 (from, to, n, 0): encodeCopyCache's slot pairs
  /**
   * The output bindings of empty slots in grouped kernels (never written): 260 bytes, so two
   * empty slots take ranges 256 bytes apart (browsers refuse aliased writable bindings).
   */
  unused: GPUBuffer;
  /** The split decode attention's partials (ModelKernels.splitScratchFloats), or null. */
  attnParts: { o: GPUBuffer; ml: GPUBuffer } | null;
}

/** What allocateModelBuffers sizes the buffers by. */
export interface ModelBufferShape {
  /** Rows a forward chunk holds (GpuModel.chunkRows). */
  rows: number;
  /** Rows of logits one call computes. */
  logitRows: number;
  slots: number;
  /** Cache positions per slot. */
  maxLen: number;
  /** Per-layer activations and residuals for the backward (else one shared set and stream). */
  training: boolean;
  /** Every layer's cache in one buffer, 256-byte aligned (DecodeBackend.sharedCache). */
  sharedCache: boolean;
  /** The split decode attention's scratch floats (ModelKernels.splitScratchFloats), or null. */
  splitScratch: { o: number; ml: number } | null;
  /** Rows of the largest chunk of a split weight (0: none is split). */
  splitRows: number;
}

export interface ModelBuffers {
  scratch: Scratch;
  acts: LayerActs[];
  /** A training forward's residuals, L + 1 of them (the stream where not training). */
  layerRes: GPUBuffer[];
  /** One residual stream updated in place: the same buffer L + 1 times. */
  streamRes: GPUBuffer[];
  kCache: BufferRange[];
  vCache: BufferRange[];
  /** Float distance between consecutive layers' caches when they share one buffer, else 0. */
  cacheStride: number;
  splitTmp: GPUBuffer | null;
  /** The RoPE tables [P, D/2], cos then sin in one buffer (sin on a 256-byte boundary). */
  cos: BufferRange;
  sin: BufferRange;
}

/** Every buffer a model of config `c` records into (zeroed; the RoPE tables filled). */
export function allocateModelBuffers(gpu: Gpu, c: ModelConfig, o: ModelBufferShape): ModelBuffers {
  const N = o.rows, C = c.hiddenSize, D = c.headDim, I = c.intermediateSize;
  const qw = c.numHeads * D, kvw = c.numKvHeads * D;
  const f = (n: number, label: string) => gpu.zeros(n, label);
  const scratch: Scratch = {
    ids: f(N, "ids"),
    meta: f(2 * N, "meta"),
    sel: f(N, "sel"),
    proj: f(N * C, "proj"),
    xs: f(N * C, "xs"),
    xf: f(N * C, "xf"),
    rstdf: f(N, "rstdf"),
    meanf: f(N, "meanf"),
    logits: f(o.logitRows * c.vocabSize, "logits"),
    pairs: f(4 * Math.max(1, o.slots), "cache-copy pairs"),
    unused: f(65, "unused"),
    attnParts: o.splitScratch && {
      o: f(o.splitScratch.o, "attention splits"),
      ml: f(o.splitScratch.ml, "attention split sums"),
    },
  };
  const layerActs = (l: number): LayerActs => ({
    xn1: f(N * C, `xn1.${l}`),
    rstd1: f(N, `rstd1.${l}`),
    q: f(N * qw, `q.${l}`),
    k: f(N * kvw, `k.${l}`),
    v: f(N * kvw, `v.${l}`),
    qn: f(N * qw, `qn.${l}`),
    kn: f(N * kvw, `kn.${l}`),
    rstdq: f(N * c.numHeads, `rstdq.${l}`),
    rstdk: f(N * c.numKvHeads, `rstdk.${l}`),
    att: f(N * qw, `att.${l}`),
    lse: f(N * c.numHeads, `lse.${l}`),
    xmid: f(N * C, `xmid.${l}`),
    xn2: f(N * C, `xn2.${l}`),
    rstd2: f(N, `rstd2.${l}`),
    gate: f(N * I, `gate.${l}`),
    up: f(N * I, `up.${l}`),
    h: f(N * I, `h.${l}`),
    mean1: f(N, `mean1.${l}`),
    mean2: f(N, `mean2.${l}`),
    qkv: f(c.modelType === "gpt2" ? N * 3 * C : 4, `qkv.${l}`),
  });
  const L = c.numLayers;
  let acts: LayerActs[], layerRes: GPUBuffer[], streamRes: GPUBuffer[];
  if (o.training) {
    acts = Array.from({ length: L }, (_, l) => layerActs(l));
    layerRes = Array.from({ length: L + 1 }, (_, l) => f(N * C, `res${l}`));
    // Decode steps of a training model run in place on its first residual.
    streamRes = layerRes.map(() => layerRes[0]);
  } else {
    const shared = layerActs(0);
    acts = Array.from({ length: L }, () => shared);
    const stream = f(N * C, "res");
    streamRes = Array.from({ length: L + 1 }, () => stream);
    layerRes = streamRes;
  }
  const cacheFloats = o.slots * c.numKvHeads * o.maxLen * D;
  // Shared: one buffer for every layer's cache, layers 256 B aligned.
  const cacheStride = o.sharedCache
    ? Math.ceil(cacheFloats / PARAM_ALIGN_FLOATS) * PARAM_ALIGN_FLOATS
    : 0;
  const caches = (name: string): BufferRange[] => {
    const all = o.sharedCache ? f(cacheStride * L, name) : null;
    return Array.from({ length: L }, (_, l) => ({
      buffer: all ?? f(cacheFloats, `${name}${l}`),
      offset: all ? l * cacheStride * 4 : 0,
      size: cacheFloats * 4,
    }));
  };
  const kCache = caches("kcache"), vCache = caches("vcache");
  // GPT-2 has no RoPE: an identity table (cos 1, sin 0) makes rope_store a plain cache write.
  const rt = c.modelType === "gpt2"
    ? { cos: new Float32Array(o.maxLen * D / 2).fill(1), sin: new Float32Array(o.maxLen * D / 2) }
    : ropeTable(D, c.ropeTheta, o.maxLen);
  return {
    scratch,
    acts,
    layerRes,
    streamRes,
    kCache,
    vCache,
    cacheStride,
    splitTmp: o.splitRows > 0 ? f(N * o.splitRows, "split.tmp") : null,
    ...ropeTables(gpu, rt),
  };
}

/**
 * The cos and sin tables as two ranges of one buffer, sin from the first 256-byte boundary after
 * cos: a kernel may bind both as one range (the folded decode attention's RoPE table).
 */
function ropeTables(
  gpu: Gpu,
  rt: { cos: Float32Array; sin: Float32Array },
): { cos: BufferRange; sin: BufferRange } {
  const sinAt = Math.ceil(rt.cos.length / 64) * 64;
  const table = new Float32Array(sinAt + rt.sin.length);
  table.set(rt.cos);
  table.set(rt.sin, sinAt);
  const buffer = gpu.upload(table, "rope_table");
  return {
    cos: { buffer, offset: 0, size: Math.max(4, rt.cos.length * 4) },
    sin: { buffer, offset: sinAt * 4, size: Math.max(4, rt.sin.length * 4) },
  };
}
