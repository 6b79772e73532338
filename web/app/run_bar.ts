// The sticky run bar: Start / Pause / Resume / Stop, what the worker is doing now (its phase, as
// the worker reports it), step x / N, elapsed time and an ETA from this session's own step times,
// and a progressbar (indeterminate while no step has finished). The status line is an aria-live
// region; the clock is not (it would be read out every second).

import { type Phase, PHASE_LABELS, type RunState } from "./protocol.ts";

const LIVE: RunState[] = ["loading", "running", "pausing", "paused", "stopping", "recovering"];
/** States with a step in progress: closing the tab loses the work since the last checkpoint. */
export const BUSY: RunState[] = ["loading", "running", "pausing", "stopping", "recovering"];

const STATE_LABELS: Record<RunState, string> = {
  idle: "Ready",
  loading: "Starting",
  running: "Training",
  pausing: "Pausing after this step",
  paused: "Paused",
  stopping: "Stopping after this step",
  stopped: "Stopped",
  finished: "Finished",
  failed: "Failed",
  recovering: "Recovering the GPU",
};

export function clock(s: number): string {
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return h
    ? `${h}:${String(m).padStart(2, "0")}:${String(sec).padStart(2, "0")}`
    : `${m}:${String(sec).padStart(2, "0")}`;
}

export class RunBar {
  readonly buttons: Record<"start" | "pause" | "resume" | "stop", HTMLButtonElement>;
  state: RunState = "idle";
  private phase: Phase = "idle";
  private pipelines = 0;
  private step = 0;
  private total = 0;
  private startedAt: number | null = null;
  private endedAt: number | null = null;
  /** (time, step) when each step of this session finished: the ETA's rate. */
  private marks: { t: number; step: number }[] = [];
  private readonly statusEl: HTMLElement;
  private readonly phaseEl: HTMLElement;
  private readonly stepEl: HTMLElement;
  private readonly timeEl: HTMLElement;
  private readonly bar: HTMLElement;
  private readonly fill: HTMLElement;

  constructor(root: HTMLElement) {
    const q = <T extends HTMLElement>(s: string) => root.querySelector<T>(s)!;
    this.buttons = {
      start: q("#btn-start"),
      pause: q("#btn-pause"),
      resume: q("#btn-resume"),
      stop: q("#btn-stop"),
    };
    this.statusEl = q("#state");
    this.phaseEl = q("#rb-phase");
    this.stepEl = q("#rb-step");
    this.timeEl = q("#rb-time");
    this.bar = q("#progressbar");
    this.fill = q("#progress");
    setInterval(() => this.drawClock(), 1000);
    this.draw();
  }

  get live() {
    return LIVE.includes(this.state);
  }

  /** A run (new or resumed) begins now: the clock and the ETA start over. */
  begin() {
    this.startedAt = Date.now();
    this.endedAt = null;
    this.marks = [];
  }

  onState(state: RunState, step: number, total: number) {
    if (step > this.step && this.startedAt !== null) this.marks.push({ t: Date.now(), step });
    this.state = state;
    this.step = step;
    this.total = total;
    this.draw();
  }

  onPhase(phase: Phase, pipelines: number) {
    this.phase = phase;
    this.pipelines = pipelines;
    this.draw();
  }

  /** Seconds left at the mean time between this session's finished steps (none before two). */
  eta(): number | null {
    const a = this.marks[0], b = this.marks[this.marks.length - 1];
    if (!a || b.step <= a.step) return null;
    return ((b.t - a.t) / 1000 / (b.step - a.step)) * (this.total - this.step);
  }

  private draw() {
    const phase = this.phase === "idle" ? "" : PHASE_LABELS[this.phase];
    const compiling =
      this.phase !== "idle" && this.pipelines > 0 && (this.phase === "compiling" || this.step === 0)
        ? ` (${this.pipelines} GPU shaders compiled)`
        : "";
    this.phaseEl.textContent = phase ? `${phase}${compiling}` : "";
    this.statusEl.textContent = STATE_LABELS[this.state];
    this.stepEl.textContent = this.total ? `${this.step} of ${this.total} steps done` : "";
    this.bar.setAttribute("aria-valuemax", String(Math.max(1, this.total)));
    const busy = this.live && this.step === 0 && this.phase !== "idle";
    this.bar.classList.toggle("busy", busy);
    if (busy) {
      // Indeterminate: no step finished yet, so there is no honest fraction to show.
      this.bar.removeAttribute("aria-valuenow");
      this.bar.setAttribute("aria-valuetext", phase);
      this.fill.style.width = "0";
    } else {
      this.bar.setAttribute("aria-valuenow", String(this.step));
      this.bar.setAttribute(
        "aria-valuetext",
        this.total ? `step ${this.step} of ${this.total}` : "no run",
      );
      this.fill.style.width = this.total ? `${(100 * this.step) / this.total}%` : "0";
    }
    this.drawClock();
  }

  private drawClock() {
    if (this.startedAt === null) return void (this.timeEl.textContent = "");
    if (!this.live) {
      // Ended (finished, stopped, failed): the time it ran, once.
      this.endedAt ??= Date.now();
      return void (this.timeEl.textContent = `Ran for ${
        clock((this.endedAt - this.startedAt) / 1000)
      }`);
    }
    this.endedAt = null;
    const eta = this.eta();
    this.timeEl.textContent = `Elapsed ${clock((Date.now() - this.startedAt) / 1000)}` +
      (this.state === "running" || this.state === "pausing"
        ? ` · ${eta === null ? "time left known after two steps" : `about ${clock(eta)} left`}`
        : "");
  }
}
