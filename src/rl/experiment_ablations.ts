// The paper's Plan-Path ablations that play a team from checkpoints it was not trained as: the L2
// run's two role adapters swapped (`ablation`), and each role's adapter taken from the
// single-agent run in which it worked alone (`sa_team`). Pure functions on loaded checkpoints;
// src/cli/experiment.ts loads, evaluates and records them.

import type { LoadedCheckpoint } from "../train/checkpoint.ts";
import type { RunConfig } from "./config.ts";
import { buildPolicyMap, policyMapFor } from "./policy_map.ts";

/**
 * The L2 team's checkpoint from single-agent runs (the paper's "trained in SA, evaluated in MAS"
 * ablation): each role's adapter is the L0 run's in which that role worked alone. `byRole` maps
 * every agent of the team to its L0 run's checkpoint; `cfg` is the team's L2 config.
 */
export function teamOfSoloRuns(
  byRole: Readonly<Record<string, LoadedCheckpoint>>,
  cfg: RunConfig,
): LoadedCheckpoint {
  const map = policyMapFor(cfg);
  if (map.level !== "L2" || map.trainers.length !== 1) {
    throw new RangeError(`a team of single-agent adapters is an L2 team (got ${map.level})`);
  }
  const [t] = map.trainers;
  const solo = buildPolicyMap("L0", "lora", ["x"]).trainers[0];
  const key = `${solo.name}.${solo.adapters[0]}`;
  const adapters: Record<string, LoadedCheckpoint["adapters"][string]> = {};
  for (const role of t.adapters) {
    const ck = byRole[role];
    if (!ck?.adapters[key]) {
      throw new RangeError(
        `no single-agent LoRA checkpoint for role "${role}" (have ${
          Object.keys(byRole).join(", ") || "none"
        }; each needs adapter "${key}")`,
      );
    }
    adapters[`${t.name}.${role}`] = ck.adapters[key];
  }
  const first = byRole[t.adapters[0]];
  return { state: first.state, adapters, models: {}, optimizers: {}, valueHeads: {} };
}

/** A checkpoint with two role adapters exchanged (the paper's "role policies swapped" ablation). */
export function swapRoleAdapters(ck: LoadedCheckpoint, cfg: RunConfig): LoadedCheckpoint {
  const map = policyMapFor(cfg);
  if (map.level !== "L2" || map.trainers.length !== 1 || map.trainers[0].adapters.length !== 2) {
    throw new RangeError(
      `the swap ablation needs an L2 run with exactly two role adapters (got ${map.level}, ${
        map.trainers.map((t) => t.adapters.join("+")).join(", ")
      })`,
    );
  }
  const [t] = map.trainers, [a, b] = t.adapters;
  const adapters = {
    ...ck.adapters,
    [`${t.name}.${a}`]: ck.adapters[`${t.name}.${b}`],
    [`${t.name}.${b}`]: ck.adapters[`${t.name}.${a}`],
  };
  return { ...ck, adapters };
}
