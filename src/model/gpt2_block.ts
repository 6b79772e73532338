// GPT-2's block in the forward: LayerNorm → fused q/k/v projection → attention → projection and
// residual; LayerNorm → MLP with gelu_new → projection and residual. Its backward is
// Backward's encodeGpt2LayerBwd (backward.ts).

import type { Recorder } from "../gpu/recorder.ts";
import type { GpuModel } from "./gpu_model.ts";

/**
 * One GPT2Block: res[l] → res[l+1]. ln_1 → c_attn (q, k, v side by side) → the three split
 * out, k and v stored in the cache (rope_store with the identity table) → causal attention →
 * attn.c_proj + residual; ln_2 → c_fc → gelu_new → mlp.c_proj + residual. Every projection has
 * a bias and takes its LoRA adapter (modules qkv, o, up, down).
 */
export function encodeGpt2Block(
  m: GpuModel,
  rec: Recorder,
  l: number,
  N: number,
  context: number,
): void {
  const c = m.config,
    s = m.scratch,
    a = m.acts[l],
    lv = m.weights.layout.layerView(l);
  const C = c.hiddenSize, D = c.headDim, NH = c.numHeads, I = c.intermediateSize;
  const K = m.kernels, g2 = m.gpt2!, sp = m.split!, P = m.projections;
  g2.layernorm(
    rec,
    N,
    C,
    c.rmsNormEps,
    m.res[l],
    m.p(lv.inputNorm),
    m.p(lv.inputNormBias),
    a.xn1,
    a.mean1,
    a.rstd1,
  );
  P.linear(rec, N, a.xn1, lv.qkv!, lv.qkvBias, a.qkv);
  sp.gatherCols(rec, N, C, 3 * C, 0, a.qkv, a.q);
  sp.gatherCols(rec, N, C, 3 * C, C, a.qkv, a.k);
  sp.gatherCols(rec, N, C, 3 * C, 2 * C, a.qkv, a.v);
  K.ropeStore(
    rec,
    N,
    NH,
    NH,
    D,
    s.meta,
    a.q,
    a.k,
    a.v,
    m.cos,
    m.sin,
    m.kCache[l],
    m.vCache[l],
  );
  K.attn.attention(rec, {
    N,
    NH,
    KV: NH,
    D,
    meta: s.meta,
    q: a.q,
    kc: m.kCache[l],
    vc: m.vCache[l],
    out: a.att,
    lse: a.lse,
    parts: s.attnParts,
    context,
  });
  const xmid = m.savesForBackward ? a.xmid : m.res[l];
  P.residual(rec, N, a.att, lv.o, lv.oBias, m.res[l], xmid);
  g2.layernorm(
    rec,
    N,
    C,
    c.rmsNormEps,
    xmid,
    m.p(lv.postNorm),
    m.p(lv.postNormBias),
    a.xn2,
    a.mean2,
    a.rstd2,
  );
  P.linear(rec, N, a.xn2, lv.up, lv.upBias, a.gate);
  g2.gelu(rec, N * I, a.gate, a.h);
  P.residual(rec, N, a.h, lv.down, lv.downBias, xmid, m.res[l + 1]);
}
