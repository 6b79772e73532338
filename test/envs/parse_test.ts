// Parser edge cases for the envs without a test file of their own: moves (Plan-Path, Sokoban),
// Sudoku grids, tool code blocks, tic-tac-toe cells. Every failure must be a typed Invalid.

import { assert, assertEquals } from "../assert.ts";
import { MAX_MOVES, parseMoves } from "../../src/envs/grid.ts";
import { planPath } from "../../src/envs/plan_path/env.ts";
import { sokoban } from "../../src/envs/sokoban/env.ts";
import { parseCells } from "../../src/envs/sudoku4/rules.ts";
import { sudoku4 } from "../../src/envs/sudoku4/env.ts";
import { ticTacToe } from "../../src/envs/tic_tac_toe/env.ts";
import type { AnyEnvDefinition, InvalidCode } from "../../src/envs/types.ts";

function rejects(env: AnyEnvDefinition, agent: string, text: string, code: InvalidCode): void {
  const p = env.parseAction(agent, text);
  assert(!p.ok, `${env.id}/${agent} accepted ${JSON.stringify(text)}`);
  assertEquals(p.invalid.code, code, JSON.stringify(text));
  assert(p.invalid.reason.length > 0 && p.invalid.invalid === true);
}

Deno.test("moves: letters, words, compass points, brackets, runs; prose rejected", () => {
  assertEquals(parseMoves("U D L R"), ["U", "D", "L", "R"]);
  assertEquals(parseMoves(" up, Up ,left;right\n down"), ["U", "U", "L", "R", "D"]);
  assertEquals(parseMoves('["U","R"]'), ["U", "R"]);
  assertEquals(parseMoves("UURD"), ["U", "U", "R", "D"]);
  assertEquals(parseMoves("north east"), ["U", "R"]);
  assertEquals(parseMoves(""), null);
  assertEquals(parseMoves("go up"), null, "one non-move word rejects the answer");
  assertEquals(parseMoves("U".repeat(MAX_MOVES)), Array(MAX_MOVES).fill("U"));
  assertEquals(parseMoves("U".repeat(MAX_MOVES + 1)), null);
});

Deno.test("plan agents: the last #### wins; missing marker and junk are typed", () => {
  for (const env of [planPath, sokoban]) {
    const p = env.parseAction("plan", "Maybe #### L L but better:\n#### R D");
    assert(p.ok);
    assertEquals(p.action, { kind: "answer", answer: ["R", "D"] });
    rejects(env, "plan", "", "empty");
    rejects(env, "plan", "R D", "no_answer");
    rejects(env, "plan", "####", "malformed");
    rejects(env, "plan", "#### R then D", "malformed");
  }
});

Deno.test("tool agents: fenced code (last block wins) or bare code; empty or unclosed fences rejected", () => {
  const fenced = planPath.parseAction(
    "tool",
    "Plan:\n```js\nlet a = 1;\n```\nthen\n```javascript\nconsole.log('R')\n```",
  );
  assert(fenced.ok);
  assertEquals(fenced.action, { kind: "code", code: "console.log('R')\n", execution: null });
  const bare = planPath.parseAction("tool", "console.log(bfs(grid, start, goal).join(' '))");
  assert(bare.ok && bare.action.kind === "code" && bare.action.code.startsWith("console.log"));
  rejects(planPath, "tool", " \n", "empty");
  rejects(planPath, "tool", "```js\n\n```", "empty");
  rejects(planPath, "tool", "```js\nconsole.log(1)", "malformed");
});

Deno.test("sudoku grids: rows, separators, blanks; wrong sizes and digits rejected", () => {
  const solved = [1, 2, 3, 4, 3, 4, 1, 2, 2, 1, 4, 3, 4, 3, 2, 1];
  assertEquals(parseCells("1234 3412 2143 4321"), solved);
  assertEquals(parseCells("1234\n3412\n2143\n4321"), solved);
  assertEquals(parseCells("[[1,2,3,4],[3,4,1,2],[2,1,4,3],[4,3,2,1]]"), solved);
  assertEquals(parseCells("12|34 .4_0 .... ...."), [
    1,
    2,
    3,
    4,
    0,
    4,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
  ]);
  assertEquals(parseCells("1234 3412 2143 432"), null, "15 cells");
  assertEquals(parseCells("1234 3412 2143 4325"), null, "digit 5 in a 4x4");
  assertEquals(parseCells("1234 3412 2143 432x"), null);
  rejects(sudoku4, "plan", "#### one two", "malformed");
  rejects(sudoku4, "plan", "1234 3412 2143 4321", "no_answer");
});

Deno.test("tic-tac-toe cells: one digit 1-9 after ####", () => {
  const p = ticTacToe.parseAction("player_x", "Take the centre.\n#### 5");
  assert(p.ok);
  assertEquals(p.action, { cell: 4 });
  const q = ticTacToe.parseAction("player_o", "#### 9 because it blocks");
  assert(q.ok);
  assertEquals(q.action, { cell: 8 });
  rejects(ticTacToe, "player_x", "5", "no_answer");
  rejects(ticTacToe, "player_x", "#### 0", "malformed");
  rejects(ticTacToe, "player_x", "#### 10", "malformed");
  rejects(ticTacToe, "player_x", "#### centre", "malformed");
});
