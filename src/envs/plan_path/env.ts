// Plan-Path (plan_path_v1): a tool agent writes JavaScript (BFS) whose printed moves are parsed,
// then a plan agent commits the final moves after `####`. Rules and rewards are in rules.ts; the
// tool → plan turn structure and credit assignment in ../tool_plan.ts. The same game yields
// plan_path_solo_v1, the plan agent alone without the tool (single-agent level L0).

import { bfsPath, type Move, parseMoves, type Pos, samePos } from "../grid.ts";
import {
  defineSoloPlanEnv,
  defineSoloToolEnv,
  defineToolPlanEnv,
  type Evaluation,
  type ToolPlanAction,
  type ToolPlanGame,
  type ToolPlanState,
} from "../tool_plan.ts";
import type { Rendered } from "../types.ts";
import {
  DEFAULT_DIFFICULTY,
  ENV_ID,
  generate,
  ORACLE_TOOL_CODE,
  type PlanPathDifficulty,
  type PlanPathTask,
  taskKey,
  TEST_FRACTION,
  TOOL_PRELUDE,
  walk,
} from "./rules.ts";

export interface PlanPathGame {
  pos: Pos;
  /** Moves executed so far, bumps included: the shortest-path bonus compares this. */
  stepsTaken: number;
  /** Every position visited, start first (render). */
  visited: Pos[];
}

export type PlanPathState = ToolPlanState<PlanPathTask, PlanPathGame, Move[]>;
export type PlanPathAction = ToolPlanAction<Move[]>;

function evaluate(task: PlanPathTask, g: PlanPathGame, moves: Move[]): Evaluation<PlanPathGame> {
  const w = walk(task, g.pos, g.stepsTaken, moves);
  return {
    game: { pos: w.pos, stepsTaken: w.stepsTaken, visited: [...g.visited, ...w.trail] },
    reward: w.reward,
    solved: w.reached,
    dead: false,
    breakdown: w.breakdown,
    summary: w.reached ? "reached the goal" : `at ${w.pos.join(",")}`,
  };
}

function boardText(task: PlanPathTask, pos: Pos): string {
  return task.grid.map((row, r) =>
    [...row].map((ch, c) => samePos([r, c], pos) ? "A" : samePos([r, c], task.goal) ? "G" : ch)
      .join("")
  ).join("\n");
}

function render(s: PlanPathState): Rendered {
  const { task, game } = s;
  const cells = task.grid.map((row) => [...row]);
  for (const [r, c] of game.visited) cells[r][c] = "*";
  cells[task.start[0]][task.start[1]] = "S";
  cells[task.goal[0]][task.goal[1]] = "G";
  cells[game.pos[0]][game.pos[1]] = "A";
  const highlight = s.tool?.answer
    ? walk(task, game.pos, game.stepsTaken, s.tool.answer).trail
    : [];
  const status = s.solved
    ? "reached the goal"
    : s.truncated
    ? "out of turns"
    : `turn ${s.turn + 1}`;
  const caption = `plan_path: ${status}, ${game.stepsTaken} moves (shortest ${task.shortest})`;
  return {
    text: `${caption}\n${cells.map((r) => r.join("")).join("\n")}`,
    view: {
      kind: "grid",
      cells,
      legend: { "#": "wall", ".": "free", "*": "visited", S: "start", G: "goal", A: "agent" },
      highlight,
      caption,
    },
  };
}

const MOVES_HELP =
  "Moves: U (row-1), D (row+1), L (col-1), R (col+1); walls '#' and the border block moves.";

const GAME: ToolPlanGame<PlanPathTask, PlanPathGame, Move[], PlanPathDifficulty> = {
  id: ENV_ID,
  description: "Grid path planning with walls: tool agent (JS BFS) then plan agent (#### moves)",
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  failPenalty: -1,
  // Φ = −Manhattan at weight 1 pays up to 8 on a 5×5 grid for walking towards the goal, against
  // +1 (+0.5 shortest) for reaching it: in a group with no success the largest advantage went
  // to wrong answers that came closer. At 0.1 a step closer is worth a tenth of the goal.
  shaping: { key: "shaping", successDominant: 0.1 },
  generate,
  taskKey,
  maxTurns: (t) => t.maxTurns,
  initialGame: (t) => ({ pos: t.start, stepsTaken: 0, visited: [t.start] }),
  parseAnswer: parseMoves,
  evaluate,
  formatAnswer: (m) => m.join(" "),
  formatToolCompact: (m, t) => m.join(" ").padEnd(t.toolWidth ?? 0, "_"),
  toolPrelude: TOOL_PRELUDE,
  toolGlobals: (t, g) => ({ grid: t.grid, start: g.pos, goal: t.goal }),
  describe: (t, g) => ({
    full: `${t.size}x${t.size} grid (A = agent, G = goal, # = wall):\n${boardText(t, g.pos)}\n` +
      `Agent at row ${g.pos[0]}, col ${g.pos[1]}; goal at row ${t.goal[0]}, col ${t.goal[1]}.`,
    compact: `${boardText(t, g.pos)}\nA=${g.pos} G=${t.goal}`,
  }),
  systemTool: `You are the tool agent of a two-agent team on a grid path-planning task.
Write JavaScript that finds a shortest path. Predefined globals: \`grid\` (array of strings; '#' wall,
'.' free), \`start\` ([row, col], the agent's current position), \`goal\` ([row, col]). Optional helper:
\`bfs(grid, start, goal)\` returns an array of moves or null. ${MOVES_HELP}
Print the moves on the last line with console.log, e.g. console.log("R R D"). Reply with one \`\`\`javascript block.`,
  systemPlan:
    `You are the plan agent of a two-agent team on a grid path-planning task. ${MOVES_HELP}
The tool agent ran a program; its output is shown. Check it and give the final moves, as short as possible.
End your reply with \`#### \` followed by the moves, e.g. \`#### U R R D\`.`,
  systemSolo: `You are solving a grid path-planning task alone, with no tools. ${MOVES_HELP}
Read the grid, find a shortest path from A to G yourself, and give the moves, as short as possible.
End your reply with \`#### \` followed by the moves, e.g. \`#### U R R D\`.`,
  answerExample: "#### U R R D",
  oracleAnswer: (t, g) => bfsPath(t.grid, g.pos, t.goal) ?? [],
  oracleToolCode: ORACLE_TOOL_CODE,
  render,
};

export const planPath = defineToolPlanEnv(GAME);
/** plan_path_solo_v1: the plan agent alone (single-agent level L0). */
export const planPathSolo = defineSoloPlanEnv(GAME);
/** plan_path_tool_solo_v1: the tool agent alone (level L0, env.soloAgent "tool"). */
export const planPathToolSolo = defineSoloToolEnv(GAME);
