// Tic-tac-toe rules and perfect play: board helpers, a memoised minimax (the oracle and the
// "perfect opponent"), and the task generator (random legal openings, so splits can be disjoint).

import { generateInSplit, intKnob, resolveDifficulty } from "../api.ts";
import type { GenerateOptions } from "../types.ts";

export const ENV_ID = "tic_tac_toe_v1";

/** 9 cells, row-major; "x", "o" or "." */
export type Board = string;
export type Mark = "x" | "o";

export interface TttDifficulty {
  [key: string]: number | boolean;
  /** Random legal moves already on the board (0–4); more = more varied, shorter games. */
  openingMoves: number;
  /** Adds a small per-move local reward: −0.1 × (value lost vs the minimax best move). */
  shaping: boolean;
}

export const DEFAULT_DIFFICULTY: TttDifficulty = { openingMoves: 2, shaping: false };

export interface TttTask {
  /** Cells already played, alternating from X. */
  opening: number[];
  shaping: boolean;
}

/** With 2 opening moves there are 72 tasks; a quarter of them are held out for test. */
export const TEST_FRACTION = 0.25;

export const LINES: readonly (readonly [number, number, number])[] = [
  [0, 1, 2],
  [3, 4, 5],
  [6, 7, 8],
  [0, 3, 6],
  [1, 4, 7],
  [2, 5, 8],
  [0, 4, 8],
  [2, 4, 6],
];

export const EMPTY_BOARD: Board = ".........";

export function winnerOf(b: Board): Mark | null {
  for (const [i, j, k] of LINES) {
    if (b[i] !== "." && b[i] === b[j] && b[j] === b[k]) return b[i] as Mark;
  }
  return null;
}

export function legalMoves(b: Board): number[] {
  const out: number[] = [];
  for (let i = 0; i < 9; i++) if (b[i] === ".") out.push(i);
  return out;
}

export function place(b: Board, cell: number, m: Mark): Board {
  return b.slice(0, cell) + m + b.slice(cell + 1);
}

export function toMove(b: Board): Mark {
  let n = 0;
  for (const ch of b) if (ch !== ".") n++;
  return n % 2 === 0 ? "x" : "o";
}

const memo = new Map<Board, number>();

/**
 * Minimax score for the player to move: >0 win, 0 draw, <0 loss; magnitude 10 − plies so quick
 * wins beat slow ones and slow losses beat quick ones.
 */
export function score(b: Board): number {
  const cached = memo.get(b);
  if (cached !== undefined) return cached;
  let result: number;
  const w = winnerOf(b);
  const moves = legalMoves(b);
  if (w !== null) result = -(10 - (9 - moves.length)); // the previous mover won
  else if (moves.length === 0) result = 0;
  else {
    const me = toMove(b);
    result = -Infinity;
    for (const c of moves) result = Math.max(result, -score(place(b, c, me)));
  }
  memo.set(b, result);
  return result;
}

/** Game value −1/0/+1 for the player to move under perfect play. */
export function value(b: Board): number {
  return Math.sign(score(b));
}

/** Best cell for the player to move; ties go to the lowest cell so the oracle is deterministic. */
export function bestMove(b: Board): number {
  const me = toMove(b);
  let best = -1, bestScore = -Infinity;
  for (const c of legalMoves(b)) {
    const s = -score(place(b, c, me));
    if (s > bestScore) [best, bestScore] = [c, s];
  }
  return best;
}

export function boardOf(moves: readonly number[]): Board {
  let b = EMPTY_BOARD;
  moves.forEach((c, i) => (b = place(b, c, i % 2 === 0 ? "x" : "o")));
  return b;
}

export function taskKey(t: TttTask): string {
  return `${t.opening.join(",")}|${t.shaping}`;
}

export function generate(seed: number, opts: GenerateOptions<TttDifficulty>): TttTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const n = intKnob(ENV_ID, d, "openingMoves", 0, 4);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const opening: number[] = [];
    let b = EMPTY_BOARD;
    for (let i = 0; i < n; i++) {
      const c = rng.pick(legalMoves(b));
      opening.push(c);
      b = place(b, c, i % 2 === 0 ? "x" : "o");
    }
    return { opening, shaping: d.shaping };
  });
}
