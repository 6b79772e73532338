// The paper table's plots (deno task experiment paper-table writes them beside table.md): per task,
// held-out success vs RL step, one line per method (mean over seeds, a band of ± one standard
// deviation; the untrained methods as flat dashed references), and each trained method's training
// reward by agent vs step. Drawn with Vega-Lite and rendered to SVG headlessly by Vega (no browser,
// no canvas: renderer "none"). The data come from results.json's runs (RunResult.curve and
// RunResult.rewardCurve, src/rl/experiment.ts).

import * as vega from "vega";
import * as vegaLite from "vega-lite";
import { METHOD_SPECS, type MethodId, METHODS, type RunResult } from "./experiment.ts";

/** One point of a success curve: a method's mean (and ± std band, clipped to 0..100) at a step, in %. */
export interface CurveRow {
  method: string;
  kind: "trained" | "untrained";
  step: number;
  success: number;
  lo: number;
  hi: number;
  seeds: number;
}

/** One point of a reward curve: a trained method's agent's training reward at a step, mean over seeds. */
export interface RewardRow {
  method: string;
  agent: string;
  step: number;
  reward: number;
}

function meanStd(xs: readonly number[]): { mean: number; std: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const std = xs.length > 1
    ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1))
    : 0;
  return { mean, std };
}

/** A curve point; untrained references get no band (their spread is in table.md). */
function row(
  method: MethodId,
  kind: CurveRow["kind"],
  step: number,
  xs: readonly number[],
): CurveRow {
  const { mean, std: s } = meanStd(xs.map((x) => x * 100)), std = kind === "trained" ? s : 0;
  return {
    method: METHOD_SPECS[method].label,
    kind,
    step,
    success: mean,
    lo: Math.max(0, mean - std),
    hi: Math.min(100, mean + std),
    seeds: xs.length,
  };
}

const runsOf = (results: readonly RunResult[], task: string, method: MethodId) =>
  results.filter((r) => r.task === task && r.method === method);

/**
 * The success curves of a task: each trained method's mean over seeds at every step any seed
 * validated (a seed without that step is left out of its mean), and each untrained method's
 * result as a flat line from step 0 to the last step. Empty where no trained run has a curve.
 */
export function successCurveRows(results: readonly RunResult[], task: string): CurveRow[] {
  const trained = METHODS.filter((m) =>
    METHOD_SPECS[m].train && runsOf(results, task, m).some((r) => r.curve?.length)
  );
  if (!trained.length) return [];
  const rows: CurveRow[] = [];
  for (const m of trained) {
    const curves = runsOf(results, task, m).map((r) => r.curve ?? []);
    const steps = [...new Set(curves.flat().map((p) => p.step))].sort((a, b) => a - b);
    for (const step of steps) {
      rows.push(row(
        m,
        "trained",
        step,
        curves.flatMap((c) => c.filter((p) => p.step === step).map((p) => p.successRate)),
      ));
    }
  }
  const last = Math.max(...rows.map((r) => r.step));
  for (const m of METHODS.filter((m) => !METHOD_SPECS[m].train)) {
    const xs = runsOf(results, task, m).map((r) => r.successRate);
    if (xs.length) rows.push(row(m, "untrained", 0, xs), row(m, "untrained", last, xs));
  }
  return rows;
}

/** Each trained method's agents' training reward per step (mean over seeds that logged the step). */
export function rewardCurveRows(results: readonly RunResult[], task: string): RewardRow[] {
  const rows: RewardRow[] = [];
  for (const m of METHODS.filter((m) => METHOD_SPECS[m].train)) {
    const sums = new Map<string, { agent: string; step: number; xs: number[] }>();
    for (const p of runsOf(results, task, m).flatMap((r) => r.rewardCurve ?? [])) {
      for (const [agent, v] of Object.entries(p.byAgent)) {
        const k = `${agent}|${p.step}`;
        if (!sums.has(k)) sums.set(k, { agent, step: p.step, xs: [] });
        sums.get(k)!.xs.push(v);
      }
    }
    const label = METHOD_SPECS[m].label;
    for (
      const s of [...sums.values()].sort((a, b) =>
        a.agent.localeCompare(b.agent) || a.step - b.step
      )
    ) {
      rows.push({ method: label, agent: s.agent, step: s.step, reward: meanStd(s.xs).mean });
    }
  }
  return rows;
}

const STEP_AXIS = {
  field: "step",
  type: "quantitative",
  title: "RL step",
  axis: { tickMinStep: 1 },
} as const;

/** Held-out success (%) vs RL step, a line and a ± std band per method; untrained methods dashed. */
export function successCurveSpec(task: string, rows: readonly CurveRow[]): vegaLite.TopLevelSpec {
  const scale = {
    domain: METHODS.map((m) => METHOD_SPECS[m].label).filter((l) =>
      rows.some((r) => r.method === l)
    ),
  };
  const color = {
    field: "method",
    type: "nominal",
    title: "method",
    scale,
    legend: { labelLimit: 400, symbolType: "stroke" },
  } as const;
  const seeds = Math.max(0, ...rows.map((r) => r.seeds));
  return {
    title:
      `${task}: held-out success vs RL step (mean ± std over up to ${seeds} seed(s); dashed: untrained)`,
    width: 420,
    height: 260,
    background: "white",
    data: { values: rows.map((r) => ({ ...r })) },
    layer: [
      {
        mark: { type: "area", fillOpacity: 0.15 },
        encoding: {
          x: STEP_AXIS,
          y: {
            field: "lo",
            type: "quantitative",
            title: "held-out success (%)",
            scale: { domain: [0, 100] },
          },
          y2: { field: "hi" },
          color,
        },
      },
      {
        mark: { type: "line", point: true },
        encoding: {
          x: STEP_AXIS,
          y: { field: "success", type: "quantitative" },
          color,
          strokeDash: {
            field: "kind",
            type: "nominal",
            title: null,
            scale: { domain: ["trained", "untrained"] },
            legend: null,
          },
        },
      },
    ],
  };
}

/** Training reward by agent vs RL step, one panel per trained method. */
export function rewardCurveSpec(task: string, rows: readonly RewardRow[]): vegaLite.TopLevelSpec {
  return {
    title: `${task}: training reward by agent vs RL step (mean over turns and seeds)`,
    background: "white",
    data: { values: rows.map((r) => ({ ...r })) },
    facet: {
      column: {
        field: "method",
        type: "nominal",
        title: null,
        sort: [...new Set(rows.map((r) => r.method))],
      },
    },
    spec: {
      width: 220,
      height: 200,
      mark: { type: "line", point: true },
      encoding: {
        x: STEP_AXIS,
        y: { field: "reward", type: "quantitative", title: "training reward" },
        color: { field: "agent", type: "nominal", title: "agent" },
      },
    },
  };
}

/** A Vega-Lite spec rendered to an SVG document, headless (no DOM, no canvas). */
export async function renderSvg(spec: vegaLite.TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** A task's plots as files to write: curves_<task>.svg and rewards_<task>.svg (each where it has data). */
export async function taskPlots(
  results: readonly RunResult[],
  task: string,
): Promise<{ name: string; svg: string }[]> {
  const out: { name: string; svg: string }[] = [];
  const curves = successCurveRows(results, task);
  if (curves.length) {
    out.push({ name: `curves_${task}.svg`, svg: await renderSvg(successCurveSpec(task, curves)) });
  }
  const rewards = rewardCurveRows(results, task);
  if (rewards.length) {
    out.push({ name: `rewards_${task}.svg`, svg: await renderSvg(rewardCurveSpec(task, rewards)) });
  }
  return out;
}
