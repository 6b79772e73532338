// The chat path end to end on every task, with nothing downloaded: Qwen's real tokenizer and
// chat template, random-init Qwen2.5 / Qwen3 models at reduced size with the full vocabulary
// (hf_chat_fixtures.ts), two AT-GRPO steps each (prompts rendered by the chat template,
// completions generated on the GPU, parsed and rewarded by the env, tool code run in the
// sandbox, a PPO update whenever a group's rewards differ), then a checkpoint and a resume
// that continues exactly. Random models rarely write a valid answer, so on most tasks every
// candidate scores the format penalty and the step rightly makes no update; Code's candidates
// differ (partial credit), so its steps train and it carries the resume check.

import { assert, assertEquals } from "../assert.ts";
import { currentAgent } from "../../src/envs/api.ts";
import { getEnv } from "../../src/envs/registry.ts";
import type { AnyEnvDefinition } from "../../src/envs/types.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { initModel } from "../../src/model/init.ts";
import type { Tokenizer } from "../../src/model/tokenizer.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { parseConfig, type RunConfig } from "../../src/rl/config.ts";
import { RlSession, type StepOutcome } from "../../src/rl/session.ts";
import { SandboxPool } from "../../src/sandbox/mod.ts";
import { checkpointFiles, readCheckpoint } from "../../src/train/checkpoint.ts";
import { qwenTokenizer, reducedConfig, withAnswerPrior } from "./hf_chat_fixtures.ts";

// Three tasks, one per prompt family (tool → plan grid task at L2 on the Qwen2.5 shape, the
// coder/tester pair with the resume check at L1 on the Qwen3 shape, a self-play game at L2): each
// full-vocabulary decode step costs ~0.1 s on llvmpipe, so all eight would add minutes to CI.
// test/rl/hf_configs_test.ts renders every task's chat prompts under Qwen's template.
const TASKS = ["plan_path_v1", "code_v1", "tic_tac_toe_v1"];

const cfgFor = (envId: string, level: "L1" | "L2", seed = 0): RunConfig =>
  parseConfig({
    model: { preset: null, folder: "(in memory)" },
    env: { id: envId },
    level,
    rollout: {
      k: 3,
      envsPerStep: 1,
      maxTurns: 1,
      maxPromptTokens: 48,
      maxNewTokens: 4,
      promptStyle: "auto",
    },
    rewards: { filter: "none", toolCredit: "none" },
    update: {
      mode: "lora",
      miniBatchSize: 64,
      chunkRows: 52,
      lora: { rank: 2, alpha: 4 },
      schedule: { kind: "constant", warmupSteps: 0 },
      optimizer: { lr: 1e-3 },
    },
    eval: { everySteps: 0, episodes: 1, beforeTraining: false },
    run: { steps: 2, seed },
  });

/** Token ids of the env's oracle messages in the first round of a few training tasks. */
function answerTokens(env: AnyEnvDefinition, tok: Tokenizer): number[] {
  const ids: number[] = [];
  for (let seed = 0; seed < 3; seed++) {
    let s = env.reset(env.generate(seed, { split: "train", difficulty: env.defaultDifficulty }));
    for (let i = 0; i < env.turnOrder.length && currentAgent(env, s) !== null; i++) {
      const agent = currentAgent(env, s)!, move = env.oracle(s, agent);
      ids.push(...tok.encode(move.text));
      s = env.step(s, agent, move.action).state;
    }
  }
  return ids;
}

const gpu = await Gpu.create();
// Each model with its own tokenizer (the same ids, each with its own chat template).
const tokenizers = {
  "qwen2.5-0.5b": await qwenTokenizer("qwen2.5-0.5b"),
  "qwen3-0.6b": await qwenTokenizer("qwen3-0.6b"),
};
const executor = new SandboxPool();
const base = {
  "qwen2.5-0.5b": initModel(await reducedConfig("qwen2.5-0.5b", { untied: true }), { seed: 1 }),
  "qwen3-0.6b": initModel(await reducedConfig("qwen3-0.6b", { untied: true }), { seed: 1 }),
};

function checkStep(env: AnyEnvDefinition, o: StepOutcome, cfg: RunConfig, tokenizer: Tokenizer) {
  const samples = o.groups.flatMap((g) => g.samples);
  assert(samples.length > 0, "no samples");
  for (const s of samples) {
    const prompt = tokenizer.decode(s.promptIds);
    // The head of the clipped prompt is the system message; its tail the generation prompt.
    assert(
      prompt.startsWith("<|im_start|>system\n"),
      `not a chat prompt: ${JSON.stringify(prompt.slice(0, 60))}`,
    );
    assert(
      prompt.endsWith("<|im_start|>assistant\n"),
      `no generation prompt: ${JSON.stringify(prompt.slice(-60))}`,
    );
    assert(s.completionIds.length >= 1 && s.completionIds.length <= cfg.rollout.maxNewTokens);
    assertEquals(s.oldLogp.length, s.completionIds.length);
    assertEquals(s.text, tokenizer.decode(s.completionIds, { skipSpecialTokens: true }));
    assert(Number.isFinite(s.reward), `reward ${s.reward}`);
    assert(env.possibleAgents.includes(s.agent));
  }
}

/** The update's token count: > 0 when a policy trained on the step's samples. */
const trainedTokens = (o: StepOutcome) =>
  ((o.metrics.updates ?? []) as { tokens?: number }[]).reduce((a, u) => a + (u.tokens ?? 0), 0);
/** Whether some group's candidates earned different rewards (a non-zero advantage to train on). */
const hasSpread = (o: StepOutcome) =>
  o.groups.some((g) => new Set(g.samples.map((x) => x.reward)).size > 1);

type Contents = Awaited<ReturnType<RlSession["checkpointContents"]>>;
/** Largest difference between the LoRA tensors of two checkpoints (Infinity if their modules differ). */
function adapterDiff(x: Contents, y: Contents): number {
  let worst = 0;
  for (const [name, { adapter }] of Object.entries(x.adapters ?? {})) {
    const other = y.adapters?.[name]?.adapter;
    if (!other || other.modules.length !== adapter.modules.length) return Infinity;
    for (const m of adapter.modules) {
      const o = other.modules.find((n) => n.layer === m.layer && n.module === m.module);
      if (!o) return Infinity;
      m.a.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - o.a[j]))));
      m.b.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - o.b[j]))));
    }
  }
  return worst;
}

const texts = (o: StepOutcome) =>
  o.groups.flatMap((g) => g.samples.map((x) => `${g.key}:${x.candidate}:${x.text}:${x.reward}`));

Deno.test("chat path: two AT-GRPO steps per prompt family with Qwen's tokenizer and full-vocabulary Qwen models, then checkpoint and resume", async (t) => {
  let trainedTasks = 0;
  try {
    for (const [i, id] of TASKS.entries()) {
      await t.step(id, async () => {
        const env = getEnv(id), arch = i % 2 === 0 ? "qwen2.5-0.5b" : "qwen3-0.6b";
        const tokenizer = tokenizers[arch];
        const weights: ModelWeights = withAnswerPrior(base[arch], answerTokens(env, tokenizer));
        const cfg = cfgFor(id, i % 2 === 0 ? "L2" : "L1");
        const s = await RlSession.create(cfg, { gpu, weights, tokenizer, executor });
        try {
          const first = await s.trainStep();
          // Code (whose random candidates differ in reward, so its steps train) also checks resume:
          // a checkpoint after step 1, reloaded, must give step 2 exactly.
          const ck = id === "code_v1" ? await s.checkpointContents() : null;
          const second = await s.trainStep();
          for (const o of [first, second]) {
            checkStep(env, o, cfg, tokenizer);
            assertEquals(
              trainedTokens(o) > 0,
              hasSpread(o),
              `step ${o.metrics.step}: an update must run exactly when a group has a reward spread`,
            );
          }
          if (trainedTokens(first) + trainedTokens(second) > 0) trainedTasks++;
          if (ck) {
            const loaded = await readCheckpoint(memoryFolder(await checkpointFiles(ck)), {
              base: weights.config,
            });
            const r = await RlSession.create(cfg, {
              gpu,
              weights,
              tokenizer,
              executor,
              resume: loaded,
            });
            try {
              assertEquals(r.step, 1);
              const again = await r.trainStep();
              assertEquals(
                texts(again),
                texts(second),
                "the resumed step 2 sampled other text or earned other rewards",
              );
              assert(
                trainedTokens(second) > 0,
                "the resume check needs a step that trains (pick another seed)",
              );
              const diff = adapterDiff(await r.checkpointContents(), await s.checkpointContents());
              assert(diff <= 1e-6, `adapters after the resumed step 2 differ by ${diff}`);
            } finally {
              r.destroy();
            }
          }
        } finally {
          s.destroy();
        }
      });
    }
    assert(
      trainedTasks >= 1,
      `${trainedTasks} task(s) had a group with a reward spread: the update path went untested`,
    );
  } finally {
    await executor.close();
  }
});
