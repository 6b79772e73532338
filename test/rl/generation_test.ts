// Per-agent generation settings (src/rl/generation.ts): resolution order, evaluation separate
// from training, the config rules that protect the loss and the KV cache, and the prompt style.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { ConfigError, parseConfig } from "../../src/rl/config.ts";
import {
  evalGeneration,
  promptStyleFor,
  trainerTemperature,
  trainGeneration,
} from "../../src/rl/generation.ts";

const plan = (over: Record<string, unknown> = {}, sets: string[] = []) =>
  parseConfig({ env: { id: "plan_path_v1" }, level: "L3", update: { mode: "full" }, ...over }, {
    sets,
  });

function rejects(over: Record<string, unknown>, path: string, words: string, sets: string[] = []) {
  const e = assertThrows(() => plan(over, sets), "ConfigError") as ConfigError;
  assert(
    e.issues.some((i) => i.path === path && i.message.includes(words)),
    `expected ${path}: …${words}…, got ${e.message}`,
  );
}

Deno.test("an agent's rollout settings: rollout.sampling and maxNewTokens, then rollout.agents[agent]", () => {
  const c = plan({
    rollout: {
      maxNewTokens: 64,
      sampling: { temperature: 0.9, topP: 0.8, topK: 10, stop: ["</s>"] },
      agents: {
        tool: { temperature: 0.7, maxNewTokens: 48, stop: ["\n```\n"] },
        plan: { topK: 5 },
      },
    },
  });
  assertEquals(trainGeneration(c, "tool"), {
    sampling: { temperature: 0.7, topP: 0.8, topK: 10, repetitionPenalty: 1 },
    maxNewTokens: 48,
    stop: ["\n```\n"],
  });
  assertEquals(trainGeneration(c, "plan"), {
    sampling: { temperature: 0.9, topP: 0.8, topK: 5, repetitionPenalty: 1 },
    maxNewTokens: 64,
    stop: ["</s>"],
  });
  // L3: one trainer per agent, so each trainer's loss reads its own agent's temperature.
  assertEquals([trainerTemperature(c, ["tool"]), trainerTemperature(c, ["plan"])], [0.7, 0.9]);
});

Deno.test("validation settings are separate: eval fields (null = the rollout's), then eval.agents", () => {
  const c = plan({
    rollout: {
      maxNewTokens: 64,
      sampling: { topP: 0.8, topK: 10, stop: ["A"] },
      agents: { tool: { topK: 3, maxNewTokens: 32 } },
    },
    eval: { topP: 1, maxNewTokens: 40, agents: { plan: { temperature: 0.6, stop: ["B"] } } },
  });
  // Rollout overrides do not leak into validation.
  assertEquals(evalGeneration(c, "tool", 0), {
    sampling: { temperature: 0, topP: 1, topK: 10 },
    maxNewTokens: 40,
    stop: ["A"],
  });
  assertEquals(evalGeneration(c, "plan", 0), {
    sampling: { temperature: 0.6, topP: 1, topK: 10 },
    maxNewTokens: 40,
    stop: ["B"],
  });
  const d = plan();
  assertEquals(evalGeneration(d, "plan", 0.3), {
    sampling: { temperature: 0.3, topP: 0.9, topK: 20 },
    maxNewTokens: 256,
    stop: [],
  });
});

Deno.test("per-agent settings: unknown agents, budgets over the KV cache and shared-trainer temperatures are named errors", () => {
  rejects(
    { rollout: { agents: { planner: { topK: 3 } } } },
    "rollout.agents.planner",
    "agents: tool, plan",
  );
  rejects(
    { eval: { agents: { tool: { maxNewTokens: 999 } } } },
    "eval.agents.tool.maxNewTokens",
    "sizes the KV cache",
  );
  rejects({ eval: { maxNewTokens: 999 } }, "eval.maxNewTokens", "sizes the KV cache");
  rejects(
    { rollout: { agents: { tool: { temprature: 1 } } } },
    "rollout.agents",
    `unknown key "temprature"`,
  );
  rejects(
    { rollout: { agents: { tool: { topP: 0 } } } },
    "rollout.agents",
    "topP must be in (0, 1]",
  );
  rejects(
    { rollout: { agents: { tool: { stop: "x" } } } },
    "rollout.agents",
    "stop must be a list",
  );
  rejects({ rollout: { sampling: { stop: [""] } } }, "rollout.sampling.stop", "non-empty strings");
  rejects(
    { rollout: { agents: { tool: { temperature: 0 } } } },
    "rollout.agents.tool.temperature",
    "zero variance",
  );
  // L1 and L2 train every agent in one trainer: one loss temperature.
  rejects(
    { level: "L2", update: { mode: "lora" }, rollout: { agents: { tool: { temperature: 0.5 } } } },
    "rollout.agents.tool.temperature",
    "share one trainer",
  );
  plan({
    level: "L2",
    update: { mode: "lora" },
    rollout: { agents: { tool: { temperature: 1, topK: 3 } } },
  });
  // Validation temperatures are free: nothing is trained on them.
  plan({ level: "L2", update: { mode: "lora" }, eval: { agents: { tool: { temperature: 0.5 } } } });
});

Deno.test("--set takes an agent's settings as JSON, and stop lists as JSON arrays", () => {
  const c = plan({}, [
    'rollout.agents.tool={"maxNewTokens":32,"stop":["\\n\\n"]}',
    'rollout.sampling.stop=["</answer>"]',
  ]);
  assertEquals(c.rollout.agents.tool, { maxNewTokens: 32, stop: ["\n\n"] });
  assertEquals(trainGeneration(c, "plan").stop, ["</answer>"]);
  rejects({}, "rollout.agents.tool", "JSON object", ["rollout.agents.tool=fast"]);
});

Deno.test("model.hub: a Hub id replaces the preset; bad ids and a preset beside it are errors", () => {
  const c = parseConfig({ model: { hub: "Qwen/Qwen2.5-0.5B-Instruct" } });
  assertEquals([c.model.preset, c.model.folder, c.model.hub, c.model.revision], [
    null,
    null,
    "Qwen/Qwen2.5-0.5B-Instruct",
    "main",
  ]);
  // The train command's --set model.folder=DIR on a Hub config: the folder is read, the id names it.
  const d = parseConfig({ model: { preset: null, hub: "Qwen/Qwen2.5-0.5B-Instruct" } }, {
    sets: ["model.folder=/tmp/x"],
  });
  assertEquals([d.model.folder, d.model.hub], ["/tmp/x", "Qwen/Qwen2.5-0.5B-Instruct"]);
  const e = assertThrows(() => parseConfig({ model: { hub: "qwen2.5" } }), "ConfigError");
  assert(e.message.includes("owner/name"), e.message);
  const f = assertThrows(
    () => parseConfig({ model: { preset: "tiny-llama", hub: "a/b" } }),
    "ConfigError",
  );
  assert(f.message.includes("only one of model.preset and model.hub"), f.message);
});

Deno.test("prompt style auto: chat for an HF tokenizer with a template, compact for the byte tokenizer", () => {
  assertEquals(promptStyleFor("auto", new ByteTokenizer()), "compact");
  assertEquals(promptStyleFor("auto", { kind: "hf", hasChatTemplate: true }), "chat");
  assertEquals(promptStyleFor("auto", { kind: "hf", hasChatTemplate: false }), "compact");
  assertEquals(promptStyleFor("chat", new ByteTokenizer()), "chat");
  assertEquals(promptStyleFor("compact", { kind: "hf", hasChatTemplate: true }), "compact");
  assertEquals(parseConfig({}).rollout.promptStyle, "auto");
});
