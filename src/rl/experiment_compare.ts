// Any two methods of a paper-table experiment side by side (`experiment compare`): each seed's
// held-out success and the paired test of that seed's per-task outcomes, and all seeds pooled —
// the same pairing as the table's columns against single agent + GRPO and the untrained team
// (seed s against the comparator's seed s, or its first seed where it has no seed s), for pairs
// the table does not show (AT-GRPO L1 against PPO, L2 against L3, ...). Pure functions, no GPU.

import { Rng } from "../envs/rng.ts";
import type { RunResult } from "./experiment.ts";
import { type PairedTest, pairedTest } from "./experiment_stats.ts";

/** A comparison that cannot be made: a method that did not run on the task, or other tasks. */
export class ExperimentCompareError extends Error {
  override name = "ExperimentCompareError";
}

/**
 * Results derived from other methods' runs of the same seed, with no training of their own, by
 * their CLI names: `ablation` (mas_l2's role adapters exchanged) and `sa_team` (single_grpo's and
 * single_tool_grpo's adapters as the L2 team's plan and tool adapters).
 */
export const DERIVED = {
  ablation: "ablation_swapped",
  sa_team: "ablation_sa_team",
} as const;
export type DerivedMethod = typeof DERIVED[keyof typeof DERIVED];

/** The method id results.json uses for a CLI name (`ablation` is stored as `ablation_swapped`). */
export const resultMethod = (name: string): string =>
  (DERIVED as Record<string, string>)[name] ?? name;

/** Runs in seed order. */
export const bySeed = (rs: readonly RunResult[]): RunResult[] =>
  [...rs].sort((a, b) => a.seed - b.seed);

/**
 * Each of `rs`'s runs with the comparator run it pairs with: the comparator's run of the same
 * seed, or its first seed's where it has no such seed (an untrained method evaluated once).
 */
export function pairSeeds(
  rs: readonly RunResult[],
  cs: readonly RunResult[],
): { run: RunResult; other: RunResult }[] {
  const first = bySeed(cs)[0];
  return bySeed(rs).map((run) => ({ run, other: cs.find((c) => c.seed === run.seed) ?? first }));
}

export interface SeedComparison {
  seed: number;
  /** The comparator's seed this seed paired with. */
  otherSeed: number;
  successA: number;
  successB: number;
  test: PairedTest;
}

export interface MethodComparison {
  task: string;
  a: string;
  b: string;
  perSeed: SeedComparison[];
  /** Every (seed, task) pair pooled. */
  pooled: PairedTest;
  /** Each method's success averaged over the pairs (diff.mean is meanA − meanB). */
  meanA: number;
  meanB: number;
  /**
   * meanA − meanB over the paired runs, with a 95% percentile interval from a two-level
   * bootstrap (seeds with replacement, then each drawn seed's tasks with replacement), so the
   * spread between seeds counts, which the pooled McNemar test, treating every (seed, task) pair
   * as independent, leaves out. With few seeds the interval is wide: that is the point.
   */
  diff: BootstrapDiff;
}

/** A mean difference with its bootstrap interval (bootstrapDiff). */
export interface BootstrapDiff {
  mean: number;
  lo: number;
  hi: number;
  resamples: number;
}

/** Per task, run's outcome minus other's (−1, 0 or 1), in the held-out tasks' order. */
export const pairDifferences = (run: RunResult, other: RunResult): number[] =>
  run.eval.successes.map((x, t) => x - other.eval.successes[t]);

/** Bootstrap resamples of `diff` (seeded: the same results give the same interval). */
export const BOOTSTRAP_RESAMPLES = 10000;

/**
 * The two-level bootstrap of the mean paired difference: `units` are the pairing units (a seed
 * of each method), each a list of per-task differences a − b in {−1, 0, 1}.
 */
export function bootstrapDiff(
  units: readonly (readonly number[])[],
  resamples = BOOTSTRAP_RESAMPLES,
  rng = new Rng(0x5eed),
): BootstrapDiff {
  if (!units.length || units.some((u) => !u.length)) {
    throw new RangeError("bootstrapDiff: every pairing unit needs at least one task");
  }
  const meanOf = (u: readonly number[]) => u.reduce((a, b) => a + b, 0) / u.length;
  const mean = units.reduce((a, u) => a + meanOf(u), 0) / units.length;
  const stats = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let total = 0;
    for (let i = 0; i < units.length; i++) {
      const u = units[rng.int(units.length)];
      let sum = 0;
      for (let t = 0; t < u.length; t++) sum += u[rng.int(u.length)];
      total += sum / u.length;
    }
    stats[r] = total / units.length;
  }
  stats.sort();
  const at = (q: number) => stats[Math.min(resamples - 1, Math.floor(q * resamples))];
  return { mean, lo: at(0.025), hi: at(0.975), resamples };
}

/** Method `a` against method `b` on `task`: per seed and pooled exact McNemar tests. */
export function compareMethods(
  results: readonly RunResult[],
  task: string,
  a: string,
  b: string,
): MethodComparison {
  const of = (m: string) => {
    const rs = results.filter((r) => r.task === task && r.method === m);
    if (!rs.length) {
      const ran = [...new Set(results.filter((r) => r.task === task).map((r) => r.method))];
      throw new ExperimentCompareError(
        `${m} did not run on ${task}; these did: ${ran.join(", ") || "none"}`,
      );
    }
    return rs;
  };
  const pairs = pairSeeds(of(a), of(b));
  for (const { run, other } of pairs) {
    if (run.eval.successes.length !== other.eval.successes.length) {
      throw new ExperimentCompareError(
        `${task}: ${a} seed ${run.seed} played ${run.eval.successes.length} held-out tasks, ${b} seed ${other.seed} ${other.eval.successes.length}; not the same tasks`,
      );
    }
  }
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  return {
    task,
    a,
    b,
    perSeed: pairs.map(({ run, other }) => ({
      seed: run.seed,
      otherSeed: other.seed,
      successA: run.successRate,
      successB: other.successRate,
      test: pairedTest([run.eval.successes], [other.eval.successes]),
    })),
    pooled: pairedTest(
      pairs.map((p) => p.run.eval.successes),
      pairs.map((p) => p.other.eval.successes),
    ),
    meanA: mean(pairs.map((p) => p.run.successRate)),
    meanB: mean(pairs.map((p) => p.other.successRate)),
    diff: bootstrapDiff(pairs.map(({ run, other }) => pairDifferences(run, other))),
  };
}

const pct = (x: number) => (x * 100).toFixed(1);
const pText = (p: number) => (p < 0.001 ? "<0.001" : p.toFixed(3));
/** A difference of success rates in signed percentage points: "+4.7", "−0.5". */
export const signedPoints = (x: number): string =>
  `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}`;

/** Comparisons of one pair of methods as a markdown table: a row per seed, then each task's pooled row. */
export function comparisonTable(cs: readonly MethodComparison[]): string {
  if (!cs.length) return "";
  const { a, b } = cs[0];
  if (cs.some((c) => c.a !== a || c.b !== b)) {
    throw new RangeError("comparisonTable: one pair of methods a table (its columns name them)");
  }
  const rows = cs.flatMap((c) => [
    ...c.perSeed.map((s) =>
      `| ${c.task} | s${s.seed}${s.otherSeed === s.seed ? "" : ` (vs s${s.otherSeed})`} | ${
        pct(s.successA)
      } | ${pct(s.successB)} | ${s.test.b}:${s.test.c} | ${pText(s.test.p)} |`
    ),
    `| ${c.task} | pooled | ${pct(c.meanA)} (mean) | ${
      pct(c.meanB)
    } (mean) | ${c.pooled.b}:${c.pooled.c} | ${pText(c.pooled.p)} |`,
  ]);
  const diffs = cs.map((c) =>
    `| ${c.task} | ${signedPoints(c.diff.mean)} | [${signedPoints(c.diff.lo)}, ${
      signedPoints(c.diff.hi)
    }] | ${c.perSeed.length} |`
  );
  return [
    `| task | seed | ${a} % | ${b} % | ${a} only : ${b} only | p (exact McNemar) |`,
    "|---|---|---|---|---|---|",
    ...rows,
    "",
    `${a} − ${b}, points of held-out success, with a 95% interval from a bootstrap over seeds and then tasks (${
      cs[0].diff.resamples
    } resamples; it counts the spread between seeds, which the pooled test does not):`,
    "",
    "| task | difference | 95% interval | seeds |",
    "|---|---|---|---|",
    ...diffs,
  ].join("\n");
}
