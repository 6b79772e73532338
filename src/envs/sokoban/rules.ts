// Sokoban rules: rooms with one box, an exact BFS solver over (player, box) positions (used to
// keep only solvable levels, to detect dead positions, and as the oracle), and the reward of a
// move list (docs/algorithm.md: step −0.01, invalid −0.05, box on goal +1, box off goal −0.5, win +10,
// fail −5, shaping 0.1 per cell the box gets closer to the goal).

import { generateInSplit, intKnob, resolveDifficulty, round6 } from "../api.ts";
import { DELTA, isFree, manhattan, type Move, MOVES, type Pos, samePos } from "../grid.ts";
import type { GenerateOptions } from "../types.ts";

export const ENV_ID = "sokoban_v1";

export const REWARD = {
  step: -0.01,
  invalid: -0.05,
  boxOnGoal: 1,
  boxOffGoal: -0.5,
  win: 10,
  fail: -5,
  shaping: 0.1,
} as const;

export interface SokobanDifficulty {
  [key: string]: number;
  /** Room side including the outer wall (the paper: 6). */
  size: number;
  /** Extra wall cells inside the room. */
  innerWalls: number;
  /** The optimal solution needs at least this many pushes. */
  minPushes: number;
  maxTurns: number;
}

export const DEFAULT_DIFFICULTY: SokobanDifficulty = {
  size: 6,
  innerWalls: 2,
  minPushes: 2,
  maxTurns: 4,
};

export interface SokobanTask {
  /** Rows of "#" (wall) and "." (floor); the box, goal and player are separate. */
  grid: string[];
  player: Pos;
  box: Pos;
  goal: Pos;
  /** Moves and pushes of an optimal (fewest-moves) solution. */
  optimalMoves: number;
  optimalPushes: number;
  maxTurns: number;
}

export const TEST_FRACTION = 0.1;

export function taskKey(t: SokobanTask): string {
  return `${t.grid.join("/")}|${t.player}|${t.box}|${t.goal}|${t.maxTurns}`;
}

/** Fewest-moves solution (BFS over player × box; moves tried U, D, L, R), or null if none. */
export function solveSokoban(
  grid: readonly string[],
  player: Pos,
  box: Pos,
  goal: Pos,
): Move[] | null {
  const w = grid[0].length, n = grid.length * w;
  const enc = (p: Pos, b: Pos) => (p[0] * w + p[1]) * n + b[0] * w + b[1];
  const prev = new Map<number, [number, Move] | null>([[enc(player, box), null]]);
  const queue: [Pos, Pos][] = [[player, box]];
  for (let i = 0; i < queue.length; i++) {
    const [p, b] = queue[i];
    if (samePos(b, goal)) {
      const out: Move[] = [];
      for (let k = enc(p, b), e = prev.get(k); e; k = e[0], e = prev.get(k)) out.push(e[1]);
      return out.reverse();
    }
    for (const m of MOVES) {
      const r = tryMove(grid, p, b, m);
      if (r.kind === "blocked") continue;
      const k = enc(r.player, r.box);
      if (prev.has(k)) continue;
      prev.set(k, [enc(p, b), m]);
      queue.push([r.player, r.box]);
    }
  }
  return null;
}

export type MoveResult = { kind: "blocked" } | { kind: "walk" | "push"; player: Pos; box: Pos };

export function tryMove(grid: readonly string[], player: Pos, box: Pos, m: Move): MoveResult {
  const [dr, dc] = DELTA[m];
  const next: Pos = [player[0] + dr, player[1] + dc];
  if (!isFree(grid, next)) return { kind: "blocked" };
  if (!samePos(next, box)) return { kind: "walk", player: next, box };
  const boxNext: Pos = [box[0] + dr, box[1] + dc];
  if (!isFree(grid, boxNext)) return { kind: "blocked" };
  return { kind: "push", player: next, box: boxNext };
}

export function countPushes(
  grid: readonly string[],
  player: Pos,
  box: Pos,
  moves: readonly Move[],
): number {
  let pushes = 0;
  for (const m of moves) {
    const r = tryMove(grid, player, box, m);
    if (r.kind === "blocked") continue;
    if (r.kind === "push") pushes++;
    [player, box] = [r.player, r.box];
  }
  return pushes;
}

export function generate(seed: number, opts: GenerateOptions<SokobanDifficulty>): SokobanTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const size = intKnob(ENV_ID, d, "size", 5, 8);
  const inner = intKnob(ENV_ID, d, "innerWalls", 0, (size - 2) * (size - 2) - 3);
  const minPushes = intKnob(ENV_ID, d, "minPushes", 1, 6);
  const maxTurns = intKnob(ENV_ID, d, "maxTurns", 1, 10);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const interior: Pos[] = [];
    for (let r = 1; r < size - 1; r++) for (let c = 1; c < size - 1; c++) interior.push([r, c]);
    const cells = rng.shuffle(interior);
    const walls = new Set(cells.slice(0, inner).map(([r, c]) => r * size + c));
    const [goal, box, player] = cells.slice(inner, inner + 3);
    const grid: string[] = [];
    for (let r = 0; r < size; r++) {
      let row = "";
      for (let c = 0; c < size; c++) {
        const edge = r === 0 || c === 0 || r === size - 1 || c === size - 1;
        row += edge || walls.has(r * size + c) ? "#" : ".";
      }
      grid.push(row);
    }
    const plan = solveSokoban(grid, player, box, goal);
    if (plan === null) return null;
    const pushes = countPushes(grid, player, box, plan);
    if (pushes < minPushes) return null;
    return { grid, player, box, goal, optimalMoves: plan.length, optimalPushes: pushes, maxTurns };
  });
}

export interface SokobanGame {
  player: Pos;
  box: Pos;
  moves: number;
}

export interface PushResult {
  game: SokobanGame;
  solved: boolean;
  dead: boolean;
  reward: number;
  breakdown: {
    step: number;
    invalid: number;
    onGoal: number;
    offGoal: number;
    win: number;
    shaping: number;
  };
}

/** Plays `moves`; stops at the win. Blocked moves (wall, box against a wall) are invalid: no-ops. */
export function play(task: SokobanTask, g: SokobanGame, moves: readonly Move[]): PushResult {
  const b = { step: 0, invalid: 0, onGoal: 0, offGoal: 0, win: 0, shaping: 0 };
  let { player, box } = g;
  let n = g.moves;
  let solved = samePos(box, task.goal);
  for (const m of moves) {
    if (solved) break;
    b.step += REWARD.step;
    n++;
    const r = tryMove(task.grid, player, box, m);
    if (r.kind === "blocked") {
      b.invalid += REWARD.invalid;
      continue;
    }
    if (r.kind === "push") {
      b.shaping += REWARD.shaping * (manhattan(box, task.goal) - manhattan(r.box, task.goal));
      if (samePos(box, task.goal)) b.offGoal += REWARD.boxOffGoal;
      if (samePos(r.box, task.goal)) {
        b.onGoal += REWARD.boxOnGoal;
        b.win += REWARD.win; // one box: on goal = every box on goal
        solved = true;
      }
    }
    [player, box] = [r.player, r.box];
  }
  const dead = !solved && solveSokoban(task.grid, player, box, task.goal) === null;
  const reward = round6(b.step + b.invalid + b.onGoal + b.offGoal + b.win + b.shaping);
  return { game: { player, box, moves: n }, solved, dead, reward, breakdown: b };
}

/** Helper predefined for the tool agent; same search and tie order as solveSokoban. */
export const TOOL_PRELUDE = `
function solveSokoban(grid, player, box, goal) {
  const D = [["U",-1,0],["D",1,0],["L",0,-1],["R",0,1]];
  const free = (r, c) => r >= 0 && c >= 0 && r < grid.length && c < grid[0].length && grid[r][c] !== "#";
  const key = (p, b) => p.join(",") + "|" + b.join(",");
  const prev = new Map([[key(player, box), null]]), q = [[player, box]];
  for (let i = 0; i < q.length; i++) {
    const [p, b] = q[i];
    if (b[0] === goal[0] && b[1] === goal[1]) {
      const out = []; let k = key(p, b);
      while (prev.get(k)) { out.push(prev.get(k)[1]); k = prev.get(k)[0]; }
      return out.reverse();
    }
    for (const [m, dr, dc] of D) {
      const np = [p[0] + dr, p[1] + dc]; let nb = b;
      if (!free(np[0], np[1])) continue;
      if (np[0] === b[0] && np[1] === b[1]) { nb = [b[0] + dr, b[1] + dc]; if (!free(nb[0], nb[1])) continue; }
      if (prev.has(key(np, nb))) continue;
      prev.set(key(np, nb), [key(p, b), m]); q.push([np, nb]);
    }
  }
  return null;
}`;

/** The oracle's tool program: a self-contained BFS over (player, box) states. */
export const ORACLE_TOOL_CODE =
  `// BFS over (player, box) states; a move into the box pushes it if the cell beyond is free.
const dirs = [["U", -1, 0], ["D", 1, 0], ["L", 0, -1], ["R", 0, 1]];
const free = (r, c) => r >= 0 && c >= 0 && r < grid.length && c < grid[0].length && grid[r][c] !== "#";
const key = (p, b) => p + "|" + b;
const prev = new Map([[key(player, box), null]]);
const queue = [[player, box]];
let end = null;
for (let i = 0; i < queue.length && end === null; i++) {
  const [p, b] = queue[i];
  if (b[0] === goal[0] && b[1] === goal[1]) { end = key(p, b); break; }
  for (const [m, dr, dc] of dirs) {
    const np = [p[0] + dr, p[1] + dc];
    if (!free(np[0], np[1])) continue;
    let nb = b;
    if (np[0] === b[0] && np[1] === b[1]) {
      nb = [b[0] + dr, b[1] + dc];
      if (!free(nb[0], nb[1])) continue;
    }
    if (prev.has(key(np, nb))) continue;
    prev.set(key(np, nb), [key(p, b), m]);
    queue.push([np, nb]);
  }
}
const moves = [];
for (let k = end; k !== null && prev.get(k); k = prev.get(k)[0]) moves.push(prev.get(k)[1]);
console.log(moves.reverse().join(" "));
`;
