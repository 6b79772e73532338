// Every shipped configs/*.json loads and validates, says what its file name says (task, level),
// stays sized for a 2-core CPU, and leaves room for the prompts an oracle episode produces.

import { assert, assertEquals } from "../assert.ts";
import { currentAgent } from "../../src/envs/api.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { loadConfigFile, type RunConfig } from "../../src/rl/config.ts";
import { promptStyleFor } from "../../src/rl/generation.ts";
import { policyMapFor } from "../../src/rl/policy_map.ts";

const DIR = new URL("../../configs/", import.meta.url);
const names = [...Deno.readDirSync(DIR)].filter((e) => e.isFile && e.name.endsWith(".json")).map((
  e,
) => e.name).sort();
const load = (name: string) => loadConfigFile(new URL(name, DIR).pathname);

/** File-name suffix → level, rollout mode and update mode it promises. */
const SUFFIX: Record<
  string,
  Pick<RunConfig, "level"> & { rollout: string; update: string | null }
> = {
  L0_single: { level: "L0", rollout: "single-agent", update: null },
  L1_shared: { level: "L1", rollout: "tree", update: null },
  L1_ppo: { level: "L1", rollout: "independent", update: null },
  L2_lora: { level: "L2", rollout: "tree", update: "lora" },
  L3_full: { level: "L3", rollout: "tree", update: "full" },
};

Deno.test("the promised task × level configs are shipped", () => {
  const want = [
    "quickstart",
    "plan_path_L1_shared",
    "plan_path_L2_lora",
    "plan_path_L3_full",
    "plan_path_L0_single",
    "sokoban_L0_single",
    "sudoku4_L0_single",
    "math_L0_single",
    "code_L0_single",
    "tic_tac_toe_L0_single",
    "sokoban_L1_shared",
    "sudoku4_L1_shared",
    "math_L1_shared",
    "code_L1_shared",
    "tic_tac_toe_L1_shared",
    "hanabi_L1_shared",
    "search_L2_lora",
    // The rest of the grid (every task at every level it has: Hanabi and Search have no single agent).
    "sokoban_L2_lora",
    "sudoku4_L2_lora",
    "math_L2_lora",
    "code_L2_lora",
    "tic_tac_toe_L2_lora",
    "hanabi_L2_lora",
    "search_L1_shared",
    "sokoban_L3_full",
    "sudoku4_L3_full",
    "math_L3_full",
    "code_L3_full",
    "tic_tac_toe_L3_full",
    "hanabi_L3_full",
    "search_L3_full",
    // PPO with a critic and GAE, one per game task (docs/ppo.md).
    "tic_tac_toe_L1_ppo",
    "hanabi_L1_ppo",
    "plan_path_L1_ppo",
    "sokoban_L1_ppo",
    "sudoku4_L1_ppo",
  ];
  for (const w of want) assert(names.includes(`${w}.json`), `configs/${w}.json is missing`);
});

Deno.test("every shipped config validates and matches its name", async () => {
  assert(names.length >= 12, `${names.length} configs`);
  for (const name of names) {
    const c = await load(name);
    const base = name.replace(/\.json$/, "");
    assertEquals(c.run.name, base);
    assert(c.description.length > 20, `${name}: describe the run`);
    // A tiny preset, or a warm start checked into models/ whose config is as small.
    const tinyFolder = c.model.folder?.startsWith("models/") &&
      JSON.parse(await Deno.readTextFile(`${c.model.folder}/config.json`)).hidden_size <= 128;
    assert(
      (c.model.preset !== null && c.model.preset.startsWith("tiny-")) || tinyFolder,
      `${name}: use a tiny preset or a tiny warm start in models/`,
    );
    policyMapFor(c); // builds for the env's agents
    if (base === "quickstart") {
      assertEquals([c.env.id, c.level, c.update.mode, c.env.difficulty.size], [
        "plan_path_v1",
        "L2",
        "lora",
        5,
      ]);
      continue;
    }
    const m = base.match(/^(.+)_(L\d_[a-z]+)$/);
    assert(
      m !== null && SUFFIX[m[2]] !== undefined,
      `${name}: name it <task>[_<variant>]_<L0_single|L1_shared|L1_ppo|L2_lora|L3_full>.json`,
    );
    const want = SUFFIX[m[2]];
    // <task> is the env's id without _v1; a variant (code_folds: the generated problems) follows it.
    const task = c.env.id.replace(/_v1$/, "");
    assert(
      m[1] === task || m[1].startsWith(`${task}_`),
      `${name}: plays ${c.env.id}, so name it ${task}[_<variant>]_${m[2]}.json`,
    );
    assertEquals([c.level, c.rollout.mode], [want.level, want.rollout], name);
    // Every task × level run starts from its task's warm start (a fresh preset writes random bytes).
    assertEquals(c.model.folder, `models/${task}_warm`, `${name}: start from models/${task}_warm`);
    if (want.update) assertEquals(c.update.mode, want.update, name);
    // PPO with a critic (docs/ppo.md) exactly where the name says so.
    assertEquals(c.update.advantage, m[2] === "L1_ppo" ? "gae" : "grpo", name);
  }
});

Deno.test("shipped configs are sized for a 2-core CPU", async () => {
  for (const name of names) {
    const c = await load(name);
    // The paper table's budget (issue 23): 8 envs × K 4 for a team, 16 × 4 for the single agent,
    // which plays both of the team's agent slots.
    const perStep = c.rollout.envsPerStep * c.rollout.k;
    assert(
      perStep <= (c.level === "L0" ? 64 : 32),
      `${name}: ${perStep} generations per agent turn`,
    );
    // 288 at most: Code's tester writes six assertions whose values reach 11 digits (≤ 281 bytes).
    assert(
      c.rollout.maxNewTokens <= 288 && c.update.chunkRows <= 1024,
      `${name}: generations too long for CPU`,
    );
    assert(c.run.steps <= 100 && c.eval.episodes <= 128, `${name}: too long a run for CPU`);
    assert(
      c.update.optimizer.lr >= 1e-4,
      `${name}: lr ${c.update.optimizer.lr} barely moves a tiny model`,
    );
  }
});

Deno.test("prompts of oracle episodes fit each config's maxPromptTokens", async () => {
  const tok = new ByteTokenizer();
  for (const name of names) {
    const c = await load(name), env = getEnv(c.env.id);
    let longest = 0;
    for (let seed = 0; seed < 8; seed++) {
      let s = env.reset(
        env.generate(c.env.trainSeed + seed, { split: "train", difficulty: c.env.difficulty }),
      );
      for (let t = 0; !s.terminated && !s.truncated && t < 40; t++) {
        const agent = currentAgent(env, s)!;
        const p = env.observe(s, agent, promptStyleFor(c.rollout.promptStyle, tok));
        const text = p.style === "compact" ? p.text : p.messages.map((m) => m.content).join("\n");
        longest = Math.max(longest, tok.encode(text, { addSpecialTokens: true }).length);
        s = env.step(s, agent, env.oracle(s, agent).action).state;
      }
    }
    assert(
      longest <= c.rollout.maxPromptTokens,
      `${name}: a ${longest}-token prompt exceeds maxPromptTokens ${c.rollout.maxPromptTokens}`,
    );
  }
});
