// `experiment compare` (any two methods per seed and pooled) and `experiment merge --from DIR:m1+m2`
// (one invocation's methods replaced by another's).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { usage } from "../../src/cli/cli_args.ts";
import { COMPARE_CLI } from "../../src/cli/experiment_compare.ts";
import { MERGE_CLI } from "../../src/cli/experiment.ts";
import { keepMethods, type SavedExperiment } from "../../src/rl/experiment_merge.ts";
import {
  bootstrapDiff,
  compareMethods,
  comparisonTable,
  pairSeeds,
} from "../../src/rl/experiment_compare.ts";
import { mcnemarExact } from "../../src/rl/experiment_stats.ts";
import { result } from "./experiment_fixtures.ts";

const rs = [
  // An untrained method evaluated once: every seed of the other pairs with its seed 0.
  result("mas", 0, [0, 1, 0, 1, 0, 0]),
  result("mas_l1", 0, [1, 1, 1, 1, 0, 0]),
  result("mas_l1", 1, [1, 1, 1, 1, 1, 1]),
  result("mas_l1_ppo", 0, [0, 1, 0, 1, 1, 1]),
  result("mas_l1_ppo", 1, [1, 0, 0, 0, 0, 0]),
  result("mas_l1", 0, [1, 1, 1], { task: "sokoban" }),
  result("mas_l1_ppo", 0, [1, 0, 1, 1], { task: "sokoban" }),
];

Deno.test("compareMethods: per seed against the same seed, pooled over every (seed, task) pair", () => {
  const c = compareMethods(rs, "plan_path", "mas_l1", "mas_l1_ppo");
  // s0: l1 only at tasks 0, 2; ppo only at 4, 5. s1: l1 only at 1..5.
  assertEquals(c.perSeed.map((s) => [s.seed, s.otherSeed, s.test.b, s.test.c, s.test.n]), [
    [0, 0, 2, 2, 6],
    [1, 1, 5, 0, 6],
  ]);
  assertEquals(c.perSeed[1].test.p, mcnemarExact(5, 0));
  assertEquals([c.pooled.b, c.pooled.c, c.pooled.n, c.pooled.p], [7, 2, 12, mcnemarExact(7, 2)]);
  assertEquals([c.meanA, c.meanB], [(4 / 6 + 1) / 2, (4 / 6 + 1 / 6) / 2]);
  assert(Math.abs(c.diff.mean - (c.meanA - c.meanB)) < 1e-12);
  // A comparator seed nothing pairs with is left out of its mean, as of the difference.
  const extra = compareMethods(
    [...rs, result("mas_l1_ppo", 2, [1, 1, 1, 1, 1, 1])],
    "plan_path",
    "mas_l1",
    "mas_l1_ppo",
  );
  assertEquals([extra.meanB, extra.diff.mean], [c.meanB, c.diff.mean]);
  assert(c.diff.lo <= c.diff.mean && c.diff.mean <= c.diff.hi, JSON.stringify(c.diff));
  // Against the untrained team (one seed): both seeds pair with its seed 0.
  const m = compareMethods(rs, "plan_path", "mas_l1", "mas");
  assertEquals(m.perSeed.map((s) => [s.seed, s.otherSeed, s.test.b, s.test.c]), [
    [0, 0, 2, 0],
    [1, 0, 4, 0],
  ]);
  assertEquals(
    pairSeeds(rs.filter((r) => r.method === "mas_l1" && r.task === "plan_path"), [rs[0]]).length,
    2,
  );
  const table = comparisonTable([c]);
  assert(
    table.startsWith("| task | seed | mas_l1 % | mas_l1_ppo % | mas_l1 only : mas_l1_ppo only |"),
  );
  assert(table.includes("| plan_path | s1 | 100.0 | 16.7 | 5:0 | 0.063 |"), table);
  assert(table.includes("| plan_path | pooled | 83.3 (mean) | 41.7 (mean) | 7:2 | 0.180 |"), table);
  assert(table.includes(`| plan_path | +41.7 | [`), table);
  const vsMas = comparisonTable([m]);
  assert(vsMas.includes("| plan_path | s1 (vs s0) | 100.0 | 33.3 | 4:0 | 0.125 |"), vsMas);
  assertThrows(() => comparisonTable([c, m]), "RangeError", "one pair of methods");
});

Deno.test("bootstrapDiff: seeds resampled, then tasks; the interval counts the spread between seeds", () => {
  // Every task +1 on every seed: no spread at all.
  assertEquals(bootstrapDiff([[1, 1, 1], [1, 1]], 500), { mean: 1, lo: 1, hi: 1, resamples: 500 });
  // One seed all +1, the other all 0: the mean is 0.5, but a resample that draws one seed twice
  // is 0 or 1, so the interval is the whole [0, 1]. Resampling tasks alone would give 0.5 ± 0.
  const split = bootstrapDiff([[1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0]], 2000);
  assertEquals([split.mean, split.lo, split.hi], [0.5, 0, 1]);
  // One seed of 1,000 tasks, 30% of them +1: the normal interval 0.3 ± 1.96·√(0.21/1000) ≈ ±0.028.
  const one = bootstrapDiff([Array.from({ length: 1000 }, (_, t) => (t % 10 < 3 ? 1 : 0))], 4000);
  assert(
    Math.abs(one.lo - (0.3 - 0.028)) < 0.008 && Math.abs(one.hi - (0.3 + 0.028)) < 0.008,
    JSON.stringify(one),
  );
  // Seeded: the same units give the same interval.
  const units = [[1, 0, -1, 1], [0, 0, 1, 1], [-1, 0, 0, 1]];
  assertEquals(bootstrapDiff(units, 300), bootstrapDiff(units, 300));
  assertThrows(() => bootstrapDiff([[1], []]), "RangeError", "at least one task");
});

Deno.test("compareMethods: a method that did not run, and runs on other tasks, are named errors", () => {
  assertThrows(
    () => compareMethods(rs, "plan_path", "mas_l1", "mas_l3"),
    "ExperimentCompareError",
    "mas_l3 did not run on plan_path; these did: mas, mas_l1, mas_l1_ppo",
  );
  assertThrows(
    () => compareMethods(rs, "sokoban", "mas_l1", "mas_l1_ppo"),
    "ExperimentCompareError",
    "played 3 held-out tasks",
  );
});

Deno.test("keepMethods: one invocation's runs and sweeps of the named methods only", () => {
  const s: SavedExperiment = {
    tasks: ["plan_path"],
    steps: 12,
    results: rs.slice(0, 5),
    sweeps: [
      {
        task: "plan_path",
        method: "mas_l1",
        seed: 0,
        split: "train",
        episodes: 4,
        points: [],
        chosenLr: null,
      },
      {
        task: "plan_path",
        method: "mas_l1_ppo",
        seed: 0,
        split: "train",
        episodes: 4,
        points: [],
        chosenLr: null,
      },
    ],
  };
  const k = keepMethods(s, ["mas", "mas_l1_ppo"], "A");
  assertEquals(k.results.map((r) => `${r.method} ${r.seed}`), [
    "mas 0",
    "mas_l1_ppo 0",
    "mas_l1_ppo 1",
  ]);
  assertEquals(k.sweeps!.map((w) => w.method), ["mas_l1_ppo"]);
  assertThrows(
    () => keepMethods(s, ["mas_l2"], "A"),
    "ExperimentMergeError",
    "A: mas_l2 did not run",
  );
});

const cli = (args: string[]) =>
  new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "src/cli/experiment.ts", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output().then((o) => ({
    code: o.code,
    stdout: new TextDecoder().decode(o.stdout),
    stderr: new TextDecoder().decode(o.stderr),
  }));

Deno.test("experiment merge DIR:m1+m2 and experiment compare, end to end", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // "old": every method at one lr; "swept": mas_l1 again with its lr swept.
    const old: SavedExperiment = { tasks: ["plan_path"], steps: 12, results: rs.slice(0, 5) };
    const swept: SavedExperiment = {
      tasks: ["plan_path"],
      steps: 12,
      results: [result("mas_l1", 0, [0, 0, 0, 0, 0, 1]), result("mas_l1", 1, [0, 0, 0, 0, 1, 1])],
    };
    for (const [name, s] of [["old", old], ["swept", swept]] as const) {
      await Deno.mkdir(`${dir}/${name}`);
      await Deno.writeTextFile(`${dir}/${name}/results.json`, JSON.stringify(s));
    }
    const twice = await cli(["merge", "--from", `${dir}/old,${dir}/swept`, "--out", `${dir}/m`]);
    assertEquals(twice.code, 2, twice.stderr);
    assert(twice.stderr.includes("is in both"), twice.stderr);
    const merged = await cli([
      "merge",
      "--from",
      `${dir}/old:mas+mas_l1_ppo,${dir}/swept`,
      "--out",
      `${dir}/m`,
    ]);
    assertEquals(merged.code, 0, merged.stderr + merged.stdout);
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/m/results.json`));
    assertEquals(saved.results.length, 5);
    assertEquals(
      saved.results.filter((r: { method: string }) => r.method === "mas_l1")
        .map((r: { successRate: number }) => r.successRate),
      [1 / 6, 2 / 6],
    );
    assert((await Deno.readTextFile(`${dir}/m/table.md`)).includes(":mas+mas_l1_ppo"));
    const missing = await cli(["merge", "--from", `${dir}/old:mas_l3`, "--out", `${dir}/m2`]);
    assertEquals(missing.code, 2);
    assert(missing.stderr.includes("mas_l3 did not run there"), missing.stderr);

    const cmp = await cli([
      "compare",
      "--from",
      `${dir}/m`,
      "--a",
      "mas_l1_ppo",
      "--b",
      "mas_l1",
      "--json",
    ]);
    assertEquals(cmp.code, 0, cmp.stderr + cmp.stdout);
    const last = JSON.parse(cmp.stdout.trim().split("\n").pop()!);
    // s0: ppo only at 1, 3, 4; l1 only at none. s1: ppo only at 0; l1 only at 4, 5.
    assertEquals(
      last[0].perSeed.map((s: { test: { b: number; c: number } }) => [s.test.b, s.test.c]),
      [
        [3, 0],
        [1, 2],
      ],
    );
    assert(cmp.stdout.includes("| plan_path | pooled |"), cmp.stdout);
    const bad = await cli(["compare", "--from", `${dir}/m`, "--a", "mas_l1", "--b", "mas_l3"]);
    assertEquals(bad.code, 2);
    assert(bad.stderr.includes("mas_l3 did not run on plan_path"), bad.stderr);
    const badTask = await cli([
      "compare",
      "--from",
      `${dir}/m`,
      "--a",
      "mas_l1",
      "--b",
      "mas",
      "--tasks",
      "sudoku4",
    ]);
    assertEquals(badTask.code, 2);
    assert(badTask.stderr.includes("sudoku4 is not in"), badTask.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert(usage(COMPARE_CLI).includes("--a METHOD"));
  assert(usage(MERGE_CLI).includes("DIR:m1+m2"));
});
