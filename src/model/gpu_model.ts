// A Hugging Face Llama/Qwen2/Qwen3/GPT-2 decoder on the GPU, with HF semantics. A forward call takes
// rows (token, slot, position): each row's K/V goes into its slot's cache and attention reads
// positions 0..pos of that slot, so prompt prefill, ragged batched decode and full-sequence
// scoring are one path. Logits are computed only for the rows asked for.
//
// Dims: N rows this call, C hidden, NH heads, KV kv heads, D head_dim, I intermediate, V vocab,
// S slots (concurrent sequences), P cache positions per slot, L layers.

import type { BufferRef } from "../gpu/buffers.ts";
import { GpuLimitError, KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Recorder } from "../gpu/recorder.ts";
import type { ModelOps } from "../ops/mod.ts";
import type { ModelConfig } from "./config.ts";
import {
  chooseDecodeBackend,
  type DecodeBackend,
  type DecodeSampleStep,
  fusedDecodeOptions,
} from "./decode_backend.ts";
import { type BufferRange, type GpuParams, uploadParams } from "./gpu_params.ts";
import type { ModelKernels } from "./model_kernels.ts";
import { compileModelKernels } from "./model_compile.ts";
import { type Projections, StorageProjections } from "./projections.ts";
import { allocateModelBuffers, type LayerActs, type Scratch } from "./model_buffers.ts";
import type { SplitKernels } from "./split_kernels.ts";
import {
  checkModelOptions,
  type GpuModelOptions,
  isBaseMatrix,
  type ModelRow,
} from "./gpu_model_options.ts";
import type { ModelWeights, ParamTensor } from "./weights.ts";
import type { LoraAdapters } from "./lora.ts";
import type { Gpt2Kernels } from "./gpt2_kernels.ts";
import { encodeGpt2Block } from "./gpt2_block.ts";
import { encodeDecoderBlock } from "./decoder_block.ts";

let nextModelId = 1;

export class GpuModel {
  /**
   * The key its decode plans share a uniform arena and bind groups under across generate calls
   * (Recorder.finish's `shared`; a model runs one generation at a time).
   */
  readonly planKey = `model ${nextModelId++}`;
  readonly config: ModelConfig;
  readonly scratch: Scratch;
  /** acts[l] (one shared set unless training). */
  readonly acts: LayerActs[];
  /**
   * Residual stream of the forward being recorded: res[l] is layer l's input. A training
   * forward keeps all L + 1 (layerRes); inference and every decode step update one stream in
   * place (res[l] is the same buffer for every l).
   */
  get res(): readonly GPUBuffer[] {
    return this.savesForBackward ? this.layerRes : this.streamRes;
  }
  /**
   * Whether the forward being recorded keeps what a backward reads (per-layer residuals, 1/rms):
   * a training model's forwards but its decode steps, which no backward follows (a rollout
   * generating from the trainer's model), so those take the inference folds.
   */
  get savesForBackward(): boolean {
    return this.training && !this.decoding;
  }
  private readonly layerRes: GPUBuffer[];
  private readonly streamRes: GPUBuffer[];
  /** Set while encodeForward records a decode step. */
  private decoding = false;
  /** Per layer [S, KV, P, D]: one buffer per layer, or ranges of one (DecodeBackend.sharedCache). */
  readonly kCache: BufferRange[];
  readonly vCache: BufferRange[];
  /** Float distance between consecutive layers' caches when they share one buffer, else 0. */
  readonly cacheStride: number;
  /** The RoPE tables [P, D/2]: ranges of one buffer. */
  readonly cos: BufferRange;
  readonly sin: BufferRange;
  readonly chunkRows: number;
  /** Rows of logits one call computes (GpuModelOptions.logitRows). */
  readonly logitRows: number;
  readonly training: boolean;
  /** GpuModelOptions.splitKFolds (default true). */
  readonly splitKFolds: boolean;
  /** GpuModelOptions.halfBase: the frozen base's matrices are stored as half floats. */
  readonly halfBase: boolean;
  /** Adapters applied on top of the frozen base, when attached. */
  lora: LoraAdapters | null = null;
  /**
   * [N, k] results of one chunk of a split weight (k its rows) before they go to their columns,
   * and the chunk's columns of a gradient in the backward; null unless some tensor is split.
   */
  readonly splitTmp: GPUBuffer | null;
  /** The projections on storage buffers: every forward's but the decode backend's own steps. */
  readonly projections: StorageProjections;

  private constructor(
    readonly gpu: Gpu,
    readonly weights: ModelWeights,
    readonly params: GpuParams,
    readonly ops: ModelOps,
    readonly kernels: ModelKernels,
    /** Kernels for split weights (null when no tensor is split and the model is not gpt2). */
    readonly split: SplitKernels | null,
    /** GPT-2's LayerNorm, gelu_new and position-embedding kernels (null for other models). */
    readonly gpt2: Gpt2Kernels | null,
    /** The path decode steps take, chosen in create. */
    readonly decode: DecodeBackend,
    readonly slots: number,
    readonly maxLen: number,
    opts: GpuModelOptions,
  ) {
    const c = weights.config;
    this.config = c;
    this.chunkRows = opts.chunkRows ?? 256;
    this.logitRows = Math.min(opts.logitRows ?? this.chunkRows, this.chunkRows);
    if (
      !Number.isInteger(this.logitRows) || this.logitRows < 1 ||
      (this.logitRows < this.chunkRows && this.logitRows % 64 !== 0)
    ) {
      throw new KernelArgumentError(
        `logitRows ${opts.logitRows}: a positive integer, a multiple of 64 when below chunkRows (${this.chunkRows})`,
      );
    }
    this.training = opts.training ?? false;
    this.splitKFolds = opts.splitKFolds ?? true;
    this.halfBase = opts.halfBase ?? false;
    const bufs = allocateModelBuffers(gpu, c, {
      rows: this.chunkRows,
      logitRows: this.logitRows,
      slots,
      maxLen,
      training: this.training,
      sharedCache: decode.sharedCache,
      splitScratch: kernels.attnSplit.splits > 0 ? kernels.splitScratchFloats(c.headDim) : null,
      splitRows: Math.max(
        0,
        ...weights.layout.tensors.filter((t) => params.isSplit(t)).flatMap((t) =>
          params.chunks(t).map((k) => k.rows)
        ),
      ),
    });
    this.scratch = bufs.scratch;
    this.acts = bufs.acts;
    this.layerRes = bufs.layerRes;
    this.streamRes = bufs.streamRes;
    this.kCache = bufs.kCache;
    this.vCache = bufs.vCache;
    this.cacheStride = bufs.cacheStride;
    this.splitTmp = bufs.splitTmp;
    this.cos = bufs.cos;
    this.sin = bufs.sin;
    this.projections = new StorageProjections(this);
  }

  static async create(gpu: Gpu, weights: ModelWeights, opts: GpuModelOptions): Promise<GpuModel> {
    const c = weights.config;
    opts = checkModelOptions(c, opts);
    const params = uploadParams(
      gpu,
      weights,
      "params",
      {},
      opts.halfBase ? isBaseMatrix : undefined,
    );
    try {
      const fused = fusedDecodeOptions(gpu, c, params, opts); // before compiling: may refuse
      const k = await compileModelKernels(gpu, weights, params, opts);
      return new GpuModel(
        gpu,
        weights,
        params,
        k.ops,
        k.kernels,
        k.split,
        k.gpt2,
        chooseDecodeBackend(weights, k.ops, fused, opts),
        opts.slots,
        opts.maxLen,
        opts,
      );
    } catch (e) {
      params.destroy();
      throw e;
    }
  }

  /**
   * Tells the model its parameters changed on the GPU (an optimizer step on the full weights):
   * copies the decode backend made of them (weight textures, the parameter atlas) are copied
   * again when the next decode step is recorded.
   */
  paramsChanged() {
    this.decode.paramsChanged();
  }

  /**
   * Makes what decode steps use, for the LoRA adapters attached now (DecodeBackend.prepare; the
   * CPU-adapter backend compiles its fused step here, so models that never decode never pay for
   * it). Until then decode steps take the per-op path. `sample`: the step that samples inside
   * (encodeSampleStep) where it applies, instead of the plain one (encodeForward's decode).
   */
  prepareDecode(opts: { sample?: boolean } = {}): Promise<void> {
    return this.decode.prepare(this, opts);
  }

  /**
   * Whether encodeSampleStep can record a generation step as one dispatch now (prepareDecode
   * with `sample` has compiled it for the attached adapters).
   */
  get canSampleInStep(): boolean {
    return this.decode.canSampleInStep(this);
  }

  /** Generation steps one encodeSampleStep may chain in its dispatch (its `count`). */
  get sampleStepsPerDispatch(): number {
    return this.decode.sampleStepsPerDispatch(this);
  }

  /**
   * A generation step in one dispatch (canSampleInStep must hold): the decode forward of the N
   * rows in ids/meta (one per slot, as encodeForward's decode), then each row sampled as the lane
   * sampler does with its parameters in `sample.params` (no history), its id and log-prob stored
   * at step `sample.step` of `sample.out`, and the row advanced: its next input id, position and
   * sampling step (generate.ts's chained steps); `sample.count` such steps (at most
   * sampleStepsPerDispatch), each workgroup taking its rows through all of them.
   */
  encodeSampleStep(rec: Recorder, N: number, sample: DecodeSampleStep) {
    if (!this.canSampleInStep) {
      throw new KernelArgumentError(
        "encodeSampleStep: call prepareDecode({ sample: true }) first, and check canSampleInStep",
      );
    }
    this.decode.encodeSampleStep(this, rec, N, sample);
  }

  p(t: ParamTensor | null): BufferRef {
    if (!t) throw new KernelArgumentError("missing tensor");
    return this.params.ref(t);
  }

  /** The q and k that attention used (after the Qwen3 q/k norms and RoPE). */
  qkUsed(l: number): { q: GPUBuffer; k: GPUBuffer } {
    const a = this.acts[l];
    return this.weights.layout.layerView(l).qNorm ? { q: a.qn, k: a.kn } : { q: a.q, k: a.k };
  }

  /**
   * Records the forward of N rows already written to ids/meta; logits of nSel rows (sel) go to
   * the logits buffer. In training mode every row gets logits, in order (sel is not used).
   * `decode`: the caller promises a decode step — every row its own slot and logits wanted for
   * all rows in order (sel the identity) — which the decode backend may record its own way (one
   * fused dispatch, texture projections), and which skips the selection gather.
   * `contextBound`: no row of these dispatches (or of their replays) attends to more positions
   * than this (default: the cache's maxLen); the split decode attention launches no more.
   */
  encodeForward(rec: Recorder, N: number, nSel: number, decode = false, contextBound?: number) {
    if (
      contextBound !== undefined && (!Number.isInteger(contextBound) || contextBound < 1)
    ) {
      throw new KernelArgumentError(`contextBound ${contextBound}: a positive integer`);
    }
    const context = Math.min(contextBound ?? this.maxLen, this.maxLen);
    const V = this.config.vocabSize;
    if (nSel > this.logitRows) {
      throw new KernelArgumentError(
        `logits of ${nSel} rows: the logits buffer holds ${this.logitRows} (logitRows); a training forward ` +
          `of more rows runs encodeTrunk and then encodeHeadRows a chunk at a time`,
      );
    }
    if (nSel > this.maxLogitRows) {
      throw new GpuLimitError(
        `logits of ${nSel} rows × ${V} floats exceed this adapter's ${this.gpu.device.limits.maxStorageBufferBindingSize}-byte ` +
          `storage binding limit; ask for at most ${this.maxLogitRows} rows of logits per call (fewer sequences per ` +
          `decode step, or a smaller chunkRows for training)`,
      );
    }
    if (decode && nSel !== N) {
      throw new KernelArgumentError(`a decode step computes logits for all ${N} rows, not ${nSel}`);
    }
    this.decoding = decode;
    try {
      this.encodeForwardRows(rec, N, nSel, decode, context);
    } finally {
      this.decoding = false;
    }
  }

  private encodeForwardRows(
    rec: Recorder,
    N: number,
    nSel: number,
    decode: boolean,
    context: number,
  ) {
    const c = this.config, s = this.scratch, C = c.hiddenSize, L = c.numLayers;
    if (decode && this.decode.encodeStep(this, rec, N)) return;
    const P = decode ? this.decode.projections(this, N) : this.projections;
    this.encodeLayers(rec, N, P, context, decode);
    if (nSel === 0) return;
    let final: GPUBuffer = this.res[L];
    if (!this.training && !decode) {
      this.kernels.gather(rec, nSel, C, N, this.res[L], s.sel, s.xs);
      final = s.xs;
    } else if (nSel !== N) {
      throw new KernelArgumentError(
        `training forward computes logits for all ${N} rows, not ${nSel}`,
      );
    }
    if (decode && !this.gpt2) {
      P.head(rec, nSel, final, this.logitRange(nSel));
      return;
    }
    this.encodeFinalNorm(rec, nSel, final);
    this.encodeHeadRows(rec, 0, nSel);
  }

  /**
   * A training forward of N rows up to the final norm's output (scratch.xf), without the LM head:
   * encodeHeadRows then computes the logits a chunk of rows at a time, or nothing needs them (the
   * value head reads xf).
   */
  encodeTrunk(rec: Recorder, N: number) {
    if (!this.training) {
      throw new KernelArgumentError(
        "encodeTrunk is the training forward: create the model with training",
      );
    }
    this.encodeLayers(rec, N, this.projections, this.maxLen, false);
    this.encodeFinalNorm(rec, N, this.res[this.config.numLayers]);
  }

  /**
   * Logits [rows, V] of rows r0 .. r0 + rows − 1 of the final norm's output (scratch.xf) into the
   * first rows of the logits buffer. r0 · hidden · 4 bytes must be a multiple of 256 (a multiple
   * of 64 rows always is).
   */
  encodeHeadRows(rec: Recorder, r0: number, rows: number) {
    const C = this.config.hiddenSize, s = this.scratch;
    if (rows < 1 || rows > this.maxLogitRows || r0 < 0 || r0 + rows > this.chunkRows) {
      throw new KernelArgumentError(
        `head rows ${r0}..${
          r0 + rows - 1
        }: at most ${this.maxLogitRows} rows within the ${this.chunkRows}-row chunk`,
      );
    }
    const align = this.gpu.device.limits.minStorageBufferOffsetAlignment;
    if ((r0 * C * 4) % align !== 0) {
      throw new KernelArgumentError(
        `head rows from ${r0}: the row offset ${
          r0 * C * 4
        } bytes is not a multiple of ${align}; start at a multiple of 64 rows`,
      );
    }
    const xf = { buffer: s.xf, offset: r0 * C * 4, size: rows * C * 4 };
    this.projections.matmulWeight(rec, rows, xf, this.weights.layout.lmHead, this.logitRange(rows));
  }

  /**
   * The embedding and every layer of N rows (the residual stream ends in res[L]); `context`: the
   * most positions a row attends to (encodeForward's contextBound).
   */
  private encodeLayers(
    rec: Recorder,
    N: number,
    P: Projections,
    context: number,
    decode: boolean,
  ) {
    const c = this.config, s = this.scratch, lay = this.weights.layout;
    const C = c.hiddenSize, V = c.vocabSize, L = c.numLayers;
    const embed = this.params.chunks(lay.embed), half = this.params.isHalf(lay.embed);
    if (embed.length === 1) {
      this.kernels.gather(rec, N, C, V, embed[0].ref, s.ids, this.res[0], half);
    } else {
      for (const k of embed) {
        this.split!.gatherRange(rec, N, C, k.rowStart, k.rows, k.ref, s.ids, this.res[0], half);
      }
    }
    const g2 = this.gpt2;
    if (g2) {
      // GPT-2: hidden = wte(ids) + wpe(position_ids), then its blocks, ln_f and the head.
      g2.addPosEmbed(rec, N, C, s.meta, this.p(lay.posEmbed), this.res[0]);
      for (let l = 0; l < L; l++) encodeGpt2Block(this, rec, l, N, context);
    } else {
      for (let l = 0; l < L; l++) encodeDecoderBlock(this, rec, l, N, P, context, decode);
    }
  }

  /** The final norm of n rows of `final` into scratch.xf (GPT-2: LayerNorm, with its means). */
  private encodeFinalNorm(rec: Recorder, n: number, final: GPUBuffer) {
    const c = this.config, s = this.scratch, lay = this.weights.layout;
    if (this.gpt2) {
      this.gpt2.layernorm(
        rec,
        n,
        c.hiddenSize,
        c.rmsNormEps,
        final,
        this.p(lay.finalNorm),
        this.p(lay.finalNormBias),
        s.xf,
        s.meanf,
        s.rstdf,
      );
    } else {
      this.kernels.rmsnorm(
        rec,
        n,
        c.hiddenSize,
        c.rmsNormEps,
        final,
        this.p(lay.finalNorm),
        s.xf,
        s.rstdf,
      );
    }
  }

  /**
   * Copies cache positions 0 .. n − 1 of every layer's K and V from slot `from` to slot `to` for
   * each pair (a shared prompt's prefill, Generator's sharePrefill): the values a prefill of the
   * same rows in `to` writes there, up to rounding. No slot may be both a source and a
   * destination.
   */
  encodeCopyCache(rec: Recorder, pairs: readonly { from: number; to: number; n: number }[]) {
    const c = this.config, P = this.maxLen;
    const live = pairs.filter((q) => q.n > 0);
    const sources = new Set(live.map((q) => q.from));
    for (const q of live) {
      if (
        !(q.from >= 0 && q.to >= 0 && q.from < this.slots && q.to < this.slots && q.n <= P) ||
        sources.has(q.to)
      ) {
        throw new KernelArgumentError(
          `cache copy ${q.from} → ${q.to} (${q.n} positions): slots in [0, ${this.slots}), at most ${P} positions, no slot both a source and a destination`,
        );
      }
    }
    if (!live.length) return;
    if (live.length > this.slots) {
      throw new KernelArgumentError(`cache copy: ${live.length} pairs for ${this.slots} slots`);
    }
    this.gpu.write(
      this.scratch.pairs,
      Uint32Array.from(live.flatMap((q) => [q.from, q.to, q.n, 0])),
    );
    const maxN = Math.max(...live.map((q) => q.n));
    for (const cache of [...this.kCache, ...this.vCache]) {
      this.kernels.kvCopy(
        rec,
        c.numKvHeads,
        c.headDim,
        live.length,
        maxN,
        this.scratch.pairs,
        cache,
      );
    }
  }

  /** The first rows of the logits buffer: with a large vocabulary the whole buffer can exceed a binding. */
  logitRange(rows: number): BufferRange {
    const s = this.scratch;
    return {
      buffer: s.logits,
      offset: 0,
      size: Math.min(s.logits.size, Math.ceil(rows * this.config.vocabSize / 4) * 16),
    };
  }

  private validate(rows: readonly ModelRow[]) {
    const V = this.config.vocabSize;
    rows.forEach((r, i) => {
      if (!Number.isInteger(r.token) || r.token < 0 || r.token >= V) {
        throw new KernelArgumentError(
          `row ${i}: token id ${r.token} is outside the vocabulary [0, ${V})`,
        );
      }
      if (!Number.isInteger(r.slot) || r.slot < 0 || r.slot >= this.slots) {
        throw new KernelArgumentError(
          `row ${i}: slot ${r.slot} outside [0, ${this.slots}); create the model with more slots`,
        );
      }
      if (!Number.isInteger(r.pos) || r.pos < 0 || r.pos >= this.maxLen) {
        throw new KernelArgumentError(
          `row ${i}: position ${r.pos} outside [0, ${this.maxLen}); create the model with a larger maxLen`,
        );
      }
      if (this.gpt2 && r.pos >= this.config.maxPositionEmbeddings) {
        throw new KernelArgumentError(
          `row ${i}: position ${r.pos} outside gpt2's learned positions [0, ${this.config.maxPositionEmbeddings}) (n_positions)`,
        );
      }
    });
  }

  /**
   * The most rows of logits one forward call computes: [rows, V] must fit one storage binding and
   * the logits buffer (logitRows).
   */
  get maxLogitRows(): number {
    return Math.max(
      1,
      Math.min(
        this.logitRows,
        Math.floor(
          this.gpu.device.limits.maxStorageBufferBindingSize / (4 * this.config.vocabSize),
        ),
      ),
    );
  }

  /**
   * Runs rows in order (in chunks of chunkRows rows with at most maxLogitRows wanted ones) and
   * returns the logits of the rows listed in `want` (indices into rows), [want.length, V]. A row
   * must come after the rows of its slot at earlier positions, in this call or an earlier one.
   */
  async forward(rows: readonly ModelRow[], want: readonly number[]): Promise<Float32Array> {
    this.validate(rows);
    const V = this.config.vocabSize;
    const out = new Float32Array(want.length * V);
    const wantSet = new Map<number, number>(want.map((r, i) => [r, i]));
    // A training model's forward gives every row logits; the wanted ones are picked here.
    const all = this.training;
    for (let start = 0, end = 0; start < rows.length; start = end) {
      for (let n = 0; end < rows.length && end - start < this.chunkRows; end++) {
        if ((all || wantSet.has(end)) && n++ === this.maxLogitRows) break;
      }
      const chunk = rows.slice(start, end);
      const sel: number[] = [], dest: number[] = [];
      chunk.forEach((_, i) => {
        const w = wantSet.get(start + i);
        if (w !== undefined) [sel.push(i), dest.push(w)];
      });
      this.writeRows(chunk, sel);
      const rec = this.gpu.recorder("forward");
      const context = Math.max(...chunk.map((r) => r.pos)) + 1;
      this.encodeForward(rec, chunk.length, all ? chunk.length : sel.length, false, context);
      rec.submit();
      if (sel.length) {
        const logits = await this.gpu.readFloat32(
          this.scratch.logits,
          (all ? chunk.length : sel.length) * V,
        );
        dest.forEach((d, i) => {
          const r = all ? sel[i] : i;
          out.set(logits.subarray(r * V, (r + 1) * V), d * V);
        });
      }
    }
    return out;
  }

  /** Applies LoRA adapters from now on (null detaches them). */
  attachLora(lora: LoraAdapters | null) {
    if (lora && lora.maxRows < this.chunkRows) {
      throw new KernelArgumentError(
        `LoRA buffers hold ${lora.maxRows} rows, the model's chunks ${this.chunkRows}`,
      );
    }
    this.lora = lora;
  }

  /** Uploads a chunk's ids, (slot, pos) pairs, adapter ids and selected rows. */
  writeRows(chunk: readonly ModelRow[], sel: readonly number[]) {
    const s = this.scratch;
    this.lora?.setRows(chunk.map((r) => r.adapter ?? -1));
    this.gpu.write(s.ids, Uint32Array.from(chunk, (r) => r.token));
    this.gpu.write(s.meta, Uint32Array.from(chunk.flatMap((r) => [r.slot, r.pos])));
    if (sel.length) this.gpu.write(s.sel, Uint32Array.from(sel));
  }

  /** The logits buffer of the last forward ([nSel, V]), for GPU-side sampling. */
  get logitsBuffer(): GPUBuffer {
    return this.scratch.logits;
  }

  destroy() {
    this.gpu.recordings.dropShared(this.planKey);
    this.params.destroy();
    this.decode.destroy();
    const { attnParts, ...scratch } = this.scratch;
    const all = new Set<GPUBuffer>([
      ...Object.values(scratch),
      ...(attnParts ? [attnParts.o, attnParts.ml] : []),
      ...this.acts.flatMap((a) => Object.values(a)),
      ...this.layerRes,
      ...this.kCache.map((r) => r.buffer),
      ...this.vCache.map((r) => r.buffer),
      this.cos.buffer,
      ...(this.splitTmp ? [this.splitTmp] : []),
    ]);
    for (const b of all) b.destroy();
  }
}
