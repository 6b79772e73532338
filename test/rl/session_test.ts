// RlSession on its own (the host-neutral core both the Deno trainer and the browser app drive):
// level L0 rolls out the single-agent env, warm starts put a checkpoint's or a PEFT adapter's
// weights into the policies, and checkpoint contents round-trip through the file format.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { parseConfig } from "../../src/rl/config.ts";
import { RlSession } from "../../src/rl/session.ts";
import { loadBase } from "../../src/rl/train.ts";
import { checkpointFiles, readCheckpoint } from "../../src/train/checkpoint.ts";

const modelCfg = parseModelConfig(
  JSON.parse(await Deno.readTextFile("configs/models/tiny-llama.json")),
);

type Over = Record<string, unknown>;
const cfgFor = (
  level: "L0" | "L2",
  seed: number,
  over: { model?: Over; rollout?: Over; update?: Over } = {},
) =>
  parseConfig({
    model: over.model ?? { preset: "tiny-llama" },
    env: { id: "plan_path_v1", difficulty: { size: 4, wallDensity: 0.1, maxTurns: 1 } },
    level,
    rollout: {
      mode: level === "L0" ? "single-agent" : "tree",
      k: 2,
      envsPerStep: 2,
      maxTurns: 1,
      maxPromptTokens: 128,
      maxNewTokens: 8,
      ...over.rollout,
    },
    update: {
      mode: "lora",
      miniBatchSize: 8,
      chunkRows: 160,
      lora: { rank: 4, alpha: 8 },
      schedule: { kind: "constant", warmupSteps: 0 },
      ...over.update,
    },
    eval: { everySteps: 100, episodes: 2, beforeTraining: false },
    run: { steps: 1, seed },
  });

const tool = {
  run: () => Promise.resolve({ ok: true, stdout: "R\n", error: null, timedOut: false, ms: 0 }),
};

Deno.test("RlSession", async (t) => {
  const gpu = await Gpu.create();
  const weights = initModel(modelCfg, { seed: 1 });
  const tokenizer = new ByteTokenizer();
  try {
    await t.step(
      "L0 rolls out the single-agent variant: one agent, solo prompts, no tool",
      async () => {
        const s = await RlSession.create(cfgFor("L0", 3), { gpu, weights, tokenizer });
        try {
          assertEquals(s.env.id, "plan_path_solo_v1");
          assertEquals(s.map.policies.map((p) => p.name), ["single"]);
          const { metrics, groups } = await s.trainStep();
          assertEquals(s.step, 1);
          assert(
            groups.length > 0 && groups.every((g) => g.agent === "plan"),
            "only the plan agent acts",
          );
          assert(groups.every((g) => g.samples.length === 2), "K = 2 candidates per group");
          assertEquals(Object.keys(metrics.rewardByAgent as object), ["plan"]);
          const prompt = tokenizer.decode(groups[0].samples[0].promptIds);
          assert(
            prompt.startsWith("plan_path solo t1") && !prompt.includes("tool"),
            `solo prompt: ${prompt}`,
          );
        } finally {
          s.destroy();
        }
      },
    );

    await t.step(
      "independent mode: one group per task, its members the K trajectories, each action with its trajectory's advantage",
      async () => {
        const s = await RlSession.create(
          cfgFor("L2", 3, { rollout: { mode: "independent", k: 3 } }),
          { gpu, weights, tokenizer, executor: tool },
        );
        try {
          const { metrics, groups, stats } = await s.trainStep();
          assertEquals(stats.length, 2, "one group per task (2 envs a step)");
          assertEquals(Object.keys(metrics.rewardByAgent as object), ["*"]);
          for (const [e, g] of stats.entries()) {
            const actions = groups[e].samples;
            assertEquals(
              g.members.length,
              actions.length,
              `task ${e}: every action of the task's trajectories`,
            );
            assertEquals(new Set(actions.map((a) => a.candidate)).size, 3, "K = 3 trajectories");
            assertEquals(new Set(actions.map((a) => a.agent)).size, 2, "both agents acted");
            // Actions of one trajectory share its advantage; the advantages of the three trajectories sum to 0.
            const byTraj = new Map<number, number>();
            g.members.forEach((a, i) => {
              const prev = byTraj.get(a.candidate);
              assert(
                prev === undefined || prev === g.advantages[i],
                "a trajectory's actions differ in advantage",
              );
              byTraj.set(a.candidate, g.advantages[i]);
            });
            assert(
              Math.abs([...byTraj.values()].reduce((x, y) => x + y, 0)) < 1e-9,
              `task ${e}: trajectory advantages ${[...byTraj.values()]} do not sum to 0`,
            );
          }
        } finally {
          s.destroy();
        }
      },
    );

    await t.step(
      "the lr schedule runs in RL steps: every mini-batch update of a step takes that step's lr",
      async () => {
        // The warm start, so groups have a spread (mini-batches without one are skipped).
        const cfg = cfgFor("L2", 3, {
          model: { preset: null, folder: "models/plan_path_tiny" },
          rollout: { k: 4, maxNewTokens: 12 },
          update: {
            miniBatchSize: 2,
            optimizer: { lr: 0.01 },
            schedule: { kind: "linear", warmupSteps: 1 },
          },
        });
        const warm = await loadBase(cfg);
        const s = await RlSession.create(cfg, {
          gpu,
          weights: warm.weights,
          tokenizer: warm.tokenizer,
          executor: tool,
        });
        try {
          for (const want of [0, 0.01]) { // RL step 1: warmup's lr·0; step 2: the full lr
            const { metrics } = await s.trainStep();
            const lrs = (metrics.updates as { lr: number }[]).map((u) => u.lr);
            assert(lrs.length >= 3, `only ${lrs.length} updates: the check needs several per step`);
            assert(
              lrs.every((lr) => Math.abs(lr - want) < 1e-12),
              `step ${metrics.step}: lrs ${lrs}, expected all ${want}`,
            );
          }
        } finally {
          s.destroy();
        }
      },
    );

    await t.step(
      "warm starts: a checkpoint's adapters, or one PEFT adapter in every role",
      async () => {
        const a = await RlSession.create(cfgFor("L2", 3), {
          gpu,
          weights,
          tokenizer,
          executor: tool,
        });
        const contents = await a.checkpointContents();
        a.destroy();
        const ck = await readCheckpoint(memoryFolder(await checkpointFiles(contents)), {
          base: modelCfg,
        });
        // Modules come in any order: match them by (layer, module).
        const sameModules = (x: typeof ck.adapters[string], y: typeof ck.adapters[string]) =>
          x.modules.length === y.modules.length &&
          x.modules.every((m) => {
            const o = y.modules.find((n) => n.layer === m.layer && n.module === m.module);
            return o !== undefined && m.a.every((v, j) => Object.is(v, o.a[j])) &&
              m.b.every((v, j) => Object.is(v, o.b[j]));
          });
        // Another seed initialises LoRA A differently: only a working warm start makes them equal.
        const fresh = await RlSession.create(cfgFor("L2", 4), {
          gpu,
          weights,
          tokenizer,
          executor: tool,
        });
        const freshCk = await fresh.checkpointContents();
        fresh.destroy();
        assert(
          !sameModules(freshCk.adapters!["base.tool"].adapter, ck.adapters["base.tool"]),
          "seeds 3 and 4 give the same adapters: the check below would be vacuous",
        );

        const b = await RlSession.create(cfgFor("L2", 4), {
          gpu,
          weights,
          tokenizer,
          executor: tool,
          warmStart: { kind: "checkpoint", checkpoint: ck },
        });
        const got = await b.checkpointContents();
        b.destroy();
        for (const name of ["base.tool", "base.plan"]) {
          assert(
            sameModules(got.adapters![name].adapter, ck.adapters[name]),
            `${name} not restored`,
          );
        }

        const c = await RlSession.create(cfgFor("L2", 4), {
          gpu,
          weights,
          tokenizer,
          executor: tool,
          warmStart: { kind: "peft-adapter", adapter: ck.adapters["base.plan"] },
        });
        const gotPeft = await c.checkpointContents();
        c.destroy();
        for (const name of ["base.tool", "base.plan"]) {
          assert(
            sameModules(gotPeft.adapters![name].adapter, ck.adapters["base.plan"]),
            `${name} is not the PEFT adapter`,
          );
        }
      },
    );

    await t.step(
      "a rollout temperature ≠ 1: the first update is on-policy (the loss reads logits/T as the sampler did)",
      async () => {
        const cfg = cfgFor("L2", 3, {
          model: { preset: null, folder: "models/plan_path_tiny" },
          rollout: { k: 4, maxNewTokens: 12, sampling: { temperature: 0.5, topP: 1, topK: 0 } },
          update: { miniBatchSize: 64, ppoEpochs: 1 },
        });
        const warm = await loadBase(cfg);
        const s = await RlSession.create(cfg, {
          gpu,
          weights: warm.weights,
          tokenizer: warm.tokenizer,
          executor: tool,
        });
        try {
          const { metrics } = await s.trainStep();
          const first =
            (metrics.updates as { approxKl: number; clipFrac: number; tokens: number }[])[0];
          assert(first.tokens > 0, "no tokens in the update");
          // old log-prob − new log-prob per token: float rounding only (0.12 here when the loss read the logits at T = 1).
          assert(
            Math.abs(first.approxKl) < 1e-3 && first.clipFrac === 0,
            `approxKl ${first.approxKl}, clip fraction ${first.clipFrac}`,
          );
        } finally {
          s.destroy();
        }
      },
    );

    // halfBase "on" (GPUs' default for LoRA): the reference holds the policy's half-float base,
    // so the start is the same policy (an f32 reference differed by ~1e-3 a token).
    const klStep = async (halfBase: "on" | "off") => {
      // The warm start, so candidates get different rewards and the policy gradient moves the
      // adapters (from a random init every group is zero-variance and nothing moves).
      const cfg = cfgFor("L2", 3, {
        model: { preset: null, folder: "models/plan_path_tiny" },
        rollout: { k: 4, maxNewTokens: 12 },
        update: { klCoef: 0.5, optimizer: { lr: 0.02 }, halfBase },
      });
      const warm = await loadBase(cfg);
      const s = await RlSession.create(cfg, {
        gpu,
        weights: warm.weights,
        tokenizer: warm.tokenizer,
        executor: tool,
      });
      try {
        assert(s.reference !== null, "no reference policy");
        const kl: number[] = [];
        let sample = null;
        for (let i = 0; i < 4; i++) {
          const o = await s.trainStep();
          kl.push(...(o.metrics.updates as { klLoss: number }[]).map((u) => u.klLoss));
          sample = o.groups.flatMap((g) => g.samples).find((m) => m.completionIds.length > 2) ??
            sample;
        }
        // Step 1 updates from the start itself (LoRA B = 0): no divergence yet; later steps have some.
        assert(Math.abs(kl[0]) < 1e-5, `first update's KL ${kl[0]}`);
        assert(kl.slice(1).some((k) => k > 1e-7) && kl.every((k) => k >= -1e-6), `KL terms ${kl}`);
        // The reference is the start (the base: LoRA B = 0) and stays frozen while the adapters move.
        const tokens = [...sample!.promptIds, ...sample!.completionIds];
        const weightsMask = tokens.slice(1).map((
          _,
          t,
        ) => (t >= sample!.promptIds.length - 1 ? 1 : 0));
        const [scored] = await s.reference!.score(0, [{
          tokens,
          adapter: 0,
          weights: weightsMask,
          advantage: 0,
        }]);
        const gen = s.policies.generators[0];
        const [base, policy] = [await gen.logprobs(tokens), await gen.logprobs(tokens, 0)];
        let moved = 0;
        weightsMask.forEach((w, t) => {
          if (!w) return assertEquals(scored.refLogp![t], 0);
          assert(
            Math.abs(scored.refLogp![t] - base[t]) < 1e-4,
            `position ${t}: reference ${scored.refLogp![t]} vs base ${base[t]}`,
          );
          moved = Math.max(moved, Math.abs(policy[t] - base[t]));
        });
        assert(moved > 1e-3, `the adapters did not move (${moved}): the frozen check is vacuous`);
        assertEquals(s.reference!.halfBase(0), halfBase === "on", "the reference's base");
      } finally {
        s.destroy();
      }
    };

    for (const halfBase of ["off", "on"] as const) {
      await t.step(
        `klCoef > 0: the k3 KL to the frozen start is in the loss (halfBase ${halfBase})`,
        () => klStep(halfBase),
      );
    }

    await t.step(
      "no sample with a learning signal: no optimizer step (no ghost update on momentum or weight decay)",
      async () => {
        // An untrained byte model writes no `####` answer in 8 tokens and its tool code (if any
        // parses) prints the same move: every candidate of every group scores alike, so every
        // advantage is 0. AdamW would still move the adapters (weight decay; momentum later on).
        const cfg = cfgFor("L2", 5, { update: { optimizer: { lr: 0.01, weightDecay: 0.1 } } });
        const s = await RlSession.create(cfg, { gpu, weights, tokenizer, executor: tool });
        try {
          const before = (await s.policies.trainers[0].readLora())!;
          const { metrics } = await s.trainStep();
          assertEquals(
            metrics.zeroVarianceGroups,
            1,
            "precondition: every group has zero variance",
          );
          assertEquals(metrics.idlePolicies, ["base"]);
          assertEquals((metrics.updates as unknown[]).length, 0, "no optimizer update ran");
          const after = (await s.policies.trainers[0].readLora())!;
          assert(
            after.every((x, i) => x === before[i]),
            "the adapters moved without a learning signal",
          );
        } finally {
          s.destroy();
        }
      },
    );

    await t.step("a team env with tool agents needs an executor", async () => {
      let err: Error | null = null;
      try {
        await RlSession.create(cfgFor("L2", 3), { gpu, weights, tokenizer });
      } catch (e) {
        err = e as Error;
      }
      assert(err?.message.includes("pass an executor"), String(err));
    });
  } finally {
    gpu.destroy();
  }
});
