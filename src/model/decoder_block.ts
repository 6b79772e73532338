// The Llama / Qwen2 / Qwen3 decoder layer in the forward (GPT-2's is gpt2_block.ts). Its backward
// is Backward's encodeLayerBwd (backward.ts).

import type { Recorder } from "../gpu/recorder.ts";
import type { GpuModel } from "./gpu_model.ts";
import type { Projections } from "./projections.ts";

/**
 * One decoder layer: res[l] → res[l+1]. Input RMSNorm → q, k, v → (Qwen3 q/k norms) → RoPE,
 * k and v into the cache → causal attention → o_proj + residual; post-attention RMSNorm → gate,
 * up → SwiGLU → down_proj + residual. `P` does the projections (a decode backend's own on its
 * steps, else the storage ones); `decode`: a decode step, which takes the attention folds.
 */
export function encodeDecoderBlock(
  m: GpuModel,
  rec: Recorder,
  l: number,
  N: number,
  P: Projections,
  context: number,
  decode: boolean,
): void {
  const c = m.config, a = m.acts[l], lv = m.weights.layout.layerView(l);
  const fold = decode ? m.kernels.attentionFold : "none";
  P.attentionInput(rec, l, N, fold);
  const { q, k } = fold === "qk-norm" ? a : m.qkUsed(l);
  const norms = fold === "qk-norm"
    ? { q: m.p(lv.qNorm), k: m.p(lv.kNorm), eps: c.rmsNormEps }
    : undefined;
  const biases = fold === "rope-bias"
    ? { q: m.p(lv.qBias), k: m.p(lv.kBias), v: m.p(lv.vBias) }
    : undefined;
  m.kernels.attn.attention(rec, {
    N,
    NH: c.numHeads,
    KV: c.numKvHeads,
    D: c.headDim,
    meta: m.scratch.meta,
    q,
    kc: m.kCache[l],
    vc: m.vCache[l],
    out: a.att,
    lse: a.lse,
    parts: m.scratch.attnParts,
    context,
    fold: fold === "none" ? undefined : { k, v: a.v, cos: m.cos, sin: m.sin, norms, biases },
  });
  // Training keeps the layer's input, middle and output apart for the backward; inference has
  // one residual stream (res[l] = xmid = res[l+1]) updated in place.
  const xmid = m.savesForBackward ? a.xmid : m.res[l];
  P.residual(rec, N, a.att, lv.o, lv.oBias, m.res[l], xmid);
  P.mlp(rec, l, N, xmid, m.res[l + 1]);
}
