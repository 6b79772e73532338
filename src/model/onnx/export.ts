// The decoder as an ONNX graph with Hugging Face's semantics (modeling_llama/qwen2/qwen3.py):
// a peer implementation for onnxruntime-web to check and benchmark the WGSL engine against.
// Two variants, both with input `input_ids` int64 [batch, seq] and output `logits` float32
// [batch, seq, vocab]:
//   - full:     positions 0..seq-1, causal mask over the sequence (one forward pass).
//   - kv-cache: transformers.js / optimum names: inputs `position_ids` [batch, seq] and
//               `past_key_values.{l}.key|value` [batch, kv_heads, past, head_dim]; outputs
//               `present.{l}.key|value` [batch, kv_heads, past + seq, head_dim]. Query t attends to
//               the whole cache plus new tokens 0..t (same-length batches; no attention_mask).
// Everything is float32; RoPE cos/sin tables are computed in float64 and rounded once.
//
// Dimension legend: B batch, T new tokens, P past tokens, S = P + T, C hidden, NH heads,
// KV kv heads, G = NH / KV, D head_dim, I intermediate, V vocab.

import type { ModelConfig } from "../config.ts";
import { type ModelWeights, type ParamTensor, slice } from "../weights.ts";
import { GraphBuilder } from "./graph_builder.ts";
import { type Dim, encodeModel, type GraphInit } from "./proto.ts";
import { OnnxExportError } from "./errors.ts";

export interface OnnxExportOptions {
  /** Build the KV-cache variant (past/present key/values, position_ids). Default false. */
  readonly kvCache?: boolean;
  /**
   * Rows of the RoPE cos/sin tables, i.e. the largest position id + 1 the graph accepts
   * (default max_position_embeddings). Two tables of [rows, D] floats are stored in the file.
   */
  readonly maxPositions?: number;
}

/** Names of the KV-cache graph's inputs and outputs for layer l (transformers.js convention). */
export const kvNames = (l: number) => ({
  pastKey: `past_key_values.${l}.key`,
  pastValue: `past_key_values.${l}.value`,
  presentKey: `present.${l}.key`,
  presentValue: `present.${l}.value`,
});

/** float32 finfo.min: HF's fill value for masked scores (finite, so no NaN from -inf - -inf). */
const MASK_FILL = -3.4028234663852886e38;

/** The .onnx file of `w` (full or KV-cache variant). */
export function exportOnnx(w: ModelWeights, opts: OnnxExportOptions = {}): Uint8Array {
  const c = w.config;
  const doc = `${c.modelType} decoder, ${c.numLayers} layers, hidden ${c.hiddenSize}, ` +
    `vocab ${c.vocabSize}${opts.kvCache ? ", with KV cache" : ""}; exported by pettingllms-webgpu`;
  return encodeModel(buildDecoderGraph(w, opts), doc);
}

/** Values shared by every layer: RoPE tables gathered at the positions, and the causal mask. */
interface SharedValues {
  /** [B|1, 1, T, D] */
  readonly cos: string;
  readonly sin: string;
  /** [T, S] additive mask: 0 where key s may be seen by query t, finfo.min elsewhere. */
  readonly mask: string;
}

/** The decoder graph, before encoding. */
export function buildDecoderGraph(w: ModelWeights, opts: OnnxExportOptions = {}): GraphInit {
  const cfg = w.config;
  if (cfg.modelType === "gpt2") {
    throw new OnnxExportError(
      "ONNX export of gpt2 is not implemented (Llama, Qwen2 and Qwen3 are)",
    );
  }
  const kv = opts.kvCache ?? false;
  const maxPos = opts.maxPositions ?? cfg.maxPositionEmbeddings;
  if (!Number.isSafeInteger(maxPos) || maxPos < 1) {
    throw new OnnxExportError(`maxPositions ${maxPos} must be a positive integer`);
  }
  const g = new GraphBuilder(`${cfg.modelType}_decoder${kv ? "_kv" : ""}`);
  const ids = g.input("input_ids", "INT64", ["batch", "seq"]);
  const T = dimScalar(g, ids, 1, "seq_len");
  let positions: string, P: string | null = null;
  if (kv) {
    positions = g.input("position_ids", "INT64", ["batch", "seq"]);
    for (let l = 0; l < cfg.numLayers; l++) {
      const n = kvNames(l);
      const pastDims: Dim[] = ["batch", cfg.numKvHeads, "past_seq", cfg.headDim];
      g.input(n.pastKey, "FLOAT", pastDims);
      g.input(n.pastValue, "FLOAT", pastDims);
    }
    P = dimScalar(g, kvNames(0).pastKey, 2, "past_len");
  } else {
    // [1, T]: 0..T-1, broadcast over the batch
    const range = g.op("Range", [g.int64([0], true), T, g.int64([1], true)], { hint: "positions" });
    positions = g.op("Unsqueeze", [range, g.int64([0])], { hint: "position_ids" });
  }
  const shared: SharedValues = {
    ...ropeAtPositions(g, cfg, positions, maxPos),
    mask: causalMask(g, T, P),
  };
  const embed = weight(g, w, w.layout.embed); // [V, C], rows gathered by id
  let x = g.op("Gather", [embed, ids], { attrs: { axis: { int: 0 } }, hint: "embeddings" });
  for (let l = 0; l < cfg.numLayers; l++) x = decoderLayer(g, w, l, x, shared, kv);
  const h = rmsNorm(g, x, weight(g, w, w.layout.finalNorm), cfg.rmsNormEps, "final_norm");
  g.op("MatMul", [h, transposed(g, w, w.layout.lmHead)], { outputs: ["logits"] });
  g.output("logits", "FLOAT", ["batch", "seq", cfg.vocabSize]);
  if (kv) {
    for (let l = 0; l < cfg.numLayers; l++) {
      const dims: Dim[] = ["batch", cfg.numKvHeads, "total_seq", cfg.headDim];
      g.output(kvNames(l).presentKey, "FLOAT", dims);
      g.output(kvNames(l).presentValue, "FLOAT", dims);
    }
  }
  return g.build();
}

/** A dimension of a value as an int64 scalar (Range and Add need scalars). */
function dimScalar(g: GraphBuilder, value: string, axis: number, hint: string): string {
  const v = g.op("Shape", [value], { attrs: { start: { int: axis }, end: { int: axis + 1 } } });
  return g.op("Squeeze", [v, g.int64([0])], { hint });
}

function tensor(w: ModelWeights, t: ParamTensor): Float32Array {
  return slice(w.data, t);
}

/** A weight stored as HF stores it (norms, biases, the embedding), under its HF name. */
function weight(g: GraphBuilder, w: ModelWeights, t: ParamTensor): string {
  return g.initializer(t.name, "FLOAT", t.shape, tensor(w, t));
}

/**
 * A Linear weight [out, in] stored transposed as [in, out] so that y = MatMul(x, Wᵀ) needs no
 * Transpose at run time. A tied head reuses the embedding's data under another name.
 */
function transposed(g: GraphBuilder, w: ModelWeights, t: ParamTensor): string {
  const [out, inp] = t.shape;
  const src = tensor(w, t);
  const dst = new Float32Array(src.length);
  for (let o = 0; o < out; o++) {
    for (let i = 0; i < inp; i++) dst[i * out + o] = src[o * inp + i];
  }
  const name = t.role === "embed" ? "lm_head.weight_T" : `${t.name}_T`;
  return g.initializer(name, "FLOAT", [inp, out], dst);
}

/** y = x Wᵀ (+ b). x: [..., in] → [..., out] */
function linear(
  g: GraphBuilder,
  w: ModelWeights,
  x: string,
  W: ParamTensor,
  b: ParamTensor | null,
) {
  const hint = W.name.replace(/^model\./, "").replace(/\.weight$/, "");
  const y = g.op("MatMul", [x, transposed(g, w, W)], { hint });
  return b === null ? y : g.op("Add", [y, weight(g, w, b)], { hint: `${hint}.biased` });
}

/** HF LlamaRMSNorm over the last axis: w · (x · 1/sqrt(mean(x²) + eps)), in float32. */
function rmsNorm(g: GraphBuilder, x: string, w: string, eps: number, hint: string): string {
  const sq = g.op("Mul", [x, x], { hint: `${hint}.sq` });
  const ms = g.op("ReduceMean", [sq], {
    attrs: { axes: { ints: [-1] }, keepdims: { int: 1 } },
    hint: `${hint}.ms`,
  });
  const std = g.op("Sqrt", [g.op("Add", [ms, g.float(eps)])], { hint: `${hint}.std` });
  const normed = g.op("Mul", [x, g.op("Reciprocal", [std])], { hint: `${hint}.x` });
  return g.op("Mul", [normed, w], { hint });
}

/**
 * cos/sin of every position id: tables [maxPos, D] (cat(freqs, freqs) as HF builds them,
 * inv_freq = 1/theta^(2i/D), in float64, rounded once) gathered at `positions` [B|1, T],
 * then [B|1, 1, T, D] to broadcast over heads.
 */
function ropeAtPositions(g: GraphBuilder, cfg: ModelConfig, positions: string, maxPos: number) {
  const D = cfg.headDim, half = D / 2;
  const cos = new Float32Array(maxPos * D), sin = new Float32Array(maxPos * D);
  for (let p = 0; p < maxPos; p++) {
    for (let i = 0; i < half; i++) {
      const a = p * (1 / Math.pow(cfg.ropeTheta, (2 * i) / D));
      cos[p * D + i] = cos[p * D + i + half] = Math.cos(a);
      sin[p * D + i] = sin[p * D + i + half] = Math.sin(a);
    }
  }
  const at = (table: Float32Array, name: string) => {
    const t = g.initializer(`rope.${name}_table`, "FLOAT", [maxPos, D], table);
    const rows = g.op("Gather", [t, positions], {
      attrs: { axis: { int: 0 } },
      hint: `rope.${name}`,
    });
    return g.op("Unsqueeze", [rows, g.int64([1])], { hint: `rope.${name}` });
  };
  return { cos: at(cos, "cos"), sin: at(sin, "sin") };
}

/** Rotate-half RoPE: x·cos + cat(-x2, x1)·sin, x1/x2 the halves of the last axis. [B,H,T,D] */
function applyRope(g: GraphBuilder, x: string, s: SharedValues, hint: string): string {
  const [x1, x2] = g.ops("Split", [x], { attrs: { axis: { int: -1 } }, numOutputs: 2, hint });
  const rot = g.op("Concat", [g.op("Neg", [x2]), x1], { attrs: { axis: { int: -1 } }, hint });
  const a = g.op("Mul", [x, s.cos], { hint });
  return g.op("Add", [a, g.op("Mul", [rot, s.sin], { hint })], { hint: `${hint}.roped` });
}

/**
 * [T, S] additive causal mask: query t sits at absolute position P + t and sees keys 0..P+t.
 * P is null in the full graph (no cache).
 */
function causalMask(g: GraphBuilder, T: string, P: string | null): string {
  const zero = g.int64([0], true), one = g.int64([1], true);
  const S = P === null ? T : g.op("Add", [P, T], { hint: "total_len" });
  const qPos = g.op("Range", [P ?? zero, S, one], { hint: "mask.query_pos" });
  const kPos = g.op("Range", [zero, S, one], { hint: "mask.key_pos" });
  const hidden = g.op("Greater", [
    g.op("Unsqueeze", [kPos, g.int64([0])]), // [1, S]
    g.op("Unsqueeze", [qPos, g.int64([1])]), // [T, 1]
  ], { hint: "mask.future" });
  return g.op("Where", [hidden, g.float(MASK_FILL), g.float(0)], { hint: "causal_mask" });
}

/** [B, KV, S, D] → [B, NH, S, D], kv head j serving query heads j·G .. j·G+G-1 (HF repeat_kv). */
function repeatKv(g: GraphBuilder, cfg: ModelConfig, x: string, hint: string): string {
  const G = cfg.numHeads / cfg.numKvHeads;
  if (G === 1) return x;
  const x5 = g.op("Unsqueeze", [x, g.int64([2])], { hint }); // [B, KV, 1, S, D]
  const rep = g.op("Expand", [x5, g.int64([1, 1, G, 1, 1])], { hint }); // [B, KV, G, S, D]
  return g.op("Reshape", [rep, g.int64([0, cfg.numHeads, -1, cfg.headDim])], {
    hint: `${hint}.rep`,
  });
}

/**
 * q/k/v projections → heads [B, H, T, D], Qwen3's per-head RMSNorm, then RoPE (not on v).
 * Returns the new tokens' q, k, v.
 */
function qkv(g: GraphBuilder, w: ModelWeights, l: number, h: string, s: SharedValues) {
  const cfg = w.config, L = w.layout.layerView(l);
  const heads = (W: ParamTensor, b: ParamTensor | null, n: number, norm: ParamTensor | null) => {
    const hint = `l${l}.${W.name.split(".").at(-2)}`;
    let y = g.op("Reshape", [linear(g, w, h, W, b), g.int64([0, 0, n, cfg.headDim])], { hint });
    if (norm !== null) y = rmsNorm(g, y, weight(g, w, norm), cfg.rmsNormEps, `${hint}.norm`);
    return g.op("Transpose", [y], {
      attrs: { perm: { ints: [0, 2, 1, 3] } },
      hint: `${hint}.heads`,
    });
  };
  const q = heads(L.q!, L.qBias, cfg.numHeads, L.qNorm);
  const k = heads(L.k!, L.kBias, cfg.numKvHeads, L.kNorm);
  const v = heads(L.v!, L.vBias, cfg.numKvHeads, null);
  return { q: applyRope(g, q, s, `l${l}.q`), k: applyRope(g, k, s, `l${l}.k`), v };
}

/** Self-attention of layer l on normed input h [B, T, C] → [B, T, C]. */
function attention(
  g: GraphBuilder,
  w: ModelWeights,
  l: number,
  h: string,
  s: SharedValues,
  kv: boolean,
): string {
  const cfg = w.config, L = w.layout.layerView(l);
  let { q, k, v } = qkv(g, w, l, h, s);
  if (kv) {
    const n = kvNames(l);
    const cat = { attrs: { axis: { int: 2 } } };
    k = g.op("Concat", [n.pastKey, k], { ...cat, outputs: [n.presentKey] }); // [B, KV, S, D]
    v = g.op("Concat", [n.pastValue, v], { ...cat, outputs: [n.presentValue] });
  }
  const kT = g.op("Transpose", [repeatKv(g, cfg, k, `l${l}.k`)], {
    attrs: { perm: { ints: [0, 1, 3, 2] } },
    hint: `l${l}.kT`,
  });
  const raw = g.op("MatMul", [q, kT], { hint: `l${l}.scores` }); // [B, NH, T, S]
  const scaled = g.op("Mul", [raw, g.float(1 / Math.sqrt(cfg.headDim))], { hint: `l${l}.scores` });
  const masked = g.op("Add", [scaled, s.mask], { hint: `l${l}.scores.masked` });
  const p = g.op("Softmax", [masked], { attrs: { axis: { int: -1 } }, hint: `l${l}.probs` });
  const ctx = g.op("MatMul", [p, repeatKv(g, cfg, v, `l${l}.v`)], { hint: `l${l}.ctx` });
  const merged = g.op("Reshape", [
    g.op("Transpose", [ctx], { attrs: { perm: { ints: [0, 2, 1, 3] } }, hint: `l${l}.ctx` }),
    g.int64([0, 0, -1]),
  ], { hint: `l${l}.ctx.merged` }); // [B, T, NH*D]
  return linear(g, w, merged, L.o, L.oBias);
}

/** SwiGLU: down(silu(gate(h)) · up(h)). [B, T, C] → [B, T, C] */
function mlp(g: GraphBuilder, w: ModelWeights, l: number, h: string): string {
  const L = w.layout.layerView(l);
  const gate = linear(g, w, h, L.gate!, null);
  const silu = g.op("Mul", [gate, g.op("Sigmoid", [gate])], { hint: `l${l}.silu` });
  const act = g.op("Mul", [silu, linear(g, w, h, L.up, null)], { hint: `l${l}.act` });
  return linear(g, w, act, L.down, null);
}

/** x + attn(norm(x)), then + mlp(norm(·)). [B, T, C] → [B, T, C] */
function decoderLayer(
  g: GraphBuilder,
  w: ModelWeights,
  l: number,
  x: string,
  s: SharedValues,
  kv: boolean,
): string {
  const cfg = w.config, L = w.layout.layerView(l);
  const eps = cfg.rmsNormEps;
  const h = rmsNorm(g, x, weight(g, w, L.inputNorm), eps, `l${l}.input_norm`);
  const r = g.op("Add", [x, attention(g, w, l, h, s, kv)], { hint: `l${l}.resid_attn` });
  const h2 = rmsNorm(g, r, weight(g, w, L.postNorm), eps, `l${l}.post_norm`);
  return g.op("Add", [r, mlp(g, w, l, h2)], { hint: `l${l}.resid_mlp` });
}
