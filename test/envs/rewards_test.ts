// Rewards on hand-made states, computed by hand from docs/algorithm.md's tables (the arithmetic is in the
// comments), for the tool → plan envs, tic-tac-toe, Hanabi and Search.

import { assert, assertEquals } from "../assert.ts";
import { FORMAT_PENALTY } from "../../src/envs/api.ts";
import { planPath } from "../../src/envs/plan_path/env.ts";
import type { PlanPathTask } from "../../src/envs/plan_path/rules.ts";
import { sokoban } from "../../src/envs/sokoban/env.ts";
import type { SokobanTask } from "../../src/envs/sokoban/rules.ts";
import { sudoku4 } from "../../src/envs/sudoku4/env.ts";
import type { SudokuTask } from "../../src/envs/sudoku4/rules.ts";
import { ticTacToe } from "../../src/envs/tic_tac_toe/env.ts";
import type { ExecResult, Invalid } from "../../src/envs/types.ts";

const ran = (stdout: string): ExecResult => ({
  ok: true,
  stdout,
  error: null,
  timedOut: false,
  ms: 1,
});
const code = (stdout: string) => ({
  kind: "code" as const,
  code: "/* hand-made */",
  execution: ran(stdout),
});
const near = (a: number, b: number, what: string) =>
  assert(Math.abs(a - b) < 1e-9, `${what}: ${a} != ${b}`);

// 3×3, one wall in the middle; start top-left, goal bottom-right, shortest path 4.
const PATH_TASK: PlanPathTask = {
  size: 3,
  grid: ["...", ".#.", "..."],
  start: [0, 0],
  goal: [2, 2],
  shortest: 4,
  maxTurns: 4,
};

/** Plan agent's turn on a fresh PATH_TASK episode (the tool proposes `tool` first). */
function planTurn(task: PlanPathTask, tool: string, plan: string) {
  const t = planPath.step(planPath.reset(task), "tool", code(tool));
  const parsed = planPath.parseAction("plan", plan);
  assert(parsed.ok);
  return { tool: t, plan: planPath.step(t.state, "plan", parsed.action) };
}

Deno.test("plan_path: shortest path = steps + shaping + goal + shortest bonus", () => {
  // Φ = −Manhattan: d 4→3→2→1→0, shaping per move 0.99·(−d′) + d = 1.03, 1.02, 1.01, 1.00.
  // 4.06 shaping − 0.04 steps + 1 goal + 0.5 shortest = 5.52.
  const { tool, plan } = planTurn(PATH_TASK, "R R D D\n", "#### R R D D");
  near(tool.localReward, 5.52, "tool proposal");
  assertEquals(tool.teamReward, 0);
  near(plan.teamReward, 5.52, "plan commit");
  assertEquals([plan.terminated, plan.truncated, planPath.success(plan.state)], [
    true,
    false,
    true,
  ]);
  assertEquals(plan.info.finalRewards, { tool: 1, plan: 1 });
});

Deno.test("plan_path: a bump is −0.1 and no move; a detour loses the shortest bonus", () => {
  // D: d 4→3, 1.03. R into the wall: stays at d 3, shaping 0.99·(−3) + 3 = 0.03. −0.02 steps −0.1.
  const { plan } = planTurn(PATH_TASK, "D\n", "#### D R");
  near(plan.teamReward, 1.03 + 0.03 - 0.02 - 0.1, "bump");
  assertEquals(plan.terminated, false);
  // D U D D R R: reaches the goal in 6 moves (> 4): no +0.5.
  // shaping: 1.03, 0.99·(−4)+3 = −0.96, 1.03, 1.02, 1.01, 1.00 → 4.13; steps −0.06; goal +1.
  const detour = planTurn(PATH_TASK, "D\n", "#### D U D D R R").plan;
  near(detour.teamReward, 4.13 - 0.06 + 1, "detour");
});

Deno.test("plan_path: out of turns costs −1; a proposal that misses the goal includes it", () => {
  const oneTurn = { ...PATH_TASK, maxTurns: 1 };
  const { tool, plan } = planTurn(oneTurn, "D\n", "#### D");
  near(tool.localReward, 1.03 - 0.01 - 1, "proposal that stops short");
  near(plan.teamReward, 1.03 - 0.01 - 1, "plan that runs out of turns");
  assertEquals([plan.terminated, plan.truncated], [false, true]);
  assertEquals(plan.info.finalRewards, { tool: 0, plan: 0 });
});

Deno.test("plan_path: unusable tool output and unparseable plans cost −2", () => {
  const s = planPath.reset(PATH_TASK);
  const crashed = planPath.step(s, "tool", {
    ...code(""),
    execution: { ...ran(""), ok: false, error: "TypeError: x" },
  });
  assertEquals(crashed.localReward, FORMAT_PENALTY);
  assertEquals((crashed.info.invalid as Invalid).code, "exec_error");
  const silent = planPath.step(s, "tool", code(""));
  assertEquals((silent.info.invalid as Invalid).code, "exec_error");
  const junk = planPath.parseAction("plan", "I would go right");
  assert(!junk.ok);
  const r = planPath.step(silent.state, "plan", junk.invalid);
  assertEquals([r.localReward, r.teamReward], [FORMAT_PENALTY, 0]);
});

Deno.test("plan_path reward knobs: the shaping weight scales only the shaping term; binary pays 1 for solving", () => {
  // Weight 0.1: 0.406 shaping − 0.04 steps + 1 goal + 0.5 shortest = 1.866 for the shortest path.
  const knobbed = planPath.rewardKnobs!.withRewards({ shaping: 0.1, success: "shaped" });
  const t = knobbed.step(knobbed.reset(PATH_TASK), "tool", code("R R D D\n"));
  near(t.localReward, 1.866, "tool proposal at shaping 0.1");
  const p = knobbed.parseAction("plan", "#### R R D D");
  assert(p.ok);
  near(knobbed.step(t.state, "plan", p.action).teamReward, 1.866, "plan commit at shaping 0.1");
  // A wrong path that comes closer now earns less than reaching the goal by far: D D R stops at
  // d 1 (shaping 0.1·(1.03 + 1.02 + 1.01), −0.03 steps, −1 out of turns on a one-turn task) = −0.724.
  const one = knobbed.step(knobbed.reset({ ...PATH_TASK, maxTurns: 1 }), "tool", code("D D R\n"));
  near(one.localReward, 0.306 - 0.03 - 1, "a near miss at shaping 0.1");
  // Binary: 1 for a solving commit (team) or proposal (tool local), 0 otherwise, no fail penalty.
  const bin = planPath.rewardKnobs!.withRewards({ shaping: 1, success: "binary" });
  const bt = bin.step(bin.reset({ ...PATH_TASK, maxTurns: 1 }), "tool", code("R R D D\n"));
  assertEquals(bt.localReward, 1);
  const miss = bin.parseAction("plan", "#### D D R");
  assert(miss.ok);
  const bp = bin.step(bt.state, "plan", miss.action);
  assertEquals([bp.teamReward, bp.localReward, bp.truncated], [0, 0, true]);
  // Format penalties stay under binary rewards.
  const junk = bin.parseAction("plan", "no idea");
  assert(!junk.ok);
  assertEquals(bin.step(bt.state, "plan", junk.invalid).localReward, FORMAT_PENALTY);
  // The registered env keeps the paper's weights, and the knobbed env keeps its id and tasks.
  assertEquals(planPath.rewardKnobs!.defaultShaping, 0.1);
  assertEquals(knobbed.id, planPath.id);
});

// 5×5 room, floor 3×3. Box under the goal, player bottom-left: "R U" pushes the box onto the goal.
const ROOM: SokobanTask = {
  grid: ["#####", "#...#", "#...#", "#...#", "#####"],
  player: [3, 1],
  box: [2, 2],
  goal: [1, 2],
  optimalMoves: 2,
  optimalPushes: 1,
  maxTurns: 4,
};

function commitMoves(moves: string) {
  const t = sokoban.step(sokoban.reset(ROOM), "tool", code(moves + "\n"));
  const p = sokoban.parseAction("plan", `#### ${moves}`);
  assert(p.ok);
  return { tool: t, plan: sokoban.step(t.state, "plan", p.action) };
}

Deno.test("sokoban: win = steps + shaping 0.1 + box on goal + win", () => {
  // −0.01·2 + 0.1·(1 − 0) + 1 + 10 = 11.08
  const { tool, plan } = commitMoves("R U");
  near(plan.teamReward, 11.08, "win");
  near(tool.localReward, 11.08, "tool proposal");
  assertEquals([plan.terminated, sokoban.success(plan.state)], [true, true]);
});

Deno.test("sokoban: blocked moves are −0.05; a stuck box ends the episode with −5", () => {
  near(commitMoves("L").plan.teamReward, -0.01 - 0.05, "walk into a wall");
  // R R U: player to (2,3); L pushes the box from (2,2) to (2,1): against the left wall, the goal
  // column is unreachable. Shaping 0.1·(1 − 2) = −0.1; steps −0.04; fail −5.
  const { plan } = commitMoves("R R U L");
  near(plan.teamReward, -0.04 - 0.1 - 5, "stuck");
  assertEquals([plan.terminated, plan.truncated, sokoban.success(plan.state)], [
    true,
    false,
    false,
  ]);
});

const SUDOKU: SudokuTask = {
  // solution 1234 / 3412 / 2143 / 4321 with 10 blanks
  puzzle: [1, 0, 0, 4, 0, 4, 0, 0, 2, 0, 0, 3, 0, 0, 2, 0],
  solution: [1, 2, 3, 4, 3, 4, 1, 2, 2, 1, 4, 3, 4, 3, 2, 1],
  maxTurns: 4,
};

function commitGrid(state: ReturnType<typeof sudoku4.reset>, grid: string) {
  const p = sudoku4.parseAction("plan", `#### ${grid}`);
  assert(p.ok, grid);
  const t = sudoku4.step(state, "tool", code(grid + "\n"));
  return { tool: t, plan: sudoku4.step(t.state, "plan", p.action) };
}

Deno.test("sudoku4: solved on the first commit = −0.01 + progress 1 + 2 + 0.5", () => {
  const { plan } = commitGrid(sudoku4.reset(SUDOKU), "1234 3412 2143 4321");
  near(plan.teamReward, 3.49, "first-commit solve");
  assertEquals(plan.terminated, true);
});

Deno.test("sudoku4: partial progress, then a later solve without the efficiency bonus", () => {
  // Two of ten blanks right: −0.01 + 0.2.
  const first = commitGrid(sudoku4.reset(SUDOKU), "12.4 34.. 2..3 ..2.").plan;
  near(first.teamReward, 0.19, "partial");
  assertEquals(first.terminated, false);
  const second = commitGrid(first.state, "1234 3412 2143 4321").plan;
  near(second.teamReward, -0.01 + 0.8 + 2, "second commit");
});

Deno.test("sudoku4: changing a given or repeating a digit is −1 and changes nothing", () => {
  const s = sudoku4.reset(SUDOKU);
  const altered = commitGrid(s, "2234 3412 2143 4321").plan;
  near(altered.teamReward, -1.01, "altered given");
  assertEquals(altered.state.game, s.game);
  const clash = commitGrid(s, "1134 .4.. 2..3 ..2.").plan;
  near(clash.teamReward, -1.01, "row clash");
});

Deno.test("tic_tac_toe: win +1, occupied cell forfeits (−1), junk forfeits (−2)", () => {
  // x at 1,2 and o at 4,5: x to move, cell 3 wins.
  const s = ticTacToe.reset({ opening: [0, 3, 1, 4], shaping: false });
  const win = ticTacToe.step(s, "player_x", { cell: 2 });
  assertEquals([win.localReward, win.terminated, win.state.winner], [1, true, "x"]);
  assertEquals(win.info.finalRewards, { player_x: 1, player_o: -1 });
  const taken = ticTacToe.step(s, "player_x", { cell: 3 });
  assertEquals([taken.localReward, taken.state.winner, taken.state.forfeit], [-1, "o", "player_x"]);
  const junk = ticTacToe.parseAction("player_x", "center please");
  assert(!junk.ok);
  assertEquals(ticTacToe.step(s, "player_x", junk.invalid).localReward, FORMAT_PENALTY);
});

Deno.test("tic_tac_toe: optional shaping charges 0.1 per unit of minimax value thrown away", () => {
  const s = ticTacToe.reset({ opening: [0, 3, 1, 4], shaping: true });
  // x can win now (value +1); playing 9 instead lets o win at 6 (value −1 for x): regret 2.
  const blunder = ticTacToe.step(s, "player_x", { cell: 8 });
  near(blunder.localReward, -0.2, "blunder");
  assertEquals(blunder.info.regret, 2);
  assertEquals(ticTacToe.step(s, "player_x", { cell: 2 }).localReward, 1);
});
