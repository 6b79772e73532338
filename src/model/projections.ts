// The projections of a forward pass (q/k/v, o, gate/up, down, the LM head) with their norms,
// biases and LoRA, on storage buffers: what every forward uses, decode steps on GPU-class
// adapters included. A decode backend (decode_backend.ts) may hand a decode step's layers another
// implementation of the same interface (cpu_adapter/texture_projections.ts).
//
// Dims: N rows, C hidden, NH heads, KV kv heads, D head_dim, I intermediate; W stored [out, in].

import type { BufferRef } from "../gpu/buffers.ts";
import type { Recorder } from "../gpu/recorder.ts";
import type { AttentionFold } from "./attention_fold.ts";
import type { GpuModel } from "./gpu_model.ts";
import type { BufferRange } from "./gpu_params.ts";
import type { ParamTensor } from "./weights.ts";

/** One linear of a group: its weight, bias (or null) and output [N, out]. */
export type LinearPart = [ParamTensor, ParamTensor | null, BufferRef];

/** What a Llama-family layer and the LM head ask of a path (encodeDecoderBlock, decoder_block.ts). */
export interface Projections {
  /**
   * Attention's inputs of layer l: input RMSNorm of res[l] → q, k, v (+ biases, LoRA) → the
   * Qwen3 q/k RMSNorms → RoPE of q and k, k and v stored in the layer's cache; but what `fold`
   * says attention does itself (a decode step's ModelKernels.attention with its `fold`): "rope" leaves RoPE
   * and the cache write to it, "rope-bias" the q/k/v biases too, "qk-norm" the q/k norms too.
   * Default "none".
   */
  attentionInput(rec: Recorder, l: number, N: number, fold?: AttentionFold): void;
  /** to = from + x · Wᵀ (+ bias, LoRA): the o and down projections with their residual add. */
  residual(
    rec: Recorder,
    N: number,
    x: BufferRef,
    w: ParamTensor,
    bias: ParamTensor | null,
    from: GPUBuffer,
    to: GPUBuffer,
  ): void;
  /**
   * The MLP of layer l: to = xmid + down(SwiGLU(gate, up)) (+ LoRA) of the post-attention RMSNorm
   * of xmid, leaving xn2, gate, up and h in the layer's activations.
   */
  mlp(rec: Recorder, l: number, N: number, xmid: GPUBuffer, to: GPUBuffer): void;
  /** Logits [nSel, V] of the rows in x: final RMSNorm → LM head. */
  head(rec: Recorder, nSel: number, x: GPUBuffer, logits: BufferRange): void;
}

export class StorageProjections implements Projections {
  constructor(protected readonly m: GpuModel) {}

  attentionInput(rec: Recorder, l: number, N: number, fold: AttentionFold = "none") {
    const m = this.m, c = m.config, a = m.acts[l], lv = m.weights.layout.layerView(l);
    const qkv = this.qkvParts(l, fold);
    if (!this.normGroup(rec, N, m.res[l], lv.inputNorm, a.xn1, qkv)) {
      m.kernels.rmsnorm(
        rec,
        N,
        c.hiddenSize,
        c.rmsNormEps,
        m.res[l],
        m.p(lv.inputNorm),
        a.xn1,
        a.rstd1,
      );
      this.linearGroup(rec, N, a.xn1, qkv);
    }
    this.qkNormRope(rec, l, N, fold);
  }

  /** Layer l's q, k and v projections with their biases, but those the attention `fold` adds. */
  protected qkvParts(l: number, fold: AttentionFold): LinearPart[] {
    const a = this.m.acts[l], lv = this.m.weights.layout.layerView(l);
    const folded = fold === "rope-bias";
    return [
      [lv.q!, folded ? null : lv.qBias, a.q],
      [lv.k!, folded ? null : lv.kBias, a.k],
      [lv.v!, folded ? null : lv.vBias, a.v],
    ];
  }

  /**
   * The Qwen3 q and k norms of layer l, then q and k rotated, k and v written to the cache; but
   * what `fold` leaves to attention (attentionInput).
   */
  protected qkNormRope(rec: Recorder, l: number, N: number, fold: AttentionFold) {
    const m = this.m,
      c = m.config,
      K = m.kernels,
      a = m.acts[l],
      lv = m.weights.layout.layerView(l);
    const D = c.headDim, NH = c.numHeads, KV = c.numKvHeads;
    if (lv.qNorm && lv.kNorm && fold !== "qk-norm") { // Qwen3: per-head RMSNorm of q and k before RoPE, one dispatch
      K.rmsnormPair(
        rec,
        D,
        c.rmsNormEps,
        { rows: N * NH, x: a.q, w: m.p(lv.qNorm), out: a.qn, rstd: a.rstdq },
        { rows: N * KV, x: a.k, w: m.p(lv.kNorm), out: a.kn, rstd: a.rstdk },
      );
    }
    if (fold !== "none") return;
    const { q, k } = m.qkUsed(l);
    K.ropeStore(
      rec,
      N,
      NH,
      KV,
      D,
      m.scratch.meta,
      q,
      k,
      a.v,
      m.cos,
      m.sin,
      m.kCache[l],
      m.vCache[l],
    );
  }

  mlp(rec: Recorder, l: number, N: number, xmid: GPUBuffer, to: GPUBuffer) {
    const m = this.m, c = m.config, a = m.acts[l], lv = m.weights.layout.layerView(l);
    const gateUp: LinearPart[] = [[lv.gate!, null, a.gate], [lv.up, null, a.up]];
    if (!this.normGroup(rec, N, xmid, lv.postNorm, a.xn2, gateUp)) {
      m.kernels.rmsnorm(rec, N, c.hiddenSize, c.rmsNormEps, xmid, m.p(lv.postNorm), a.xn2, a.rstd2);
      this.linearGroup(rec, N, a.xn2, gateUp);
    }
    if (!this.swigluResidual(rec, N, l, xmid, to)) {
      m.kernels.swiglu(rec, N * c.intermediateSize, a.gate, a.up, a.h);
      this.residual(rec, N, a.h, lv.down, null, xmid, to);
    }
  }

  /**
   * Inference and decode steps with the kernels' fused forms (GPU adapters at decode rows,
   * Matmul.encodeNormGroup): xn = RMSNorm(x; norm), then each part's y = xn · Wᵀ in the same
   * dispatch, then biases and LoRA (which read xn). False, recording nothing, where they do not
   * apply: a forward a backward follows (GpuModel.savesForBackward: the backward reads 1/rms,
   * which the fused kernel does not keep), splitKFolds off, split weights, other picks.
   */
  protected normGroup(
    rec: Recorder,
    N: number,
    x: GPUBuffer,
    norm: ParamTensor,
    xn: GPUBuffer,
    parts: LinearPart[],
  ): boolean {
    const m = this.m;
    if (
      m.savesForBackward || !m.splitKFolds || parts.some(([w]) => m.params.chunks(w).length !== 1)
    ) {
      return false;
    }
    const fused = m.ops.matmul.encodeNormGroup(
      rec,
      N,
      parts[0][0].shape[1],
      x,
      { g: m.p(norm), eps: m.config.rmsNormEps, xn },
      parts.map(([w, , y]) => ({ b: m.params.chunks(w)[0].ref, c: y, N: w.shape[0] })),
      m.scratch.unused,
      m.params.isHalf(parts[0][0]),
    );
    if (!fused) return false;
    this.addBiases(rec, N, parts);
    this.lora(rec, N, xn, parts);
    return true;
  }

  /**
   * Inference, in place (to = from): to += SwiGLU(gate, up) · W_downᵀ with h written, in one
   * dispatch (Matmul.encodeSwigluNt), then LoRA on h. False, recording nothing, where the fused
   * kernel does not apply (as normGroup). Llama-family down projections have no bias.
   */
  protected swigluResidual(
    rec: Recorder,
    N: number,
    l: number,
    from: GPUBuffer,
    to: GPUBuffer,
  ): boolean {
    const m = this.m, a = m.acts[l], w = m.weights.layout.layerView(l).down;
    const chunks = m.params.chunks(w);
    if (m.savesForBackward || !m.splitKFolds || from !== to || chunks.length !== 1) return false;
    const [out, inp] = w.shape;
    const fused = m.ops.matmul.encodeSwigluNt(
      rec,
      { M: N, N: out, K: inp, beta: 1, halfB: m.params.isHalf(w) },
      a.gate,
      a.up,
      chunks[0].ref,
      to,
      a.h,
    );
    if (fused) this.lora(rec, N, a.h, [[w, null, to]]);
    return fused;
  }

  head(rec: Recorder, nSel: number, x: GPUBuffer, logits: BufferRange) {
    const m = this.m, c = m.config, s = m.scratch, lay = m.weights.layout;
    if (this.normGroup(rec, nSel, x, lay.finalNorm, s.xf, [[lay.lmHead, null, logits]])) return;
    m.kernels.rmsnorm(rec, nSel, c.hiddenSize, c.rmsNormEps, x, m.p(lay.finalNorm), s.xf, s.rstdf);
    this.matmulWeight(rec, nSel, s.xf, lay.lmHead, logits);
  }

  /**
   * to = from + linear(x). With from ≠ to (a training forward) the linear goes to proj and one add
   * writes to; with from = to (inference, decode steps) the matmul accumulates into it (beta 1), or for a split W its
   * chunks' product in proj is added in, then the bias and LoRA: the same rounding either way.
   */
  residual(
    rec: Recorder,
    N: number,
    x: BufferRef,
    w: ParamTensor,
    bias: ParamTensor | null,
    from: GPUBuffer,
    to: GPUBuffer,
  ) {
    const m = this.m, [out, inp] = w.shape;
    const ew = m.ops.elementwise, proj = m.scratch.proj;
    if (from !== to) {
      this.linear(rec, N, x, w, bias, proj);
      ew.binary(rec, { op: "add", n: N * out }, from, proj, to);
      return;
    }
    const chunks = m.params.chunks(w), halfB = m.params.isHalf(w);
    if (chunks.length === 1) {
      m.ops.matmul.encode(
        rec,
        { form: "nt", M: N, N: out, K: inp, beta: 1, halfB },
        x,
        chunks[0].ref,
        to,
      );
    } else {
      this.matmulWeight(rec, N, x, w, proj);
      ew.binaryInPlace(rec, { op: "add", n: N * out }, to, proj);
    }
    this.biasAndLora(rec, N, x, w, bias, to);
  }

  /**
   * y [N, out] = x [N, in] · Wᵀ: one matmul, or for a split W one per row chunk into splitTmp,
   * copied into the chunk's columns of y.
   */
  matmulWeight(rec: Recorder, N: number, x: BufferRef, w: ParamTensor, y: BufferRef) {
    const m = this.m, [out, inp] = w.shape;
    const chunks = m.params.chunks(w), halfB = m.params.isHalf(w);
    if (chunks.length === 1) {
      m.ops.matmul.encode(rec, { form: "nt", M: N, N: out, K: inp, halfB }, x, chunks[0].ref, y);
      return;
    }
    for (const c of chunks) {
      const shape = { form: "nt", M: N, N: c.rows, K: inp, halfB } as const;
      m.ops.matmul.encode(rec, shape, x, c.ref, m.splitTmp!);
      m.split!.copyCols(rec, N, c.rows, out, c.rowStart, m.splitTmp!, y);
    }
  }

  /** y [N, out] = x [N, in] · Wᵀ (+ bias, LoRA): HF Linear. */
  linear(
    rec: Recorder,
    N: number,
    x: BufferRef,
    w: ParamTensor,
    bias: ParamTensor | null,
    y: BufferRef,
  ) {
    this.matmulWeight(rec, N, x, w, y);
    this.biasAndLora(rec, N, x, w, bias, y);
  }

  /** y [N, out] += bias, then += the attached LoRA adapter's x · Aᵀ · Bᵀ for this weight. */
  protected biasAndLora(
    rec: Recorder,
    N: number,
    x: BufferRef,
    w: ParamTensor,
    bias: ParamTensor | null,
    y: BufferRef,
  ) {
    this.addBias(rec, N, w, bias, y);
    this.lora(rec, N, x, [[w, bias, y]]);
  }

  /** y [N, out] += bias (broadcast over rows), if the Linear has one. */
  protected addBias(
    rec: Recorder,
    N: number,
    w: ParamTensor,
    bias: ParamTensor | null,
    y: BufferRef,
  ) {
    if (!bias) return;
    this.m.ops.elementwise.binaryInPlace(
      rec,
      { op: "add", n: N * w.shape[0], cols: w.shape[0], broadcast: "row" },
      y,
      this.m.p(bias),
    );
  }

  /** Each part's y += its bias, the parts that have one in one dispatch (Qwen2's q/k/v). */
  protected addBiases(rec: Recorder, N: number, parts: readonly LinearPart[]) {
    const m = this.m, withBias = parts.filter(([, bias]) => bias !== null);
    if (withBias.length === 0) return;
    m.ops.elementwise.addBiases(
      rec,
      N,
      withBias.map(([w, bias, y]) => ({ y, bias: m.p(bias!), cols: w.shape[0] })),
      m.scratch.unused,
    );
  }

  /** Each part's y += its LoRA term, the parts sharing the input x (one layer's group). */
  protected lora(rec: Recorder, N: number, x: BufferRef, parts: readonly LinearPart[]) {
    const lora = this.m.lora, layer = parts[0][0].layer;
    if (!lora || layer === null) return;
    lora.encodeForwardGroup(rec, N, layer, parts.map(([w, , y]) => ({ module: w.role, y })), x);
  }

  /**
   * Several linears of one input (q/k/v, gate/up): their matmuls in one grouped dispatch where
   * the kernels allow (Matmul.encodeGroup; not for split weights), then each bias and LoRA.
   */
  protected linearGroup(rec: Recorder, N: number, x: BufferRef, parts: LinearPart[]) {
    const m = this.m;
    if (parts.some(([w]) => m.params.chunks(w).length !== 1)) {
      for (const [w, bias, y] of parts) this.linear(rec, N, x, w, bias, y);
      return;
    }
    const inp = parts[0][0].shape[1];
    m.ops.matmul.encodeGroup(
      rec,
      N,
      inp,
      x,
      parts.map(([w, , y]) => ({ b: m.params.chunks(w)[0].ref, c: y, N: w.shape[0] })),
      m.scratch.unused,
      m.params.isHalf(parts[0][0]),
    );
    this.addBiases(rec, N, parts);
    this.lora(rec, N, x, parts);
  }
}
