// Sudoku 4×4 (sudoku4_v1): a tool agent writes a JavaScript solver whose printed grid is parsed,
// then a plan agent commits a grid after `####` (blanks allowed, as `.`). Rules in rules.ts.
// The same game yields sudoku4_solo_v1, the plan agent alone without the tool (level L0).

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
  type Cells,
  commit,
  DEFAULT_DIFFICULTY,
  ENV_ID,
  formatCells,
  generate,
  ORACLE_TOOL_CODE,
  parseCells,
  solveSudoku,
  type SudokuDifficulty,
  type SudokuGame,
  type SudokuTask,
  taskKey,
  TEST_FRACTION,
  TOOL_PRELUDE,
} from "./rules.ts";

export type SudokuState = ToolPlanState<SudokuTask, SudokuGame, Cells>;
export type SudokuAction = ToolPlanAction<Cells>;

function evaluate(task: SudokuTask, g: SudokuGame, cells: Cells): Evaluation<SudokuGame> {
  const r = commit(task, g, cells);
  return {
    game: r.game,
    reward: r.reward,
    solved: r.solved,
    dead: false,
    breakdown: r.breakdown,
    summary: r.problem ? `rejected: ${r.problem}` : r.solved ? "solved" : "accepted, not solved",
  };
}

const rows2d = (c: Cells) => [0, 1, 2, 3].map((r) => c.slice(r * 4, r * 4 + 4));

function boardText(c: Cells): string {
  return rows2d(c).map((row) => row.map((v) => (v === 0 ? "." : String(v))).join("")).join("\n");
}

function render(s: SudokuState): Rendered {
  const cells = rows2d(s.game.cells).map((row) => row.map((v) => (v === 0 ? "." : String(v))));
  const highlight: [number, number][] = [];
  s.task.puzzle.forEach((v, i) => v === 0 && highlight.push([Math.floor(i / 4), i % 4]));
  const status = s.solved ? "solved" : s.truncated ? "out of turns" : `turn ${s.turn + 1}`;
  return {
    text: `sudoku4: ${status}\n${boardText(s.game.cells)}`,
    view: {
      kind: "grid",
      cells,
      legend: { ".": "blank", "1-4": "digit" },
      highlight,
      caption: `sudoku4: ${status}`,
    },
  };
}

const RULES =
  `4x4 Sudoku: fill the blanks (.) with digits 1-4 so that every row, every column and every
2x2 box holds each digit once. Given digits cannot change. Each puzzle has exactly one solution.`;

const GAME: ToolPlanGame<SudokuTask, SudokuGame, Cells, SudokuDifficulty> = {
  id: ENV_ID,
  description:
    "Sudoku 4x4 with a unique solution: tool agent (JS solver) then plan agent (#### grid)",
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  failPenalty: 0, // docs/algorithm.md lists no fail penalty for Sudoku
  // Progress (the fraction of blanks filled right) is at most 1 against solved +2 (+0.5).
  shaping: { key: "progress", successDominant: 1 },
  generate,
  taskKey,
  maxTurns: (t) => t.maxTurns,
  initialGame: (t) => ({ cells: t.puzzle.slice(), commits: 0 }),
  parseAnswer: parseCells,
  evaluate,
  formatAnswer: formatCells,
  toolPrelude: TOOL_PRELUDE,
  toolGlobals: (t, g) => ({ grid: rows2d(t.puzzle), current: rows2d(g.cells) }),
  describe: (t, g) => ({
    full: `Puzzle (. = blank):\n${boardText(t.puzzle)}` +
      (g.commits > 0 ? `\nLast committed grid:\n${boardText(g.cells)}` : ""),
    compact: boardText(g.commits > 0 ? g.cells : t.puzzle),
  }),
  systemTool: `You are the tool agent of a two-agent team solving Sudoku. ${RULES}
Write JavaScript that solves it. Predefined globals: \`grid\` (the puzzle: 4 arrays of 4 numbers, 0 = blank),
\`current\` (the last committed grid, same shape). Optional helper: \`solveSudoku(grid)\` returns the solved
grid or null. Print the solved grid on the last line with console.log as four rows separated by spaces,
e.g. console.log("1234 3412 2143 4321"). Reply with one \`\`\`javascript block.`,
  systemPlan: `You are the plan agent of a two-agent team solving Sudoku. ${RULES}
The tool agent ran a program; its output is shown. Check it against the rules and give the final grid.
End your reply with \`#### \` and the grid as four rows, e.g. \`#### 1234 3412 2143 4321\` (use . for a blank).`,
  systemSolo: `You are solving Sudoku alone, with no tools. ${RULES}
Solve the puzzle yourself and give the final grid.
End your reply with \`#### \` and the grid as four rows, e.g. \`#### 1234 3412 2143 4321\` (use . for a blank).`,
  answerExample: "#### 1234 3412 2143 4321",
  oracleAnswer: (t) => solveSudoku(t.puzzle) ?? t.puzzle.slice(),
  oracleToolCode: ORACLE_TOOL_CODE,
  render,
};

export const sudoku4 = defineToolPlanEnv(GAME);
/** sudoku4_solo_v1: the plan agent alone (single-agent level L0). */
export const sudoku4Solo = defineSoloPlanEnv(GAME);
/** sudoku4_tool_solo_v1: the tool agent alone (level L0, env.soloAgent "tool"). */
export const sudoku4ToolSolo = defineSoloToolEnv(GAME);
