// What the trainer is doing, for the page: each phase change is reported at once, then, while it
// is not idle, again once a second whenever the count of compiled GPU pipelines has changed
// (pipelines compile on first use, so the first validation and step show visible progress).

import type { Phase, TrainerEvent } from "./protocol.ts";

export class PhaseReporter {
  #phase: Phase = "idle";
  #timer: ReturnType<typeof setInterval> | null = null;
  #pipelines = -1;

  /** `where`: the step, total and pipelines compiled so far, read at each report. */
  constructor(
    private readonly emit: (e: TrainerEvent) => void,
    private readonly where: () => { step: number; total: number; pipelines: number },
    private readonly everyMs = 1000,
  ) {}

  get phase(): Phase {
    return this.#phase;
  }

  /** Reports `p`; the once-a-second pipeline reports run until the phase is "idle". */
  set(p: Phase) {
    this.#phase = p;
    this.#report();
    if (p === "idle" && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    } else if (p !== "idle" && this.#timer === null) {
      this.#timer = setInterval(
        () => this.where().pipelines !== this.#pipelines && this.#report(),
        this.everyMs,
      );
    }
  }

  #report() {
    const { step, total, pipelines } = this.where();
    this.#pipelines = pipelines;
    this.emit({ type: "phase", phase: this.#phase, step, total, pipelines });
  }
}
