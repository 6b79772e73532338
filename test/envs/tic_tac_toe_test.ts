// Tic-tac-toe: minimax values of known positions, and the policy evaluation helpers (perfect
// play never loses; a random player loses to perfect play; forfeits are counted).

import { assert, assertEquals } from "../assert.ts";
import { ticTacToe } from "../../src/envs/tic_tac_toe/env.ts";
import {
  evaluateVsPerfect,
  evaluateVsRandom,
  perfectPlayer,
  randomPlayer,
} from "../../src/envs/tic_tac_toe/eval.ts";
import { bestMove, boardOf, EMPTY_BOARD, value } from "../../src/envs/tic_tac_toe/rules.ts";

Deno.test("minimax: known values and moves", () => {
  assertEquals(value(EMPTY_BOARD), 0, "tic-tac-toe is a draw");
  assertEquals(bestMove(boardOf([0, 3, 1, 4])), 2, "x completes the top row");
  assertEquals(bestMove(boardOf([0, 4, 8])), 1, "o must take an edge against opposite corners");
  assertEquals(
    value(boardOf([0, 1])),
    1,
    "x (to move) wins after o answers a corner with an adjacent edge",
  );
  assertEquals(value(boardOf([0, 1, 4])), -1, "values are for the player to move: o is lost");
  assertEquals(bestMove(boardOf([4, 0, 8, 2])), 1, "o to move must block the top row");
});

Deno.test("evaluation: perfect play never loses; random loses to it", async () => {
  const vsRandom = await evaluateVsRandom(perfectPlayer, { games: 60, seed: 1 });
  assertEquals(vsRandom.losses, 0);
  assert(vsRandom.wins > 40, `perfect beat random only ${vsRandom.wins}/60`);
  assertEquals(await evaluateVsPerfect(perfectPlayer, { games: 4 }), {
    games: 4,
    wins: 0,
    draws: 4,
    losses: 0,
    forfeits: 0,
  });
  const rnd = await evaluateVsPerfect(randomPlayer(7), { games: 60 });
  assertEquals(rnd.wins, 0);
  assert(rnd.losses > 40);
});

Deno.test("evaluation: a policy that answers badly forfeits and is scored as a loss", async () => {
  const rec = await evaluateVsRandom(() => "#### 1", { games: 10, seed: 3 });
  assertEquals(rec.forfeits, rec.losses);
  assert(
    rec.forfeits >= 5,
    "cell 1 is taken after the first move in every game it plays as O or second X move",
  );
  const prompts: string[] = [];
  await evaluateVsRandom((p) => {
    prompts.push(p.style === "compact" ? p.text : "");
    return "#### 5";
  }, { games: 1, seed: 0 });
  assert(prompts[0].startsWith("ttt x\n123\n456\n789"), prompts[0]);
});

Deno.test("tic_tac_toe: an opening of 0 moves has one task, so the generator refuses a split", () => {
  let names = "";
  for (const split of ["train", "test"] as const) {
    try {
      ticTacToe.generate(0, { split, difficulty: { openingMoves: 0 } });
    } catch (e) {
      names += (e as Error).name;
    }
  }
  assertEquals(names, "SplitExhaustedError");
});
