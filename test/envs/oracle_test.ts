// Every generated task is solvable: the oracle solves 1,000 train seeds (and 200 test seeds) of
// each env in-process, its texts parse back to the actions it claims, and on a sample its tool
// programs, actually executed, print what the oracle computed natively.

import { assert, assertEquals } from "../assert.ts";
import { act, currentAgent } from "../../src/envs/api.ts";
import { ENVS, getEnv } from "../../src/envs/registry.ts";
import type { AnyEnvDefinition, EnvState, Split } from "../../src/envs/types.ts";
import { trustedExecutor } from "./trusted_executor.ts";

/**
 * Hanabi is a hidden-information game: not every deal can be won, so it is scored, not solved.
 * Tic-tac-toe solo succeeds by beating its scripted opponent, which not every task allows: its
 * oracle's win rate is measured in solo_test.ts.
 */
const GAMES = new Set(["hanabi_v1", "tic_tac_toe_v1", "tic_tac_toe_solo_v1"]);

/** The action a text stands for, without tool execution results (those are checked below). */
function strip(action: unknown): unknown {
  if (typeof action === "object" && action !== null && "execution" in action) {
    return { ...action, execution: null };
  }
  return action;
}

/** Plays the oracle from reset, checking at each step that its text parses to its action. */
function oracleEpisode(env: AnyEnvDefinition, seed: number, split: Split): EnvState {
  const task = env.generate(seed, { split });
  let s: EnvState = env.reset(task);
  while (currentAgent(env, s) !== null) {
    const agent = currentAgent(env, s)!;
    const move = env.oracle(s, agent);
    const parsed = env.parseAction(agent, move.text);
    assert(parsed.ok, `${env.id} seed ${seed}: oracle text does not parse: ${move.text}`);
    assertEquals(
      parsed.action,
      strip(move.action),
      `${env.id} seed ${seed}: text and action differ`,
    );
    const r = env.step(s, agent, move.action);
    assert(
      r.info.invalid === undefined,
      `${env.id} seed ${seed}: oracle move was invalid: ${JSON.stringify(r.info.invalid)}`,
    );
    s = r.state;
  }
  assertEquals(env.solve(task).finalState, s, `${env.id}: solve() differs from the oracle rollout`);
  return s;
}

for (const env of ENVS.filter((e) => !GAMES.has(e.id))) {
  Deno.test(`${env.id}: the oracle solves 1000 train + 200 test seeds`, () => {
    for (const [split, n] of [["train", 1000], ["test", 200]] as const) {
      for (let seed = 0; seed < n; seed++) {
        assert(
          env.success(oracleEpisode(env, seed, split)),
          `${env.id} ${split} seed ${seed} not solved`,
        );
      }
    }
  });
}

Deno.test("tic_tac_toe_v1: oracle self-play realises the minimax value of 1000 openings", async () => {
  const { value, boardOf } = await import("../../src/envs/tic_tac_toe/rules.ts");
  const env = getEnv("tic_tac_toe_v1");
  for (let seed = 0; seed < 1000; seed++) {
    const task = env.generate(seed, { split: seed % 5 ? "train" : "test" });
    const s = oracleEpisode(env, seed, seed % 5 ? "train" : "test") as EnvState & {
      winner: string;
    };
    assert(env.success(s));
    // Perfect play realises the game-theoretic value of the opening.
    const v = value(boardOf(task.opening)), mover = task.opening.length % 2 === 0 ? "x" : "o";
    const expected = v === 0 ? "draw" : v > 0 ? mover : mover === "x" ? "o" : "x";
    assertEquals(s.winner, expected, `opening ${task.opening}`);
  }
});

Deno.test("hanabi_v1: the scripted oracle plays 1000 legal games and scores well", () => {
  const env = getEnv("hanabi_v1");
  let total = 0, perfect = 0, bombs = 0;
  for (let seed = 0; seed < 1000; seed++) {
    const s = oracleEpisode(env, seed, "train") as EnvState & {
      table: { score: number; bombed: boolean };
    };
    assert(s.terminated, "a legal game ends by the rules, not by the turn limit");
    total += s.table.score;
    if (env.success(s)) perfect++;
    if (s.table.bombed) bombs++;
  }
  // Measured 7.80 / 9 mean, 195 perfect games, 0 bomb-outs (documented in hanabi/oracle.ts).
  assert(total / 1000 > 7.5, `mean score ${total / 1000}`);
  assert(perfect > 150, `perfect games ${perfect}`);
  assert(bombs < 10, `bomb-outs ${bombs}`);
});

// The oracle's tool programs and the predefined helpers, executed: TRUSTED code only (ours).
const HELPER_CALLS: Record<string, string> = {
  plan_path_v1: `console.log(bfs(grid, start, goal).join(" "))`,
  sokoban_v1: `console.log(solveSokoban(grid, player, box, goal).join(" "))`,
  sudoku4_v1: `console.log(solveSudoku(grid).map((r) => r.join("")).join(" "))`,
};

for (const env of ENVS.filter((e) => e.toolAgents.length > 0)) {
  Deno.test(`${env.id}: executed oracle and helper programs print what the oracle computes`, async () => {
    for (let seed = 0; seed < 40; seed++) {
      let s: EnvState = env.reset(env.generate(seed, { split: "train" }));
      while (currentAgent(env, s) !== null) {
        const agent = currentAgent(env, s)!;
        const move = env.oracle(s, agent);
        const native = env.step(s, agent, move.action);
        const executed = await act(env, s, agent, move.text, trustedExecutor);
        assertEquals(executed, native, `${env.id} seed ${seed}: executed tool output differs`);
        const call = HELPER_CALLS[env.id];
        if (env.toolAgents.includes(agent) && call) {
          const helper = await act(env, s, agent, "```js\n" + call + "\n```", trustedExecutor);
          assertEquals(
            helper.localReward,
            native.localReward,
            `${env.id} seed ${seed}: helper disagrees`,
          );
        }
        s = native.state;
      }
      assert(env.success(s));
    }
  });
}
