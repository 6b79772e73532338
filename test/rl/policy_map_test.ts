// Specialization levels → policies: which trainer and adapter each agent's samples use, per level,
// and the refusals of level/mode pairs that cannot be built.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { defaultConfig, parseConfig } from "../../src/rl/config.ts";
import { halfBaseFor } from "../../src/rl/policies.ts";
import { initModel } from "../../src/model/init.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import {
  buildPolicyMap,
  loraConfigFor,
  type PolicyMap,
  policyMapFor,
  policyOf,
} from "../../src/rl/policy_map.ts";

const AGENTS = ["tool", "plan"] as const;

/** Every agent maps to exactly one policy, and that policy lists it. */
function coversAgents(map: PolicyMap, agents: readonly string[]): void {
  for (const a of agents) {
    const owners = map.policies.filter((p) => p.agents.includes(a));
    assertEquals(owners.length, 1, `${a} in ${owners.length} policies`);
    assertEquals(policyOf(map, a), owners[0]);
  }
  for (const p of map.policies) {
    assert(p.trainer >= 0 && p.trainer < map.trainers.length, `${p.name}: trainer ${p.trainer}`);
    const t = map.trainers[p.trainer];
    if (t.mode === "lora") {
      assert(
        p.adapter !== null && t.adapters[p.adapter] !== undefined,
        `${p.name}: adapter ${p.adapter}`,
      );
    } else assertEquals(p.adapter, null);
  }
}

Deno.test("L0: one policy plays every turn with single-agent prompts", () => {
  const m = buildPolicyMap("L0", "lora", AGENTS);
  assertEquals([m.singleAgent, m.trainers, m.policies.length], [true, [{
    name: "single",
    mode: "lora",
    adapters: ["single"],
  }], 1]);
  assertEquals(m.policies[0], { name: "single", agents: ["tool", "plan"], trainer: 0, adapter: 0 });
  coversAgents(m, AGENTS);
  assertEquals(buildPolicyMap("L0", "full", AGENTS).policies[0].adapter, null);
});

Deno.test("L1: one shared policy for all roles", () => {
  const lora = buildPolicyMap("L1", "lora", AGENTS), full = buildPolicyMap("L1", "full", AGENTS);
  assertEquals([lora.singleAgent, lora.policies.length, lora.trainers[0].adapters], [false, 1, [
    "shared",
  ]]);
  assertEquals([policyOf(lora, "tool"), policyOf(lora, "plan")].map((p) => [p.name, p.adapter]), [[
    "shared",
    0,
  ], ["shared", 0]]);
  assertEquals(full.trainers, [{ name: "shared", mode: "full", adapters: [] }]);
  coversAgents(lora, AGENTS);
  coversAgents(full, AGENTS);
});

Deno.test("L2: frozen shared base, one LoRA adapter per agent", () => {
  const m = buildPolicyMap("L2", "lora", AGENTS);
  assertEquals(m.trainers, [{ name: "base", mode: "lora", adapters: ["tool", "plan"] }]);
  assertEquals(m.policies.map((p) => [p.name, p.agents, p.trainer, p.adapter]), [[
    "tool",
    ["tool"],
    0,
    0,
  ], ["plan", ["plan"], 0, 1]]);
  coversAgents(m, AGENTS);
  const err = assertThrows(
    () => buildPolicyMap("L2", "full", AGENTS),
    "ConfigError",
    "one LoRA adapter per agent",
  );
  assertEquals((err as { path?: string }).path, "update.mode");
});

Deno.test("L3: one full model per agent", () => {
  const m = buildPolicyMap("L3", "full", AGENTS);
  assertEquals(m.trainers, [{ name: "tool", mode: "full", adapters: [] }, {
    name: "plan",
    mode: "full",
    adapters: [],
  }]);
  assertEquals(m.policies.map((p) => [p.name, p.trainer, p.adapter]), [["tool", 0, null], [
    "plan",
    1,
    null,
  ]]);
  coversAgents(m, AGENTS);
  assertThrows(
    () => buildPolicyMap("L3", "lora", AGENTS),
    "ConfigError",
    "one full model per agent",
  );
});

Deno.test("bad inputs are refused", () => {
  assertThrows(() => buildPolicyMap("L1", "lora", []), "ConfigError", "no agents");
  assertThrows(() => buildPolicyMap("L2", "lora", ["a", "a"]), "ConfigError", "repeat");
  assertThrows(() => buildPolicyMap("L5" as "L1", "lora", AGENTS), "ConfigError", "L5");
  assertThrows(
    () => policyOf(buildPolicyMap("L1", "lora", AGENTS), "coder"),
    "RangeError",
    "tool, plan",
  );
});

Deno.test("policy maps of configs use the env's agents; LoRA settings follow the config", () => {
  const l2 = parseConfig({
    env: { id: "code_v1" },
    update: { lora: { rank: 4, alpha: 8, targets: ["q", "v"] } },
  });
  const m = policyMapFor(l2);
  assertEquals(m.trainers[0].adapters, ["coder", "tester"]);
  assertEquals(loraConfigFor(l2, m.trainers[0]), {
    rank: 4,
    alpha: 8,
    targets: ["q", "v"],
    adapters: ["coder", "tester"],
  });
  const l3 = parseConfig({ env: { id: "math_v1" }, level: "L3", update: { mode: "full" } });
  const m3 = policyMapFor(l3);
  assertEquals(m3.trainers.map((t) => t.name), ["tool", "reasoner"]);
  assertEquals(loraConfigFor(l3, m3.trainers[0]), undefined);
  const ttt = policyMapFor(parseConfig({ env: { id: "tic_tac_toe_v1" }, level: "L1" }));
  assertEquals(ttt.policies[0].agents, ["player_x", "player_o"]);
});

Deno.test("update.halfBase: auto is a GPU's LoRA trainers of the Llama family; on and off as said", async () => {
  const load = async (name: string) =>
    initModel(
      parseModelConfig(
        JSON.parse(
          await Deno.readTextFile(new URL(`../../configs/models/${name}.json`, import.meta.url)),
        ),
      ),
      { seed: 1 },
    );
  const llama = await load("tiny-llama"), gpt2 = await load("tiny-gpt2");
  const cfg = (h: string) =>
    parseConfig({ ...defaultConfig(), update: { ...defaultConfig().update, halfBase: h } });
  const auto = cfg("auto");
  assertEquals(halfBaseFor(auto, "lora", "gpu", llama), true);
  assertEquals(halfBaseFor(auto, "lora", "cpu", llama), false);
  assertEquals(halfBaseFor(auto, "full", "gpu", llama), false);
  assertEquals(halfBaseFor(auto, "lora", "gpu", gpt2), false);
  assertEquals(halfBaseFor(cfg("on"), "lora", "cpu", llama), true);
  assertEquals(halfBaseFor(cfg("on"), "full", "gpu", llama), false);
  assertEquals(halfBaseFor(cfg("off"), "lora", "gpu", llama), false);
});
