// Multi-turn token bookkeeping on a real tokenizer (Qwen's, through transformers.js) and a
// full-vocabulary Qwen2.5-shaped model: the ids a sample trains on are exactly the ids the
// generator sampled (never the decoded text encoded again), and every token the model did not
// generate (the chat template, the task, the partner's output, the tool's output, the history)
// is masked out of the loss. Stop strings end a completion at the token that completes them.

import { assert, assertEquals } from "../assert.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  type GenerateOptions,
  type GenerateRequest,
  type GenerateResult,
  Generator,
} from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { rolloutTree, type Sample } from "../../src/rl/rollout.ts";
import { toSequence } from "../../src/rl/session.ts";
import { SandboxPool } from "../../src/sandbox/mod.ts";
import { qwenTokenizer, reducedConfig, withAnswerPrior } from "./hf_chat_fixtures.ts";

Deno.test("chat rollouts: trained ids are the sampled ids; prompt, partner and tool tokens are masked; stop strings cut at their token", async () => {
  const env = getEnv("plan_path_v1");
  const tokenizer = await qwenTokenizer();
  // Move letters and the #### marker made likely, so plan answers parse and tool prompts get them.
  const prior = tokenizer.encode('#### U D L R U D L R\n```javascript\nconsole.log("R D")\n```');
  const weights = withAnswerPrior(
    initModel(await reducedConfig("qwen2.5-0.5b", { untied: true }), { seed: 3 }),
    prior,
  );
  const gpu = await Gpu.create();
  const model = await GpuModel.create(gpu, weights, { slots: 4, maxLen: 200 });
  const generator = await Generator.create(model);
  const executor = new SandboxPool();
  // The real generator, recording what it returned (every request and result, in order).
  const sampled: { req: GenerateRequest; res: GenerateResult }[] = [];
  const recording = {
    async generate(
      reqs: readonly GenerateRequest[],
      opts?: Pick<GenerateOptions, "onFinish" | "decode">,
    ) {
      const out = await generator.generate(reqs, opts);
      out.forEach((res, i) => sampled.push({ req: reqs[i], res }));
      return out;
    },
  };
  try {
    const tasks = [env.generate(5, { split: "train", difficulty: env.defaultDifficulty })];
    const stop = " R";
    const r = await rolloutTree(
      { env, tokenizer, policyOf: () => ({ generator: recording }), executor },
      tasks,
      {
        mode: "tree",
        K: 2,
        alpha: 1,
        maxNewTokens: 6,
        sampling: { temperature: 1, topP: 1, topK: 0 },
        style: "chat",
        seed: 11,
        step: 1,
        maxTurns: 2,
        toolCredit: "none",
        maxPromptTokens: 192,
        generationOf: (agent) => ({
          sampling: { temperature: 1, topP: 1, topK: 0 },
          maxNewTokens: 6,
          stop: agent === "plan" ? [stop] : [],
        }),
      },
    );
    const samples: Sample[] = r.groups.flatMap((g) => g.samples);
    assertEquals(r.groups.map((g) => `${g.agent}@${g.turn}`), [
      "tool@0",
      "plan@0",
      "tool@1",
      "plan@1",
    ]);
    assertEquals(
      samples.length,
      sampled.length,
      "one generator result per sample (no lookahead here)",
    );

    let drift = 0;
    for (const [j, s] of samples.entries()) {
      const { req, res } = sampled[j];
      // Exactly the sampled ids and their sampling-time log-probs, after exactly the prompt ids sent.
      assertEquals(s.completionIds, res.ids);
      assertEquals(s.oldLogp, res.logprobs);
      assertEquals(s.promptIds, [...req.prompt]);
      if (tokenizer.encode(s.text).join() !== s.completionIds.join()) drift++;
      // The training sequence: prompt then completion; loss weight 1 exactly on predicting completion tokens.
      const q = toSequence(s, 1, null)!;
      const P = s.promptIds.length, C = s.completionIds.length;
      assertEquals(q.tokens, [...s.promptIds, ...s.completionIds]);
      assertEquals(q.weights, [...new Array(P - 1).fill(0), ...new Array(C).fill(1)]);
      assertEquals(q.oldLogp!.slice(P - 1), s.oldLogp);
      // The old log-probs are of these very ids: a forward over prompt + completion gives them
      // again (checked on each group's first candidate; a forward over 152k logits a row is slow here).
      const lp = s.candidate === 0 ? await generator.logprobs(q.tokens) : new Float32Array(0);
      for (let t = 0; t < lp.length && t < C; t++) {
        assert(
          Math.abs(lp[P - 1 + t] - s.oldLogp[t]) < 2e-3,
          `sample ${j} token ${t}: log p ${lp[P - 1 + t]} vs sampled ${s.oldLogp[t]}`,
        );
      }
      // Stop strings: the plan agent's completion ends at the token that completes " R".
      if (
        s.agent === "plan" && res.finish === "stop" &&
        !tokenizer.stopIds.includes(s.completionIds[C - 1])
      ) {
        assert(
          s.text.includes(stop) &&
            !tokenizer.decode(s.completionIds.slice(0, -1), { skipSpecialTokens: true }).includes(
              stop,
            ),
          `stop at the wrong token: ${JSON.stringify(s.text)}`,
        );
      }
    }
    assert(
      samples.some((s) => s.agent === "plan" && s.text.includes(stop)),
      "no plan completion hit the stop string: the stop check was vacuous",
    );
    // Text → ids is not the inverse of ids → text for sampled ids: training on re-encoded text would drift.
    assert(
      drift > 0,
      "every completion re-encoded to its own ids: the drift this guards against did not show",
    );

    // Turn 2: the plan agent's prompt carries the tool's output and both agents' history, all masked.
    const plan2 = samples.find((s) => s.agent === "plan" && s.turn === 1)!,
      tool2 = samples.find((s) => s.agent === "tool" && s.turn === 1)!;
    const planPrompt = tokenizer.decode(plan2.promptIds),
      toolPrompt = tokenizer.decode(tool2.promptIds);
    assert(
      planPrompt.startsWith("<|im_start|>system\nYou are the plan agent"),
      planPrompt.slice(0, 80),
    );
    assert(
      /Tool output: (?!none yet)/.test(planPrompt),
      "the plan prompt does not show the tool's output",
    );
    assert(
      /History:\nt1 /.test(toolPrompt) && toolPrompt.endsWith("<|im_start|>assistant\n"),
      "the turn-2 tool prompt lacks the history",
    );
    const q = toSequence(plan2, 1, null)!;
    assertEquals(q.weights!.slice(0, plan2.promptIds.length - 1).every((w) => w === 0), true);
  } finally {
    await executor.close();
    model.destroy();
  }
});
