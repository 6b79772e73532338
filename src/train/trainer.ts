// One model's training loop pieces: a training-mode GpuModel (optionally with LoRA adapters),
// its backward pass, a loss head (cross-entropy for SFT or the GRPO policy loss) and AdamW, and
// for PPO with a critic a value head (value_head.ts) on the final hidden state, whose clipped
// value loss trains it and, through the same backward, the trunk.
// `step(sequences)` is one optimizer update: loss coefficients are computed over the whole
// mini-batch, rows are cut into micro-batches of complete sequences (grouped by adapter, as the
// LoRA backward needs), each micro-batch is one recording (forward → loss → backward) and the
// optimizer update is one more. Nothing is read back but the metrics.
//
// Dims: R rows of a micro-batch (≤ chunkRows), V vocab.

import type { Gpu } from "../gpu/mod.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import { ModelBackward } from "../model/backward.ts";
import { GpuModel } from "../model/gpu_model.ts";
import type { ModelRow } from "../model/gpu_model_options.ts";
import { readParamTensor } from "../model/gpu_params.ts";
import { LoraAdapters } from "../model/lora.ts";
import { type LoraConfig, LoraLayout } from "../model/lora_layout.ts";
import type { ModelWeights } from "../model/weights.ts";
import {
  AdamW,
  type AdamWOptions,
  type AdamWRange,
  type AdamWStats,
  decayMask,
  hfDecays,
  type OptimizerState,
} from "./adamw.ts";
import {
  CrossEntropyLoss,
  type CrossEntropyMetrics,
  PolicyLoss,
  type PolicyLossConfig,
  type PolicyLossMetrics,
} from "./losses.ts";
import { type LrSchedule, StepCounter } from "./schedule.ts";
import { TrainConfigError } from "./errors.ts";
import { ROW_FLOATS } from "./loss_rows.ts";
import { packValueRows, VALUE_ROW_FLOATS, ValueHead, type ValueLossMetrics } from "./value_head.ts";

export type TrainMode = "lora" | "full";

export interface TrainerOptions {
  mode: TrainMode;
  /** Required in LoRA mode: rank, alpha, targets, adapter names. */
  lora?: LoraConfig;
  /** Initial adapter data (LoraLayout order); default PEFT init with `seed`. */
  loraData?: Float32Array;
  seed?: number;
  optimizer?: Omit<AdamWOptions, "numel">;
  schedule: LrSchedule;
  /** The policy loss reads logits at `temperature` (default 1): the rollout's sampling temperature. */
  loss: { kind: "cross-entropy" } | ({ kind: "policy"; temperature?: number } & PolicyLossConfig);
  /** Rows per micro-batch (and activation memory); sequences longer than this are refused. */
  chunkRows: number;
  /**
   * Rows of logits at a time: the LM head, its loss and its backward run over a micro-batch in
   * chunks of this many rows, so a large vocabulary never holds [chunkRows, V]. Default
   * defaultLogitRows: all chunkRows rows where [chunkRows, V] floats fit LOGIT_BUDGET_BYTES and
   * one binding, else the most multiples of 64 rows that do.
   */
  logitRows?: number;
  /** Sequences per micro-batch at most (KV slots). */
  slots: number;
  /** Longest sequence (tokens). */
  maxLen: number;
  /** PPO's critic: a value head trained beside the policy loss (every sequence then needs oldValues and returns). */
  valueHead?: ValueHeadSettings;
  /**
   * LoRA mode: the frozen base's matrices as half floats (GpuModelOptions.halfBase): half the
   * weight memory and decode bytes, the adapters and all arithmetic f32. Default false.
   */
  halfBase?: boolean;
}

export interface ValueHeadSettings {
  /** Weight of the value loss (vf_coef) in the trunk's total loss. */
  coef: number;
  /** ε_v of the clipped value loss. */
  clip: number;
  /** The value head's lr as a multiple of the schedule's (default 1). */
  lrScale?: number;
  /** Initial [w (hidden floats), b]; default zeros. */
  init?: Float32Array;
}

/** One sequence: tokens and, for each position t < n−1, how predicting tokens[t+1] counts. */
export interface TrainSequence {
  tokens: readonly number[];
  /** LoRA adapter id (omitted: the base model, which then gets no adapter gradient). */
  adapter?: number;
  /** Loss weight per position (length n−1): 1 on completion tokens, 0 on the prompt. */
  weights: readonly number[];
  /** GRPO: the sequence's advantage. */
  advantage?: number;
  /** PPO with GAE: an advantage per position (length n−1), used instead of `advantage`. */
  tokenAdvantages?: readonly number[];
  /** PPO critic: the value head's output at rollout time per position (length n−1). */
  oldValues?: readonly number[];
  /** PPO critic: the value targets (GAE returns) per position (length n−1). */
  returns?: readonly number[];
  /** GRPO: rollout-time log-probs per position (length n−1). */
  oldLogp?: readonly number[];
  /** GRPO with KL: reference log-probs per position (length n−1). */
  refLogp?: readonly number[];
}

export interface StepMetrics {
  loss: CrossEntropyMetrics | PolicyLossMetrics;
  /** The value loss and the value head's own gradient norm (with a value head). */
  value?: ValueLossMetrics & { valueGradNorm: number };
  optimizer: AdamWStats;
  lr: number;
  step: number;
  tokens: number;
  microBatches: number;
  seconds: number;
}

/** The logits memory the default logitRows keeps within (256 MiB: 441 rows of a 151936-word vocabulary). */
export const LOGIT_BUDGET_BYTES = 256 * 2 ** 20;

/**
 * Rows of logits a trainer computes at a time by default: chunkRows where [chunkRows, V] f32 fits
 * LOGIT_BUDGET_BYTES and one storage binding, otherwise the largest multiple of 64 rows that does
 * (at least 64).
 */
export function defaultLogitRows(chunkRows: number, vocabSize: number, maxBinding: number): number {
  const fit = Math.floor(Math.min(LOGIT_BUDGET_BYTES, maxBinding) / (4 * vocabSize));
  if (fit >= chunkRows) return chunkRows;
  return Math.max(64, fit - (fit % 64));
}

export class ModelTrainer {
  private counter: StepCounter;
  private ranges: AdamWRange[] = [];
  private rowData: GPUBuffer;
  /** Moments and decay masks this trainer allocated. */
  private owned: GPUBuffer[] = [];

  private constructor(
    readonly gpu: Gpu,
    readonly model: GpuModel,
    readonly backward: ModelBackward,
    readonly lora: LoraAdapters | null,
    readonly optimizer: AdamW,
    readonly lossHead: CrossEntropyLoss | PolicyLoss,
    readonly opts: TrainerOptions,
    /** PPO's critic head (opts.valueHead), or null. */
    readonly value: ValueHead | null,
  ) {
    this.counter = new StepCounter(opts.schedule, 1);
    this.rowData = gpu.zeros(opts.chunkRows * 8, "trainer.rows");
  }

  static async create(
    gpu: Gpu,
    weights: ModelWeights,
    opts: TrainerOptions,
  ): Promise<ModelTrainer> {
    if (opts.mode === "lora" && !opts.lora) {
      throw new KernelArgumentError("LoRA mode needs opts.lora (rank, alpha, targets, adapters)");
    }
    if (opts.halfBase && opts.mode !== "lora") {
      throw new TrainConfigError(
        "halfBase",
        "a half-float base is frozen: it is for LoRA mode, not full fine-tuning",
      );
    }
    if (opts.valueHead && opts.loss.kind !== "policy") {
      throw new TrainConfigError(
        "valueHead",
        "a value head is PPO's critic: it trains beside the policy loss, not cross-entropy",
      );
    }
    const vh = opts.valueHead;
    if (vh && !(vh.coef >= 0 && Number.isFinite(vh.coef))) {
      throw new TrainConfigError("value.coef", `${vh.coef} must be a finite number ≥ 0`);
    }
    if (vh && !((vh.lrScale ?? 1) > 0 && Number.isFinite(vh.lrScale ?? 1))) {
      throw new TrainConfigError(
        "value.lr",
        `the value head's lr scale ${vh.lrScale} must be a finite number > 0`,
      );
    }
    const model = await GpuModel.create(gpu, weights, {
      slots: opts.slots,
      maxLen: opts.maxLen,
      chunkRows: opts.chunkRows,
      logitRows: opts.logitRows ?? defaultLogitRows(
        opts.chunkRows,
        weights.config.vocabSize,
        gpu.device.limits.maxStorageBufferBindingSize,
      ),
      training: true,
      halfBase: opts.halfBase,
    });
    let lora: LoraAdapters | null = null;
    if (opts.mode === "lora") {
      const layout = new LoraLayout(weights.config, opts.lora!);
      lora = await LoraAdapters.create(
        gpu,
        layout,
        opts.chunkRows,
        opts.loraData ?? layout.init(opts.seed ?? 0),
      );
      model.attachLora(lora);
    }
    const backward = await ModelBackward.create(model, { trainable: () => opts.mode === "full" });
    const numel = opts.mode === "lora"
      ? lora!.layout.totalFloats
      : weights.layout.totalFloats + 64 * weights.layout.tensors.length;
    const optimizer = await AdamW.create(gpu, { ...opts.optimizer, numel });
    const V = weights.config.vocabSize, maxRows = opts.chunkRows;
    const lossHead = opts.loss.kind === "cross-entropy"
      ? await CrossEntropyLoss.create(gpu, { maxRows, vocabSize: V })
      : await PolicyLoss.create(gpu, { maxRows, vocabSize: V, ...opts.loss });
    const value = vh
      ? await ValueHead.create(gpu, {
        hidden: weights.config.hiddenSize,
        maxRows,
        clip: vh.clip,
        optimizer: opts.optimizer,
        init: vh.init,
      })
      : null;
    const t = new ModelTrainer(gpu, model, backward, lora, optimizer, lossHead, opts, value);
    t.ranges = t.buildRanges();
    return t;
  }

  /** AdamW ranges: the adapters' flat buffer, or each parameter buffer with HF's decay mask. */
  private buildRanges(): AdamWRange[] {
    const own = (b: GPUBuffer) => (this.owned.push(b), b);
    const zerosLike = (b: GPUBuffer, label: string) => own(this.gpu.zeros(b.size / 4, label));
    if (this.lora) {
      const numel = this.lora.layout.totalFloats;
      return [{
        params: this.lora.params,
        grads: this.lora.grads,
        m: zerosLike(this.lora.params, "adam.m"),
        v: zerosLike(this.lora.params, "adam.v"),
        numel,
      }];
    }
    const params = this.model.params, grads = this.backward.grads, w = this.model.weights;
    return params.buffers.map((buf, i) => {
      // Per chunk: a split tensor's chunks may lie in different buffers.
      const spans = w.layout.tensors.flatMap((t) =>
        params.chunks(t).filter((c) => c.ref.buffer === buf).map((c) => ({
          name: t.name,
          offset: c.ref.offset / 4,
          size: c.rows * (t.size / (t.shape[0] ?? 1)),
          decay: hfDecays(t.name),
        }))
      );
      const numel = buf.size / 4;
      return {
        params: buf,
        grads: grads.buffers[i],
        m: zerosLike(buf, `adam.m${i}`),
        v: zerosLike(buf, `adam.v${i}`),
        numel,
        decayMask: own(this.gpu.upload(decayMask(spans, 0, numel), `decay${i}`)),
      };
    });
  }

  get completedSteps(): number {
    return this.counter.completedSteps;
  }

  /** Packs the mini-batch's loss rows (coefficients over all of it), in sequence order. */
  private packRows(seqs: readonly TrainSequence[]): Float32Array {
    const targets: number[] = [], mask: number[] = [], seq: number[] = [];
    const adv: number[] = [], old: number[] = [], ref: number[] = [];
    seqs.forEach((s, i) => {
      if (s.weights.length !== s.tokens.length - 1) {
        throw new KernelArgumentError(
          `sequence ${i}: ${s.weights.length} weights for ${s.tokens.length} tokens (need n−1)`,
        );
      }
      if (s.tokenAdvantages && s.tokenAdvantages.length !== s.tokens.length - 1) {
        throw new KernelArgumentError(
          `sequence ${i}: ${s.tokenAdvantages.length} token advantages for ${s.tokens.length} tokens (need n−1)`,
        );
      }
      s.tokens.forEach((_, t) => {
        const last = t === s.tokens.length - 1;
        targets.push(last ? 0 : s.tokens[t + 1]);
        mask.push(last ? 0 : s.weights[t]);
        seq.push(i);
        adv.push(s.tokenAdvantages ? (last ? 0 : s.tokenAdvantages[t]) : s.advantage ?? 0);
        old.push(last ? 0 : s.oldLogp?.[t] ?? 0);
        ref.push(last ? 0 : s.refLogp?.[t] ?? 0);
      });
    });
    if (this.lossHead instanceof CrossEntropyLoss) {
      return this.lossHead.pack({ targets, weights: mask });
    }
    const needRef = seqs.some((s) => s.refLogp);
    return this.lossHead.pack({
      targets,
      mask,
      seq,
      advantages: adv,
      oldLogp: old,
      refLogp: needRef ? ref : undefined,
    });
  }

  /** The value head's rows of the mini-batch (token-mean over its generated tokens, times vf_coef). */
  private packValue(seqs: readonly TrainSequence[]): Float32Array {
    const mask: number[] = [], oldValues: number[] = [], returns: number[] = [];
    seqs.forEach((s, i) => {
      const n = s.tokens.length;
      if (s.oldValues?.length !== n - 1 || s.returns?.length !== n - 1) {
        throw new KernelArgumentError(
          `sequence ${i}: a trainer with a value head needs oldValues and returns for each of its ${
            n - 1
          } positions`,
        );
      }
      for (let t = 0; t < n; t++) {
        const last = t === n - 1;
        mask.push(last ? 0 : s.weights[t]);
        oldValues.push(last ? 0 : s.oldValues[t]);
        returns.push(last ? 0 : s.returns[t]);
      }
    });
    return packValueRows({ mask, oldValues, returns }, this.opts.valueHead!.coef);
  }

  /** Micro-batches: consecutive sequences (sorted by adapter) within chunkRows rows and slots. */
  private microBatches(
    seqs: readonly TrainSequence[],
  ): { seqs: number[]; rowStart: number; rows: number }[] {
    const out: { seqs: number[]; rowStart: number; rows: number }[] = [];
    let cur: { seqs: number[]; rowStart: number; rows: number } | null = null;
    let row = 0;
    seqs.forEach((s, i) => {
      const n = s.tokens.length;
      if (n > this.opts.chunkRows || n > this.opts.maxLen) {
        throw new KernelArgumentError(
          `sequence ${i} has ${n} tokens; the trainer holds at most ${
            Math.min(this.opts.chunkRows, this.opts.maxLen)
          }`,
        );
      }
      if (!cur || cur.rows + n > this.opts.chunkRows || cur.seqs.length >= this.opts.slots) {
        cur = { seqs: [], rowStart: row, rows: 0 };
        out.push(cur);
      }
      cur.seqs.push(i);
      cur.rows += n;
      row += n;
    });
    return out;
  }

  /**
   * One optimizer update on these sequences, at the schedule's lr for `opts.scheduleStep` (default:
   * the optimizer updates completed so far).
   */
  async step(
    sequences: readonly TrainSequence[],
    opts: { scheduleStep?: number } = {},
  ): Promise<StepMetrics> {
    const t0 = performance.now();
    if (!sequences.length) throw new KernelArgumentError("step: no sequences");
    // Adapter-contiguous order (the LoRA weight-gradient kernels need it); stable otherwise.
    const seqs = sequences.map((s, i) => ({ s, i })).sort((a, b) =>
      (a.s.adapter ?? -1) - (b.s.adapter ?? -1) || a.i - b.i
    ).map((x) => x.s);
    const packed = this.packRows(seqs);
    const valueRows = this.value ? this.packValue(seqs) : null;
    const micro = this.microBatches(seqs);
    const zero = this.gpu.recorder("zero grads");
    this.optimizer.encodeZeroGrads(zero, this.ranges);
    this.value?.encodeZeroGrads(zero);
    zero.submit();
    micro.forEach((mb, k) => {
      const rows: ModelRow[] = mb.seqs.flatMap((si, slot) =>
        seqs[si].tokens.map((token, pos) => ({ token, slot, pos, adapter: seqs[si].adapter }))
      );
      this.model.writeRows(rows, []);
      this.backward.prepare(rows);
      this.gpu.write(this.rowData, packed.subarray(mb.rowStart * 8, (mb.rowStart + mb.rows) * 8));
      const rec = this.gpu.recorder("micro-batch");
      this.model.encodeTrunk(rec, mb.rows);
      this.encodeHeadLoss(rec, mb.rows, this.rowData, k > 0, true);
      const value = this.value, xf = this.model.scratch.xf;
      if (value && valueRows) {
        const R = VALUE_ROW_FLOATS;
        this.gpu.write(
          value.rowData,
          valueRows.subarray(mb.rowStart * R, (mb.rowStart + mb.rows) * R),
        );
        value.encodeForward(rec, mb.rows, xf);
        value.encodeLoss(rec, mb.rows, k > 0);
      }
      this.backward.encodeTrunk(
        rec,
        mb.rows,
        value ? (r, dxf) => value.encodeBackward(r, mb.rows, xf, dxf) : undefined,
      );
      rec.submit();
    });
    const plan = this.counter.next(opts.scheduleStep);
    const rec = this.gpu.recorder("optimizer");
    this.optimizer.encodeStep(rec, { ranges: this.ranges, lr: plan.lr, step: plan.t });
    this.value?.encodeStep(rec, plan.lr * (this.opts.valueHead?.lrScale ?? 1), plan.t);
    rec.submit();
    if (!this.lora) this.model.paramsChanged(); // copies of the weights (decode textures, atlas) follow
    this.counter.stepDone();
    const [loss, optimizer] = await Promise.all([
      this.lossHead.readMetrics(),
      this.optimizer.readStats(),
    ]);
    const value = this.value
      ? {
        ...(await this.value.readMetrics()),
        valueGradNorm: (await this.value.readStats()).gradNorm,
      }
      : undefined;
    return {
      loss,
      optimizer,
      value,
      lr: plan.lr,
      step: plan.t,
      tokens: packed.length / 8,
      microBatches: micro.length,
      seconds: (performance.now() - t0) / 1000,
    };
  }

  /**
   * After encodeTrunk of `rows` rows: the LM head, the loss head (its per-row data in `rowData`,
   * [rows × 8]) and, with `backward`, the head's backward, model.logitRows rows at a time (the
   * logits are overwritten by their gradient). The loss totals add to the previous ones with
   * `accumulate` (later micro-batches), and always across the chunks of one call.
   */
  encodeHeadLoss(
    rec: Recorder,
    rows: number,
    rowData: GPUBuffer,
    accumulate: boolean,
    backward: boolean,
  ): void {
    const H = this.model.logitRows, logits = this.model.logitsBuffer;
    for (let r0 = 0; r0 < rows; r0 += H) {
      const n = Math.min(H, rows - r0);
      this.model.encodeHeadRows(rec, r0, n);
      this.lossHead.encode(rec, {
        rows: n,
        rowData: { buffer: rowData, offset: r0 * ROW_FLOATS * 4, size: n * ROW_FLOATS * 4 },
        logits,
        dlogits: "in-place",
        accumulate: accumulate || r0 > 0,
      });
      if (backward) this.backward.encodeHeadRows(rec, r0, n, logits);
    }
  }

  /**
   * The value head's output at every position of each sequence but the last (length n−1: the
   * value of the state before token t+1, where the policy loss reads its log-prob), from the
   * current weights. A forward pass only; nothing is trained.
   */
  async values(sequences: readonly TrainSequence[]): Promise<number[][]> {
    const value = this.value;
    if (!value) {
      throw new TrainConfigError(
        "valueHead",
        "this trainer has no value head; create it with opts.valueHead",
      );
    }
    const order = sequences.map((s, i) => ({ s, i })).sort((a, b) =>
      (a.s.adapter ?? -1) - (b.s.adapter ?? -1) || a.i - b.i
    );
    const seqs = order.map((x) => x.s);
    const out: number[][] = new Array(sequences.length);
    for (const mb of this.microBatches(seqs)) {
      const rows: ModelRow[] = mb.seqs.flatMap((si, slot) =>
        seqs[si].tokens.map((token, pos) => ({ token, slot, pos, adapter: seqs[si].adapter }))
      );
      this.model.writeRows(rows, []);
      const rec = this.gpu.recorder("values");
      this.model.encodeTrunk(rec, mb.rows); // the value head reads xf: no logits
      value.encodeForward(rec, mb.rows, this.model.scratch.xf);
      rec.submit();
      const v = await value.readValues(mb.rows);
      let r = 0;
      for (const si of mb.seqs) {
        const n = seqs[si].tokens.length;
        out[order[si].i] = Array.from(v.subarray(r, r + n - 1));
        r += n;
      }
    }
    return out;
  }

  /** The value head's [w, b] and its optimizer state (for a checkpoint); null without one. */
  async valueHeadState(): Promise<{ params: Float32Array; optimizer: OptimizerState } | null> {
    if (!this.value) return null;
    return {
      params: await this.value.read(),
      optimizer: await this.value.optimizerState(this.counter.completedSteps),
    };
  }

  /** Restores the value head's [w, b] and moments from a checkpoint. */
  restoreValueHead(params: Float32Array, optimizer: OptimizerState) {
    if (!this.value) {
      throw new TrainConfigError("valueHead", "this trainer has no value head to restore");
    }
    this.value.write(params);
    this.value.restoreOptimizer(optimizer);
  }

  /** Current parameters back on the CPU: adapters (LoRA) or the full weights. */
  async readWeights(): Promise<ModelWeights> {
    const w = this.model.weights;
    const data = new Float32Array(w.layout.totalFloats);
    for (const t of w.layout.tensors) {
      data.set(await readParamTensor(this.gpu, this.model.params, t), t.offset);
    }
    return { ...w, data };
  }

  async readLora(): Promise<Float32Array | null> {
    return this.lora ? await this.lora.read() : null;
  }

  async optimizerState(): Promise<OptimizerState> {
    return await this.optimizer.readState(this.ranges, this.counter.completedSteps);
  }

  /** Restores moments and the step count (parameters come from the checkpoint's weights). */
  restoreOptimizer(state: OptimizerState) {
    this.optimizer.writeState(this.ranges, state);
    this.counter = new StepCounter(this.opts.schedule, 1, state.step);
  }

  destroy() {
    for (const b of this.owned) b.destroy();
    this.value?.destroy();
    this.rowData.destroy();
    this.backward.destroy();
    this.lora?.destroy();
    this.model.destroy();
  }
}
