// Grid helpers shared by Plan-Path and Sokoban: moves, their parser, and BFS shortest paths.

export type Move = "U" | "D" | "L" | "R";
export type Pos = [number, number];

export const MOVES: readonly Move[] = ["U", "D", "L", "R"];
export const DELTA: Readonly<Record<Move, Pos>> = { U: [-1, 0], D: [1, 0], L: [0, -1], R: [0, 1] };

const WORD: Record<string, Move> = {
  U: "U",
  UP: "U",
  D: "D",
  DOWN: "D",
  L: "L",
  LEFT: "L",
  R: "R",
  RIGHT: "R",
  N: "U",
  NORTH: "U",
  S: "D",
  SOUTH: "D",
  W: "L",
  WEST: "L",
  E: "R",
  EAST: "R",
};

/** Longest move list accepted; longer answers are rambling, not plans. */
export const MAX_MOVES = 200;

/**
 * Moves from free text: "U D R", "up, up, right", "[\"U\",\"R\"]", "UURD". Null when any token is
 * not a move (so prose is rejected rather than half-read) or there are none.
 */
export function parseMoves(text: string): Move[] | null {
  const tokens = text.toUpperCase().split(/[^A-Z]+/).filter((t) => t !== "");
  if (tokens.length === 0) return null;
  const out: Move[] = [];
  for (const t of tokens) {
    if (t in WORD) out.push(WORD[t]);
    else if (/^[UDLR]+$/.test(t)) { for (const c of t) out.push(c as Move); }
    else return null;
  }
  return out.length <= MAX_MOVES ? out : null;
}

export function samePos(a: Pos, b: Pos): boolean {
  return a[0] === b[0] && a[1] === b[1];
}

export function manhattan(a: Pos, b: Pos): number {
  return Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]);
}

/** Rows of "." (free) and "#" (wall); outside the grid counts as wall. */
export function isFree(grid: readonly string[], p: Pos): boolean {
  const row = grid[p[0]];
  return row !== undefined && p[1] >= 0 && p[1] < row.length && row[p[1]] !== "#";
}

/** Shortest move list from `from` to `to` (BFS, ties broken U, D, L, R), or null if unreachable. */
export function bfsPath(grid: readonly string[], from: Pos, to: Pos): Move[] | null {
  const h = grid.length, w = grid[0].length;
  const prev = new Int32Array(h * w).fill(-1);
  const how: Move[] = new Array(h * w);
  const start = from[0] * w + from[1], goal = to[0] * w + to[1];
  prev[start] = start;
  const queue = [start];
  for (let qi = 0; qi < queue.length; qi++) {
    const cur = queue[qi];
    if (cur === goal) break;
    const r = Math.floor(cur / w), c = cur % w;
    for (const m of MOVES) {
      const n: Pos = [r + DELTA[m][0], c + DELTA[m][1]];
      const k = n[0] * w + n[1];
      if (!isFree(grid, n) || prev[k] !== -1) continue;
      prev[k] = cur;
      how[k] = m;
      queue.push(k);
    }
  }
  if (prev[goal] === -1) return null;
  const path: Move[] = [];
  for (let k = goal; k !== start; k = prev[k]) path.push(how[k]);
  return path.reverse();
}
