// The training charts (uPlot): reward by agent, success (train and held-out), loss, KL, entropy,
// clip fraction, tokens/s. One point per step from metrics_export's chartPoint. Each chart has
// labelled axes with units, drawn before any data; a line under the title with the latest values
// (also the chart's text alternative); optional smoothing (EMA), log scale and a wall-clock axis;
// and other stored runs overlaid as dashed lines (the run selector sets `overlays`).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { type ChartPoint, chartPoint, smooth } from "../../src/browser/metrics_export.ts";
import type { StepMetrics } from "../../src/rl/session.ts";

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];
const HEIGHT = 170;

interface SeriesSpec {
  label: string;
  value: (p: ChartPoint) => number | null;
  /** Sparse (held-out validation): drawn as a line through its points, never smoothed. */
  sparse?: boolean;
}

interface ChartSpec {
  id: string;
  title: string;
  /** The y axis: what and in which unit. */
  y: string;
  series: (agents: string[]) => SeriesSpec[];
  yRange?: [number, number];
  /** Shown under the chart: how to read it. */
  note?: string;
  /** Log scale makes sense (values > 0). */
  logOk?: boolean;
}

const SPECS: ChartSpec[] = [
  {
    id: "reward",
    title: "Reward by agent (mean over candidates)",
    y: "reward",
    series: (agents) => agents.map((a) => ({ label: a, value: (p) => p.rewardByAgent[a] ?? null })),
  },
  {
    id: "success",
    title: "Success rate",
    y: "fraction solved",
    yRange: [0, 1],
    note: "Held-out: validation on tasks never trained on (before training and every few steps).",
    series: () => [
      { label: "train rollouts", value: (p) => p.trainSuccess },
      { label: "held-out", value: (p) => p.evalSuccess, sparse: true },
    ],
  },
  {
    id: "loss",
    title: "Policy loss (PPO-clip)",
    y: "loss / token",
    note:
      "Values near 0 (even 1e-8) are expected: the loss is taken where the policy still equals the sampling policy " +
      "(ratio 1) and a group's advantages average to 0. The gradient, not the value, moves the policy.",
    series: () => [{ label: "loss", value: (p) => p.loss }, {
      label: "policy-gradient part",
      value: (p) => p.pgLoss,
    }],
  },
  {
    id: "kl",
    title: "KL divergence (nats / token)",
    y: "nats / token",
    logOk: true,
    note:
      "To the sampling policy (k1): near 0 is expected with one update per batch. To the reference (k3): only with a KL penalty.",
    series: () => [{ label: "to sampling policy", value: (p) => p.approxKl }, {
      label: "to reference",
      value: (p) => p.klLoss,
    }],
  },
  {
    id: "entropy",
    title: "Entropy (nats / token)",
    y: "nats / token",
    logOk: true,
    series: () => [{ label: "entropy", value: (p) => p.entropy }],
  },
  {
    id: "clip",
    title: "Clip fraction (tokens clipped)",
    y: "fraction",
    yRange: [0, 1],
    series: () => [{ label: "clipped", value: (p) => p.clipFrac }],
  },
  {
    id: "tps",
    title: "Throughput (tokens / s)",
    y: "tokens / s",
    logOk: true,
    series: () => [{ label: "rollout", value: (p) => p.rolloutTokensPerS }, {
      label: "update",
      value: (p) => p.updateTokensPerS,
    }],
  },
];

export interface ChartOptions {
  /** EMA weight of the past, 0 (off) to 0.95. */
  smoothing: number;
  log: boolean;
  x: "step" | "minutes";
}

/** Tick labels that stay readable for tiny values (KL ~1e-8) and large ones (tokens/s). */
export function tick(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1000
    ? v.toFixed(0)
    : a >= 1
    ? String(+v.toPrecision(3))
    : a >= 1e-3
    ? String(+v.toPrecision(2))
    : v.toExponential(0);
}

/** A run's lines as chart points, with x = step or minutes since its first line (`at`, set by the worker). */
function runPoints(
  lines: readonly StepMetrics[],
  x: ChartOptions["x"],
): { xs: number[]; points: ChartPoint[] } {
  const t0 = lines.find((l) => typeof l.at === "number")?.at as number | undefined;
  const points = lines.map(chartPoint);
  const xs = lines.map((l) =>
    x === "minutes" && t0 !== undefined && typeof l.at === "number" ? (l.at - t0) / 60_000 : l.step
  );
  return { xs, points };
}

interface RunData {
  id: string;
  label: string;
  lines: readonly StepMetrics[];
  /** Drawn dashed and lighter, behind the shown run. */
  overlay?: boolean;
}

class Chart {
  private plot: uPlot | null = null;
  private key = "";
  private readonly box: HTMLElement;
  private readonly plotBox: HTMLElement;
  private readonly latest: HTMLElement;
  private total = 0;
  points = 0;

  constructor(readonly spec: ChartSpec, parent: HTMLElement) {
    this.box = document.createElement("figure");
    this.box.className = "chart";
    this.box.dataset.chart = spec.id;
    const cap = document.createElement("figcaption");
    const h = document.createElement("b");
    h.textContent = spec.title;
    this.latest = document.createElement("span");
    this.latest.className = "chart-latest muted";
    cap.append(h, this.latest);
    this.plotBox = document.createElement("div");
    this.plotBox.setAttribute("role", "img");
    this.box.append(cap, this.plotBox);
    if (spec.note) {
      const n = document.createElement("p");
      n.className = "chart-note muted";
      n.textContent = spec.note;
      this.box.append(n);
    }
    parent.append(this.box);
  }

  private width() {
    return Math.max(200, this.box.clientWidth || 320);
  }

  update(
    live: RunData | null,
    overlays: RunData[],
    agents: string[],
    o: ChartOptions,
    total: number,
  ) {
    this.total = total;
    let series = this.spec.series(agents);
    // Before the first step the reward chart knows no agents: one empty series keeps its axes.
    if (!series.length) {
      series = [{
        label: "agents appear after the first step",
        value: () => null,
      }];
    }
    const runs = [...(live ? [live] : []), ...overlays.map((r) => ({ ...r, overlay: true }))];
    const per = runs.map((r) => runPoints(r.lines, o.x));
    const xs = [...new Set(per.flatMap((p) => p.xs))].sort((a, b) => a - b);
    const log = o.log && !!this.spec.logOk;
    const ys: (number | null)[][] = [];
    runs.forEach((_, ri) => {
      const at = new Map(per[ri].xs.map((x, i) => [x, i]));
      for (const s of series) {
        let v = per[ri].points.map((p) => s.value(p));
        if (!s.sparse) v = smooth(v, o.smoothing);
        if (log) v = v.map((y) => (y !== null && y > 0 ? y : null));
        ys.push(xs.map((x) => (at.has(x) ? v[at.get(x)!] : null)));
      }
    });
    this.points = live
      ? ys.slice(0, series.length).reduce((n, y) => n + y.filter((v) => v !== null).length, 0)
      : 0;
    this.box.dataset.points = String(this.points);
    this.describe(live, overlays, series, live ? per[0].points : [], o);
    const data = [xs, ...ys] as uPlot.AlignedData;
    const key = JSON.stringify([agents, runs.map((r) => r.id + (r.overlay ? "*" : "")), log, o.x]);
    if (!this.plot || key !== this.key) {
      this.plot?.destroy();
      this.key = key;
      this.plot = new uPlot(this.options(runs, series, log, o), data, this.plotBox);
    } else this.plot.setData(data);
  }

  /** The latest values in words: shown under the title, and the chart's text alternative. */
  private describe(
    live: RunData | null,
    overlays: RunData[],
    series: SeriesSpec[],
    points: ChartPoint[],
    o: ChartOptions,
  ) {
    const parts: string[] = [];
    for (const s of series) {
      const last = [...points].reverse().find((p) => s.value(p) !== null);
      if (last) parts.push(`${s.label} ${tick(s.value(last)!)} at step ${last.step}`);
    }
    const others = overlays.length ? ` (dashed: ${overlays.map((r) => r.label).join(", ")})` : "";
    const text = (!live ? "no run yet" : parts.length ? parts.join(" · ") : "no values yet") +
      others;
    this.latest.textContent = ` — ${text}`;
    this.plotBox.setAttribute(
      "aria-label",
      `${this.spec.title} (${this.spec.y}) by ${
        o.x === "step" ? "training step" : "minutes"
      }: ${text}`,
    );
  }

  private options(
    runs: RunData[],
    series: SeriesSpec[],
    log: boolean,
    o: ChartOptions,
  ): uPlot.Options {
    // Read when drawn: the planned steps can change after the plot is built (the form's Steps field).
    const xMax = () => (o.x === "step" ? Math.max(this.total, 1) : 1);
    return {
      width: this.width(),
      height: HEIGHT,
      legend: { live: false },
      scales: {
        // Placeholder axes before any data: x over the run's steps, y over the chart's range.
        // By step, the axis spans the whole run from the start, so the curve grows into it.
        x: {
          time: false,
          range: (_u, mn, mx) =>
            o.x === "step"
              ? [0, Math.max(xMax(), mx ?? 0)]
              : mn === null || mx === null || mn === mx
              ? [0, Math.max(1, mx ?? 0)]
              : [mn, mx],
        },
        y: log ? { distr: 3 } : {
          range: (_u, mn, mx) =>
            this.spec.yRange ??
              (mn === null || mx === null ? [0, 1] : uPlot.rangeNum(mn, mx, 0.1, true)),
        },
      },
      axes: [
        {
          label: o.x === "step" ? "training step" : "minutes since start",
          labelSize: 18,
          incrs: o.x === "step" ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] : undefined,
        },
        {
          label: this.spec.y + (log ? " (log)" : ""),
          labelSize: 18,
          size: 52,
          values: (_u: uPlot, vals: number[]) => vals.map((v) => (v === null ? "" : tick(v))),
        },
      ],
      series: [
        { label: o.x === "step" ? "step" : "minutes" },
        ...runs.flatMap((r) =>
          series.map((s, i) => ({
            // An overlay's legend names it by its start time (the label's last part).
            label: r.overlay ? `${s.label}, ${r.label.split(" · ").pop()}` : s.label,
            stroke: COLORS[i % COLORS.length] + (r.overlay ? "99" : ""),
            width: r.overlay ? 1.5 : 2,
            dash: r.overlay ? [5, 4] : undefined,
            spanGaps: true,
            // Overlaid runs: dashed, lighter, smaller points
            // (a point's size must exceed the line width: uPlot's radius is their half-difference).
            points: { show: true, size: s.sparse ? 8 : r.overlay ? 5 : 4 },
          }))
        ),
      ],
    };
  }

  resize() {
    this.plot?.setSize({ width: this.width(), height: HEIGHT });
  }
}

export class Dashboard {
  private lines: StepMetrics[] = [];
  private liveLabel = "this run";
  private overlays: RunData[] = [];
  private total = 0;
  private readonly charts: Chart[];
  options: ChartOptions = { smoothing: 0, log: false, x: "step" };

  constructor(parent: HTMLElement) {
    this.charts = SPECS.map((s) => new Chart(s, parent));
    new ResizeObserver(() => this.charts.forEach((c) => c.resize())).observe(parent);
    this.render();
  }

  /** Replaces the shown run's data (a new, resumed or stored run); `total`: its planned steps. */
  reset(lines: StepMetrics[], total = this.total, label = "this run") {
    this.lines = [...lines];
    this.total = total;
    this.liveLabel = label;
    this.render();
  }

  add(m: StepMetrics) {
    this.lines = [...this.lines.filter((l) => l.step < m.step), m];
    this.render();
  }

  /** Other runs drawn dashed behind the shown one. */
  setOverlays(runs: RunData[]) {
    this.overlays = runs;
    this.render();
  }

  /** The planned steps (the x axis before any data), while no run is shown. */
  setTotal(total: number) {
    if (this.lines.length || total === this.total) return;
    this.total = total;
    this.render();
  }

  setOptions(o: Partial<ChartOptions>) {
    this.options = { ...this.options, ...o };
    this.render();
  }

  get metrics(): readonly StepMetrics[] {
    return this.lines;
  }

  /** Points of the shown run drawn per chart (for the page's tests). */
  counts(): Record<string, number> {
    return Object.fromEntries(this.charts.map((c) => [c.spec.id, c.points]));
  }

  private render() {
    const all = [this.lines, ...this.overlays.map((r) => r.lines)].flat().map(chartPoint);
    const agents = [...new Set(all.flatMap((p) => Object.keys(p.rewardByAgent)))].sort();
    const live = this.lines.length
      ? { id: "live", label: this.liveLabel, lines: this.lines }
      : null;
    for (const c of this.charts) c.update(live, this.overlays, agents, this.options, this.total);
  }
}
