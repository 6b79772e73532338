// Live charts of a run with uPlot: reward by agent, success (train and held-out), loss, KL,
// entropy, clip fraction, tokens/s. One point per step from metrics_export's chartPoint; the
// held-out series has points only where a validation ran (step 0 and every eval.everySteps).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { type ChartPoint, chartPoint } from "../../src/browser/metrics_export.ts";
import type { StepMetrics } from "../../src/rl/session.ts";

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];

interface SeriesSpec {
  label: string;
  value: (p: ChartPoint) => number | null;
  /** Draw points only (sparse series such as held-out success). */
  points?: boolean;
}

interface ChartSpec {
  id: string;
  title: string;
  series: (agents: string[]) => SeriesSpec[];
  yRange?: [number, number];
}

const SPECS: ChartSpec[] = [
  {
    id: "reward", title: "Reward by agent (mean over candidates)",
    series: (agents) => agents.map((a) => ({ label: a, value: (p) => p.rewardByAgent[a] ?? null })),
  },
  {
    id: "success", title: "Success: train rollouts and held-out validation", yRange: [0, 1],
    series: () => [
      { label: "train", value: (p) => p.trainSuccess },
      { label: "held-out", value: (p) => p.evalSuccess, points: true },
    ],
  },
  {
    id: "loss", title: "Policy loss (PPO-clip, token-mean)",
    series: () => [{ label: "loss", value: (p) => p.loss }, { label: "pg loss", value: (p) => p.pgLoss }],
  },
  {
    id: "kl", title: "KL to the sampling policy (k1) and to the reference (k3)",
    series: () => [{ label: "approx KL", value: (p) => p.approxKl }, { label: "k3 KL", value: (p) => p.klLoss }],
  },
  { id: "entropy", title: "Entropy (nats / token)", series: () => [{ label: "entropy", value: (p) => p.entropy }] },
  { id: "clip", title: "Clip fraction", yRange: [0, 1], series: () => [{ label: "clip frac", value: (p) => p.clipFrac }] },
  {
    id: "tps", title: "Tokens / s",
    series: () => [{ label: "rollout", value: (p) => p.rolloutTokensPerS }, { label: "update", value: (p) => p.updateTokensPerS }],
  },
];

/** Tick labels that stay readable for tiny values (KL ~1e-4) and large ones (tokens/s). */
function tick(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1000 ? v.toFixed(0) : a >= 1 ? String(+v.toPrecision(3)) : a >= 1e-3 ? String(+v.toPrecision(2)) : v.toExponential(0);
}

class Chart {
  private plot: uPlot | null = null;
  private agents: string[] = [];
  private readonly box: HTMLElement;
  points = 0;

  constructor(readonly spec: ChartSpec, parent: HTMLElement) {
    this.box = document.createElement("div");
    this.box.className = "chart";
    this.box.dataset.chart = spec.id;
    parent.append(this.box);
  }

  private width() {
    return Math.max(240, this.box.clientWidth || 320);
  }

  update(points: ChartPoint[], agents: string[]) {
    const series = this.spec.series(agents);
    const xs = points.map((p) => p.step);
    const ys = series.map((s) => points.map((p) => s.value(p)));
    this.points = ys.reduce((n, y) => n + y.filter((v) => v !== null).length, 0);
    this.box.dataset.points = String(this.points);
    const data = [xs, ...ys] as uPlot.AlignedData;
    if (!this.plot || agents.join() !== this.agents.join()) {
      this.plot?.destroy();
      this.agents = agents;
      this.plot = new uPlot({
        title: this.spec.title,
        width: this.width(),
        height: 180,
        scales: { x: { time: false }, ...(this.spec.yRange ? { y: { range: this.spec.yRange } } : {}) },
        axes: [
          { label: "step", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
          { size: 56, values: (_u: uPlot, vals: number[]) => vals.map(tick) },
        ],
        series: [
          { label: "step" },
          ...series.map((s, i) => ({
            label: s.label,
            stroke: COLORS[i % COLORS.length],
            width: 2,
            spanGaps: true,
            points: { show: true, size: s.points ? 8 : 4 },
            ...(s.points ? { paths: () => null } : {}),
          })),
        ],
      }, data, this.box);
    } else this.plot.setData(data);
  }

  resize() {
    this.plot?.setSize({ width: this.width(), height: 180 });
  }
}

export class Dashboard {
  private lines: StepMetrics[] = [];
  private readonly charts: Chart[];

  constructor(parent: HTMLElement) {
    this.charts = SPECS.map((s) => new Chart(s, parent));
    new ResizeObserver(() => this.charts.forEach((c) => c.resize())).observe(parent);
  }

  /** Replaces the data (a new or resumed run). */
  reset(lines: StepMetrics[]) {
    this.lines = [...lines];
    this.render();
  }

  add(m: StepMetrics) {
    this.lines = [...this.lines.filter((l) => l.step < m.step), m];
    this.render();
  }

  get metrics(): readonly StepMetrics[] {
    return this.lines;
  }

  /** Points drawn per chart (for the page's tests). */
  counts(): Record<string, number> {
    return Object.fromEntries(this.charts.map((c) => [c.spec.id, c.points]));
  }

  private render() {
    const points = this.lines.map(chartPoint);
    const agents = [...new Set(points.flatMap((p) => Object.keys(p.rewardByAgent)))].sort();
    for (const c of this.charts) c.update(points, agents);
  }
}
