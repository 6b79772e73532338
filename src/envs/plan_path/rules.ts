// Plan-Path rules: the task generator and the reward of walking a move list (docs/algorithm.md: step −0.01,
// invalid −0.1, goal +1, shortest path +0.5, fail −1, shaping γΦ′−Φ with Φ = −Manhattan, γ 0.99).

import { generateInSplit, intKnob, numKnob, resolveDifficulty, round6 } from "../api.ts";
import { bfsPath, DELTA, isFree, manhattan, type Move, type Pos, samePos } from "../grid.ts";
import type { GenerateOptions } from "../types.ts";

export const ENV_ID = "plan_path_v1";

export const REWARD = {
  step: -0.01,
  invalidMove: -0.1,
  goal: 1,
  shortest: 0.5,
  fail: -1,
  gamma: 0.99,
} as const;

export interface PlanPathDifficulty {
  [key: string]: number;
  /** Grid side N (the paper: 10). */
  size: number;
  /** Probability that a cell is a wall (the paper: ~22%). */
  wallDensity: number;
  /** Tool→plan rounds before the episode is cut (the paper: 4–5). */
  maxTurns: number;
  /** Shortest start→goal distance must be at least this. */
  minDistance: number;
  /**
   * Compact prompts only: the tool's moves in the plan agent's prompt padded with `_` to this many
   * bytes (0 = unpadded), so each move sits at a constant distance from the plan's copy of it, a
   * copy a tiny model can learn (as Sokoban's 19-byte tool line). Longer move lists show as they are.
   */
  toolWidth: number;
}

export const DEFAULT_DIFFICULTY: PlanPathDifficulty = {
  size: 10,
  wallDensity: 0.22,
  maxTurns: 4,
  minDistance: 2,
  toolWidth: 0,
};

export interface PlanPathTask {
  size: number;
  /** Rows of "." (free) and "#" (wall). */
  grid: string[];
  start: Pos;
  goal: Pos;
  /** BFS distance start→goal: the "shortest path" bonus compares against it. */
  shortest: number;
  maxTurns: number;
  /** Compact prompts' tool-line width (difficulty.toolWidth; absent or 0: unpadded). */
  toolWidth?: number;
}

export function taskKey(t: PlanPathTask): string {
  return `${t.grid.join("/")}|${t.start}|${t.goal}|${t.maxTurns}`;
}

export const TEST_FRACTION = 0.1;

export function generate(seed: number, opts: GenerateOptions<PlanPathDifficulty>): PlanPathTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const size = intKnob(ENV_ID, d, "size", 3, 10);
  const density = numKnob(ENV_ID, d, "wallDensity", 0, 0.4);
  const maxTurns = intKnob(ENV_ID, d, "maxTurns", 1, 10);
  const minDistance = intKnob(ENV_ID, d, "minDistance", 1, 2 * size - 2);
  const toolWidth = intKnob(ENV_ID, d, "toolWidth", 0, 64);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const rows: string[] = [];
    for (let r = 0; r < size; r++) {
      let row = "";
      for (let c = 0; c < size; c++) row += rng.float() < density ? "#" : ".";
      rows.push(row);
    }
    const free: Pos[] = [];
    rows.forEach((row, r) => [...row].forEach((ch, c) => ch === "." && free.push([r, c])));
    if (free.length < 2) return null;
    const start = rng.pick(free);
    const goal = rng.pick(free);
    const path = bfsPath(rows, start, goal);
    if (path === null || path.length < minDistance) return null;
    return {
      size,
      grid: rows,
      start,
      goal,
      shortest: path.length,
      maxTurns,
      ...(toolWidth ? { toolWidth } : {}),
    };
  });
}

export interface WalkResult {
  pos: Pos;
  stepsTaken: number;
  reached: boolean;
  /** Positions after each executed move (bumps repeat the position), for rendering. */
  trail: Pos[];
  reward: number;
  breakdown: { step: number; invalid: number; goal: number; shortest: number; shaping: number };
}

/**
 * Walks `moves` from `pos`. A move into a wall or off the grid is an invalid move: penalised, the
 * agent stays. Moves after the goal are ignored (the episode is over there).
 */
export function walk(
  task: PlanPathTask,
  pos: Pos,
  stepsTaken: number,
  moves: readonly Move[],
): WalkResult {
  const b = { step: 0, invalid: 0, goal: 0, shortest: 0, shaping: 0 };
  const phi = (p: Pos) => -manhattan(p, task.goal);
  let cur: Pos = [pos[0], pos[1]];
  let steps = stepsTaken;
  let reached = samePos(cur, task.goal);
  const trail: Pos[] = [];
  for (const m of moves) {
    if (reached) break;
    let next: Pos = [cur[0] + DELTA[m][0], cur[1] + DELTA[m][1]];
    b.step += REWARD.step;
    steps++;
    if (!isFree(task.grid, next)) {
      b.invalid += REWARD.invalidMove;
      next = cur;
    }
    b.shaping += REWARD.gamma * phi(next) - phi(cur);
    cur = next;
    trail.push(cur);
    if (samePos(cur, task.goal)) {
      reached = true;
      b.goal += REWARD.goal;
      if (steps === task.shortest) b.shortest += REWARD.shortest;
    }
  }
  const reward = round6(b.step + b.invalid + b.goal + b.shortest + b.shaping);
  return { pos: cur, stepsTaken: steps, reached, trail, reward, breakdown: b };
}

/** JavaScript helpers predefined for the tool agent; mirrors grid.ts bfsPath (same tie order). */
export const TOOL_PRELUDE = `
function bfs(grid, start, goal) {
  const h = grid.length, w = grid[0].length, D = [["U",-1,0],["D",1,0],["L",0,-1],["R",0,1]];
  const key = (r, c) => r * w + c, prev = new Map([[key(start[0], start[1]), null]]);
  const q = [[start[0], start[1]]];
  for (let i = 0; i < q.length; i++) {
    const [r, c] = q[i];
    if (r === goal[0] && c === goal[1]) {
      const out = []; let k = key(r, c);
      while (prev.get(k) !== null) { const [pk, m] = prev.get(k); out.push(m); k = pk; }
      return out.reverse();
    }
    for (const [m, dr, dc] of D) {
      const nr = r + dr, nc = c + dc;
      if (nr < 0 || nc < 0 || nr >= h || nc >= w || grid[nr][nc] === "#" || prev.has(key(nr, nc))) continue;
      prev.set(key(nr, nc), [key(r, c), m]); q.push([nr, nc]);
    }
  }
  return null;
}`;

/** The oracle's tool program: a self-contained BFS (teaches the algorithm, not the helper). */
export const ORACLE_TOOL_CODE =
  `// BFS over free cells from the current position; moves tried in order U, D, L, R.
const dirs = [["U", -1, 0], ["D", 1, 0], ["L", 0, -1], ["R", 0, 1]];
const h = grid.length, w = grid[0].length;
const seen = new Map([[start[0] * w + start[1], null]]);
const queue = [start];
let found = null;
for (let i = 0; i < queue.length && !found; i++) {
  const [r, c] = queue[i];
  if (r === goal[0] && c === goal[1]) found = [r, c];
  for (const [m, dr, dc] of dirs) {
    const nr = r + dr, nc = c + dc, k = nr * w + nc;
    if (nr < 0 || nc < 0 || nr >= h || nc >= w || grid[nr][nc] === "#" || seen.has(k)) continue;
    seen.set(k, [r * w + c, m]);
    queue.push([nr, nc]);
  }
}
const path = [];
for (let k = goal[0] * w + goal[1]; seen.get(k); k = seen.get(k)[0]) path.push(seen.get(k)[1]);
console.log(path.reverse().join(" "));
`;
