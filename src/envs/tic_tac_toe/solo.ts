// Tic-tac-toe, single agent (tic_tac_toe_solo_v1; level L0): one "player" agent against a fixed
// scripted opponent that lives inside the env, instead of tic_tac_toe_v1's symmetric self-play.
// Same tasks (random legal openings) and splits as tic_tac_toe_v1 (its generator).
//
// Sides and opponent, both pure functions of the task (a task carries no seed, and the splits must
// stay tic_tac_toe_v1's): the policy plays the mark chosen by a hash of the task's key (about half
// the tasks each way); when that is not the side to move after the opening, the opponent moves
// first, inside `reset` (unless that move would end the game, possible only with 4-move openings:
// then the policy takes the side to move). The opponent plays a uniformly random legal move, drawn
// by a hash of (task, board): seeded and reproducible, no generator state in the env state, and the
// same reply every time the same position comes up in a task. Its moves are applied inside `step`,
// right after the policy's, so the env has one agent and one step per policy move (the turn clock
// counts the policy's moves; at most 5).
//
// Rewards, as tic_tac_toe_v1's mover: +1 (local) for the winning move; a broken rule forfeits the
// game (occupied cell −1, unparseable text −2); optional regret shaping. Unlike self-play, the loss
// is known at the step that allowed it (the opponent's winning reply): −1 there. finalRewards
// gives "player" +1 / 0 / −1 for a win / draw / loss.
//
// Success = the policy WINS. Measured over every task of the default difficulty (2-move openings:
// 56 train, 16 test tasks, each with its fixed side and opponent; the policy is X in 32 and 8):
//   policy                                win (train / test)   draw          loss
//   the oracle below                      95% / 88%            5% / 12%      0% / 0%
//   minimax, lowest cell on ties          95% / 75%            4% / 25%      2% / 0%
//   uniformly random legal moves          45% / 41%            12% / 8%      44% / 52%
// (3- and 4-move openings: oracle 88% / 82% wins, random 46% / 47%.) "Does not lose" would credit
// a random policy with about half the tasks and the oracle with all of them; "wins" needs real
// play (take wins, block, set up forks) and leaves a random policy below half, so it is the
// success measure. Not every task can be won even by the oracle: this opponent sometimes plays
// the right defence, and some longer openings hand it a won position.

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
  round6,
} from "../api.ts";
import { buildPrompt } from "../prompt.ts";
import { hash32 } from "../rng.ts";
import type {
  EnvDefinition,
  EnvState,
  Invalid,
  Prompt,
  PromptStyle,
  Rendered,
  StepResult,
} from "../types.ts";
import { numberedBoard, REWARD, ticTacToe, type TttAction } from "./env.ts";
import {
  type Board,
  boardOf,
  DEFAULT_DIFFICULTY,
  ENV_ID as MAS_ID,
  generate,
  legalMoves,
  type Mark,
  place,
  score,
  taskKey,
  TEST_FRACTION,
  toMove,
  type TttDifficulty,
  type TttTask,
  value,
  winnerOf,
} from "./rules.ts";

export const SOLO_ID = "tic_tac_toe_solo_v1";

/** The policy moves at most 5 times (X from the empty board). */
const MAX_TURNS = 5;

export interface TttSoloState extends EnvState {
  task: TttTask;
  /** The policy's mark. */
  mark: Mark;
  board: Board;
  /** Every move, opening and opponent included, in order. */
  moves: number[];
  winner: Mark | "draw" | null;
  /** The policy broke a rule and lost by it. */
  forfeit: boolean;
}

const AGENTS = ["player"] as const;

const other = (m: Mark): Mark => (m === "x" ? "o" : "x");

/** The scripted opponent: a uniformly random legal move, drawn by a hash of (task, board). */
export function opponentMove(task: TttTask, board: Board): number {
  const legal = legalMoves(board);
  return legal[hash32(`tic_tac_toe_solo|opponent|${taskKey(task)}|${board}`) % legal.length];
}

/** The mark a task gives the policy, before the "opening reply ends the game" exception. */
export function hashedSide(task: TttTask): Mark {
  return hash32(`tic_tac_toe_solo|side|${taskKey(task)}`) & 1 ? "o" : "x";
}

function gameOver(b: Board): Mark | "draw" | null {
  return winnerOf(b) ?? (legalMoves(b).length === 0 ? "draw" : null);
}

function reset(task: TttTask): TttSoloState {
  let board = boardOf(task.opening);
  const moves = [...task.opening];
  let mark = hashedSide(task);
  if (mark !== toMove(board)) {
    const cell = opponentMove(task, board);
    const after = place(board, cell, toMove(board));
    if (gameOver(after) === null) {
      board = after;
      moves.push(cell);
    } else {
      mark = toMove(board);
    }
  }
  return {
    envId: SOLO_ID,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    mark,
    board,
    moves,
    winner: null,
    forfeit: false,
  };
}

function outcome(s: TttSoloState, winner: Mark | "draw"): number {
  return winner === "draw" ? REWARD.draw : winner === s.mark ? REWARD.win : REWARD.loss;
}

function forfeitStep(s: TttSoloState, why: Invalid, penalty: number): StepResult<TttSoloState> {
  const clock = advanceClock(s, 1, MAX_TURNS, true);
  const state: TttSoloState = {
    ...s,
    ...clock,
    terminated: true,
    winner: other(s.mark),
    forfeit: true,
  };
  return {
    state,
    teamReward: 0,
    localReward: penalty,
    terminated: true,
    truncated: false,
    info: { invalid: why, finalRewards: { player: REWARD.loss } },
  };
}

function step(s: TttSoloState, agent: string, a: TttAction | Invalid): StepResult<TttSoloState> {
  assertTurn(ticTacToeSolo, s, agent);
  if (isInvalid(a)) return forfeitStep(s, a, FORMAT_PENALTY);
  if (s.board[a.cell] !== ".") {
    const why = invalid("illegal", `cell ${a.cell + 1} is already taken`, String(a.cell + 1));
    return forfeitStep(s, why, REWARD.illegal);
  }
  const info: Record<string, unknown> = {};
  let board = place(s.board, a.cell, s.mark);
  const moves = [...s.moves, a.cell];
  let local = 0;
  if (s.task.shaping && winnerOf(board) === null) {
    // Regret against perfect play: 0 for a best move, negative for a blunder.
    const regret = value(s.board) - -value(board);
    local -= REWARD.shapingScale * regret;
    info.regret = regret;
  }
  let winner = gameOver(board);
  if (winner === null) {
    const reply = opponentMove(s.task, board);
    board = place(board, reply, other(s.mark));
    moves.push(reply);
    info.opponent = reply + 1;
    winner = gameOver(board);
  }
  if (winner !== null) {
    local += outcome(s, winner);
    info.finalRewards = { player: outcome(s, winner) };
  }
  const clock = advanceClock(s, 1, MAX_TURNS, winner !== null);
  const state: TttSoloState = {
    ...s,
    ...clock,
    terminated: winner !== null,
    board,
    moves,
    winner,
  };
  return {
    state,
    teamReward: 0,
    localReward: round6(local),
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

const SYSTEM_SOLO =
  `You are playing tic-tac-toe against a fixed opponent that plays random legal moves. Cells are
numbered 1-9, row by row; a digit on the board is an empty cell, x and o are taken. Three of your
marks in a row, column or diagonal wins; you succeed only by winning, so take wins, block the
opponent's, and set up forks. Choosing a taken cell, or no valid answer, loses the game.
End your reply with \`#### \` and the cell number, e.g. \`#### 5\`.`;

function observe(s: TttSoloState, _agent: string, style: PromptStyle): Prompt {
  const last = s.moves.length
    ? `Opponent's last move: ${s.moves[s.moves.length - 1] + 1}.`
    : "You move first.";
  return buildPrompt(style, {
    system: SYSTEM_SOLO,
    user: `You play ${s.mark}.\n${numberedBoard(s.board)}\n${last}\nYour move?`,
    compact: `ttt solo ${s.mark}\n${numberedBoard(s.board)}\n`,
  });
}

const expected = new Map<Board, number>();

/**
 * Expected outcome (+1 win, 0 draw, −1 loss) for the player who just moved to reach `b`, when the
 * opponent now plays uniformly at random and that player then plays `bestVsRandom`.
 */
function expectedAfter(b: Board): number {
  const hit = expected.get(b);
  if (hit !== undefined) return hit;
  const w = gameOver(b);
  let v: number;
  if (w !== null) v = w === "draw" ? 0 : 1; // the player who just moved made the line
  else {
    let sum = 0;
    const legal = legalMoves(b);
    for (const c of legal) {
      const b2 = place(b, c, toMove(b));
      const w2 = gameOver(b2);
      sum += w2 === null
        ? expectedAfter(place(b2, bestVsRandom(b2), toMove(b2)))
        : w2 === "draw"
        ? 0
        : -1;
    }
    v = sum / legal.length;
  }
  expected.set(b, v);
  return v;
}

/**
 * The oracle's move: never gives up game value (a minimax-best move), and among those the one with
 * the best expected outcome against a uniformly random opponent (the opponent's hash is not
 * consulted: the oracle plays the position, not the seed). Ties go to the lowest cell.
 */
export function bestVsRandom(b: Board): number {
  const me = toMove(b);
  const legal = legalMoves(b);
  const safe = Math.max(...legal.map((c) => Math.sign(-score(place(b, c, me)))));
  let best = -1, bestV = -Infinity;
  for (const c of legal) {
    const after = place(b, c, me);
    if (Math.sign(-score(after)) !== safe) continue;
    const v = expectedAfter(after);
    if (v > bestV + 1e-12) [best, bestV] = [c, v];
  }
  return best;
}

function oracle(s: TttSoloState): { text: string; action: TttAction } {
  const cell = bestVsRandom(s.board);
  return { text: `#### ${cell + 1}`, action: { cell } };
}

function render(s: TttSoloState): Rendered {
  const cells = [0, 1, 2].map((r) => [...s.board.slice(r * 3, r * 3 + 3)]);
  const status = s.forfeit
    ? `player (${s.mark}) forfeits`
    : s.winner === "draw"
    ? "draw"
    : s.winner
    ? `${s.winner === s.mark ? "player" : "opponent"} (${s.winner}) wins`
    : `player (${s.mark}) to move`;
  const last = s.moves[s.moves.length - 1];
  const legend: Record<string, string> = { ".": "empty" };
  legend[s.mark] = "player";
  legend[other(s.mark)] = "opponent";
  return {
    text: `${status}\n${numberedBoard(s.board)}`,
    view: {
      kind: "grid",
      cells,
      legend,
      highlight: last === undefined ? [] : [[Math.floor(last / 3), last % 3]],
      caption: status,
    },
  };
}

export const ticTacToeSolo: EnvDefinition<TttTask, TttSoloState, TttAction, TttDifficulty> = {
  id: SOLO_ID,
  description:
    "Single agent (L0) tic-tac-toe: one player against a seeded random opponent; success is a win",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: false,
  symmetric: false,
  toolAgents: [],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  soloOf: MAS_ID,
  generate,
  taskKey,
  reset,
  observe,
  parseAction: (agent, text) => ticTacToe.parseAction(agent, text),
  step,
  success: (s) => s.winner === s.mark && !s.forfeit,
  oracle,
  solve: (task) => oracleRollout(ticTacToeSolo, task),
  render,
};
