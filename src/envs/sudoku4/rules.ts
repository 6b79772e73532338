// Sudoku 4×4 rules: puzzles with exactly one solution (checked by a counting solver), and the
// reward of committing a grid (docs/algorithm.md: step −0.01, invalid −1, solved +2, +0.5 efficiency when
// solved by the first commit, progress shaping = change in the fraction of blanks filled right).

import { generateInSplit, intKnob, resolveDifficulty, round6 } from "../api.ts";
import type { Rng } from "../rng.ts";
import type { GenerateOptions } from "../types.ts";

export const ENV_ID = "sudoku4_v1";

export const REWARD = {
  step: -0.01,
  invalid: -1,
  solved: 2,
  efficiency: 0.5,
  progress: 1,
} as const;

export interface SudokuDifficulty {
  [key: string]: number;
  /** Blank cells (4–12; 12 is near the most a unique 4×4 puzzle allows). */
  holes: number;
  maxTurns: number;
}

export const DEFAULT_DIFFICULTY: SudokuDifficulty = { holes: 10, maxTurns: 4 };

/** Cells are row-major, 16 numbers; 0 = blank. */
export type Cells = number[];

export interface SudokuTask {
  puzzle: Cells;
  solution: Cells;
  maxTurns: number;
}

export const TEST_FRACTION = 0.1;

export function taskKey(t: SudokuTask): string {
  return `${t.puzzle.join("")}|${t.maxTurns}`;
}

const BOX = (i: number) => Math.floor(Math.floor(i / 4) / 2) * 2 + Math.floor((i % 4) / 2);

/** Indices of the cells sharing a row, column or box with cell i (excluding i). */
const PEERS: number[][] = Array.from(
  { length: 16 },
  (_, i) =>
    Array.from({ length: 16 }, (_, j) => j).filter((j) =>
      j !== i && (Math.floor(j / 4) === Math.floor(i / 4) || j % 4 === i % 4 || BOX(j) === BOX(i))
    ),
);

/** Cells whose value repeats in a row, column or box (blanks ignored). */
export function conflicts(cells: Cells): number[] {
  return cells.flatMap((v, i) => v !== 0 && PEERS[i].some((j) => cells[j] === v) ? [i] : []);
}

/** Number of completions of `cells`, counting no further than `limit`. */
export function countSolutions(cells: Cells, limit = 2): number {
  const i = cells.indexOf(0);
  if (i < 0) return 1;
  let n = 0;
  for (let v = 1; v <= 4 && n < limit; v++) {
    if (PEERS[i].some((j) => cells[j] === v)) continue;
    cells[i] = v;
    n += countSolutions(cells, limit - n);
    cells[i] = 0;
  }
  return n;
}

/** The first completion in digit order, or null. */
export function solveSudoku(cells: Cells): Cells | null {
  const c = cells.slice();
  const go = (): boolean => {
    const i = c.indexOf(0);
    if (i < 0) return true;
    for (let v = 1; v <= 4; v++) {
      if (PEERS[i].some((j) => c[j] === v)) continue;
      c[i] = v;
      if (go()) return true;
    }
    c[i] = 0;
    return false;
  };
  return conflicts(c).length === 0 && go() ? c : null;
}

/** A uniformly relabelled, row/column-permuted valid grid. */
function randomSolution(rng: Rng): Cells {
  const base = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]];
  const digits = rng.shuffle([1, 2, 3, 4]);
  const bands = rng.shuffle([0, 1]), stacks = rng.shuffle([0, 1]);
  const rows = bands.flatMap((b) => rng.shuffle([b * 2, b * 2 + 1]));
  const cols = stacks.flatMap((s) => rng.shuffle([s * 2, s * 2 + 1]));
  const transpose = rng.float() < 0.5;
  const out: Cells = [];
  for (let r = 0; r < 4; r++) {
    for (let c = 0; c < 4; c++) {
      const v = transpose ? base[cols[c]][rows[r]] : base[rows[r]][cols[c]];
      out.push(digits[v - 1]);
    }
  }
  return out;
}

export function generate(seed: number, opts: GenerateOptions<SudokuDifficulty>): SudokuTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const holes = intKnob(ENV_ID, d, "holes", 4, 12);
  const maxTurns = intKnob(ENV_ID, d, "maxTurns", 1, 10);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const solution = randomSolution(rng);
    const puzzle = solution.slice();
    let blank = 0;
    for (const i of rng.shuffle([...Array(16).keys()])) {
      if (blank === holes) break;
      puzzle[i] = 0;
      if (countSolutions(puzzle.slice()) === 1) blank++;
      else puzzle[i] = solution[i];
    }
    return blank === holes ? { puzzle, solution, maxTurns } : null;
  });
}

/** 16 cells from text: digits 1-4, blanks as 0 . or _, any spacing/brackets/commas/bars; else null. */
export function parseCells(text: string): Cells | null {
  const s = text.replace(/[\s,;|[\]()]/g, "");
  if (!/^[0-4._]{16}$/.test(s)) return null;
  return [...s].map((ch) => (ch === "." || ch === "_" ? 0 : Number(ch)));
}

export function formatCells(c: Cells): string {
  return [0, 1, 2, 3].map((r) => c.slice(r * 4, r * 4 + 4).map((v) => (v === 0 ? "." : v)).join(""))
    .join(" ");
}

export interface SudokuGame {
  cells: Cells;
  commits: number;
}

function progress(task: SudokuTask, cells: Cells): number {
  let right = 0, blanks = 0;
  task.puzzle.forEach((v, i) => {
    if (v !== 0) return;
    blanks++;
    if (cells[i] === task.solution[i]) right++;
  });
  return right / blanks;
}

export interface CommitResult {
  game: SudokuGame;
  solved: boolean;
  reward: number;
  breakdown: {
    step: number;
    invalid: number;
    progress: number;
    solved: number;
    efficiency: number;
  };
  problem: string | null;
}

/** Committing a grid: rejected (−1, nothing changes) if it alters a given or breaks a rule. */
export function commit(task: SudokuTask, g: SudokuGame, cells: Cells): CommitResult {
  const b = { step: REWARD.step, invalid: 0, progress: 0, solved: 0, efficiency: 0 };
  const altered = task.puzzle.some((v, i) => v !== 0 && cells[i] !== v);
  const bad = conflicts(cells);
  const problem = altered
    ? "changes a given cell"
    : bad.length
    ? `repeats a digit at cells ${bad.join(",")}`
    : null;
  if (problem !== null) {
    b.invalid = REWARD.invalid;
    return { game: g, solved: false, reward: round6(b.step + b.invalid), breakdown: b, problem };
  }
  b.progress = REWARD.progress * (progress(task, cells) - progress(task, g.cells));
  const solved = cells.every((v, i) => v === task.solution[i]);
  if (solved) {
    b.solved = REWARD.solved;
    if (g.commits === 0) b.efficiency = REWARD.efficiency;
  }
  const reward = round6(b.step + b.progress + b.solved + b.efficiency);
  return { game: { cells, commits: g.commits + 1 }, solved, reward, breakdown: b, problem: null };
}

export const TOOL_PRELUDE = `
function solveSudoku(grid) {
  const c = grid.map((row) => row.slice());
  const ok = (r, k, v) => {
    for (let i = 0; i < 4; i++) if (c[r][i] === v || c[i][k] === v) return false;
    const r0 = r - (r % 2), k0 = k - (k % 2);
    for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) if (c[r0 + i][k0 + j] === v) return false;
    return true;
  };
  const go = (p) => {
    if (p === 16) return true;
    const r = Math.floor(p / 4), k = p % 4;
    if (c[r][k] !== 0) return go(p + 1);
    for (let v = 1; v <= 4; v++) if (ok(r, k, v)) { c[r][k] = v; if (go(p + 1)) return true; c[r][k] = 0; }
    return false;
  };
  return go(0) ? c : null;
}`;

/** The oracle's tool program: a self-contained backtracking solver. */
export const ORACLE_TOOL_CODE =
  `// Backtracking: fill blanks (0) in reading order with the first digit that fits.
const g = grid.map((row) => row.slice());
function fits(r, c, v) {
  for (let i = 0; i < 4; i++) if (g[r][i] === v || g[i][c] === v) return false;
  const r0 = r - (r % 2), c0 = c - (c % 2);
  for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) if (g[r0 + i][c0 + j] === v) return false;
  return true;
}
function fill(p) {
  if (p === 16) return true;
  const r = Math.floor(p / 4), c = p % 4;
  if (g[r][c] !== 0) return fill(p + 1);
  for (let v = 1; v <= 4; v++) {
    if (!fits(r, c, v)) continue;
    g[r][c] = v;
    if (fill(p + 1)) return true;
    g[r][c] = 0;
  }
  return false;
}
fill(0);
console.log(g.map((row) => row.join("")).join(" "));
`;
