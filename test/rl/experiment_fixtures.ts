// A paper-table run result with given per-task held-out outcomes, for the experiment tests.

import type { RunResult } from "../../src/rl/experiment.ts";

/** A run of `method` on plan_path (or extra.task) whose held-out outcomes are `successes`. */
export const result = (
  method: RunResult["method"],
  seed: number,
  successes: number[],
  extra: Partial<RunResult> = {},
): RunResult => {
  const successRate = successes.reduce((a, b) => a + b, 0) / successes.length;
  return {
    task: "plan_path",
    method,
    seed,
    successRate,
    samples: 0,
    steps: 1,
    runDir: null,
    eval: {
      episodes: successes.length,
      successRate,
      avgTurns: 1,
      rewardByAgent: {},
      temperature: 0,
      split: "test",
      successes,
      clippedPrompts: 0,
    },
    ...extra,
  };
};
