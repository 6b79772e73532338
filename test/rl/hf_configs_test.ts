// configs/hf/: every task at L1 and L2 for SmolLM2-135M-Instruct and Qwen2.5-0.5B-Instruct,
// each naming its Hub model, chat prompts and the paper's released settings, and each sized so
// that the chat prompts of oracle episodes (Qwen's tokenizer and chat template) fit.

import { assert, assertEquals } from "../assert.ts";
import { currentAgent } from "../../src/envs/api.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { loadConfigFile, type RunConfig } from "../../src/rl/config.ts";
import { qwenTokenizer } from "./hf_chat_fixtures.ts";

const DIR = new URL("../../configs/hf/", import.meta.url);
const TASKS = [
  "plan_path",
  "sokoban",
  "sudoku4",
  "math",
  "code",
  "search",
  "tic_tac_toe",
  "hanabi",
];
const MODELS: Record<string, string> = {
  "smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct",
  "qwen2.5-0.5b": "Qwen/Qwen2.5-0.5B-Instruct",
};
const names = TASKS.flatMap((t) =>
  ["L1", "L2"].flatMap((l) => Object.keys(MODELS).map((m) => `${t}_${l}_${m}.json`))
);
const load = (name: string, sets: string[] = []) =>
  loadConfigFile(new URL(name, DIR).pathname, sets);

Deno.test("configs/hf holds <task>_<level>_<model>.json for every task, L1 and L2, both models, and nothing else", () => {
  const files = [...Deno.readDirSync(DIR)].filter((e) => e.name.endsWith(".json")).map((e) =>
    e.name
  ).sort();
  assertEquals(files, [...names].sort());
});

Deno.test("each names its Hub model, chat prompts and the paper's settings; --set model.folder reads a local copy", async () => {
  for (const name of names) {
    const [task, level, model] = name.replace(/\.json$/, "").split(/_(L[12])_/);
    const c: RunConfig = await load(name);
    assertEquals([c.model.preset, c.model.folder, c.model.hub], [null, null, MODELS[model]], name);
    assertEquals([c.env.id, c.level, c.rollout.promptStyle], [`${task}_v1`, level, "chat"], name);
    assertEquals([c.rollout.mode, c.rollout.k, c.rollout.envsPerStep * c.rollout.k], [
      "tree",
      4,
      128,
    ], `${name}: K 4, global batch 128`);
    assertEquals(c.rollout.sampling, {
      temperature: 1,
      topP: 0.9,
      topK: 20,
      repetitionPenalty: 1,
      stop: [],
    }, name);
    assertEquals(c.update.loss, {
      clipLow: 0.2,
      clipHigh: 0.2,
      dualClip: 3,
      aggregation: "token-mean",
    }, name);
    assertEquals(
      [c.update.ppoEpochs, c.update.miniBatchSize, c.update.optimizer.maxGradNorm, c.update.klCoef],
      [1, 64, 1, 0],
      name,
    );
    assertEquals(c.update.schedule, { kind: "cosine", warmupSteps: 10, minRatio: 0.3 }, name);
    assertEquals([c.rewards.alpha, c.eval.everySteps], [1, 10], name);
    if (level === "L2") {
      assertEquals(
        [c.update.mode, c.update.lora.rank, c.update.lora.alpha],
        ["lora", 16, 32],
        name,
      );
    } else assertEquals([c.update.mode, c.update.optimizer.lr], ["full", 5e-6], name);
    assertEquals(
      c.eval.temperature,
      task === "code" || task === "math" ? 0.6 : 0,
      `${name}: greedy planning, 0.6 code/math`,
    );
    const local = await load(name, ["model.folder=models/plan_path_warm", "run.steps=1"]);
    assertEquals([local.model.folder, local.model.hub, local.run.steps], [
      "models/plan_path_warm",
      MODELS[model],
      1,
    ]);
  }
});

Deno.test("chat prompts of oracle episodes fit each config's maxPromptTokens under Qwen's chat template", async () => {
  const tok = await qwenTokenizer();
  const longest = new Map<string, number>();
  for (const task of TASKS) {
    const c = await load(`${task}_L2_qwen2.5-0.5b.json`), env = getEnv(c.env.id);
    let most = 0;
    for (let seed = 0; seed < 3; seed++) {
      let s = env.reset(
        env.generate(c.env.trainSeed + seed, { split: "train", difficulty: c.env.difficulty }),
      );
      for (let t = 0; !s.terminated && !s.truncated && s.turn < c.rollout.maxTurns && t < 40; t++) {
        const agent = currentAgent(env, s)!, p = env.observe(s, agent, "chat");
        assert(
          p.style === "chat" && p.messages[0].role === "system" && p.messages[1].role === "user",
          `${task}: system + user messages`,
        );
        most = Math.max(most, tok.encodeChat(p.messages, { addGenerationPrompt: true }).length);
        s = env.step(s, agent, env.oracle(s, agent).action).state;
      }
    }
    longest.set(task, most);
    for (const m of Object.keys(MODELS)) {
      for (const l of ["L1", "L2"]) {
        const max = (await load(`${task}_${l}_${m}.json`)).rollout.maxPromptTokens;
        assert(most <= max, `${task}: a ${most}-token chat prompt exceeds maxPromptTokens ${max}`);
      }
    }
  }
  assert(
    [...longest.values()].every((n) => n > 100),
    `chat prompts too short to be real: ${JSON.stringify([...longest])}`,
  );
});
