// Agents served by an OpenAI-compatible endpoint (config model.endpoint / model.endpoints), with
// our own server (src/serve) as the real component on a free port: greedy evaluation through the
// endpoint equals evaluation in process (the same successes per task and the same transcripts),
// and in a training step with the tool agent as an endpoint partner only the plan agent's samples
// reach the update; the config checks endpoint URLs and agent names.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { ConfigError, parseConfig } from "../../src/rl/config.ts";
import { envForConfig } from "../../src/rl/env_for.ts";
import { evaluate } from "../../src/rl/evaluate.ts";
import { createPolicies } from "../../src/rl/policies.ts";
import { policyMapFor } from "../../src/rl/policy_map.ts";
import { RlSession } from "../../src/rl/session.ts";
import { loadBase } from "../../src/rl/train.ts";
import { SandboxPool } from "../../src/sandbox/mod.ts";
import type { TrainSequence } from "../../src/train/trainer.ts";
import { createModelServer, startServer } from "../../src/serve/server.ts";

const difficulty = { size: 5, wallDensity: 0.2, maxTurns: 2, toolWidth: 19 };

const evalCfg = (sets: string[] = []) =>
  parseConfig({
    model: { preset: null, folder: "models/plan_path_warm" },
    env: { id: "plan_path_v1", difficulty },
    level: "L1",
    rollout: { k: 2, envsPerStep: 2, maxTurns: 1, maxPromptTokens: 192, maxNewTokens: 64 },
    update: {
      mode: "lora",
      chunkRows: 256,
      lora: { rank: 4, alpha: 8 },
      schedule: { warmupSteps: 0 },
    },
    eval: { episodes: 5 },
    run: { steps: 0 },
  }, { sets });

Deno.test("config: model.endpoint and model.endpoints are checked", () => {
  assertEquals(evalCfg().model.endpoint, null);
  assertEquals(evalCfg().model.endpoints, {});
  assertEquals(evalCfg(["model.endpoints.tool=http://127.0.0.1:9"]).model.endpoints, {
    tool: "http://127.0.0.1:9",
  });
  assertEquals(evalCfg(['model.endpoints={"plan":"https://h/v1"}']).model.endpoints, {
    plan: "https://h/v1",
  });
  assertThrows(
    () => evalCfg(["model.endpoint=localhost:8000"]),
    "ConfigError",
    "not an http(s) URL",
  );
  assertThrows(
    () => evalCfg(["model.endpoints.tool=ftp://x"]),
    "ConfigError",
    "not an http(s) URL",
  );
  assertThrows(
    () => evalCfg(["model.endpoints.tol=http://x"]),
    "ConfigError",
    'has no agent "tol" (did you mean "tool"?)',
  );
  assertThrows(
    () => evalCfg(["model.endpointPrompt=tokens"]),
    "ConfigError",
    "model.endpointPrompt",
  );
});

Deno.test("endpoint agents: greedy eval through our server equals eval in process; a partner endpoint is never trained", async (t) => {
  const base = evalCfg();
  const { weights, tokenizer } = await loadBase(base);
  const gpu = await Gpu.create();
  const srv = await createModelServer(gpu, weights, tokenizer, {
    id: "plan_path_warm",
    maxBatch: 8,
    maxLen: 256,
    windowMs: 20,
  });
  const running = startServer(srv.handler);
  const executor = new SandboxPool();
  try {
    await t.step("eval: the same successes and transcripts (prompts as text)", async () => {
      const env = envForConfig(base);
      const run = async (cfg: typeof base) => {
        const policies = await createPolicies(gpu, cfg, policyMapFor(cfg), { weights }, tokenizer);
        try {
          return {
            r: await evaluate({ env, tokenizer, policies, executor }, cfg),
            requests: [...policies.endpoints.values()].reduce((a, e) => a + e.requests, 0),
          };
        } finally {
          policies.destroy();
        }
      };
      const local = await run(base);
      const calls = srv.queue.generationCalls;
      const remote = await run(evalCfg([`model.endpoint=${running.url}`]));
      assertEquals(local.requests, 0);
      assert(
        remote.requests >= 10,
        `the endpoint answered the agents' requests (${remote.requests})`,
      );
      assert(srv.queue.generationCalls > calls, "our server generated");
      assert(
        srv.queue.generationCalls - calls < remote.requests,
        `requests were batched: ${srv.queue.batchSizes.slice(calls)}`,
      );
      assertEquals(remote.r.successes, local.r.successes);
      assertEquals(remote.r.rewardByAgent, local.r.rewardByAgent);
      assertEquals(
        remote.r.samples.map((e) => e.transcript),
        local.r.samples.map((e) => e.transcript),
      );
      assert(
        local.r.successes.some((s) => s === 1),
        `the warm model solves some tasks: ${local.r.successes}`,
      );
    });

    await t.step(
      "training with the tool as an endpoint partner (prompts as ids): only plan samples enter the update",
      async () => {
        const cfg = parseConfig({
          model: {
            preset: null,
            folder: "models/plan_path_warm",
            endpoints: { tool: `${running.url}/v1` },
            endpointPrompt: "ids",
          },
          env: { id: "plan_path_v1", difficulty: { ...difficulty, maxTurns: 1 } },
          level: "L1",
          rollout: { k: 2, envsPerStep: 2, maxTurns: 1, maxPromptTokens: 192, maxNewTokens: 48 },
          update: {
            mode: "lora",
            miniBatchSize: 8,
            chunkRows: 256,
            lora: { rank: 4, alpha: 8 },
            schedule: { kind: "constant", warmupSteps: 0 },
          },
          rewards: { toolCredit: "none" },
          eval: { everySteps: 100, episodes: 2, beforeTraining: false },
          run: { steps: 1, seed: 1 },
        });
        const tool = {
          run: () =>
            Promise.resolve({ ok: true, stdout: "R\n", error: null, timedOut: false, ms: 0 }),
        };
        const s = await RlSession.create(cfg, { gpu, weights, tokenizer, executor: tool });
        try {
          assertEquals(s.policies.endpointAgents, ["tool"]);
          const trained: TrainSequence[] = [];
          const trainer = s.policies.trainers[0], step = trainer.step.bind(trainer);
          trainer.step = (batch, o) => (trained.push(...batch), step(batch, o));
          const calls = srv.queue.generationCalls;
          const { metrics, groups } = await s.trainStep();
          assert(srv.queue.generationCalls > calls, "the tool's candidates came from the server");
          const key = (ids: readonly number[]) => ids.join(",");
          const of = (agent: string) =>
            new Set(
              groups.filter((g) => g.agent === agent).flatMap((g) =>
                g.samples.map((x) => key([...x.promptIds, ...x.completionIds]))
              ),
            );
          const toolSeqs = of("tool"), planSeqs = of("plan");
          assert(toolSeqs.size > 0 && planSeqs.size > 0, "both agents acted");
          assertEquals(
            metrics.endpointSamples,
            groups.filter((g) => g.agent === "tool").reduce((a, g) => a + g.samples.length, 0),
          );
          for (const q of trained) {
            assert(!toolSeqs.has(key(q.tokens)), "a tool sample reached the update");
            assert(planSeqs.has(key(q.tokens)), "every trained sequence is a plan sample");
          }
          assert(trained.length > 0, "the plan agent's samples trained the shared adapter");
          assertEquals(metrics.idlePolicies, []);
        } finally {
          s.destroy();
        }
      },
    );

    await t.step("a run where every agent is an endpoint has nothing to train", async () => {
      const cfg = evalCfg([`model.endpoint=${running.url}`, "run.steps=1"]);
      const err = await RlSession.create(cfg, { gpu, weights, tokenizer, executor }).then(
        () => null,
        (e) => e,
      );
      assert(
        err instanceof ConfigError && err.message.includes("nothing is left to train"),
        String(err),
      );
    });
  } finally {
    await executor.close();
    await running.shutdown();
    srv.destroy();
    gpu.destroy();
  }
});
