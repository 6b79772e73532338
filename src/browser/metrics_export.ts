// A run's metrics lines (session.ts StepMetrics) as the series the dashboard charts, and as
// JSONL or CSV for download. Host-neutral.
//
// From one line: reward per agent (mean over the agent's turns), train success, held-out success
// (lines with `eval`), and the PPO update's loss, KL (k1 estimate, and k3 when a KL term is on),
// entropy and clip fraction averaged over the step's updates, weighted by tokens, and the
// rollout and update throughputs.

import type { StepMetrics } from "../rl/session.ts";

/** One step's values for the charts; null where the line has none (e.g. step 0 has no loss). */
export interface ChartPoint {
  step: number;
  rewardByAgent: Record<string, number>;
  reward: number | null;
  trainSuccess: number | null;
  evalSuccess: number | null;
  loss: number | null;
  pgLoss: number | null;
  approxKl: number | null;
  klLoss: number | null;
  entropy: number | null;
  clipFrac: number | null;
  gradNorm: number | null;
  rolloutTokensPerS: number | null;
  updateTokensPerS: number | null;
}

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** Token-weighted mean of a numeric field over a step's updates. */
function updateMean(updates: unknown, key: string): number | null {
  if (!Array.isArray(updates) || !updates.length) return null;
  let s = 0, w = 0;
  for (const u of updates as Record<string, unknown>[]) {
    const v = num(u[key]);
    if (v === null) continue;
    const t = num(u.tokens) ?? 1;
    s += v * t;
    w += t;
  }
  return w > 0 ? s / w : null;
}

export function chartPoint(m: StepMetrics): ChartPoint {
  const byAgent: Record<string, number> = {};
  const rba = m.rewardByAgent as Record<string, Record<string, number>> | undefined;
  for (const [agent, byTurn] of Object.entries(rba ?? {})) {
    const vs = Object.values(byTurn).filter((v) => typeof v === "number");
    if (vs.length) byAgent[agent] = vs.reduce((a, b) => a + b, 0) / vs.length;
  }
  const ev = m.eval as { successRate?: number } | undefined;
  return {
    step: m.step,
    rewardByAgent: byAgent,
    reward: num(m.reward),
    trainSuccess: num(m.trainSuccess),
    evalSuccess: num(ev?.successRate),
    loss: updateMean(m.updates, "loss"),
    pgLoss: updateMean(m.updates, "pgLoss"),
    approxKl: updateMean(m.updates, "approxKl"),
    klLoss: updateMean(m.updates, "klLoss"),
    entropy: updateMean(m.updates, "entropy"),
    clipFrac: updateMean(m.updates, "clipFrac"),
    gradNorm: updateMean(m.updates, "gradNorm"),
    rolloutTokensPerS: num(m.rolloutTokensPerS),
    updateTokensPerS: num(m.updateTokensPerS),
  };
}

/** The metrics as JSON Lines, exactly as stored (one object per step). */
export function metricsToJsonl(lines: readonly StepMetrics[]): string {
  return lines.map((l) => JSON.stringify(l)).join("\n") + (lines.length ? "\n" : "");
}

/** Scalar leaves of a line as dotted columns; arrays (updates, eval transcripts) are left out. */
export function flattenMetric(
  m: unknown,
  prefix = "",
  out: Record<string, string | number | boolean | null> = {},
) {
  if (m === null || typeof m !== "object" || Array.isArray(m)) return out;
  for (const [k, v] of Object.entries(m as Record<string, unknown>)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v === null || typeof v === "number" || typeof v === "string" || typeof v === "boolean") {
      out[key] = v;
    } else if (typeof v === "object" && !Array.isArray(v)) flattenMetric(v, key, out);
  }
  return out;
}

function csvCell(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return "";
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/**
 * The metrics as CSV: one row per step, a column per scalar field (dotted paths, in order of
 * first appearance) plus the update averages the charts use (update.loss, update.approxKl, ...).
 */
export function metricsToCsv(lines: readonly StepMetrics[]): string {
  const rows = lines.map((l) => {
    const p = chartPoint(l);
    const flat = flattenMetric(l);
    for (
      const k of [
        "loss",
        "pgLoss",
        "approxKl",
        "klLoss",
        "entropy",
        "clipFrac",
        "gradNorm",
      ] as const
    ) {
      if (p[k] !== null) flat[`update.${k}`] = p[k];
    }
    return flat;
  });
  const cols: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    for (const k of Object.keys(r)) if (!seen.has(k)) [seen.add(k), cols.push(k)];
  }
  return [cols.map(csvCell).join(","), ...rows.map((r) => cols.map((c) => csvCell(r[c])).join(","))]
    .join("\n") + "\n";
}

/**
 * Exponential moving average with TensorBoard's debiasing (the first values are not pulled
 * towards 0); `w` is the weight of the past, 0 = off. Nulls stay null and do not count.
 */
export function smooth(ys: readonly (number | null)[], w: number): (number | null)[] {
  if (w <= 0) return [...ys];
  let acc = 0, n = 0;
  return ys.map((v) => {
    if (v === null) return null;
    acc = acc * w + (1 - w) * v;
    n++;
    return acc / (1 - w ** n);
  });
}
