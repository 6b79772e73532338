// The CPU oracle: a float64 forward pass with Hugging Face's exact semantics for Llama, Qwen2,
// Qwen3 and GPT-2 (modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py / modeling_gpt2.py). It is written to be
// obviously correct, one token and one head at a time, not fast; the GPU engine is tested
// against it, and each op below doubles as the CPU reference of its kernel.
//
// Dimension legend: T tokens, C hidden, NH attention heads, KV key/value heads, D head_dim,
// I intermediate, V vocab. Linear weights are [out, in] as HF stores them: y = W x + b.

import { type ModelConfig } from "./config.ts";
import { type ModelWeights, type ModelWeights64, type ParamTensor, slice } from "./weights.ts";

/** RMSNorm as HF computes it: x * rsqrt(mean(x²) + eps), then times the weight. x: [n] → [n] */
export function rmsNorm(x: ArrayLike<number>, w: ArrayLike<number>, eps: number): Float64Array {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const r = 1 / Math.sqrt(ss / x.length + eps);
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = w[i] * (x[i] * r);
  return out;
}

/** y = W x + b with W [out, in] row-major. x: [in] → [out] */
export function linear(
  x: ArrayLike<number>,
  W: ArrayLike<number>,
  b: ArrayLike<number> | null,
  out: number,
): Float64Array {
  const n = x.length;
  if (W.length !== out * n) throw new RangeError(`linear: W has ${W.length} ≠ ${out}×${n}`);
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = b === null ? 0 : b[o];
    for (let i = 0; i < n; i++) s += W[o * n + i] * x[i];
    y[o] = s;
  }
  return y;
}

/** RoPE inverse frequencies: inv_freq[i] = 1 / theta^(2i / D), i < D/2. → [D/2] */
export function ropeInvFreq(headDim: number, theta: number): Float64Array {
  const f = new Float64Array(headDim / 2);
  for (let i = 0; i < headDim / 2; i++) f[i] = 1 / Math.pow(theta, (2 * i) / headDim);
  return f;
}

/**
 * Rotate-half RoPE of one head vector at position `pos` (HF apply_rotary_pos_emb):
 * out = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1], cos/sin = cat(freqs, freqs).
 * So element i pairs with i + D/2 (not with i + 1 as in the interleaved Meta layout). [D] → [D]
 */
export function applyRope(
  x: ArrayLike<number>,
  pos: number,
  invFreq: ArrayLike<number>,
): Float64Array {
  const half = x.length / 2;
  const out = new Float64Array(x.length);
  for (let i = 0; i < half; i++) {
    const a = pos * invFreq[i];
    const c = Math.cos(a), s = Math.sin(a);
    out[i] = x[i] * c - x[i + half] * s;
    out[i + half] = x[i + half] * c + x[i] * s;
  }
  return out;
}

/**
 * LayerNorm as torch computes it (GPT-2's ln_1, ln_2, ln_f): (x − mean) / sqrt(var + eps) · w + b
 * with the biased variance mean((x − mean)²). x: [n] → [n]
 */
export function layerNorm(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  b: ArrayLike<number>,
  eps: number,
): Float64Array {
  let mean = 0;
  for (let i = 0; i < x.length; i++) mean += x[i];
  mean /= x.length;
  let v = 0;
  for (let i = 0; i < x.length; i++) v += (x[i] - mean) ** 2;
  const r = 1 / Math.sqrt(v / x.length + eps);
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = (x[i] - mean) * r * w[i] + b[i];
  return out;
}

/**
 * The backward of layerNorm for one row: dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with x̂ the
 * normalized x and g = dy·w; dw = dy·x̂ and db = dy (this row's share).
 */
export function layerNormBackward(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  dy: ArrayLike<number>,
  eps: number,
): { dx: Float64Array; dw: Float64Array; db: Float64Array } {
  const n = x.length;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += x[i];
  mean /= n;
  let v = 0;
  for (let i = 0; i < n; i++) v += (x[i] - mean) ** 2;
  const r = 1 / Math.sqrt(v / n + eps);
  const xh = Float64Array.from({ length: n }, (_, i) => (x[i] - mean) * r);
  let mg = 0, mgx = 0;
  for (let i = 0; i < n; i++) {
    mg += dy[i] * w[i] / n;
    mgx += dy[i] * w[i] * xh[i] / n;
  }
  return {
    dx: Float64Array.from({ length: n }, (_, i) => r * (dy[i] * w[i] - mg - xh[i] * mgx)),
    dw: Float64Array.from({ length: n }, (_, i) => dy[i] * xh[i]),
    db: Float64Array.from(dy),
  };
}

/** GPT-2's gelu_new (NewGELUActivation): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function geluNew(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
}

/** d gelu_new / dx. */
export function geluNewGrad(x: number): number {
  const k = Math.sqrt(2 / Math.PI), t = Math.tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}

export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

/** Numerically stable log-softmax of one row. */
export function logSoftmax(row: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) m = Math.max(m, row[i]);
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i] - m);
  const lse = m + Math.log(s);
  const out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i] - lse;
  return out;
}

/**
 * Causal grouped-query attention. q[t]: [NH*D], k[t], v[t]: [KV*D] (already normed/roped).
 * Query head h reads kv head floor(h / (NH/KV)), as HF repeat_kv does; scores are scaled by
 * 1/sqrt(D) and position t sees positions 0..t. → per token [NH*D]
 */
export function causalAttention(
  q: readonly Float64Array[],
  k: readonly Float64Array[],
  v: readonly Float64Array[],
  numHeads: number,
  numKvHeads: number,
  headDim: number,
): Float64Array[] {
  const group = numHeads / numKvHeads;
  const scale = 1 / Math.sqrt(headDim);
  return q.map((qt, t) => {
    const out = new Float64Array(numHeads * headDim);
    for (let h = 0; h < numHeads; h++) {
      const kvh = Math.floor(h / group);
      const scores = new Float64Array(t + 1);
      for (let s = 0; s <= t; s++) {
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += qt[h * headDim + d] * k[s][kvh * headDim + d];
        scores[s] = dot * scale;
      }
      const p = logSoftmax(scores).map(Math.exp);
      for (let s = 0; s <= t; s++) {
        for (let d = 0; d < headDim; d++) out[h * headDim + d] += p[s] * v[s][kvh * headDim + d];
      }
    }
    return out;
  });
}

/** SwiGLU MLP: down(silu(gate(x)) * up(x)). [C] → [C] */
export function swigluMlp(
  x: ArrayLike<number>,
  gate: ArrayLike<number>,
  up: ArrayLike<number>,
  down: ArrayLike<number>,
  intermediate: number,
): Float64Array {
  const g = linear(x, gate, null, intermediate);
  const u = linear(x, up, null, intermediate);
  const h = g.map((gi, i) => silu(gi) * u[i]);
  return linear(h, down, null, x.length);
}

/** Per-head RMSNorm (Qwen3 q_norm / k_norm): each D-slice normed with the same weight [D]. */
function headNorm(x: Float64Array, heads: number, D: number, w: ArrayLike<number>, eps: number) {
  const out = new Float64Array(x.length);
  for (let h = 0; h < heads; h++) out.set(rmsNorm(x.subarray(h * D, (h + 1) * D), w, eps), h * D);
  return out;
}

/** RoPE on every head of a [heads*D] vector. */
function ropeHeads(x: Float64Array, heads: number, D: number, pos: number, invFreq: Float64Array) {
  const out = new Float64Array(x.length);
  for (let h = 0; h < heads; h++) {
    out.set(applyRope(x.subarray(h * D, (h + 1) * D), pos, invFreq), h * D);
  }
  return out;
}

/**
 * One GPT2Block over all tokens: x + c_proj(attn(split(c_attn(ln_1(x))))), then
 * + mlp.c_proj(gelu_new(mlp.c_fc(ln_2(...)))). Conv1D computes x·W + b with W [in, out]; the
 * layout holds W transposed ([out, in]), so each is `linear` here. No RoPE: positions entered
 * through wpe. [T][C] → [T][C]
 */
function gpt2Layer(w: ModelWeights | ModelWeights64, l: number, xs: Float64Array[]) {
  const cfg = w.config;
  const L = w.layout.layerView(l);
  const p = (t: ParamTensor | null) => slice(w.data, t!);
  const { numHeads: NH, headDim: D, rmsNormEps: eps, hiddenSize: C } = cfg;
  const qs: Float64Array[] = [], ks: Float64Array[] = [], vs: Float64Array[] = [];
  for (const x of xs) {
    const qkv = linear(
      layerNorm(x, p(L.inputNorm), p(L.inputNormBias), eps),
      p(L.qkv),
      p(L.qkvBias),
      3 * C,
    );
    qs.push(qkv.slice(0, C)); // split(n_embd, dim=2): query, key, value
    ks.push(qkv.slice(C, 2 * C));
    vs.push(qkv.slice(2 * C));
  }
  const att = causalAttention(qs, ks, vs, NH, NH, D);
  return xs.map((x, t) => {
    const o = linear(att[t], p(L.o), p(L.oBias), C);
    const r = x.map((xi, i) => xi + o[i]);
    const h = linear(
      layerNorm(r, p(L.postNorm), p(L.postNormBias), eps),
      p(L.up),
      p(L.upBias),
      cfg.intermediateSize,
    )
      .map(geluNew);
    const m = linear(h, p(L.down), p(L.downBias), C);
    return r.map((ri, i) => ri + m[i]);
  });
}

/** One decoder layer over all tokens: x + attn(norm(x)), then + mlp(norm(...)). [T][C] → [T][C] */
function decoderLayer(
  w: ModelWeights | ModelWeights64,
  l: number,
  xs: Float64Array[],
  positions: readonly number[],
) {
  const cfg = w.config;
  const L = w.layout.layerView(l);
  const p = (t: ParamTensor) => slice(w.data, t);
  const pb = (t: ParamTensor | null) => (t === null ? null : slice(w.data, t));
  const { numHeads: NH, numKvHeads: KV, headDim: D, rmsNormEps: eps } = cfg;
  const invFreq = ropeInvFreq(D, cfg.ropeTheta);
  const qs: Float64Array[] = [], ks: Float64Array[] = [], vs: Float64Array[] = [];
  xs.forEach((x, t) => {
    const h = rmsNorm(x, p(L.inputNorm), eps);
    let q = linear(h, p(L.q!), pb(L.qBias), NH * D);
    let k = linear(h, p(L.k!), pb(L.kBias), KV * D);
    if (L.qNorm !== null && L.kNorm !== null) {
      q = headNorm(q, NH, D, p(L.qNorm), eps);
      k = headNorm(k, KV, D, p(L.kNorm), eps);
    }
    qs.push(ropeHeads(q, NH, D, positions[t], invFreq));
    ks.push(ropeHeads(k, KV, D, positions[t], invFreq));
    vs.push(linear(h, p(L.v!), pb(L.vBias), KV * D));
  });
  const att = causalAttention(qs, ks, vs, NH, KV, D);
  return xs.map((x, t) => {
    const o = linear(att[t], p(L.o), pb(L.oBias), cfg.hiddenSize);
    const r = x.map((xi, i) => xi + o[i]);
    const m = swigluMlp(
      rmsNorm(r, p(L.postNorm), eps),
      p(L.gate!),
      p(L.up),
      p(L.down),
      cfg.intermediateSize,
    );
    return r.map((ri, i) => ri + m[i]);
  });
}

export interface ReferenceOptions {
  /** Position ids per token (default 0..T-1), e.g. to mimic left padding. */
  readonly positions?: readonly number[];
}

export interface ReferenceOutput {
  /** [T, V] row-major. */
  readonly logits: Float64Array;
  /** The residual stream: [0] the embeddings, [l+1] after layer l (before the final norm); each [T*C]. */
  readonly hiddenStates: Float64Array[];
}

/** The full forward pass: token ids → logits for every position. */
export function referenceForward(
  w: ModelWeights | ModelWeights64,
  ids: readonly number[],
  opts: ReferenceOptions = {},
): ReferenceOutput {
  const cfg: ModelConfig = w.config;
  const C = cfg.hiddenSize, V = cfg.vocabSize;
  const positions = opts.positions ?? ids.map((_, t) => t);
  if (positions.length !== ids.length) throw new RangeError("positions and ids differ in length");
  const embed = slice(w.data, w.layout.embed);
  const wpe = w.layout.posEmbed ? slice(w.data, w.layout.posEmbed) : null;
  let xs = ids.map((id, t) => {
    if (!Number.isInteger(id) || id < 0 || id >= V) {
      throw new RangeError(`token id ${id} outside [0, ${V})`);
    }
    const x = Float64Array.from(embed.subarray(id * C, (id + 1) * C));
    if (wpe) { // GPT-2: inputs_embeds + wpe(position_ids)
      const pos = positions[t];
      if (!Number.isInteger(pos) || pos < 0 || pos >= cfg.maxPositionEmbeddings) {
        throw new RangeError(`position ${pos} outside [0, ${cfg.maxPositionEmbeddings})`);
      }
      for (let i = 0; i < C; i++) x[i] += wpe[pos * C + i];
    }
    return x;
  });
  const flat = (rows: Float64Array[]) => {
    const out = new Float64Array(rows.length * C);
    rows.forEach((r, t) => out.set(r, t * C));
    return out;
  };
  const hiddenStates = [flat(xs)];
  for (let l = 0; l < cfg.numLayers; l++) {
    xs = cfg.modelType === "gpt2" ? gpt2Layer(w, l, xs) : decoderLayer(w, l, xs, positions);
    hiddenStates.push(flat(xs));
  }
  const norm = slice(w.data, w.layout.finalNorm);
  const head = slice(w.data, w.layout.lmHead); // the embedding itself when tied
  const logits = new Float64Array(ids.length * V);
  const normBias = w.layout.finalNormBias ? slice(w.data, w.layout.finalNormBias) : null;
  const final = (x: Float64Array) =>
    normBias ? layerNorm(x, norm, normBias, cfg.rmsNormEps) : rmsNorm(x, norm, cfg.rmsNormEps);
  xs.forEach((x, t) => logits.set(linear(final(x), head, null, V), t * V));
  return { logits, hiddenStates };
}

/** Logits row of position t from a [T, V] array. */
export function logitsAt(logits: Float64Array, V: number, t: number): Float64Array {
  return logits.subarray(t * V, (t + 1) * V);
}

/**
 * log p(ids[t] | ids[0..t-1]) for t = 1..T-1 (the first token has no prediction). → [T-1]
 */
export function referenceLogprobs(
  w: ModelWeights | ModelWeights64,
  ids: readonly number[],
): Float64Array {
  const V = w.config.vocabSize;
  const { logits } = referenceForward(w, ids);
  const out = new Float64Array(Math.max(0, ids.length - 1));
  for (let t = 1; t < ids.length; t++) out[t - 1] = logSoftmax(logitsAt(logits, V, t - 1))[ids[t]];
  return out;
}

/** Greedy decoding by full recomputation (ties → lowest id): the oracle for KV-cache decode. */
export function referenceGreedy(
  w: ModelWeights | ModelWeights64,
  prompt: readonly number[],
  maxNewTokens: number,
  stopIds: readonly number[] = [],
): number[] {
  const ids = [...prompt];
  const V = w.config.vocabSize;
  for (let n = 0; n < maxNewTokens; n++) {
    const row = logitsAt(referenceForward(w, ids).logits, V, ids.length - 1);
    let best = 0;
    for (let i = 1; i < V; i++) if (row[i] > row[best]) best = i;
    ids.push(best);
    if (stopIds.includes(best)) break;
  }
  return ids.slice(prompt.length);
}
