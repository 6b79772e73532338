// Learning-rate schedules as pure functions of the optimizer step, and the step counter that
// drives them (and Adam's bias correction) through gradient accumulation and resumes.
//
// Step convention (HF / verl LambdaLR): `lrAt(s, k)` is the rate of the update that follows k
// completed optimizer steps, so with warmup the very first update uses lr·0 — exactly what
// `get_cosine_schedule_with_warmup` gives in transformers and verl. The paper's released config is
// cosine, 10 warmup steps, min ratio 0.3, lr 5e-6 (see docs/algorithm.md).

import { TrainConfigError } from "./errors.ts";

export interface ConstantSchedule {
  readonly kind: "constant";
  readonly lr: number;
  /** Linear ramp from 0 over this many steps (default 0). */
  readonly warmupSteps?: number;
}

export interface DecaySchedule {
  readonly kind: "linear" | "cosine";
  readonly lr: number;
  readonly warmupSteps?: number;
  /** Step at which the decay reaches minRatio; later steps stay there. */
  readonly totalSteps: number;
  /** Floor as a fraction of lr (verl's min_lr_ratio; default 0). */
  readonly minRatio?: number;
}

export type LrSchedule = ConstantSchedule | DecaySchedule;
export type ScheduleKind = LrSchedule["kind"];

/** Warmup fraction: k / warmup for k < warmup (HF and verl start the ramp at 0). */
function warmup(s: LrSchedule, k: number): number | null {
  const w = s.warmupSteps ?? 0;
  return k < w ? k / Math.max(1, w) : null;
}

/** Decay progress in [0, 1] after warmup (clamped, so steps past totalSteps hold the floor). */
function progress(s: DecaySchedule, k: number): number {
  const w = s.warmupSteps ?? 0;
  return Math.min(1, Math.max(0, (k - w) / Math.max(1, s.totalSteps - w)));
}

/** Multiplier of lr per schedule kind: a table, not an if/else chain. */
interface ScheduleOf {
  constant: ConstantSchedule;
  linear: DecaySchedule;
  cosine: DecaySchedule;
}
const MULTIPLIERS: { readonly [K in ScheduleKind]: (s: ScheduleOf[K], k: number) => number } = {
  constant: (s, k) => warmup(s, k) ?? 1,
  // HF get_linear_schedule_with_warmup, with the floor lifted from 0 to minRatio.
  linear: (s, k) => {
    const min = s.minRatio ?? 0;
    return warmup(s, k) ?? min + (1 - min) * (1 - progress(s, k));
  },
  // verl get_cosine_schedule_with_warmup (num_cycles 0.5): max(min, cos(π·p)·(1−min)/2 + (1+min)/2).
  cosine: (s, k) => {
    const min = s.minRatio ?? 0;
    const w = warmup(s, k);
    if (w !== null) return w;
    return Math.max(min, Math.cos(Math.PI * progress(s, k)) * (1 - min) * 0.5 + (1 + min) * 0.5);
  },
};

/** Throws TrainConfigError naming the field when a schedule cannot be evaluated. */
export function validateSchedule(s: LrSchedule): void {
  if (!(s.kind in MULTIPLIERS)) {
    throw new TrainConfigError(
      "lr_schedule",
      `unknown kind "${s.kind}"; use constant, linear or cosine`,
    );
  }
  if (!(s.lr >= 0) || !Number.isFinite(s.lr)) {
    throw new TrainConfigError("lr", `${s.lr} must be a finite number ≥ 0`);
  }
  const w = s.warmupSteps ?? 0;
  if (!Number.isInteger(w) || w < 0) {
    throw new TrainConfigError("warmup_steps", `${w} must be a whole number ≥ 0`);
  }
  if (s.kind === "constant") return;
  if (!Number.isInteger(s.totalSteps) || s.totalSteps < w) {
    throw new TrainConfigError(
      "total_steps",
      `${s.totalSteps} must be a whole number ≥ warmup_steps (${w}); the decay needs room to run`,
    );
  }
  const min = s.minRatio ?? 0;
  if (!(min >= 0 && min <= 1)) {
    throw new TrainConfigError("min_lr_ratio", `${min} must lie in [0, 1] (a fraction of lr)`);
  }
}

/** The learning rate of the update after `completedSteps` optimizer steps. */
export function lrAt(s: LrSchedule, completedSteps: number): number {
  if (!Number.isInteger(completedSteps) || completedSteps < 0) {
    throw new TrainConfigError("step", `${completedSteps} must be a whole number ≥ 0`);
  }
  validateSchedule(s);
  // The table is keyed by kind, so the entry always matches `s`; TS cannot correlate the two.
  const multiplier = MULTIPLIERS[s.kind] as (s: LrSchedule, k: number) => number;
  return s.lr * multiplier(s, completedSteps);
}

/** What the next optimizer update needs: Adam's 1-based step t and the scheduled lr. */
export interface StepPlan {
  /** Adam's t (bias correction uses β^t); equals completed steps + 1. */
  readonly t: number;
  readonly lr: number;
}

/**
 * Counts micro-batches and optimizer steps. Gradients of `accumSteps` micro-batches add up in the
 * grad buffers; the optimizer then scales them by `gradScale` (1/accumSteps) — unless the loss
 * already normalised over the whole mini-batch (see losses.ts), in which case pass accumSteps 1
 * to the scale and keep counting micro-batches here.
 */
export class StepCounter {
  private micro = 0;

  constructor(
    readonly schedule: LrSchedule,
    readonly accumSteps = 1,
    /** Optimizer steps already taken (from a checkpoint on resume). */
    private done = 0,
  ) {
    validateSchedule(schedule);
    if (!Number.isInteger(accumSteps) || accumSteps < 1) {
      throw new TrainConfigError(
        "gradient_accumulation_steps",
        `${accumSteps} must be a whole number ≥ 1`,
      );
    }
    if (!Number.isInteger(done) || done < 0) {
      throw new TrainConfigError("step", `${done} must be a whole number ≥ 0`);
    }
  }

  /** Optimizer steps completed so far (what a checkpoint stores). */
  get completedSteps(): number {
    return this.done;
  }

  /** 1 / accumSteps: the factor that turns summed micro-batch gradients into their mean. */
  get gradScale(): number {
    return 1 / this.accumSteps;
  }

  /** Records one finished micro-batch; true when the optimizer should step now. */
  microBatchDone(): boolean {
    this.micro++;
    return this.micro >= this.accumSteps;
  }

  /**
   * The plan of the optimizer step about to be recorded; call `stepDone` after recording it. The
   * lr is the schedule's at `scheduleStep` when given (a caller that schedules by its own steps,
   * as RL does by RL step whatever the updates in one), else at the completed optimizer steps.
   */
  next(scheduleStep?: number): StepPlan {
    return { t: this.done + 1, lr: lrAt(this.schedule, scheduleStep ?? this.done) };
  }

  /** Marks the planned step as taken and starts a new accumulation window. */
  stepDone(): void {
    this.done++;
    this.micro = 0;
  }
}
