// The PPO critic's value head: v = w·h + b on the final norm's output h (the hidden state the LM
// head reads), with its own fp32 parameters, gradients and AdamW (moments, grad-norm clip) beside
// the policy's. Its loss is PPO's clipped value loss (shaders/value_head.wgsl); its gradient with
// respect to h is added to the LM head's, so the trunk (LoRA adapters or full weights, as the
// policy trains) learns from both losses. Rows are packed on the CPU (`packValueRows`) with the
// token-mean coefficient times the value-loss coefficient, like the policy loss's rows.
//
// Parameter layout (floats): w at [0, C), b at B = ⌈C/64⌉·64 (its own 64-float block, so weight
// decay spares the bias as HF's no-decay rule does for biases); numel B + 1.
// Dims: N rows, C hidden.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import {
  AdamW,
  type AdamWOptions,
  type AdamWRange,
  type AdamWStats,
  BLOCK_FLOATS,
  type OptimizerState,
} from "./adamw.ts";
import { CheckpointMismatchError, LossInputError, TrainConfigError } from "./errors.ts";

const WG = 64;

/**
 * shaders/value_head.wgsl's parameters: rows of h [rows, cols], the bias at P[b_off], accumulate
 * 1 adds to the totals, clip the value clip ε_v.
 */
export const ValueHeadParams = uniformStruct("value_head_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["b_off", "u32"],
  ["accumulate", "u32"],
  ["clip", "f32"],
]);
/** f32 slots per packed value row: old value, return, coefficient, mask. */
export const VALUE_ROW_FLOATS = 4;

export interface ValueHeadOptions {
  /** Hidden size C of the model it reads. */
  readonly hidden: number;
  /** Most rows one encode covers. */
  readonly maxRows: number;
  /** ε_v of the clipped value loss (> 0). */
  readonly clip: number;
  readonly optimizer?: Omit<AdamWOptions, "numel">;
  /** Initial [w (C floats), b]; default zeros (an untrained critic predicts 0 everywhere). */
  readonly init?: Float32Array;
}

export interface ValueLossMetrics {
  /** Σ coef·ℓ: the value loss (vf coefficient included) whose gradient was written. */
  readonly valueLoss: number;
  /** Masked mean of [the clipped term was the larger] (verl vf_clipfrac). */
  readonly valueClipFrac: number;
  /** Masked mean of (v − R)²: the critic's squared error on the returns, before clipping. */
  readonly valueMse: number;
}

/** One mini-batch of value-loss rows: one entry per token row, as the policy loss's. */
export interface ValueBatch {
  /** 1 on rows in the loss (generated tokens), 0 elsewhere. */
  readonly mask: ArrayLike<number>;
  /** V_old of each row (the critic at rollout time). */
  readonly oldValues: ArrayLike<number>;
  /** Return targets R = A + V_old. */
  readonly returns: ArrayLike<number>;
}

/** Packed rows [n × 4]: coefficient coef·m_t/Σm (token-mean, times the vf coefficient). */
export function packValueRows(b: ValueBatch, coef: number): Float32Array {
  const n = b.mask.length;
  if (b.oldValues.length !== n || b.returns.length !== n) {
    throw new LossInputError(
      `value loss: ${n} mask rows but ${b.oldValues.length} old values and ${b.returns.length} returns; give one of each per token`,
    );
  }
  if (!(coef >= 0) || !Number.isFinite(coef)) {
    throw new TrainConfigError("value.coef", `${coef} must be a finite number ≥ 0`);
  }
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (!(b.mask[i] >= 0) || !Number.isFinite(b.mask[i])) {
      throw new LossInputError(`value loss: mask[${i}] = ${b.mask[i]} must be finite and ≥ 0`);
    }
    if (b.mask[i] > 0 && !(Number.isFinite(b.oldValues[i]) && Number.isFinite(b.returns[i]))) {
      throw new LossInputError(
        `value loss: row ${i} has old value ${b.oldValues[i]} and return ${
          b.returns[i]
        }; both must be finite`,
      );
    }
    total += b.mask[i];
  }
  const f = new Float32Array(n * VALUE_ROW_FLOATS);
  for (let i = 0; i < n; i++) {
    f.set(
      [b.oldValues[i], b.returns[i], total > 0 ? coef * b.mask[i] / total : 0, b.mask[i]],
      i * VALUE_ROW_FLOATS,
    );
  }
  return f;
}

/** Where b lives in the parameter buffer: the first 64-float block after w. */
export const biasOffset = (hidden: number) => Math.ceil(hidden / BLOCK_FLOATS) * BLOCK_FLOATS;

type Names = "forward" | "loss" | "totals" | "bwdX" | "bwdW";

export class ValueHead {
  /** Values of the last forward, [maxRows]. */
  readonly values: GPUBuffer;
  /** Packed rows of the current micro-batch, [maxRows × 4] (write with gpu.write). */
  readonly rowData: GPUBuffer;
  private readonly dv: GPUBuffer;
  private readonly rowStats: GPUBuffer;
  private readonly totals: GPUBuffer;
  private readonly range: AdamWRange;
  private readonly buffers: GPUBuffer[];
  readonly numel: number;
  readonly biasOffset: number;

  private constructor(
    readonly gpu: Gpu,
    private readonly k: Record<Names, Kernel>,
    readonly optimizer: AdamW,
    readonly opts: ValueHeadOptions,
  ) {
    const C = opts.hidden, N = opts.maxRows;
    this.biasOffset = biasOffset(C);
    this.numel = this.biasOffset + 1;
    const init = new Float32Array(this.numel);
    if (opts.init) {
      if (opts.init.length !== C + 1) {
        throw new KernelArgumentError(
          `value head init has ${opts.init.length} floats; it needs hidden + 1 = ${
            C + 1
          } (w, then b)`,
        );
      }
      init.set(opts.init.subarray(0, C));
      init[this.biasOffset] = opts.init[C];
    }
    const z = (n: number, label: string) => gpu.zeros(n, label);
    const mask = new Float32Array(Math.ceil(this.numel / BLOCK_FLOATS)).fill(1);
    mask[mask.length - 1] = 0;
    const params = gpu.upload(init, "value.params");
    this.range = {
      params,
      grads: z(this.numel, "value.grads"),
      m: z(this.numel, "value.m"),
      v: z(this.numel, "value.v"),
      numel: this.numel,
      decayMask: gpu.upload(mask, "value.decay"),
    };
    this.values = z(N, "value.values");
    this.rowData = z(N * VALUE_ROW_FLOATS, "value.rows");
    this.dv = z(N, "value.dv");
    this.rowStats = z(N * 4, "value.row-stats");
    this.totals = z(4, "value.totals");
    const r = this.range;
    this.buffers = [
      params,
      r.grads,
      r.m,
      r.v,
      r.decayMask,
      this.values,
      this.rowData,
      this.dv,
      this.rowStats,
      this.totals,
    ] as GPUBuffer[];
  }

  static async create(gpu: Gpu, opts: ValueHeadOptions): Promise<ValueHead> {
    if (!Number.isInteger(opts.hidden) || opts.hidden <= 0) {
      throw new TrainConfigError(
        "hidden",
        `${opts.hidden} must be the model's positive hidden size`,
      );
    }
    if (!Number.isInteger(opts.maxRows) || opts.maxRows <= 0) {
      throw new TrainConfigError(
        "maxRows",
        `${opts.maxRows} must be a positive integer (token rows per call)`,
      );
    }
    if (!(opts.clip > 0) || !Number.isFinite(opts.clip)) {
      throw new TrainConfigError(
        "value.clip",
        `${opts.clip} must be a finite number > 0 (the value clip ε_v; a huge value turns clipping off)`,
      );
    }
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const s = (entry: string, bindings: readonly BindingKind[]) =>
      gpu.kernel({ shader: "value_head", entry, bindings, constants: { WG } });
    const [forward, loss, totals, bwdX, bwdW] = await Promise.all([
      s("value_forward", [u, ro, ro, rw]),
      s("value_loss", [u, ro, ro, rw, rw]),
      s("value_totals", [u, ro, rw]),
      s("value_bwd_x", [u, ro, ro, rw]),
      s("value_bwd_w", [u, ro, ro, rw]),
    ]);
    const optimizer = await AdamW.create(gpu, {
      ...opts.optimizer,
      numel: biasOffset(opts.hidden) + 1,
    });
    return new ValueHead(gpu, { forward, loss, totals, bwdX, bwdW }, optimizer, opts);
  }

  get params(): GPUBuffer {
    return this.range.params as GPUBuffer;
  }

  get grads(): GPUBuffer {
    return this.range.grads as GPUBuffer;
  }

  private uniform(rows: number, accumulate = false): ArrayBuffer {
    return ValueHeadParams.pack({
      rows,
      cols: this.opts.hidden,
      b_off: this.biasOffset,
      accumulate: accumulate ? 1 : 0,
      clip: this.opts.clip,
    });
  }

  private checkRows(rows: number) {
    if (!Number.isInteger(rows) || rows <= 0 || rows > this.opts.maxRows) {
      throw new KernelArgumentError(
        `value head: rows ${rows} must be in [1, ${this.opts.maxRows}] (maxRows given to create)`,
      );
    }
  }

  private grid(n: number): [number, number] {
    return grid1d(Math.ceil(n / WG), this.gpu.device.limits.maxComputeWorkgroupsPerDimension);
  }

  /** values[r] = h[r]·w + b for `rows` rows of h [rows, C]. */
  encodeForward(rec: Recorder, rows: number, h: BufferRef) {
    this.checkRows(rows);
    rec.dispatch(
      this.k.forward,
      [null, h, this.params, this.values],
      grid1d(rows, this.gpu.device.limits.maxComputeWorkgroupsPerDimension),
      this.uniform(rows),
    );
  }

  /** The clipped value loss of the last forward against rowData: dv, per-row stats and the totals. */
  encodeLoss(rec: Recorder, rows: number, accumulate: boolean) {
    this.checkRows(rows);
    rec.dispatch(
      this.k.loss,
      [null, this.rowData, this.values, this.dv, this.rowStats],
      this.grid(rows),
      this.uniform(rows),
    );
    rec.dispatch(
      this.k.totals,
      [null, this.rowStats, this.totals],
      [1],
      this.uniform(rows, accumulate),
    );
  }

  /** dh [rows, C] += dv·wᵀ (onto the LM head's gradient); w and b gradients += (from h [rows, C]). */
  encodeBackward(rec: Recorder, rows: number, h: BufferRef, dh: BufferRef) {
    this.checkRows(rows);
    const u = this.uniform(rows);
    rec.dispatch(
      this.k.bwdX,
      [null, this.dv, this.params, dh],
      this.grid(rows * this.opts.hidden),
      u,
    );
    rec.dispatch(this.k.bwdW, [null, this.dv, h, this.grads], [
      Math.ceil((this.opts.hidden + 1) / WG),
    ], u);
  }

  encodeZeroGrads(rec: Recorder) {
    this.optimizer.encodeZeroGrads(rec, [this.range]);
  }

  /** One AdamW update of w and b (its own grad-norm clip). */
  encodeStep(rec: Recorder, lr: number, step: number) {
    this.optimizer.encodeStep(rec, { ranges: [this.range], lr, step });
  }

  async readMetrics(): Promise<ValueLossMetrics> {
    const t = await this.gpu.readFloat32(this.totals, 4);
    const tokens = t[3];
    return {
      valueLoss: t[0],
      valueClipFrac: tokens > 0 ? t[1] / tokens : 0,
      valueMse: tokens > 0 ? t[2] / tokens : 0,
    };
  }

  async readStats(): Promise<AdamWStats> {
    return await this.optimizer.readStats();
  }

  /** The values of the last forward's first `rows` rows. */
  async readValues(rows: number): Promise<Float32Array> {
    return await this.gpu.readFloat32(this.values, rows);
  }

  /** [w (C floats), b]. */
  async read(): Promise<Float32Array> {
    const all = await this.gpu.readFloat32(this.params, this.numel);
    const out = new Float32Array(this.opts.hidden + 1);
    out.set(all.subarray(0, this.opts.hidden));
    out[this.opts.hidden] = all[this.biasOffset];
    return out;
  }

  /** Overwrites w and b with [w (C floats), b] (a checkpoint's). */
  write(data: Float32Array) {
    const C = this.opts.hidden;
    if (data.length !== C + 1) {
      throw new CheckpointMismatchError(
        "value head",
        `holds ${data.length} floats but this model's head needs hidden + 1 = ${
          C + 1
        }; the checkpoint belongs to another model`,
      );
    }
    const all = new Float32Array(this.numel);
    all.set(data.subarray(0, C));
    all[this.biasOffset] = data[C];
    this.gpu.write(this.params, all);
  }

  async optimizerState(step: number): Promise<OptimizerState> {
    return await this.optimizer.readState([this.range], step);
  }

  restoreOptimizer(state: OptimizerState) {
    this.optimizer.writeState([this.range], state);
  }

  destroy() {
    this.optimizer.destroy();
    for (const b of this.buffers) b.destroy();
  }
}
