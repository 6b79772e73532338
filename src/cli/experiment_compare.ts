// `deno task experiment compare --from DIR --a METHOD --b METHOD [--tasks a,b] [--json]`: two
// methods of a paper-table output folder (one invocation's or a merged one's results.json) side
// by side, per seed and pooled, with exact McNemar tests on the per-task held-out outcomes
// (src/rl/experiment_compare.ts). Also the reading of results.json that merge shares.

import { defineCli, UsageError } from "./cli_args.ts";
import { joinPath } from "../io/deno_files.ts";
import type { SavedExperiment } from "../rl/experiment_merge.ts";
import {
  compareMethods,
  comparisonTable,
  ExperimentCompareError,
  type MethodComparison,
  resultMethod,
} from "../rl/experiment_compare.ts";

export const COMPARE_CLI = defineCli({
  command: "npx deno task experiment compare",
  summary:
    "Two methods of a paper-table output folder side by side: each seed's held-out success, the paired test of its per-task outcomes (seed s against the other method's seed s, or its first seed), and all seeds pooled; for pairs the table does not show (L1 against PPO, L2 against L3, ...).",
  flags: {
    from: {
      type: "string",
      required: true,
      metavar: "DIR",
      help: "a paper-table or merge output folder (its results.json)",
    },
    a: {
      type: "string",
      required: true,
      metavar: "METHOD",
      help:
        "the first method (single, single_grpo, mas, mas_l1, mas_l2, mas_l3, mas_l1_ppo, ..., ablation, sa_team; results.json's names, e.g. ablation_swapped, work too)",
    },
    b: {
      type: "string",
      required: true,
      metavar: "METHOD",
      help: "the method it is tested against",
    },
    tasks: {
      type: "string",
      metavar: "a,b",
      help: "tasks to compare on (default: every task of the folder)",
    },
    json: {
      type: "boolean",
      help: "last stdout line: [{task, a, b, perSeed, pooled, meanA, meanB}] as JSON",
    },
  },
});

/** A paper-table output folder's results.json; a folder without one is a UsageError. */
export async function readSaved(
  dir: string,
  command: string,
): Promise<SavedExperiment & { spec?: string }> {
  const file = joinPath(dir, "results.json");
  try {
    return JSON.parse(await Deno.readTextFile(file));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new UsageError(
        `${command}: ${file} is not there; --from takes paper-table output folders`,
      );
    }
    throw e;
  }
}

export async function compareCommand(
  args: { from: string; a: string; b: string; tasks?: string; json?: boolean },
) {
  const a = resultMethod(args.a), b = resultMethod(args.b);
  if (a === b) throw new UsageError(`compare: --a and --b are both ${a}; name two methods`);
  const saved = await readSaved(args.from, "compare");
  const tasks = args.tasks
    ? args.tasks.split(",").map((t) => t.trim()).filter(Boolean)
    : saved.tasks;
  for (const t of tasks) {
    if (!saved.tasks.includes(t)) {
      throw new UsageError(
        `compare: --tasks: ${t} is not in ${args.from}; it has ${saved.tasks.join(", ")}`,
      );
    }
  }
  let cs: MethodComparison[];
  try {
    cs = tasks.map((t) => compareMethods(saved.results, t, a, b));
  } catch (e) {
    if (e instanceof ExperimentCompareError) throw new UsageError(`compare: ${e.message}`);
    throw e;
  }
  console.log(
    `${a} against ${b} in ${args.from}: held-out success per seed; the paired tests count the tasks only one of the two solved (${a} only : ${b} only).\n`,
  );
  console.log(comparisonTable(cs));
  if (args.json) console.log(JSON.stringify(cs));
}
