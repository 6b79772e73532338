// Tic-tac-toe (tic_tac_toe_v1): two symmetric players, one shared policy in self-play.
// Competitive, so there is no team reward: the mover's local reward is +1 for a winning move;
// a broken rule (occupied cell: −1, unparseable text: −2) forfeits the game. The loser's outcome
// arrives in info.finalRewards because its last step is already in the past.

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
import type {
  EnvDefinition,
  EnvState,
  Invalid,
  ParseResult,
  Prompt,
  PromptStyle,
  Rendered,
  StepResult,
} from "../types.ts";
import {
  bestMove,
  type Board,
  boardOf,
  DEFAULT_DIFFICULTY,
  ENV_ID,
  generate,
  legalMoves,
  type Mark,
  place,
  taskKey,
  TEST_FRACTION,
  type TttDifficulty,
  type TttTask,
  value,
  winnerOf,
} from "./rules.ts";

export const REWARD = { win: 1, draw: 0, loss: -1, illegal: -1, shapingScale: 0.1 } as const;

export interface TttAction {
  /** 0-based cell, row-major. */
  cell: number;
}

export interface TttState extends EnvState {
  task: TttTask;
  board: Board;
  moves: number[];
  /** "draw" once the board is full with no line. */
  winner: Mark | "draw" | null;
  /** The agent that broke a rule and lost by it. */
  forfeit: string | null;
}

const AGENTS = ["player_x", "player_o"] as const;
const MARK: Record<string, Mark> = { player_x: "x", player_o: "o" };
const AGENT_OF: Record<Mark, string> = { x: "player_x", o: "player_o" };

function reset(task: TttTask): TttState {
  const board = boardOf(task.opening);
  const n = task.opening.length;
  return {
    envId: ENV_ID,
    turn: Math.floor(n / 2),
    cursor: n % 2,
    terminated: false,
    truncated: false,
    task,
    board,
    moves: [...task.opening],
    winner: null,
    forfeit: null,
  };
}

function parseAction(_agent: string, text: string): ParseResult<TttAction> {
  if (text.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the message is empty", text) };
  }
  const i = text.lastIndexOf("####");
  if (i < 0) {
    return { ok: false, invalid: invalid("no_answer", "no `####` before the cell number", text) };
  }
  const m = /^\s*([1-9])(?!\d)/.exec(text.slice(i + 4));
  if (!m) {
    return {
      ok: false,
      invalid: invalid("malformed", "after `####` write one cell number 1-9", text),
    };
  }
  return { ok: true, action: { cell: Number(m[1]) - 1 } };
}

function outcome(winner: Mark | "draw"): Record<string, number> {
  if (winner === "draw") return { player_x: REWARD.draw, player_o: REWARD.draw };
  const loser = winner === "x" ? "o" : "x";
  return { [AGENT_OF[winner]]: REWARD.win, [AGENT_OF[loser]]: REWARD.loss };
}

function forfeitStep(
  s: TttState,
  agent: string,
  why: Invalid,
  penalty: number,
): StepResult<TttState> {
  const winner: Mark = MARK[agent] === "x" ? "o" : "x";
  const clock = advanceClock(s, 2, 5, true);
  const state: TttState = { ...s, ...clock, terminated: true, winner, forfeit: agent };
  return {
    state,
    teamReward: 0,
    localReward: penalty,
    terminated: true,
    truncated: false,
    info: { invalid: why, finalRewards: outcome(winner) },
  };
}

function step(s: TttState, agent: string, a: TttAction | Invalid): StepResult<TttState> {
  assertTurn(ticTacToe, s, agent);
  if (isInvalid(a)) return forfeitStep(s, agent, a, FORMAT_PENALTY);
  if (s.board[a.cell] !== ".") {
    const why = invalid("illegal", `cell ${a.cell + 1} is already taken`, String(a.cell + 1));
    return forfeitStep(s, agent, why, REWARD.illegal);
  }
  const board = place(s.board, a.cell, MARK[agent]);
  const w = winnerOf(board);
  const winner = w ?? (legalMoves(board).length === 0 ? "draw" : null);
  let local = w !== null ? REWARD.win : 0;
  const info: Record<string, unknown> = {};
  if (s.task.shaping && w === null) {
    // Regret against perfect play: 0 for a best move, negative for a blunder.
    const regret = value(s.board) - -value(board);
    local = round6(local - REWARD.shapingScale * regret);
    info.regret = regret;
  }
  const clock = advanceClock(s, 2, 5, winner !== null);
  const state: TttState = {
    ...s,
    ...clock,
    terminated: winner !== null,
    board,
    moves: [...s.moves, a.cell],
    winner,
  };
  if (winner !== null) info.finalRewards = outcome(winner);
  return {
    state,
    teamReward: 0,
    localReward: local,
    terminated: state.terminated,
    truncated: false,
    info,
  };
}

/** The board with empty cells numbered 1-9: the model reads off the legal moves. */
export function numberedBoard(b: Board): string {
  const rows: string[] = [];
  for (let r = 0; r < 3; r++) {
    let row = "";
    for (let c = 0; c < 3; c++) row += b[r * 3 + c] === "." ? String(r * 3 + c + 1) : b[r * 3 + c];
    rows.push(row);
  }
  return rows.join("\n");
}

const SYSTEM =
  `You are playing tic-tac-toe. Cells are numbered 1-9, row by row; a digit on the board
is an empty cell, x and o are taken. Three of your marks in a row, column or diagonal wins.
Choosing a taken cell, or no valid answer, loses the game.
End your reply with \`#### \` and the cell number, e.g. \`#### 5\`.`;

function observe(s: TttState, agent: string, style: PromptStyle): Prompt {
  const me = MARK[agent];
  const last = s.moves.length
    ? `Opponent's last move: ${s.moves[s.moves.length - 1] + 1}.`
    : "You move first.";
  return buildPrompt(style, {
    system: SYSTEM,
    user: `You play ${me}.\n${numberedBoard(s.board)}\n${last}\nYour move?`,
    compact: `ttt ${me}\n${numberedBoard(s.board)}\n`,
  });
}

function oracle(s: TttState, _agent: string): { text: string; action: TttAction } {
  const cell = bestMove(s.board);
  return { text: `#### ${cell + 1}`, action: { cell } };
}

function render(s: TttState): Rendered {
  const cells = [0, 1, 2].map((r) => [...s.board.slice(r * 3, r * 3 + 3)]);
  const status = s.forfeit
    ? `${s.forfeit} forfeits`
    : s.winner === "draw"
    ? "draw"
    : s.winner
    ? `${s.winner} wins`
    : `${MARK[AGENTS[s.cursor]]} to move`;
  const last = s.moves[s.moves.length - 1];
  return {
    text: `${status}\n${numberedBoard(s.board)}`,
    view: {
      kind: "grid",
      cells,
      legend: { x: "player_x", o: "player_o", ".": "empty" },
      highlight: last === undefined ? [] : [[Math.floor(last / 3), last % 3]],
      caption: status,
    },
  };
}

export const ticTacToe: EnvDefinition<TttTask, TttState, TttAction, TttDifficulty> = {
  id: ENV_ID,
  description: "Tic-tac-toe self-play: two symmetric players, one shared policy",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: false,
  symmetric: true,
  toolAgents: [],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  generate,
  taskKey,
  reset,
  observe,
  parseAction,
  step,
  // A game is "solved" when it ends by the rules: nobody forfeited by an illegal move.
  success: (s) => s.winner !== null && s.forfeit === null,
  oracle,
  solve: (task) => oracleRollout(ticTacToe, task),
  render,
};
