// `experiment merge`: several paper-table invocations (seeds run apart with --first-seed, on
// other machines or side by side) as one, and one invocation narrowed to some of its methods.

import {
  BASELINE_OF,
  type MethodId,
  type RunResult,
  type SweepRecord,
  withStepZero,
} from "./experiment.ts";

/** What `experiment merge` reads of one invocation's results.json. */
export interface SavedExperiment {
  tasks: string[];
  steps: number;
  evalEvery?: number | null;
  results: RunResult[];
  sweeps?: SweepRecord[];
  notes?: string[];
}

/** Two invocations that cannot be merged: a (task, method, seed) measured twice, or different budgets. */
export class ExperimentMergeError extends Error {
  override name = "ExperimentMergeError";
}

/**
 * One invocation narrowed to some of its methods (`experiment merge --from DIR:m1+m2`): their
 * runs and sweeps only, so that a method measured again elsewhere (e.g. with its lr swept) can
 * replace this invocation's. A method that did not run there is an ExperimentMergeError.
 */
export function keepMethods(
  saved: SavedExperiment,
  methods: readonly string[],
  source: string,
): SavedExperiment {
  const ran = [...new Set(saved.results.map((r) => r.method as string))];
  for (const m of methods) {
    if (!ran.includes(m)) {
      throw new ExperimentMergeError(
        `${source}: ${m} did not run there; these did: ${ran.join(", ")}`,
      );
    }
  }
  return {
    ...saved,
    results: saved.results.filter((r) => methods.includes(r.method)),
    sweeps: saved.sweeps?.filter((w) => methods.includes(w.method)),
  };
}

/**
 * Several invocations of one experiment (e.g. seeds run apart with --first-seed, on other
 * machines or side by side) as one: their results, sweeps and notes together. Refuses a
 * (task, method, seed) measured twice and invocations with different RL steps or validation
 * intervals (their runs are not the same budget); `sources` names each one in errors. A trained
 * run's curve gets its step 0 from its untrained baseline of the same seed where that ran in
 * another invocation.
 */
export function mergeExperiments(
  saved: readonly SavedExperiment[],
  sources: readonly string[],
): SavedExperiment {
  if (!saved.length) {
    throw new ExperimentMergeError("nothing to merge: name at least one results.json");
  }
  const [first] = saved;
  const seen = new Map<string, string>();
  saved.forEach((s, i) => {
    if (s.steps !== first.steps) {
      throw new ExperimentMergeError(
        `${sources[i]}: ${s.steps} RL steps, ${
          sources[0]
        }: ${first.steps}; merge only runs of the same budget`,
      );
    }
    if ((s.evalEvery ?? null) !== (first.evalEvery ?? null)) {
      throw new ExperimentMergeError(
        `${sources[i]}: evalEvery ${s.evalEvery ?? "none"}, ${sources[0]}: ${
          first.evalEvery ?? "none"
        }; the curves would not line up`,
      );
    }
    for (const r of s.results) {
      const key = `${r.task} ${r.method} seed ${r.seed}`;
      const other = seen.get(key);
      if (other !== undefined) {
        throw new ExperimentMergeError(
          `${key} is in both ${other} and ${sources[i]}; leave one out`,
        );
      }
      seen.set(key, sources[i]);
    }
  });
  const tasks = [...new Set(saved.flatMap((s) => s.tasks))];
  const all = saved.flatMap((s) => s.results);
  // A trained run whose untrained baseline ran in another invocation gets its step 0 here.
  const results = all.map((r) => {
    const base = BASELINE_OF[r.method as MethodId];
    if (!r.curve || !base) return r;
    return {
      ...r,
      curve: withStepZero(
        r.curve,
        all.find((b) => b.task === r.task && b.method === base && b.seed === r.seed),
      ),
    };
  });
  const sweeps = saved.flatMap((s) => s.sweeps ?? []);
  const notes = [...new Set(saved.flatMap((s) => s.notes ?? []))];
  return { tasks, steps: first.steps, evalEvery: first.evalEvery ?? null, results, sweeps, notes };
}
