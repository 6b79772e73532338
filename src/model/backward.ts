// The backward pass of GpuModel: the forward's dispatch list reversed, hand-written per op in
// the llm.c manner. Gradients land in buffers laid out like the parameters (so the optimizer is
// one loop over ranges); frozen tensors get no weight gradient but still pass dX through.
// A training call holds complete sequences: every position 0..len-1 of each slot is a row.
//
// Dims: N rows, C hidden, NH heads, KV kv heads, D head_dim, I intermediate, V vocab,
// S slots, P cache positions, L layers.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Recorder } from "../gpu/recorder.ts";
import type { MatmulShape } from "../ops/matmul.ts";
import { BackwardKernels } from "./backward_kernels.ts";
import { allocParams, type GpuParams } from "./gpu_params.ts";
import type { GpuModel } from "./gpu_model.ts";
import type { ModelRow } from "./gpu_model_options.ts";
import type { ParamTensor } from "./weights.ts";

export interface BackwardOptions {
  /** Which tensors get weight gradients (default: all). LoRA mode passes () => false. */
  trainable?: (t: ParamTensor) => boolean;
}

interface Grads {
  dX: GPUBuffer; // [N, C] gradient of the residual stream
  dXmid: GPUBuffer; // [N, C]
  dxn: GPUBuffer; // [N, C] gradient of a norm's output
  dh: GPUBuffer; // [N, I]
  dgate: GPUBuffer; // [N, I]
  dup: GPUBuffer; // [N, I]
  datt: GPUBuffer; // [N, NH·D]
  dq: GPUBuffer; // [N, NH·D] gradient of q as attention used it
  dqraw: GPUBuffer; // [N, NH·D] gradient of the q projection
  dk: GPUBuffer; // [N, KV·D]
  dkraw: GPUBuffer; // [N, KV·D]
  dv: GPUBuffer; // [N, KV·D]
  delta: GPUBuffer; // [N·NH]
  dkc: GPUBuffer; // [S, KV, P, D]
  dvc: GPUBuffer; // [S, KV, P, D]
  rowOf: GPUBuffer; // [S·P] u32
  seqLen: GPUBuffer; // [S] u32
  tokens: GPUBuffer; // [N] u32 unique tokens
  offsets: GPUBuffer; // [N + 1] u32
  csrRows: GPUBuffer; // [N] u32 rows grouped by token
  dqkv: GPUBuffer; // [N, 3C] gpt2: gradient of c_attn's output (4 floats otherwise)
  posIds: GPUBuffer; // [N] u32 gpt2: unique positions, CSR like tokens
  posOffsets: GPUBuffer; // [N + 1] u32
  posRows: GPUBuffer; // [N] u32 rows grouped by position
}

export class ModelBackward {
  readonly grads: GpuParams;
  private g: Grads;
  private uniqueTokens = 0;
  private uniquePositions = 0;
  /** Per chunk of a split embedding: its unique tokens [uStart, uStart + count) in the sorted CSR. */
  private embedRanges: { uStart: number; count: number }[] = [];
  private attnGrid = { slots: 1, positions: 1 };
  private trainable: (t: ParamTensor) => boolean;

  private constructor(readonly model: GpuModel, private k: BackwardKernels, opts: BackwardOptions) {
    const c = model.config, gpu = model.gpu, N = model.chunkRows;
    const C = c.hiddenSize,
      I = c.intermediateSize,
      qw = c.numHeads * c.headDim,
      kvw = c.numKvHeads * c.headDim;
    const f = (n: number, label: string) => gpu.zeros(n, label);
    const cache = model.slots * c.numKvHeads * model.maxLen * c.headDim;
    this.g = {
      dX: f(N * C, "dX"),
      dXmid: f(N * C, "dXmid"),
      dxn: f(N * C, "dxn"),
      dh: f(N * I, "dh"),
      dgate: f(N * I, "dgate"),
      dup: f(N * I, "dup"),
      datt: f(N * qw, "datt"),
      dq: f(N * qw, "dq"),
      dqraw: f(N * qw, "dqraw"),
      dk: f(N * kvw, "dk"),
      dkraw: f(N * kvw, "dkraw"),
      dv: f(N * kvw, "dv"),
      delta: f(N * c.numHeads, "delta"),
      dkc: f(cache, "dkc"),
      dvc: f(cache, "dvc"),
      rowOf: f(model.slots * model.maxLen, "rowOf"),
      seqLen: f(model.slots, "seqLen"),
      tokens: f(N, "tokens"),
      offsets: f(N + 1, "offsets"),
      csrRows: f(N, "csrRows"),
      dqkv: f(c.modelType === "gpt2" ? N * 3 * C : 4, "dqkv"),
      posIds: f(N, "posIds"),
      posOffsets: f(N + 1, "posOffsets"),
      posRows: f(N, "posRows"),
    };
    this.trainable = opts.trainable ?? (() => true);
    const half = model.weights.layout.tensors.find((t) =>
      model.params.isHalf(t) && this.trainable(t)
    );
    if (half) {
      throw new KernelArgumentError(
        `${half.name} is stored as half floats (GpuModelOptions.halfBase), so it cannot train: ` +
          "a half-float base is for LoRA and inference; create the model without halfBase for full fine-tuning",
      );
    }
    // LoRA mode allocates no base gradients at all.
    const anyTrainable = model.weights.layout.tensors.some((t) => this.trainable(t));
    // Same placement as the parameters: chunk k of a split tensor's gradient mirrors chunk k of it.
    this.grads = anyTrainable
      ? allocParams(gpu, model.weights, null, "grads", model.params.placement)
      : emptyParams();
  }

  static async create(model: GpuModel, opts: BackwardOptions = {}): Promise<ModelBackward> {
    if (!model.training) {
      throw new KernelArgumentError(
        "the backward pass needs a GpuModel created with training: true",
      );
    }
    return new ModelBackward(
      model,
      await BackwardKernels.create(
        model.gpu,
        model.slots,
        model.maxLen,
        model.config.headDim,
        model.kernels.attentionVariant,
        model.config.numHeads / model.config.numKvHeads,
        model.kernels.normVariant,
      ),
      opts,
    );
  }

  /** Uploads what the backward needs to know about the rows (call with the forward's rows). */
  prepare(rows: readonly ModelRow[]) {
    const m = this.model, S = m.slots, P = m.maxLen;
    if (rows.length > m.chunkRows) {
      throw new KernelArgumentError(
        `a training call holds at most chunkRows=${m.chunkRows} rows, got ${rows.length}`,
      );
    }
    const rowOf = new Uint32Array(S * P), seqLen = new Uint32Array(S), seen = new Uint8Array(S * P);
    rows.forEach((r, i) => {
      rowOf[r.slot * P + r.pos] = i;
      seen[r.slot * P + r.pos] = 1;
      seqLen[r.slot] = Math.max(seqLen[r.slot], r.pos + 1);
    });
    for (let s = 0; s < S; s++) {
      for (let p = 0; p < seqLen[s]; p++) {
        if (!seen[s * P + p]) {
          throw new KernelArgumentError(
            `slot ${s} lacks position ${p}: a training call must hold complete sequences`,
          );
        }
      }
    }
    // Ascending ids: each chunk of a split embedding owns a contiguous run of unique tokens.
    const { keys: tokens, offsets, csr } = groupRows(rows.map((r) => r.token));
    const gpu = m.gpu;
    if (m.gpt2) { // GPT-2's wpe gradient: the rows grouped by position the same way
      const byPos = groupRows(rows.map((r) => r.pos));
      gpu.write(this.g.posIds, Uint32Array.from(byPos.keys));
      gpu.write(this.g.posOffsets, Uint32Array.from(byPos.offsets));
      gpu.write(this.g.posRows, Uint32Array.from(byPos.csr));
      this.uniquePositions = byPos.keys.length;
    }
    gpu.write(this.g.rowOf, rowOf);
    gpu.write(this.g.seqLen, seqLen);
    // The dK/dV grid covers the slots and positions this call uses, not the whole cache: on CPU
    // adapters each empty workgroup still costs microseconds (32 slots × 320 positions = 20k).
    let lastSlot = 0, longest = 0;
    seqLen.forEach((n, slot) => n > 0 && ((lastSlot = slot), (longest = Math.max(longest, n))));
    this.attnGrid = { slots: lastSlot + 1, positions: Math.max(1, longest) };
    gpu.write(this.g.tokens, Uint32Array.from(tokens));
    gpu.write(this.g.offsets, Uint32Array.from(offsets));
    gpu.write(this.g.csrRows, Uint32Array.from(csr));
    this.uniqueTokens = tokens.length;
    const embed = m.weights.layout.embed;
    this.embedRanges = m.params.chunks(embed).map((c) => {
      const uStart = tokens.findIndex((t) => t >= c.rowStart);
      const from = uStart < 0 ? tokens.length : uStart;
      let end = from;
      while (end < tokens.length && tokens[end] < c.rowStart + c.rows) end++;
      return { uStart: from, count: end - from };
    });
  }

  /** Zeroes the weight gradients (before a new accumulation). */
  encodeZeroGrads(rec: Recorder) {
    for (const b of this.grads.buffers) rec.clear(b);
  }

  private mm(rec: Recorder, shape: MatmulShape, a: BufferRef, b: BufferRef, c: BufferRef) {
    this.model.ops.matmul.encode(rec, shape, a, b, c);
  }

  /** dX [N, in] (=, or += when acc) dY [N, out] · W;  dW += dYᵀ · X when W is trainable. */
  private linearBwd(
    rec: Recorder,
    N: number,
    dy: BufferRef,
    x: BufferRef,
    w: ParamTensor,
    bias: ParamTensor | null,
    dx: BufferRef,
    acc: boolean,
  ) {
    const [out, inp] = w.shape;
    const m = this.model;
    const chunks = m.params.chunks(w), halfB = m.params.isHalf(w);
    if (chunks.length === 1) {
      const shape = { form: "nn", M: N, N: inp, K: out, beta: acc ? 1 : 0, halfB } as const;
      this.mm(rec, shape, dy, chunks[0].ref, dx);
      if (this.trainable(w)) {
        this.mm(rec, { form: "tn", M: out, N: inp, K: N, beta: 1 }, dy, x, this.grads.ref(w));
      }
    } else {
      // W split into row chunks: dX sums the chunks' products; each chunk's dW is its own.
      const tmp = m.splitTmp!, dw = this.trainable(w) ? this.grads.chunks(w) : null;
      chunks.forEach((c, k) => {
        m.split!.gatherCols(rec, N, c.rows, out, c.rowStart, dy, tmp);
        this.mm(
          rec,
          { form: "nn", M: N, N: inp, K: c.rows, beta: acc || k > 0 ? 1 : 0, halfB },
          tmp,
          c.ref,
          dx,
        );
        if (dw) this.mm(rec, { form: "tn", M: c.rows, N: inp, K: N, beta: 1 }, tmp, x, dw[k].ref);
      });
    }
    if (bias && this.trainable(bias)) this.k.colsum(rec, N, out, dy, this.grads.ref(bias));
    if (m.lora && w.layer !== null) m.lora.encodeBackward(rec, N, w.layer, w.role, x, dy, dx);
  }

  /** GPT-2's LayerNorm backward: dx (= or +=), and dw, db += where trainable. */
  private layerNormBwd(
    rec: Recorder,
    N: number,
    dy: BufferRef,
    x: BufferRef,
    w: ParamTensor,
    b: ParamTensor,
    mean: BufferRef,
    rstd: BufferRef,
    dx: BufferRef,
    acc: boolean,
  ) {
    const m = this.model, C = m.config.hiddenSize;
    const tw = this.trainable(w), tb = this.trainable(b);
    if (tw !== tb) {
      throw new KernelArgumentError(
        `${w.name} and ${b.name}: train a LayerNorm's weight and bias together`,
      );
    }
    const wb = tw ? { dw: this.grads.ref(w), db: this.grads.ref(b) } : null;
    m.gpt2!.layernormBwd(rec, N, C, dy, x, m.p(w), mean, rstd, dx, acc, wb);
  }

  /** The backward of one GPT2Block (encodeGpt2Block, gpt2_block.ts, reversed). */
  private encodeGpt2LayerBwd(rec: Recorder, l: number, N: number) {
    const m = this.model,
      c = m.config,
      a = m.acts[l],
      g = this.g,
      lv = m.weights.layout.layerView(l);
    const C = c.hiddenSize, NH = c.numHeads, D = c.headDim;
    // MLP: res[l+1] = xmid + c_proj(gelu_new(c_fc(xn2))),  xn2 = ln_2(xmid)
    this.linearBwd(rec, N, g.dX, a.h, lv.down, lv.downBias, g.dh, false);
    m.gpt2!.geluBwd(rec, N * c.intermediateSize, g.dh, a.gate, g.dgate);
    this.linearBwd(rec, N, g.dgate, a.xn2, lv.up, lv.upBias, g.dxn, false);
    rec.copy(g.dX, g.dXmid, N * C * 4);
    this.layerNormBwd(
      rec,
      N,
      g.dxn,
      a.xmid,
      lv.postNorm,
      lv.postNormBias!,
      a.mean2,
      a.rstd2,
      g.dXmid,
      true,
    );
    // Attention: xmid = res[l] + c_proj(attn(split(c_attn(ln_1(res[l])))))
    this.linearBwd(rec, N, g.dXmid, a.att, lv.o, lv.oBias, g.datt, false);
    this.attentionBwd(rec, l, N, NH, NH, D, a.q);
    const sp = m.split!; // no RoPE to undo: q, k, v were c_attn's columns
    sp.copyCols(rec, N, C, 3 * C, 0, g.dq, g.dqkv);
    sp.copyCols(rec, N, C, 3 * C, C, g.dk, g.dqkv);
    sp.copyCols(rec, N, C, 3 * C, 2 * C, g.dv, g.dqkv);
    this.linearBwd(rec, N, g.dqkv, a.xn1, lv.qkv!, lv.qkvBias, g.dxn, false);
    rec.copy(g.dXmid, g.dX, N * C * 4);
    this.layerNormBwd(
      rec,
      N,
      g.dxn,
      m.res[l],
      lv.inputNorm,
      lv.inputNormBias!,
      a.mean1,
      a.rstd1,
      g.dX,
      true,
    );
  }

  /**
   * Layer l's attention backward: dq into g.dq, and dK / dV gathered from the cache's slots into
   * g.dk / g.dv (K and V were read from the layer's cache; q is the rotated query).
   */
  private attentionBwd(
    rec: Recorder,
    l: number,
    N: number,
    heads: number,
    kvHeads: number,
    D: number,
    q: GPUBuffer,
  ) {
    const m = this.model, a = m.acts[l], g = this.g, meta = m.scratch.meta;
    this.k.attention(rec, N, heads, kvHeads, D, {
      meta,
      rowOf: g.rowOf,
      seqLen: g.seqLen,
      q,
      kc: m.kCache[l],
      vc: m.vCache[l],
      out: a.att,
      dout: g.datt,
      lse: a.lse,
      delta: g.delta,
      dq: g.dq,
      dkc: g.dkc,
      dvc: g.dvc,
      grid: this.attnGrid,
    });
    this.k.kvGather(rec, N, kvHeads, D, meta, g.dkc, g.dk);
    this.k.kvGather(rec, N, kvHeads, D, meta, g.dvc, g.dv);
  }

  private normBwd(
    rec: Recorder,
    rows: number,
    cols: number,
    dy: BufferRef,
    x: BufferRef,
    w: ParamTensor,
    rstd: BufferRef,
    dx: BufferRef,
    acc: boolean,
  ) {
    const dw = this.trainable(w) ? this.grads.ref(w) : null;
    this.k.rmsnorm(rec, rows, cols, dy, x, this.model.p(w), rstd, dx, dw, acc);
  }

  private encodeLayerBwd(rec: Recorder, l: number, N: number) {
    const m = this.model,
      c = m.config,
      a = m.acts[l],
      g = this.g,
      lv = m.weights.layout.layerView(l);
    const C = c.hiddenSize, NH = c.numHeads, KV = c.numKvHeads, D = c.headDim;
    // MLP: res[l+1] = xmid + down(silu(gate(xn2)) · up(xn2)),  xn2 = norm(xmid)
    this.linearBwd(rec, N, g.dX, a.h, lv.down, null, g.dh, false);
    this.k.swiglu(rec, N * c.intermediateSize, g.dh, a.gate, a.up, g.dgate, g.dup);
    this.linearBwd(rec, N, g.dgate, a.xn2, lv.gate!, null, g.dxn, false);
    this.linearBwd(rec, N, g.dup, a.xn2, lv.up, null, g.dxn, true);
    rec.copy(g.dX, g.dXmid, N * C * 4);
    this.normBwd(rec, N, C, g.dxn, a.xmid, lv.postNorm, a.rstd2, g.dXmid, true);
    // Attention: xmid = res[l] + o(attn(rope(qnorm(q(xn1))), rope(knorm(k(xn1))), v(xn1)))
    this.linearBwd(rec, N, g.dXmid, a.att, lv.o, lv.oBias, g.datt, false);
    const { q } = m.qkUsed(l); // K and V come from the layer's cache
    const s = m.scratch;
    this.attentionBwd(rec, l, N, NH, KV, D, q);
    m.kernels.ropeInverse(rec, N, NH, D, m.maxLen, g.dq, s.meta, m.cos, m.sin);
    m.kernels.ropeInverse(rec, N, KV, D, m.maxLen, g.dk, s.meta, m.cos, m.sin);
    let dq: GPUBuffer = g.dq, dk: GPUBuffer = g.dk;
    if (lv.qNorm && lv.kNorm) {
      this.normBwd(rec, N * NH, D, g.dq, a.q, lv.qNorm, a.rstdq, g.dqraw, false);
      this.normBwd(rec, N * KV, D, g.dk, a.k, lv.kNorm, a.rstdk, g.dkraw, false);
      [dq, dk] = [g.dqraw, g.dkraw];
    }
    this.linearBwd(rec, N, dq, a.xn1, lv.q!, lv.qBias, g.dxn, false);
    this.linearBwd(rec, N, dk, a.xn1, lv.k!, lv.kBias, g.dxn, true);
    this.linearBwd(rec, N, g.dv, a.xn1, lv.v!, lv.vBias, g.dxn, true);
    rec.copy(g.dXmid, g.dX, N * C * 4);
    this.normBwd(rec, N, C, g.dxn, m.res[l], lv.inputNorm, a.rstd1, g.dX, true);
  }

  /**
   * Records the backward of the last training forward of N rows (call prepare(rows) first),
   * from dlogits [N, V]; weight gradients are added to `grads`. `finalHidden`, when given, records
   * more gradient into dL/dxf [N, C] (the final norm's output, scratch.xf) after the LM head's:
   * another head on the same hidden state (PPO's value head) trains the trunk through it too.
   */
  encode(
    rec: Recorder,
    N: number,
    dlogits: BufferRef,
    finalHidden?: (rec: Recorder, dxf: GPUBuffer) => void,
  ) {
    this.encodeHeadRows(rec, 0, N, dlogits);
    this.encodeTrunk(rec, N, finalHidden);
  }

  /**
   * The LM head's backward for rows r0 .. r0 + rows − 1 of the last training forward, from their
   * dlogits [rows, V]: writes those rows of dL/dxf and adds to the head's weight gradient. Every
   * row of the forward goes through here once (GpuModel.encodeHeadRows' chunks) before
   * encodeTrunk; r0 as there (a multiple of 64 rows is always aligned).
   */
  encodeHeadRows(rec: Recorder, r0: number, rows: number, dlogits: BufferRef) {
    const m = this.model, C = m.config.hiddenSize, s = m.scratch, g = this.g;
    const range = (buffer: GPUBuffer) => ({ buffer, offset: r0 * C * 4, size: rows * C * 4 });
    this.linearBwd(
      rec,
      rows,
      dlogits,
      range(s.xf),
      m.weights.layout.lmHead,
      null,
      range(g.dxn),
      false,
    );
  }

  /**
   * The backward of the last training forward of N rows below the LM head, once encodeHeadRows
   * has covered all N rows: `finalHidden` first (another head's gradient into dL/dxf), then the
   * final norm and every layer.
   */
  encodeTrunk(rec: Recorder, N: number, finalHidden?: (rec: Recorder, dxf: GPUBuffer) => void) {
    const m = this.model, c = m.config, lay = m.weights.layout, g = this.g, s = m.scratch;
    const C = c.hiddenSize, L = c.numLayers;
    finalHidden?.(rec, g.dxn);
    if (m.gpt2) {
      this.layerNormBwd(
        rec,
        N,
        g.dxn,
        m.res[L],
        lay.finalNorm,
        lay.finalNormBias!,
        s.meanf,
        s.rstdf,
        g.dX,
        false,
      );
      for (let l = L - 1; l >= 0; l--) this.encodeGpt2LayerBwd(rec, l, N);
      const wpe = lay.posEmbed!;
      if (this.trainable(wpe)) {
        this.k.embedding(
          rec,
          this.uniquePositions,
          C,
          g.dX,
          g.posIds,
          g.posOffsets,
          g.posRows,
          this.grads.ref(wpe),
        );
      }
    } else {
      this.normBwd(rec, N, C, g.dxn, m.res[L], lay.finalNorm, s.rstdf, g.dX, false);
      for (let l = L - 1; l >= 0; l--) this.encodeLayerBwd(rec, l, N);
    }
    if (this.trainable(lay.embed)) {
      const chunks = this.grads.chunks(lay.embed);
      if (chunks.length === 1) {
        this.k.embedding(
          rec,
          this.uniqueTokens,
          C,
          g.dX,
          g.tokens,
          g.offsets,
          g.csrRows,
          chunks[0].ref,
        );
      } else {
        chunks.forEach((c, i) => {
          const r = this.embedRanges[i];
          if (r?.count) {
            m.split!.embeddingBwd(
              rec,
              r.uStart,
              r.count,
              C,
              c.rowStart,
              g.dX,
              g.tokens,
              g.offsets,
              g.csrRows,
              c.ref,
            );
          }
        });
      }
    }
  }

  /** The gradient of the residual stream at the embedding output, [N, C] (for tests). */
  get inputGrad(): GPUBuffer {
    return this.g.dX;
  }

  destroy() {
    this.grads.destroy();
    for (const b of Object.values(this.g)) b.destroy();
  }
}

/** Row indices grouped by key (ascending keys): keys, CSR offsets and the rows in key order. */
function groupRows(
  keysOfRows: readonly number[],
): { keys: number[]; offsets: number[]; csr: number[] } {
  const by = new Map<number, number[]>();
  keysOfRows.forEach((k, i) => {
    const list = by.get(k);
    if (list) list.push(i);
    else by.set(k, [i]);
  });
  const keys = [...by.keys()].sort((a, b) => a - b);
  const offsets = [0], csr: number[] = [];
  for (const k of keys) {
    csr.push(...by.get(k)!);
    offsets.push(csr.length);
  }
  return { keys, offsets, csr };
}

function emptyParams(): GpuParams {
  return {
    ref(t) {
      throw new KernelArgumentError(`tensor ${t.name} is frozen: no gradient buffer`);
    },
    chunks(t) {
      throw new KernelArgumentError(`tensor ${t.name} is frozen: no gradient buffer`);
    },
    isSplit: () => false,
    isHalf: () => false,
    anySplit: false,
    placement: { maxBindingBytes: 0, maxBufferBytes: 0 },
    buffers: [],
    bytes: 0,
    destroy() {},
  };
}
