// A Hugging Face Llama/Qwen2/Qwen3 decoder on the GPU, with HF semantics. A forward call takes
// rows (token, slot, position): each row's K/V goes into its slot's cache and attention reads
// positions 0..pos of that slot, so prompt prefill, ragged batched decode and full-sequence
// scoring are one path. Logits are computed only for the rows asked for.
//
// Dims: N rows this call, C hidden, NH heads, KV kv heads, D head_dim, I intermediate, V vocab,
// S slots (concurrent sequences), P cache positions per slot, L layers.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { createOps, type Ops } from "../ops/mod.ts";
import type { ModelConfig } from "./config.ts";
import { type GpuParams, uploadParams } from "./gpu_params.ts";
import { ModelKernels } from "./model_kernels.ts";
import { ropeTable } from "./rope_table.ts";
import type { ModelWeights, ParamTensor } from "./weights.ts";

export interface ModelRow {
  token: number;
  /** Which sequence (cache slot) the row belongs to, 0 ≤ slot < slots. */
  slot: number;
  /** Position in that sequence, 0 ≤ pos < maxLen. */
  pos: number;
}

export interface GpuModelOptions {
  /** Concurrent sequences (KV cache slots). */
  slots: number;
  /** Cache positions per slot: the longest prompt + completion. */
  maxLen: number;
  /** Rows per forward chunk (bounds activation memory); default 256. */
  chunkRows?: number;
}

/** Activation buffers for up to `rows` rows of one chunk. */
interface Scratch {
  ids: GPUBuffer; // [N] u32
  meta: GPUBuffer; // [N] (slot, pos) u32 pairs
  sel: GPUBuffer; // [N] u32 rows whose logits are wanted
  x: GPUBuffer; // [N, C] residual stream
  xn: GPUBuffer; // [N, C]
  q: GPUBuffer; // [N, NH·D]
  qn: GPUBuffer; // [N, NH·D] (q/k norm output)
  k: GPUBuffer; // [N, KV·D]
  kn: GPUBuffer; // [N, KV·D]
  v: GPUBuffer; // [N, KV·D]
  att: GPUBuffer; // [N, NH·D]
  lse: GPUBuffer; // [N, NH]
  rstd: GPUBuffer; // [N·NH] scratch for norms
  gate: GPUBuffer; // [N, I]
  up: GPUBuffer; // [N, I]
  h: GPUBuffer; // [N, I]
  proj: GPUBuffer; // [N, C] attention / MLP output before the residual add
  logits: GPUBuffer; // [N, V]
}

export class GpuModel {
  readonly config: ModelConfig;
  private scratch: Scratch;
  private kCache: GPUBuffer[];
  private vCache: GPUBuffer[];
  private cos: GPUBuffer;
  private sin: GPUBuffer;
  readonly chunkRows: number;

  private constructor(
    readonly gpu: Gpu,
    readonly weights: ModelWeights,
    readonly params: GpuParams,
    readonly ops: Ops,
    readonly kernels: ModelKernels,
    readonly slots: number,
    readonly maxLen: number,
    chunkRows: number,
  ) {
    const c = weights.config;
    this.config = c;
    this.chunkRows = chunkRows;
    const N = chunkRows, C = c.hiddenSize, D = c.headDim, I = c.intermediateSize;
    const qw = c.numHeads * D, kvw = c.numKvHeads * D;
    const f = (n: number, label: string) => gpu.zeros(n, label);
    this.scratch = {
      ids: f(N, "ids"), meta: f(2 * N, "meta"), sel: f(N, "sel"),
      x: f(N * C, "x"), xn: f(N * C, "xn"), q: f(N * qw, "q"), qn: f(N * qw, "qn"),
      k: f(N * kvw, "k"), kn: f(N * kvw, "kn"), v: f(N * kvw, "v"), att: f(N * qw, "att"),
      lse: f(N * c.numHeads, "lse"), rstd: f(N * Math.max(c.numHeads, 1), "rstd"),
      gate: f(N * I, "gate"), up: f(N * I, "up"), h: f(N * I, "h"), proj: f(N * C, "proj"),
      logits: f(N * c.vocabSize, "logits"),
    };
    const cacheFloats = slots * c.numKvHeads * maxLen * D;
    this.kCache = Array.from({ length: c.numLayers }, (_, l) => f(cacheFloats, `kcache${l}`));
    this.vCache = Array.from({ length: c.numLayers }, (_, l) => f(cacheFloats, `vcache${l}`));
    const rt = ropeTable(D, c.ropeTheta, maxLen);
    this.cos = gpu.upload(rt.cos, "rope_cos");
    this.sin = gpu.upload(rt.sin, "rope_sin");
  }

  static async create(gpu: Gpu, weights: ModelWeights, opts: GpuModelOptions): Promise<GpuModel> {
    const c = weights.config;
    if (c.headDim % 2 !== 0) throw new KernelArgumentError(`head_dim ${c.headDim} must be even for RoPE`);
    if (c.numHeads % c.numKvHeads !== 0) {
      throw new KernelArgumentError(`num_attention_heads ${c.numHeads} must be a multiple of num_key_value_heads ${c.numKvHeads}`);
    }
    const maxScores = (gpu.device.limits.maxComputeWorkgroupStorageSize - 1024) / 4;
    if (opts.maxLen > maxScores) {
      throw new KernelArgumentError(`maxLen ${opts.maxLen} exceeds what attention can hold in workgroup memory on this adapter (${maxScores})`);
    }
    const [ops, kernels] = await Promise.all([createOps(gpu), ModelKernels.create(gpu, opts.maxLen)]);
    const params = uploadParams(gpu, weights);
    return new GpuModel(gpu, weights, params, ops, kernels, opts.slots, opts.maxLen, opts.chunkRows ?? 256);
  }

  private p(t: ParamTensor | null): BufferRef {
    if (!t) throw new KernelArgumentError("missing tensor");
    return this.params.ref(t);
  }

  /** y [N, out] = x [N, in] · Wᵀ (+ bias): HF Linear with W stored [out, in]. */
  private linear(rec: Recorder, N: number, x: BufferRef, w: ParamTensor, bias: ParamTensor | null, y: BufferRef) {
    const [out, inp] = w.shape;
    this.ops.matmul.encode(rec, { form: "nt", M: N, N: out, K: inp }, x, this.p(w), y);
    if (bias) this.ops.elementwise.binaryInPlace(rec, { op: "add", n: N * out, cols: out, broadcast: "row" }, y, this.p(bias));
  }

  /** One decoder layer on the residual stream s.x [N, C]. */
  private encodeLayer(rec: Recorder, l: number, N: number) {
    const c = this.config, s = this.scratch, lv = this.weights.layout.layerView(l);
    const C = c.hiddenSize, D = c.headDim, NH = c.numHeads, KV = c.numKvHeads, I = c.intermediateSize;
    const K = this.kernels;
    K.rmsnorm(rec, N, C, c.rmsNormEps, s.x, this.p(lv.inputNorm), s.xn, s.rstd);
    this.linear(rec, N, s.xn, lv.q, lv.qBias, s.q);
    this.linear(rec, N, s.xn, lv.k, lv.kBias, s.k);
    this.linear(rec, N, s.xn, lv.v, lv.vBias, s.v);
    let q: GPUBuffer = s.q, k: GPUBuffer = s.k;
    if (lv.qNorm && lv.kNorm) { // Qwen3: per-head RMSNorm of q and k before RoPE
      K.rmsnorm(rec, N * NH, D, c.rmsNormEps, s.q, this.p(lv.qNorm), s.qn, s.rstd);
      K.rmsnorm(rec, N * KV, D, c.rmsNormEps, s.k, this.p(lv.kNorm), s.kn, s.rstd);
      [q, k] = [s.qn, s.kn];
    }
    K.rope(rec, N, NH, D, this.maxLen, q, s.meta, this.cos, this.sin);
    K.rope(rec, N, KV, D, this.maxLen, k, s.meta, this.cos, this.sin);
    K.kvStore(rec, N, KV, D, s.meta, k, s.v, this.kCache[l], this.vCache[l]);
    K.attention(rec, N, NH, KV, D, s.meta, q, this.kCache[l], this.vCache[l], s.att, s.lse);
    this.linear(rec, N, s.att, lv.o, lv.oBias, s.proj);
    this.ops.elementwise.binaryInPlace(rec, { op: "add", n: N * C }, s.x, s.proj);
    K.rmsnorm(rec, N, C, c.rmsNormEps, s.x, this.p(lv.postNorm), s.xn, s.rstd);
    this.linear(rec, N, s.xn, lv.gate, null, s.gate);
    this.linear(rec, N, s.xn, lv.up, null, s.up);
    K.swiglu(rec, N * I, s.gate, s.up, s.h);
    this.linear(rec, N, s.h, lv.down, null, s.proj);
    this.ops.elementwise.binaryInPlace(rec, { op: "add", n: N * C }, s.x, s.proj);
  }

  /** Records the forward of N rows already written to ids/meta; logits of nSel rows (sel) → logits. */
  encodeForward(rec: Recorder, N: number, nSel: number) {
    const c = this.config, s = this.scratch, lay = this.weights.layout;
    const C = c.hiddenSize, V = c.vocabSize;
    this.kernels.gather(rec, N, C, V, this.p(lay.embed), s.ids, s.x);
    for (let l = 0; l < c.numLayers; l++) this.encodeLayer(rec, l, N);
    if (nSel === 0) return;
    this.kernels.gather(rec, nSel, C, N, s.x, s.sel, s.proj);
    this.kernels.rmsnorm(rec, nSel, C, c.rmsNormEps, s.proj, this.p(lay.finalNorm), s.xn, s.rstd);
    this.ops.matmul.encode(rec, { form: "nt", M: nSel, N: V, K: C }, s.xn, this.p(lay.lmHead), s.logits);
  }

  private validate(rows: readonly ModelRow[]) {
    const V = this.config.vocabSize;
    rows.forEach((r, i) => {
      if (!Number.isInteger(r.token) || r.token < 0 || r.token >= V) {
        throw new KernelArgumentError(`row ${i}: token id ${r.token} is outside the vocabulary [0, ${V})`);
      }
      if (!Number.isInteger(r.slot) || r.slot < 0 || r.slot >= this.slots) {
        throw new KernelArgumentError(`row ${i}: slot ${r.slot} outside [0, ${this.slots}); create the model with more slots`);
      }
      if (!Number.isInteger(r.pos) || r.pos < 0 || r.pos >= this.maxLen) {
        throw new KernelArgumentError(`row ${i}: position ${r.pos} outside [0, ${this.maxLen}); create the model with a larger maxLen`);
      }
    });
  }

  /**
   * Runs rows in order (in chunks of chunkRows) and returns the logits of the rows listed in
   * `want` (indices into rows), [want.length, V]. A row must come after the rows of its slot
   * at earlier positions, in this call or an earlier one.
   */
  async forward(rows: readonly ModelRow[], want: readonly number[]): Promise<Float32Array> {
    this.validate(rows);
    const V = this.config.vocabSize;
    const out = new Float32Array(want.length * V);
    const wantSet = new Map<number, number>(want.map((r, i) => [r, i]));
    for (let start = 0; start < rows.length; start += this.chunkRows) {
      const chunk = rows.slice(start, start + this.chunkRows);
      const sel: number[] = [], dest: number[] = [];
      chunk.forEach((_, i) => {
        const w = wantSet.get(start + i);
        if (w !== undefined) [sel.push(i), dest.push(w)];
      });
      this.writeRows(chunk, sel);
      const rec = this.gpu.recorder("forward");
      this.encodeForward(rec, chunk.length, sel.length);
      rec.submit();
      if (sel.length) {
        const logits = await this.gpu.readFloat32(this.scratch.logits, sel.length * V);
        dest.forEach((d, i) => out.set(logits.subarray(i * V, (i + 1) * V), d * V));
      }
    }
    return out;
  }

  /** Uploads a chunk's ids, (slot, pos) pairs and selected rows. */
  writeRows(chunk: readonly ModelRow[], sel: readonly number[]) {
    const s = this.scratch;
    this.gpu.write(s.ids, Uint32Array.from(chunk, (r) => r.token));
    this.gpu.write(s.meta, Uint32Array.from(chunk.flatMap((r) => [r.slot, r.pos])));
    if (sel.length) this.gpu.write(s.sel, Uint32Array.from(sel));
  }

  /** The logits buffer of the last forward ([nSel, V]), for GPU-side sampling. */
  get logitsBuffer(): GPUBuffer {
    return this.scratch.logits;
  }

  destroy() {
    this.params.destroy();
    for (const b of [...Object.values(this.scratch), ...this.kCache, ...this.vCache, this.cos, this.sin]) b.destroy();
  }
}
