// The paper-table experiment: the method configs keep everything but the method equal (base,
// held-out tasks, samples per step), the table math and paired tests, the curves read from
// metrics lines, the learning-rate sweep's choice, the role-swap ablation, and a tiny end-to-end
// run of the command (one task, one seed from --first-seed, one step, every method, a two-lr
// sweep) whose files hold real results, curves and plots.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { usage } from "../../src/cli/cli_args.ts";
import { EXPERIMENT_CLI, MERGE_CLI } from "../../src/cli/experiment.ts";
import { getEnv, soloEnvFor } from "../../src/envs/registry.ts";
import type { RunConfig } from "../../src/rl/config.ts";
import {
  aggregate,
  BASELINE_OF,
  chooseLr,
  curvesFromMetrics,
  DEFAULT_METHODS,
  type ExperimentSpec,
  markdownTable,
  methodConfig,
  methodRunsOn,
  METHODS,
  pairedTable,
  runLrSweep,
  type RunResult,
  seedLabel,
  type SweepRecord,
  sweepTable,
  withStepZero,
} from "../../src/rl/experiment.ts";
import { mergeExperiments, type SavedExperiment } from "../../src/rl/experiment_merge.ts";
import { swapRoleAdapters, teamOfSoloRuns } from "../../src/rl/experiment_ablations.ts";
import { mcnemarExact } from "../../src/rl/experiment_stats.ts";
import { result } from "./experiment_fixtures.ts";
import type { LoadedCheckpoint } from "../../src/train/checkpoint.ts";

const spec: ExperimentSpec = {
  steps: 1,
  seeds: 1,
  common: {
    rollout: { k: 2, envsPerStep: 1, maxTurns: 1, maxPromptTokens: 128, maxNewTokens: 40 },
    update: {
      miniBatchSize: 16,
      chunkRows: 192,
      lora: { rank: 4, alpha: 8 },
      optimizer: { lr: 0.002 },
      schedule: { kind: "constant", warmupSteps: 0 },
    },
    eval: { episodes: 3 },
  },
  tasks: {
    plan_path: {
      model: { preset: null, folder: "models/plan_path_tiny" },
      env: { id: "plan_path_v1", difficulty: { size: 5, wallDensity: 0.2, maxTurns: 1 } },
    },
  },
};

Deno.test("method configs differ only in what the method is", () => {
  const cfgs = Object.fromEntries(
    METHODS.map((m) => [m, methodConfig(spec, "plan_path", m, 2, 5, "/tmp/x")]),
  );
  assertEquals(cfgs.single.level, "L0");
  assertEquals(cfgs.single.rollout.mode, "single-agent");
  assertEquals(cfgs.single.run.steps, 0);
  assertEquals(cfgs.single_grpo.run.steps, 5);
  assertEquals([cfgs.mas.level, cfgs.mas_l1.level, cfgs.mas_l2.level, cfgs.mas_l3.level], [
    "L1",
    "L1",
    "L2",
    "L3",
  ]);
  assertEquals(cfgs.mas_l3.update.mode, "full");
  // PPO: L1 with whole trajectories, the critic and GAE; everything else as AT-GRPO's L1.
  assertEquals(
    [cfgs.mas_l1_ppo.level, cfgs.mas_l1_ppo.rollout.mode, cfgs.mas_l1_ppo.update.advantage],
    ["L1", "independent", "gae"],
  );
  assertEquals(cfgs.mas_l1.update.advantage, "grpo");
  assertEquals(cfgs.mas_l1_ppo.update.value.lr, 0.01);
  assertEquals(cfgs.mas_l1_ppo.rollout.envsPerStep, cfgs.mas_l1.rollout.envsPerStep);
  assertEquals(cfgs.mas_l1_ppo.update.optimizer, cfgs.mas_l1.update.optimizer);
  assertEquals(BASELINE_OF.mas_l1_ppo, "mas");
  assert(!DEFAULT_METHODS.includes("mas_l1_ppo") && DEFAULT_METHODS.includes("mas_l1"));
  // Plain GRPO: L1 with whole trajectories and group baselines; everything else as AT-GRPO's L1.
  assertEquals(
    [cfgs.mas_l1_grpo.level, cfgs.mas_l1_grpo.rollout.mode, cfgs.mas_l1_grpo.update.advantage],
    ["L1", "independent", "grpo"],
  );
  const { rollout: gr, ...grpoRest } = cfgs.mas_l1_grpo;
  const { rollout: lr, ...l1Rest } = cfgs.mas_l1;
  assertEquals({ ...grpoRest, run: { ...grpoRest.run, name: "" } }, {
    ...l1Rest,
    run: { ...l1Rest.run, name: "" },
  });
  assertEquals({ ...gr, mode: "tree" }, lr);
  assertEquals(BASELINE_OF.mas_l1_grpo, "mas");
  assert(!DEFAULT_METHODS.includes("mas_l1_grpo"));
  // The grouping ablations: AT-GRPO's L1 (tree, its samples) with only rewards.groupBy changed.
  for (
    const [m, by] of [["mas_l1_agent_groups", "agent"], ["mas_l1_turn_groups", "turn"]] as const
  ) {
    const { rewards, run, ...rest } = cfgs[m];
    const { rewards: l1Rewards, run: l1Run, ...l1Others } = cfgs.mas_l1;
    assertEquals(rest, l1Others);
    assertEquals({ ...run, name: "" }, { ...l1Run, name: "" });
    assertEquals(rewards, { ...l1Rewards, groupBy: by });
    assertEquals(l1Rewards.groupBy, "agent-turn");
    assertEquals(BASELINE_OF[m], "mas");
    assert(!DEFAULT_METHODS.includes(m));
  }
  // Budget: the single agent plays both of the team's agent slots, so twice the envs per step.
  assertEquals(cfgs.single_grpo.rollout.envsPerStep, 2 * cfgs.mas_l1.rollout.envsPerStep);
  for (const c of Object.values(cfgs)) {
    assertEquals([c.model.folder, c.env.testSeed, c.eval.episodes, c.rollout.k, c.run.seed], [
      "models/plan_path_tiny",
      cfgs.mas.env.testSeed,
      3,
      2,
      2,
    ]);
    assertEquals(c.env.difficulty, cfgs.mas.env.difficulty);
  }
  assert(
    methodConfig(spec, "plan_path", "mas_l1", 3, 5, "/tmp/x").env.trainSeed !==
      cfgs.mas_l1.env.trainSeed,
    "seeds draw different training tasks",
  );
  // Per-method fragments apply last (a full-model learning rate for L3, say).
  const withL3 = { ...spec, methods: { mas_l3: { update: { optimizer: { lr: 3e-4 } } } } };
  assertEquals(
    methodConfig(withL3, "plan_path", "mas_l3", 0, 5, "/tmp/x").update.optimizer.lr,
    3e-4,
  );
  assertEquals(
    methodConfig(withL3, "plan_path", "mas_l2", 0, 5, "/tmp/x").update.optimizer.lr,
    0.002,
  );
});

Deno.test("a single agent that takes a turn for each role gets the team's envs, not A×", () => {
  // search_solo_v1 takes 2 messages for each of the team's turns (one per role), so at the team's
  // envs per step it already samples in every agent slot the team does.
  const search: ExperimentSpec = {
    ...spec,
    common: {
      ...spec.common,
      rollout: { k: 2, envsPerStep: 8, maxTurns: 6, maxPromptTokens: 128, maxNewTokens: 40 },
    },
    tasks: {
      search: {
        model: { preset: null, folder: "models/search_warm" },
        env: { id: "search_v1", difficulty: { hops: 2, topK: 1, extraTurns: 1 } },
      },
    },
  };
  assertEquals(soloEnvFor("search_v1").turnsPerTeamTurn, 2);
  const l1 = methodConfig(search, "search", "mas_l1", 0, 5, "/tmp/x");
  const single = methodConfig(search, "search", "single_grpo", 0, 5, "/tmp/x");
  assertEquals([l1.rollout.envsPerStep, single.rollout.envsPerStep], [8, 8]);
  assertEquals(single.level, "L0");
  // Variants that take the team's turns (one message a turn) get A× the envs.
  for (const id of ["plan_path_v1", "sudoku4_v1", "sokoban_v1", "math_v1", "code_v1"]) {
    assertEquals(soloEnvFor(id).turnsPerTeamTurn ?? 1, 1, id);
  }
  const pp = methodConfig(
    { ...spec, common: search.common },
    "plan_path",
    "single_grpo",
    0,
    5,
    "/tmp/x",
  );
  assertEquals(pp.rollout.envsPerStep, 16);
});

Deno.test("evalEvery sets the trained runs' validation interval; extra fragments apply last", () => {
  const every = {
    ...spec,
    evalEvery: 2,
    methods: { single_grpo: { update: { optimizer: { lr: 0.01 } } } },
  };
  assertEquals(
    methodConfig(spec, "plan_path", "mas_l1", 0, 6, "/tmp/x").eval.everySteps,
    6,
    "default: after the last step only",
  );
  const l1 = methodConfig(every, "plan_path", "mas_l1", 0, 6, "/tmp/x");
  assertEquals(
    [l1.eval.everySteps, l1.eval.beforeTraining],
    [2, false],
    "step 0 comes from the untrained method",
  );
  assertEquals(methodConfig(every, "plan_path", "mas", 0, 6, "/tmp/x").eval.beforeTraining, true);
  const swept = methodConfig(every, "plan_path", "single_grpo", 0, 6, "/tmp/x", {
    update: { optimizer: { lr: 5e-4 } },
    run: { name: "n" },
  });
  assertEquals([swept.update.optimizer.lr, swept.run.name, swept.run.steps], [5e-4, "n", 6]);
  assertEquals(
    methodConfig(every, "plan_path", "single_grpo", 0, 6, "/tmp/x").update.optimizer.lr,
    0.01,
  );
});

Deno.test("the CLI's usage names --first-seed and --no-sweep", () => {
  const u = usage(EXPERIMENT_CLI);
  for (const f of ["--first-seed K", "--no-sweep", "--seeds N", "--methods a,b", "--json"]) {
    assert(u.includes(f), `${f}: ${u}`);
  }
});

Deno.test("aggregate: per-seed successes and exact McNemar p-values against single_grpo and mas", () => {
  const rs = [
    result("mas", 0, [0, 0, 1, 0]),
    result("mas", 1, [0, 1, 0, 1]),
    result("single_grpo", 0, [1, 0, 0, 0]), // one seed only: seed 1 of the others pairs with it
    result("mas_l1", 1, [1, 1, 1, 1]),
    result("mas_l1", 0, [1, 1, 1, 0]),
  ];
  const aggs = aggregate(rs), of = (m: string) => aggs.find((a) => a.method === m)!;
  const l1 = of("mas_l1");
  assertEquals(
    l1.perSeed,
    [{ seed: 0, successRate: 0.75 }, { seed: 1, successRate: 1 }],
    "sorted by seed",
  );
  // vs mas, seed by seed: seed 0 → only-l1 at tasks 0, 1; seed 1 → only-l1 at tasks 0, 2.
  assertEquals([l1.tests.mas!.b, l1.tests.mas!.c, l1.tests.mas!.n], [4, 0, 8]);
  assertEquals(l1.pVsMas, 2 / 16);
  // vs single_grpo: seed 0 → only-l1 at 1, 2; seed 1 (paired with grpo seed 0) → only-l1 at 1, 2, 3.
  assertEquals([l1.tests.single_grpo!.b, l1.tests.single_grpo!.c], [5, 0]);
  assertEquals(l1.pVsSingleGrpo, 2 / 32);
  assertEquals(
    [of("mas").pVsMas, of("single_grpo").pVsSingleGrpo],
    [null, null],
    "no test of a method against itself",
  );
  // grpo vs mas: seed 0 only → only-grpo at 0, only-mas at 2: b = c = 1.
  assertEquals([
    of("single_grpo").tests.mas!.b,
    of("single_grpo").tests.mas!.c,
    of("single_grpo").pVsMas,
  ], [1, 1, 1]);
  const alone = aggregate([result("mas_l2", 0, [1, 0])])[0];
  assertEquals(
    [alone.pVsSingleGrpo, alone.pVsMas, alone.tests.mas],
    [null, null, null],
    "the comparators did not run",
  );
  const otherTasks = aggregate([result("mas", 0, [1, 0]), result("mas_l2", 0, [1, 0, 1])]).find((
    a,
  ) => a.method === "mas_l2")!;
  assertEquals(otherTasks.pVsMas, null, "different task lists do not pair");
  const md = pairedTable(aggs, ["plan_path"]);
  assert(
    md.includes(
      "| plan_path | MAS + AT-GRPO, shared (L1) | s0 75.0, s1 100.0 | 0.063 (5:0); +62.5 [+25.0, +100.0] | 0.125 (4:0); +50.0 [+12.5, +87.5] |",
    ),
    md,
  );
  // mas vs single_grpo: both mas seeds pair with grpo's seed 0: 1:1 and 2:1.
  assert(
    md.includes(
      "| plan_path | MAS (untrained) | s0 25.0, s1 50.0 | 1.000 (3:2); +12.5 [−37.5, +62.5] | — |",
    ),
    md,
  );
  assertEquals(otherTasks.diffs.mas, null, "no interval where there is no test");
  assertEquals([l1.diffs.mas!.mean, l1.diffs.single_grpo!.mean], [0.5, 0.625]);
  const rows = md.split("\n").slice(2).map((l) => l.split(" | ")[1]);
  assertEquals(
    rows,
    ["single agent + GRPO", "MAS (untrained)", "MAS + AT-GRPO, shared (L1)"],
    "rows in method order",
  );
});

Deno.test("curves: held-out success per validation, reward by agent averaged over turns, step 0 from the baseline", () => {
  const lines = [
    { step: 1, rewardByAgent: { plan: { "0": 0.2, "1": 0.6 }, tool: { "0": 1 } }, samples: 8 },
    {
      step: 2,
      rewardByAgent: { plan: { "0": 0.5 } },
      eval: { successRate: 0.25, successes: [0, 1, 0, 0] },
    },
    { step: 3, rewardByAgent: {} },
  ];
  const { curve, rewardCurve } = curvesFromMetrics(lines);
  assertEquals(curve, [{ step: 2, successRate: 0.25 }]);
  assertEquals(rewardCurve.map((p) => p.step), [1, 2, 3]);
  assert(
    Math.abs(rewardCurve[0].byAgent.plan - 0.4) < 1e-12 && rewardCurve[0].byAgent.tool === 1,
    JSON.stringify(rewardCurve[0]),
  );
  assertEquals([rewardCurve[1].byAgent, rewardCurve[2].byAgent], [{ plan: 0.5 }, {}]);
  assertEquals(curvesFromMetrics([{ step: 0, eval: { successRate: 0.5 } }]).curve, [{
    step: 0,
    successRate: 0.5,
  }], "a step-0 validation is kept");
  const base = result("mas", 0, [1, 0, 0, 0]);
  assertEquals(withStepZero(curve, base), [{ step: 0, successRate: 0.25 }, {
    step: 2,
    successRate: 0.25,
  }]);
  assertEquals(
    withStepZero([{ step: 0, successRate: 0.5 }], base),
    [{ step: 0, successRate: 0.5 }],
    "a run's own step 0 wins",
  );
  assertEquals(withStepZero(curve, undefined), curve);
  assertEquals([
    BASELINE_OF.single_grpo,
    BASELINE_OF.mas_l1,
    BASELINE_OF.mas_l2,
    BASELINE_OF.mas_l3,
    BASELINE_OF.mas,
  ], ["single", "mas", "mas", "mas", undefined]);
});

Deno.test("the lr sweep trains each lr on one seed and keeps the best train-split success (ties: the lower lr)", async () => {
  assertEquals(
    chooseLr([{ lr: 2e-3, trainSuccess: 0.5 }, { lr: 1e-3, trainSuccess: 0.5 }, {
      lr: 4e-3,
      trainSuccess: 0.25,
    }]),
    1e-3,
  );
  assertEquals(chooseLr([{ lr: 1e-4, trainSuccess: 0 }, { lr: 1e-3, trainSuccess: 0.1 }]), 1e-3);
  assertThrows(() => chooseLr([]), "RangeError");
  const swept: ExperimentSpec = { ...spec, sweep: { single_grpo: { lrs: [3e-4, 1e-3, 2e-3] } } };
  const score: Record<number, number> = { 3e-4: 0.5, 1e-3: 0.75, 2e-3: 0.75 };
  const trained: RunConfig[] = [], scored: [number, string, number][] = [], points: number[] = [];
  const { record, chosen } = await runLrSweep(swept, "plan_path", {
    seed: 4,
    steps: 3,
    outDir: "/tmp/x",
  }, {
    train: (cfg) => {
      trained.push(cfg);
      return Promise.resolve({
        runDir: `/runs/${cfg.update.optimizer.lr}`,
        kept: `kept ${cfg.update.optimizer.lr}`,
      });
    },
    scoreOnTrain: (cfg, runDir, episodes) => {
      scored.push([cfg.update.optimizer.lr, runDir, episodes]);
      return Promise.resolve(score[cfg.update.optimizer.lr]);
    },
    onPoint: (r) => Promise.resolve(void points.push(r.points.length)),
  });
  assertEquals(
    trained.map((c) => [c.update.optimizer.lr, c.level, c.run.seed, c.run.steps, c.run.name]),
    [
      [3e-4, "L0", 4, 3, "plan_path-single_grpo-lr0.0003-seed4"],
      [1e-3, "L0", 4, 3, "plan_path-single_grpo-lr0.001-seed4"],
      [2e-3, "L0", 4, 3, "plan_path-single_grpo-lr0.002-seed4"],
    ],
  );
  assertEquals(scored, [[3e-4, "/runs/0.0003", 3], [1e-3, "/runs/0.001", 3], [
    2e-3,
    "/runs/0.002",
    3,
  ]], "train split, eval.episodes tasks");
  assertEquals(points, [1, 2, 3], "recorded after each candidate");
  assertEquals([record.chosenLr, record.seed, record.split, record.episodes, chosen], [
    1e-3,
    4,
    "train",
    3,
    "kept 0.001",
  ]);
  assertEquals(record.points.map((p) => p.trainSuccess), [0.5, 0.75, 0.75]);
  // The spec's seed and episodes win over the defaults.
  const fixed: ExperimentSpec = {
    ...spec,
    sweep: { single_grpo: { lrs: [1e-3], seed: 9, episodes: 7 } },
  };
  const one = await runLrSweep(fixed, "plan_path", { seed: 4, steps: 3, outDir: "/tmp/x" }, {
    train: (cfg) => Promise.resolve({ runDir: "/r", kept: cfg.run.seed }),
    scoreOnTrain: (_c, _r, episodes) => Promise.resolve(episodes / 10),
  });
  assertEquals([
    one.record.seed,
    one.record.episodes,
    one.record.points[0].trainSuccess,
    one.chosen,
  ], [9, 7, 0.7, 9]);
  await assertRejects(
    () =>
      runLrSweep(spec, "plan_path", { seed: 0, steps: 1, outDir: "/tmp/x" }, {
        train: () => Promise.reject(),
        scoreOnTrain: () => Promise.reject(),
      }),
    "RangeError",
  );
  // Any trained method can be swept (L3's full-model lr, say); untrained ones cannot.
  const l3: ExperimentSpec = { ...spec, sweep: { mas_l3: { lrs: [1e-4, 3e-4], seed: 2 } } };
  const l3Trained: RunConfig[] = [];
  const l3Sweep = await runLrSweep(l3, "plan_path", {
    seed: 0,
    steps: 3,
    outDir: "/tmp/x",
    method: "mas_l3",
  }, {
    train: (cfg) => (l3Trained.push(cfg), Promise.resolve({ runDir: "/r", kept: cfg.run.name })),
    scoreOnTrain: (cfg) => Promise.resolve(cfg.update.optimizer.lr === 1e-4 ? 0.9 : 0.2),
  });
  assertEquals(
    l3Trained.map((c) => [c.level, c.update.mode, c.update.optimizer.lr, c.run.seed]),
    [["L3", "full", 1e-4, 2], ["L3", "full", 3e-4, 2]],
  );
  assertEquals([l3Sweep.record.method, l3Sweep.record.chosenLr, l3Sweep.chosen], [
    "mas_l3",
    1e-4,
    "plan_path-mas_l3-lr0.0001-seed2",
  ]);
  await assertRejects(
    () =>
      runLrSweep({ ...spec, sweep: { mas: { lrs: [1e-3] } } }, "plan_path", {
        seed: 0,
        steps: 1,
        outDir: "/tmp/x",
        method: "mas",
      }, { train: () => Promise.reject(), scoreOnTrain: () => Promise.reject() }),
    "RangeError",
    "mas does not train",
  );
  const md = sweepTable([record as SweepRecord, l3Sweep.record]);
  assert(
    md.includes("| plan_path | single agent + GRPO | 0.001 | 75.0 (3 tasks, seed 4) | chosen |") &&
      md.includes("| plan_path | single agent + GRPO | 0.002 | 75.0 (3 tasks, seed 4) |  |") &&
      md.includes(
        "| plan_path | MAS + AT-GRPO, per-role full (L3) | 0.0001 | 90.0 (3 tasks, seed 2) | chosen |",
      ),
    md,
  );
});

Deno.test("aggregate: mean and sample std over seeds; the table has a cell per (method, task)", () => {
  const r = (method: RunResult["method"], seed: number, successRate: number): RunResult => ({
    task: "plan_path",
    method,
    seed,
    successRate,
    samples: method === "mas" ? 0 : 32,
    steps: 1,
    runDir: null,
    eval: {
      episodes: 4,
      successRate,
      avgTurns: 1,
      rewardByAgent: {},
      temperature: 0,
      split: "test",
      successes: [],
      clippedPrompts: 0,
    },
  });
  const aggs = aggregate([r("mas", 0, 0.25), r("mas", 1, 0.75), r("mas_l2", 0, 0.5)]);
  const mas = aggs.find((a) => a.method === "mas")!;
  assertEquals([mas.n, mas.mean], [2, 0.5]);
  assert(Math.abs(mas.std - Math.sqrt(0.125)) < 1e-12, String(mas.std));
  assertEquals(aggs.find((a) => a.method === "mas_l2")!.std, 0);
  const md = markdownTable(aggs, ["plan_path", "sokoban"]);
  assert(md.includes("| MAS (untrained) | 50.0 ± 35.4 | — |"), md);
  assert(md.includes("| MAS + AT-GRPO, per-role LoRA (L2) | 50.0 ± 0.0 | — |"), md);
  assert(!md.includes("single agent"), "methods that did not run get no row");
});

Deno.test("the ablation swaps the two role adapters and nothing else", () => {
  const cfg = methodConfig(spec, "plan_path", "mas_l2", 0, 1, "/tmp/x");
  const tool = { settings: {} as never, modules: [] },
    plan = { settings: {} as never, modules: [] };
  const ck = {
    state: { step: 1, rng: {} },
    adapters: { "base.tool": tool, "base.plan": plan },
    models: {},
    optimizers: {},
  } as unknown as LoadedCheckpoint;
  const s = swapRoleAdapters(ck, cfg);
  assert(s.adapters["base.tool"] === plan && s.adapters["base.plan"] === tool);
  assert(ck.adapters["base.tool"] === tool, "the original checkpoint is not modified");
  let err: Error | null = null;
  try {
    swapRoleAdapters(ck, methodConfig(spec, "plan_path", "mas_l1", 0, 1, "/tmp/x"));
  } catch (e) {
    err = e as Error;
  }
  assert(err?.message.includes("needs an L2 run"), String(err));
});

/** `experiment paper-table` on `spec` (written to dir/spec.json) into dir/out; its stdout. */
async function paperTable(dir: string, spec: ExperimentSpec, args: string[]): Promise<string> {
  await Deno.writeTextFile(`${dir}/spec.json`, JSON.stringify(spec));
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "src/cli/experiment.ts",
      "paper-table",
      "--spec",
      `${dir}/spec.json`,
      "--out",
      `${dir}/out`,
      ...args,
      "--json",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr) + stdout);
  return stdout;
}

Deno.test("sa_team: each role's single-agent adapter becomes that role's adapter of the L2 team", () => {
  const cfg = methodConfig(spec, "plan_path", "mas_l2", 0, 1, "/tmp/x");
  const adapter = () => ({ settings: {} as never, modules: [] });
  const soloCk = (a: unknown) =>
    ({
      state: { step: 1, rng: {} },
      adapters: { "single.single": a },
      models: {},
      optimizers: {},
    }) as unknown as LoadedCheckpoint;
  const tool = adapter(), plan = adapter();
  const team = teamOfSoloRuns({ plan: soloCk(plan), tool: soloCk(tool) }, cfg);
  assertEquals(Object.keys(team.adapters).sort(), ["base.plan", "base.tool"]);
  assert(team.adapters["base.tool"] === tool && team.adapters["base.plan"] === plan);
  assertThrows(
    () => teamOfSoloRuns({ plan: soloCk(plan) }, cfg),
    "RangeError",
    `role "tool"`,
  );
  assertThrows(
    () =>
      teamOfSoloRuns(
        { plan: soloCk(plan), tool: soloCk(tool) },
        methodConfig(spec, "plan_path", "mas_l1", 0, 1, "/tmp/x"),
      ),
    "RangeError",
    "L2 team",
  );
  // The methods it is made of: the default single agent (the plan agent) and the tool alone, at
  // the same budget and settings; only env.soloAgent differs.
  const a = methodConfig(spec, "plan_path", "single_grpo", 0, 1, "/tmp/x");
  const b = methodConfig(spec, "plan_path", "single_tool_grpo", 0, 1, "/tmp/x");
  assertEquals([a.env.soloAgent, b.env.soloAgent, b.level, b.run.steps], [null, "tool", "L0", 1]);
  assertEquals(
    { ...b, env: { ...b.env, soloAgent: null }, run: { ...b.run, name: "" } },
    { ...a, run: { ...a.run, name: "" } },
  );
  assertEquals(methodConfig(spec, "plan_path", "single_tool", 0, 1, "/tmp/x").run.steps, 0);
  assertEquals(BASELINE_OF.single_tool_grpo, "single_tool");
  assert(
    methodRunsOn("single_tool_grpo", "plan_path_v1") && !methodRunsOn("single_tool", "math_v1"),
  );
  assert(!DEFAULT_METHODS.includes("single_tool") && !DEFAULT_METHODS.includes("single_tool_grpo"));
});

Deno.test("deno task experiment paper-table: the opt-in ablations run (each role alone, played as a team; coarser groups)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const two: ExperimentSpec = {
      ...spec,
      tasks: {
        plan_path: {
          ...spec.tasks.plan_path,
          env: { id: "plan_path_v1", difficulty: { size: 5, wallDensity: 0.2, maxTurns: 2 } },
          rollout: { maxTurns: 2 },
        },
      },
    };
    await paperTable(dir, two, [
      "--methods",
      "single_tool,single_grpo,single_tool_grpo,sa_team,mas_l1_turn_groups",
    ]);
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/out/results.json`));
    const results = saved.results as RunResult[];
    const of = (m: string) => results.find((r) => r.method === m)!;
    // In --methods order, the derived result after the seed's runs.
    assertEquals(results.map((r) => r.method), [
      "single_tool",
      "single_grpo",
      "single_tool_grpo",
      "mas_l1_turn_groups",
      "ablation_sa_team",
    ]);
    for (const r of results) assertEquals(r.eval.episodes, 3, r.method);
    // The tool trained alone, in its own env, on the single agent's budget.
    const toolCfg = JSON.parse(
      await Deno.readTextFile(`${of("single_tool_grpo").runDir}/config.json`),
    ) as RunConfig;
    assertEquals([toolCfg.level, toolCfg.env.soloAgent], ["L0", "tool"]);
    assert(of("single_tool_grpo").samples > 0 && of("single_grpo").samples > 0);
    assertEquals(
      of("ablation_sa_team").samples,
      of("single_grpo").samples + of("single_tool_grpo").samples,
    );
    // Its curve starts from the untrained tool alone; the team's episodes are the team's (two
    // agents a turn), the solo ones one agent a turn.
    assertEquals(of("single_tool_grpo").curve![0], {
      step: 0,
      successRate: of("single_tool").successRate,
    });
    assert(
      Object.keys(of("single_tool_grpo").rewardCurve![0].byAgent).every((a) => a === "tool"),
      JSON.stringify(of("single_tool_grpo").rewardCurve),
    );
    const turns = await Deno.readTextFile(`${of("mas_l1_turn_groups").runDir}/config.json`);
    assertEquals((JSON.parse(turns) as RunConfig).rewards.groupBy, "turn");
    const table = await Deno.readTextFile(`${dir}/out/table.md`);
    assert(
      table.includes("| tool agent alone + GRPO |") &&
        table.includes("each role trained alone (L0 + GRPO), played as the L2 team") &&
        table.includes("turn-wise groups only"),
      table,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task experiment paper-table: a tiny run of every method writes the table, tests and plots", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const e2e: ExperimentSpec = { ...spec, sweep: { single_grpo: { lrs: [0.004, 0.002] } } };
    const stdout = await paperTable(dir, e2e, ["--first-seed", "3"]);
    const last = JSON.parse(stdout.trim().split("\n").pop()!);
    const methods = last.aggregates.map((a: { method: string }) => a.method).sort();
    assertEquals(methods, [...DEFAULT_METHODS, "ablation_swapped"].sort());
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/out/results.json`));
    const results = saved.results as RunResult[];
    for (const r of results) {
      assertEquals([r.eval.episodes, r.eval.successes.length, r.seed], [3, 3, 3], r.method);
      assert(r.successRate >= 0 && r.successRate <= 1);
    }
    const of = (m: string) => results.find((r) => r.method === m)!;
    // Trained methods trained, on the same budget of samples per step (episodes may end early).
    for (const m of ["single_grpo", "mas_l1", "mas_l2", "mas_l3"]) {
      assert(of(m).samples > 0, `${m} used no samples`);
    }
    assertEquals(
      of("single_grpo").samples,
      of("mas_l1").samples,
      "one-turn episodes: 2 envs × 1 agent × K = 1 env × 2 agents × K",
    );
    // Aggregates: per seed (the one seed, 3), and paired p-values where a comparator ran.
    type Agg = {
      method: string;
      n: number;
      mean: number;
      perSeed: { seed: number; successRate: number }[];
      pVsSingleGrpo: number | null;
      pVsMas: number | null;
    };
    for (const a of last.aggregates as Agg[]) {
      const r = results.find((x) => x.method === a.method)!;
      assertEquals([a.n, a.mean, a.perSeed], [1, r.successRate, [{
        seed: 3,
        successRate: r.successRate,
      }]], a.method);
      assertEquals(
        a.pVsSingleGrpo === null,
        a.method === "single_grpo",
        `${a.method} vs single_grpo`,
      );
      assertEquals(a.pVsMas === null, a.method === "mas", `${a.method} vs mas`);
    }
    const discordant = (
      x: number[],
      y: number[],
    ) => [x.filter((v, i) => v && !y[i]).length, x.filter((v, i) => !v && y[i]).length];
    const [b, c] = discordant(of("mas_l1").eval.successes, of("mas").eval.successes);
    assertEquals(
      last.aggregates.find((a: Agg) => a.method === "mas_l1").pVsMas,
      mcnemarExact(b, c),
    );
    // The sweep: both lrs trained on the first seed and scored on the train split; single_grpo
    // trained at the chosen lr, and the sweep's run at that lr stands as seed 3's result.
    const sweeps = saved.sweeps as SweepRecord[];
    assertEquals(sweeps.length, 1);
    const sw = sweeps[0];
    assertEquals([sw.seed, sw.split, sw.episodes, sw.points.map((p) => p.lr)], [3, "train", 3, [
      0.004,
      0.002,
    ]]);
    const best = Math.max(...sw.points.map((p) => p.trainSuccess));
    assertEquals(
      sw.chosenLr,
      Math.min(...sw.points.filter((p) => p.trainSuccess === best).map((p) => p.lr)),
    );
    assertEquals([of("single_grpo").lr, of("single_grpo").runDir], [
      sw.chosenLr,
      sw.points.find((p) => p.lr === sw.chosenLr)!.runDir,
    ]);
    const grpoCfg = JSON.parse(
      await Deno.readTextFile(`${of("single_grpo").runDir}/config.json`),
    ) as RunConfig;
    assertEquals([grpoCfg.update.optimizer.lr, grpoCfg.run.seed], [sw.chosenLr, 3]);
    assertEquals(last.sweeps, sweeps);
    // Curves: step 0 is the untrained method's result of the seed, step 1 the run's held-out result.
    const soloAgents = soloEnvFor("plan_path_v1").possibleAgents,
      roles = getEnv("plan_path_v1").possibleAgents;
    for (const m of ["single_grpo", "mas_l1", "mas_l2", "mas_l3"]) {
      const r = of(m);
      assertEquals(r.curve, [{
        step: 0,
        successRate: of(m === "single_grpo" ? "single" : "mas").successRate,
      }, { step: 1, successRate: r.successRate }], m);
      assertEquals(r.rewardCurve!.map((p) => p.step), [1], m);
      const agents = Object.keys(r.rewardCurve![0].byAgent);
      assert(
        agents.length > 0 &&
          agents.every((a) => (m === "single_grpo" ? soloAgents : roles).includes(a)),
        `${m}: ${agents}`,
      );
      assert(Object.values(r.rewardCurve![0].byAgent).every(Number.isFinite), m);
    }
    const curves = await Deno.readTextFile(`${dir}/out/curves_plan_path.svg`);
    assert(
      curves.startsWith("<svg") && curves.includes("RL step") &&
        curves.includes("held-out success (%)"),
      curves.slice(0, 200),
    );
    assertEquals(
      curves.match(/aria-roledescription="line mark"/g)?.length,
      6,
      "one line per method (the ablation has none)",
    );
    const rewards = await Deno.readTextFile(`${dir}/out/rewards_plan_path.svg`);
    assert(
      rewards.includes("training reward") && rewards.includes("single agent + GRPO"),
      rewards.slice(0, 200),
    );
    const table = await Deno.readTextFile(`${dir}/out/table.md`);
    assert(
      table.includes("| single agent + GRPO |") && table.includes("role adapters swapped"),
      table,
    );
    assert(
      table.includes("(seed 3)") &&
        table.includes("| plan_path | MAS + AT-GRPO, shared (L1) | s3 ") &&
        table.includes("| chosen |"),
      table,
    );
    assert(table.includes("curves_plan_path.svg, rewards_plan_path.svg"), table);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("merge: invocations of separate seeds become one table; a run measured twice or another budget is refused", async () => {
  const a: SavedExperiment = {
    tasks: ["plan_path"],
    steps: 12,
    evalEvery: 6,
    notes: ["n1"],
    results: [
      result("mas", 0, [0, 0, 1, 0]),
      result("single_grpo", 0, [1, 0, 0, 0]),
      result("mas_l1", 0, [1, 1, 1, 0], {
        curve: [{ step: 0, successRate: 0.25 }, { step: 12, successRate: 0.75 }],
        rewardCurve: [{ step: 1, byAgent: { tool: 1, plan: 0.5 } }],
      }),
    ],
    sweeps: [{
      task: "plan_path",
      method: "single_grpo",
      seed: 0,
      split: "train",
      episodes: 4,
      points: [{ lr: 0.001, trainSuccess: 0.5, runDir: "r" }],
      chosenLr: 0.001,
    }],
  };
  const b: SavedExperiment = {
    tasks: ["plan_path"],
    steps: 12,
    evalEvery: 6,
    notes: ["n1", "n2"],
    results: [
      result("mas", 1, [0, 1, 0, 1]),
      result("mas_l1", 1, [1, 1, 1, 1], {
        curve: [{ step: 0, successRate: 0.5 }, { step: 12, successRate: 1 }],
        rewardCurve: [{ step: 1, byAgent: { tool: 2, plan: 1 } }],
      }),
    ],
  };
  const m = mergeExperiments([a, b], ["A", "B"]);
  assertEquals([m.results.length, m.sweeps!.length, m.notes, m.steps], [5, 1, ["n1", "n2"], 12]);
  // The merged aggregates are those of all the runs measured together (the paired tests pool seeds).
  assertEquals(aggregate(m.results), aggregate([...a.results, ...b.results]));
  assertEquals(aggregate(m.results).find((x) => x.method === "mas_l1")!.pVsMas, 2 / 16);
  assertEquals([
    seedLabel(m.results),
    seedLabel(a.results),
    seedLabel([result("mas", 0, [1]), result("mas", 2, [1])]),
  ], ["seeds 0..1", "seed 0", "seeds 0, 2"]);
  // mas_l2 ran apart from its untrained baseline: its curve gets step 0 from mas of the same seed.
  const l2: SavedExperiment = {
    tasks: ["plan_path"],
    steps: 12,
    evalEvery: 6,
    results: [result("mas_l2", 1, [1, 1, 0, 1], { curve: [{ step: 12, successRate: 0.75 }] })],
  };
  const withL2 = mergeExperiments([a, b, l2], ["A", "B", "C"]);
  assertEquals(withL2.results.find((r) => r.method === "mas_l2")!.curve, [{
    step: 0,
    successRate: 0.5,
  }, { step: 12, successRate: 0.75 }]);
  assertThrows(
    () => mergeExperiments([a, a], ["A", "A2"]),
    "ExperimentMergeError",
    "plan_path mas seed 0 is in both A and A2",
  );
  assertThrows(
    () => mergeExperiments([a, { ...b, steps: 6 }], ["A", "B"]),
    "ExperimentMergeError",
    "B: 6 RL steps",
  );
  assertThrows(
    () => mergeExperiments([a, { ...b, evalEvery: 3 }], ["A", "B"]),
    "ExperimentMergeError",
    "evalEvery",
  );
  // The command: two results.json folders in, the merged table, results and plots out.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/a`), await Deno.mkdir(`${dir}/b`);
    await Deno.writeTextFile(`${dir}/a/results.json`, JSON.stringify({ spec: "spec.json", ...a }));
    await Deno.writeTextFile(`${dir}/b/results.json`, JSON.stringify({ spec: "spec.json", ...b }));
    const run = (from: string) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "src/cli/experiment.ts",
          "merge",
          "--from",
          from,
          "--out",
          `${dir}/m`,
          "--json",
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
    const out = await run(`${dir}/a,${dir}/b`);
    const stdout = new TextDecoder().decode(out.stdout);
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr) + stdout);
    const last = JSON.parse(stdout.trim().split("\n").pop()!);
    assertEquals(last.aggregates, JSON.parse(JSON.stringify(aggregate(m.results))));
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/m/results.json`));
    assertEquals([saved.results.length, saved.mergedFrom.length], [5, 2]);
    const table = await Deno.readTextFile(`${dir}/m/table.md`);
    assert(
      table.includes("over 2 seed(s) (seeds 0..1)") &&
        table.includes("| plan_path | MAS + AT-GRPO, shared (L1) | s0 75.0, s1 100.0 |") &&
        table.includes("| chosen |"),
      table,
    );
    assert((await Deno.readTextFile(`${dir}/m/curves_plan_path.svg`)).startsWith("<svg"));
    const twice = await run(`${dir}/a,${dir}/a`);
    assertEquals(twice.code, 2, "a run measured twice is bad input");
    assert(new TextDecoder().decode(twice.stderr).includes("is in both"));
    const missing = await run(`${dir}/a,${dir}/nope`);
    assertEquals(missing.code, 2);
    assert(new TextDecoder().decode(missing.stderr).includes("results.json is not there"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert(usage(MERGE_CLI).includes("--from DIR1,DIR2"));
});
