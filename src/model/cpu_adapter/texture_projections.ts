// A per-op decode step's projections reading weight textures (weight_textures.ts) where a weight
// has one, the storage path (StorageProjections) where it has not. A texture with the preceding
// RMSNorm folded in (normEps) reads the un-normalized stream, so the norm's dispatch is skipped
// unless LoRA (which reads the normalized input) or a weight without such a texture needs it.
// Without adapters, biases or q/k norms the q/k/v products, RoPE and the cache write are one
// dispatch, and so are the gate/up products and SwiGLU.
//
// Dims: N rows, C hidden, D head_dim, I intermediate.

import type { BufferRef } from "../../gpu/buffers.ts";
import type { Recorder } from "../../gpu/recorder.ts";
import type { AttentionFold } from "../attention_fold.ts";
import type { TextureWeight } from "../../ops/matmul.ts";
import type { GpuModel } from "../gpu_model.ts";
import type { BufferRange } from "../gpu_params.ts";
import { type LinearPart, StorageProjections } from "../projections.ts";
import type { ParamTensor } from "../weights.ts";
import type { WeightTextures } from "./weight_textures.ts";

export class TextureProjections extends StorageProjections {
  constructor(m: GpuModel, private readonly tex: WeightTextures) {
    super(m);
  }

  /** Whether the RMSNorm before these weights must still run (its output is read). */
  private needsNorm(ws: ParamTensor[]): boolean {
    return !!this.m.lora || ws.some((w) => this.tex.get(w)?.normEps === undefined);
  }

  override attentionInput(rec: Recorder, l: number, N: number, fold: AttentionFold = "none") {
    const m = this.m, c = m.config, a = m.acts[l], lv = m.weights.layout.layerView(l);
    const raw = m.res[l], ws = [lv.q!, lv.k!, lv.v!];
    if (this.needsNorm(ws)) {
      m.kernels.rmsnorm(rec, N, c.hiddenSize, c.rmsNormEps, raw, m.p(lv.inputNorm), a.xn1, a.rstd1);
    }
    const [tq, tk, tv] = ws.map((w) => this.tex.get(w));
    if (
      fold === "none" && tq && tk && tv && !m.lora && !lv.qBias && !lv.kBias && !lv.vBias &&
      !lv.qNorm &&
      tk.normEps === tq.normEps && tv.normEps === tq.normEps &&
      m.ops.matmul.canRopeTexture(N, c.headDim)
    ) {
      m.ops.matmul.encodeQkvRopeTexture(rec, N, tq.normEps === undefined ? a.xn1 : raw, [
        tq,
        tk,
        tv,
      ], {
        q: m.qkUsed(l).q,
        kc: m.kCache[l],
        vc: m.vCache[l],
        meta: m.scratch.meta,
        cos: m.cos,
        sin: m.sin,
        headDim: c.headDim,
        positions: m.kernels.cachePositions,
      });
      return;
    }
    this.texLinearGroup(rec, N, a.xn1, this.qkvParts(l, fold), raw);
    this.qkNormRope(rec, l, N, fold);
  }

  /** The texture path does not take the split-K folds: norm → gate/up (→ SwiGLU) → down. */
  override mlp(rec: Recorder, l: number, N: number, xmid: GPUBuffer, to: GPUBuffer) {
    this.mlpInput(rec, l, N, xmid);
    this.residual(
      rec,
      N,
      this.m.acts[l].h,
      this.m.weights.layout.layerView(l).down,
      null,
      xmid,
      to,
    );
  }

  /** The MLP's input: post-attention RMSNorm of xmid → gate, up → SwiGLU into h. */
  private mlpInput(rec: Recorder, l: number, N: number, xmid: GPUBuffer) {
    const m = this.m, c = m.config, a = m.acts[l], lv = m.weights.layout.layerView(l);
    if (this.needsNorm([lv.gate!, lv.up])) {
      m.kernels.rmsnorm(rec, N, c.hiddenSize, c.rmsNormEps, xmid, m.p(lv.postNorm), a.xn2, a.rstd2);
    }
    const [tg, tu] = [this.tex.get(lv.gate!), this.tex.get(lv.up)];
    if (tg && tu && !m.lora && tg.normEps === tu.normEps) {
      m.ops.matmul.encodeSwigluTexture(
        rec,
        N,
        tg.normEps === undefined ? a.xn2 : xmid,
        tg,
        tu,
        a.h,
      );
      return;
    }
    this.texLinearGroup(rec, N, a.xn2, [[lv.gate!, null, a.gate], [lv.up, null, a.up]], xmid);
    m.kernels.swiglu(rec, N * c.intermediateSize, a.gate, a.up, a.h);
  }

  override head(rec: Recorder, nSel: number, x: GPUBuffer, logits: BufferRange) {
    const m = this.m, c = m.config, s = m.scratch, lay = m.weights.layout;
    if (this.tex.get(lay.lmHead)?.normEps === undefined) {
      m.kernels.rmsnorm(
        rec,
        nSel,
        c.hiddenSize,
        c.rmsNormEps,
        x,
        m.p(lay.finalNorm),
        s.xf,
        s.rstdf,
      );
    }
    this.texMatmul(rec, nSel, s.xf, lay.lmHead, logits, x);
  }

  override residual(
    rec: Recorder,
    N: number,
    x: BufferRef,
    w: ParamTensor,
    bias: ParamTensor | null,
    from: GPUBuffer,
    to: GPUBuffer,
  ) {
    const tw = this.tex.get(w);
    if (!tw) return super.residual(rec, N, x, w, bias, from, to);
    if (from !== to) {
      this.texMatmul(rec, N, x, w, this.m.scratch.proj, null);
      this.biasAndLora(rec, N, x, w, bias, this.m.scratch.proj);
      this.m.ops.elementwise.binary(
        rec,
        { op: "add", n: N * w.shape[0] },
        from,
        this.m.scratch.proj,
        to,
      );
      return;
    }
    this.m.ops.matmul.encodeTexture(rec, { M: N, beta: 1 }, x, tw, to);
    this.biasAndLora(rec, N, x, w, bias, to);
  }

  /**
   * y = x · Wᵀ from W's texture where it has one (one with the norm folded in reads `raw`, x
   * before that norm, and is used only where raw is given), else from storage.
   */
  private texMatmul(
    rec: Recorder,
    N: number,
    x: BufferRef,
    w: ParamTensor,
    y: BufferRef,
    raw: BufferRef | null,
  ) {
    const tw = this.tex.get(w);
    if (tw && (tw.normEps === undefined || raw)) {
      this.m.ops.matmul.encodeTexture(rec, { M: N }, tw.normEps === undefined ? x : raw!, tw, y);
    } else this.matmulWeight(rec, N, x, w, y);
  }

  /**
   * linearGroup reading textures: one grouped texture dispatch where every part has a texture
   * (all with the norm folded in, reading raw, or none), else each part on its own.
   */
  private texLinearGroup(
    rec: Recorder,
    N: number,
    x: BufferRef,
    parts: LinearPart[],
    raw: BufferRef,
  ) {
    const tws = parts.map(([w]) => this.tex.get(w));
    if (!tws.some((t) => t)) return this.linearGroup(rec, N, x, parts);
    const folded = tws[0]?.normEps !== undefined;
    if (!tws.every((t) => t && (t.normEps !== undefined) === folded)) {
      for (const [w, bias, y] of parts) {
        this.texMatmul(rec, N, x, w, y, raw);
        this.biasAndLora(rec, N, x, w, bias, y);
      }
      return;
    }
    this.m.ops.matmul.encodeGroupTexture(
      rec,
      N,
      folded ? raw : x,
      parts.map(([, , y], i) => ({ b: tws[i] as TextureWeight, c: y })),
      this.m.scratch.unused,
    );
    this.addBiases(rec, N, parts);
    this.lora(rec, N, x, parts);
  }
}
