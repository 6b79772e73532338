// A metrics.jsonl line as flat scalar tags for TensorBoard and Weights & Biases: numbers only
// (booleans, strings, task lists and transcripts are left out), nested objects joined with "/".
//
//   reward/mean, reward/<agent>, reward/<agent>/turn<t>   the step's rollout rewards
//   update/<field>, update/<trainer>/<field>              PPO updates: mean over the step's mini-batches
//   eval/<field>, eval/reward/<agent>                     a validation (step 0: before training)
//   seconds/<phase>                                       timings
//   train/critic/<trainer>/<field>                        PPO's critic (update.advantage "gae")
//   train/<field>                                         every other number of the line

import type { StepMetrics } from "./session.ts";

const isObj = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
const isNum = (x: unknown): x is number => typeof x === "number";
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Numbers of a nested object under `prefix`, objects joined with "/"; arrays and non-numbers skipped. */
function flattenInto(out: Record<string, number>, prefix: string, v: unknown) {
  if (isNum(v)) out[prefix] = v;
  else if (isObj(v)) {
    for (const [k, x] of Object.entries(v)) {
      flattenInto(out, `${prefix}/${k}`, x);
    }
  }
}

/** Mean of each numeric field over a list of update records. */
function meanFields(updates: readonly Record<string, unknown>[]): Record<string, number> {
  const cols = new Map<string, number[]>();
  for (const u of updates) {
    for (const [k, v] of Object.entries(u)) {
      if (isNum(v)) (cols.get(k) ?? cols.set(k, []).get(k)!).push(v);
    }
  }
  return Object.fromEntries([...cols].map(([k, xs]) => [k, mean(xs)]));
}

/** The scalars of one metrics line (its `step` is the x axis, not a scalar). */
export function metricScalars(m: StepMetrics): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, v] of Object.entries(m)) {
    if (key === "step") continue;
    if (key === "reward" && isNum(v)) out["reward/mean"] = v;
    else if (key === "rewardByAgent" && isObj(v)) {
      for (const [agent, byTurn] of Object.entries(v)) {
        if (!isObj(byTurn)) continue;
        const turns = Object.entries(byTurn).filter((e): e is [string, number] => isNum(e[1]));
        if (!turns.length) continue;
        // The agent's reward: the mean of its per-turn means (one turn: that turn's mean).
        out[`reward/${agent}`] = mean(turns.map(([, r]) => r));
        for (const [t, r] of turns) out[`reward/${agent}/turn${t}`] = r;
      }
    } else if (key === "updates" && Array.isArray(v)) {
      const ups = v.filter(isObj);
      if (!ups.length) continue;
      for (const [f, x] of Object.entries(meanFields(ups))) out[`update/${f}`] = x;
      const byTrainer = Map.groupBy(ups, (u) => String(u.trainer ?? "policy"));
      for (const [trainer, us] of byTrainer) {
        for (const [f, x] of Object.entries(meanFields(us))) out[`update/${trainer}/${f}`] = x;
      }
    } else if (key === "eval" && isObj(v)) {
      for (const [k, x] of Object.entries(v)) {
        if (k === "rewardByAgent") flattenInto(out, "eval/reward", x);
        else if (isNum(x)) out[`eval/${k}`] = x;
      }
    } else if (key === "seconds") flattenInto(out, "seconds", v);
    else flattenInto(out, `train/${key}`, v);
  }
  return out;
}
