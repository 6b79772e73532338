// Sokoban (sokoban_v1): one box in a small room; a tool agent writes a JavaScript solver whose
// printed moves are parsed, then a plan agent commits moves after `####`. A commit that leaves
// the box unsolvable ends the episode with the fail penalty: there is nothing left to learn there.
// The same game yields sokoban_solo_v1, the plan agent alone without the tool (level L0).

import { type Move, parseMoves, type Pos, samePos } from "../grid.ts";
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
  play,
  REWARD,
  type SokobanDifficulty,
  type SokobanGame,
  type SokobanTask,
  solveSokoban,
  taskKey,
  TEST_FRACTION,
  TOOL_PRELUDE,
} from "./rules.ts";

export type SokobanState = ToolPlanState<SokobanTask, SokobanGame, Move[]>;
export type SokobanAction = ToolPlanAction<Move[]>;

function evaluate(task: SokobanTask, g: SokobanGame, moves: Move[]): Evaluation<SokobanGame> {
  const r = play(task, g, moves);
  const where = `player ${r.game.player}, box ${r.game.box}`;
  return {
    game: r.game,
    reward: r.reward,
    solved: r.solved,
    dead: r.dead,
    breakdown: r.breakdown,
    summary: r.solved ? "box on goal" : r.dead ? `${where} (stuck)` : where,
  };
}

function cellsOf(task: SokobanTask, player: Pos, box: Pos): string[][] {
  const cells = task.grid.map((row) => [...row]);
  cells[task.goal[0]][task.goal[1]] = "G";
  cells[box[0]][box[1]] = samePos(box, task.goal) ? "*" : "B";
  cells[player[0]][player[1]] = "P";
  return cells;
}

function boardText(task: SokobanTask, g: SokobanGame): string {
  return cellsOf(task, g.player, g.box).map((r) => r.join("")).join("\n");
}

function render(s: SokobanState): Rendered {
  const cells = cellsOf(s.task, s.game.player, s.game.box);
  const status = s.solved
    ? "solved"
    : s.terminated
    ? "box stuck"
    : s.truncated
    ? "out of turns"
    : `turn ${s.turn + 1}`;
  const caption = `sokoban: ${status}, ${s.game.moves} moves (optimal ${s.task.optimalMoves})`;
  return {
    text: `${caption}\n${cells.map((r) => r.join("")).join("\n")}`,
    view: {
      kind: "grid",
      cells,
      legend: { "#": "wall", ".": "floor", P: "player", B: "box", G: "goal", "*": "box on goal" },
      highlight: [s.game.box],
      caption,
    },
  };
}

const RULES =
  `Sokoban: P is the player, B the box, G the goal, # walls, . floor. Moves: U (row-1), D (row+1),
L (col-1), R (col+1). Moving into the box pushes it one cell if the cell beyond is free; boxes cannot be
pulled, so a box in a corner is stuck. Get the box onto G.`;

/** Compact prompts pad the tool's moves to this many bytes (10 moves): each move then sits a
 * constant distance before the plan's copy of it. */
export const TOOL_COMPACT_WIDTH = 19;

const GAME: ToolPlanGame<SokobanTask, SokobanGame, Move[], SokobanDifficulty> = {
  id: ENV_ID,
  description:
    "Sokoban, one box in a 6x6 room: tool agent (JS solver) then plan agent (#### moves)",
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  failPenalty: REWARD.fail,
  // 0.1 per cell the box gets closer: at most ~0.8 in a 6×6 room against the win's +10.
  shaping: { key: "shaping", successDominant: 1 },
  generate,
  taskKey,
  maxTurns: (t) => t.maxTurns,
  initialGame: (t) => ({ player: t.player, box: t.box, moves: 0 }),
  parseAnswer: parseMoves,
  evaluate,
  formatAnswer: (m) => m.join(" "),
  formatToolCompact: (m) => m.join(" ").padEnd(TOOL_COMPACT_WIDTH, "_"),
  toolPrelude: TOOL_PRELUDE,
  toolGlobals: (t, g) => ({ grid: t.grid, player: g.player, box: g.box, goal: t.goal }),
  describe: (t, g) => ({
    full:
      `${boardText(t, g)}\nPlayer at row ${g.player[0]}, col ${g.player[1]}; box at row ${
        g.box[0]
      }, ` +
      `col ${g.box[1]}; goal at row ${t.goal[0]}, col ${t.goal[1]}.`,
    compact: `${boardText(t, g)}\nP=${g.player} B=${g.box} G=${t.goal}`,
  }),
  systemTool: `You are the tool agent of a two-agent team playing Sokoban. ${RULES}
Write JavaScript that finds the moves. Predefined globals: \`grid\` (array of strings, '#' wall, '.' floor;
box, goal and player are not drawn in it), \`player\`, \`box\`, \`goal\` ([row, col] each). Optional helper:
\`solveSokoban(grid, player, box, goal)\` returns an array of moves or null.
Print the moves on the last line with console.log, e.g. console.log("L U R"). Reply with one \`\`\`javascript block.`,
  systemPlan: `You are the plan agent of a two-agent team playing Sokoban. ${RULES}
The tool agent ran a program; its output is shown. Check it and give the final moves.
End your reply with \`#### \` followed by the moves, e.g. \`#### L U R\`.`,
  systemSolo: `You are playing Sokoban alone, with no tools. ${RULES}
Read the board, work out the moves yourself, and give them.
End your reply with \`#### \` followed by the moves, e.g. \`#### L U R\`.`,
  answerExample: "#### L U R",
  oracleAnswer: (t, g) => solveSokoban(t.grid, g.player, g.box, t.goal) ?? [],
  oracleToolCode: ORACLE_TOOL_CODE,
  render,
};

export const sokoban = defineToolPlanEnv(GAME);
/** sokoban_solo_v1: the plan agent alone (single-agent level L0). */
export const sokobanSolo = defineSoloPlanEnv(GAME);
/** sokoban_tool_solo_v1: the tool agent alone (level L0, env.soloAgent "tool"). */
export const sokobanToolSolo = defineSoloToolEnv(GAME);
