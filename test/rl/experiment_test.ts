// The paper-table experiment: the method configs keep everything but the method equal (base,
// held-out tasks, samples per step), the table math, the role-swap ablation, and a tiny end-to-end
// run of the command (one task, one seed, one step, every method) whose files hold real results.

import { assert, assertEquals } from "../assert.ts";
import {
  aggregate,
  type ExperimentSpec,
  markdownTable,
  methodConfig,
  METHODS,
  type RunResult,
  swapRoleAdapters,
} from "../../src/rl/experiment.ts";
import type { LoadedCheckpoint } from "../../src/train/checkpoint.ts";

const spec: ExperimentSpec = {
  steps: 1,
  seeds: 1,
  common: {
    rollout: { k: 2, envsPerStep: 1, maxTurns: 1, maxPromptTokens: 128, maxNewTokens: 40 },
    update: { miniBatchSize: 16, chunkRows: 192, lora: { rank: 4, alpha: 8 }, optimizer: { lr: 0.002 }, schedule: { kind: "constant", warmupSteps: 0 } },
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
  const cfgs = Object.fromEntries(METHODS.map((m) => [m, methodConfig(spec, "plan_path", m, 2, 5, "/tmp/x")]));
  assertEquals(cfgs.single.level, "L0");
  assertEquals(cfgs.single.rollout.mode, "single-agent");
  assertEquals(cfgs.single.run.steps, 0);
  assertEquals(cfgs.single_grpo.run.steps, 5);
  assertEquals([cfgs.mas.level, cfgs.mas_l1.level, cfgs.mas_l2.level, cfgs.mas_l3.level], ["L1", "L1", "L2", "L3"]);
  assertEquals(cfgs.mas_l3.update.mode, "full");
  // Budget: the single agent plays both of the team's agent slots, so twice the envs per step.
  assertEquals(cfgs.single_grpo.rollout.envsPerStep, 2 * cfgs.mas_l1.rollout.envsPerStep);
  for (const c of Object.values(cfgs)) {
    assertEquals([c.model.folder, c.env.testSeed, c.eval.episodes, c.rollout.k, c.run.seed], ["models/plan_path_tiny", cfgs.mas.env.testSeed, 3, 2, 2]);
    assertEquals(c.env.difficulty, cfgs.mas.env.difficulty);
  }
  assert(methodConfig(spec, "plan_path", "mas_l1", 3, 5, "/tmp/x").env.trainSeed !== cfgs.mas_l1.env.trainSeed, "seeds draw different training tasks");
  // Per-method fragments apply last (a full-model learning rate for L3, say).
  const withL3 = { ...spec, methods: { mas_l3: { update: { optimizer: { lr: 3e-4 } } } } };
  assertEquals(methodConfig(withL3, "plan_path", "mas_l3", 0, 5, "/tmp/x").update.optimizer.lr, 3e-4);
  assertEquals(methodConfig(withL3, "plan_path", "mas_l2", 0, 5, "/tmp/x").update.optimizer.lr, 0.002);
});

Deno.test("aggregate: mean and sample std over seeds; the table has a cell per (method, task)", () => {
  const r = (method: RunResult["method"], seed: number, successRate: number): RunResult => ({
    task: "plan_path", method, seed, successRate, samples: method === "mas" ? 0 : 32, steps: 1, runDir: null,
    eval: { episodes: 4, successRate, avgTurns: 1, rewardByAgent: {}, temperature: 0, split: "test", successes: [], clippedPrompts: 0 },
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
  const tool = { settings: {} as never, modules: [] }, plan = { settings: {} as never, modules: [] };
  const ck = { state: { step: 1, rng: {} }, adapters: { "base.tool": tool, "base.plan": plan }, models: {}, optimizers: {} } as unknown as LoadedCheckpoint;
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

Deno.test("deno task experiment paper-table: a tiny run of every method writes the table", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/spec.json`, JSON.stringify(spec));
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "src/cli/experiment.ts", "paper-table", "--spec", `${dir}/spec.json`, "--out", `${dir}/out`, "--json"],
      stdout: "piped", stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr) + stdout);
    const last = JSON.parse(stdout.trim().split("\n").pop()!);
    const methods = last.aggregates.map((a: { method: string }) => a.method).sort();
    assertEquals(methods, [...METHODS, "ablation_swapped"].sort());
    const results = JSON.parse(await Deno.readTextFile(`${dir}/out/results.json`)).results as RunResult[];
    for (const r of results) {
      assertEquals(r.eval.episodes, 3, r.method);
      assert(r.successRate >= 0 && r.successRate <= 1);
    }
    // Trained methods trained, on the same budget of samples per step (episodes may end early).
    const samples = (m: string) => results.find((r) => r.method === m)!.samples;
    for (const m of ["single_grpo", "mas_l1", "mas_l2", "mas_l3"]) assert(samples(m) > 0, `${m} used no samples`);
    assertEquals(samples("single_grpo"), samples("mas_l1"), "one-turn episodes: 2 envs × 1 agent × K = 1 env × 2 agents × K");
    const table = await Deno.readTextFile(`${dir}/out/table.md`);
    assert(table.includes("| single agent + GRPO |") && table.includes("role adapters swapped"), table);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
