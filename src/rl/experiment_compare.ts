// Any two methods of a paper-table experiment side by side (`experiment compare`): each seed's
// held-out success and the paired test of that seed's per-task outcomes, and all seeds pooled —
// the same pairing as the table's columns against single agent + GRPO and the untrained team
// (seed s against the comparator's seed s, or its first seed where it has no seed s), for pairs
// the table does not show (AT-GRPO L1 against PPO, L2 against L3, ...). Pure functions, no GPU.

import type { RunResult } from "./experiment.ts";
import { type PairedTest, pairedTest } from "./experiment_stats.ts";

/** A comparison that cannot be made: a method that did not run on the task, or other tasks. */
export class ExperimentCompareError extends Error {
  override name = "ExperimentCompareError";
}

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
  meanA: number;
  meanB: number;
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
    meanB: mean(of(b).map((r) => r.successRate)),
  };
}

const pct = (x: number) => (x * 100).toFixed(1);
const pText = (p: number) => (p < 0.001 ? "<0.001" : p.toFixed(3));

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
  return [
    `| task | seed | ${a} % | ${b} % | ${a} only : ${b} only | p (exact McNemar) |`,
    "|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}
