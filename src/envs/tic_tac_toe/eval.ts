// Measuring a tic-tac-toe policy: games against a uniformly random player and against perfect
// play (minimax), alternating sides, from the empty board. A policy maps a prompt to its message,
// so a model, a script or the oracle plug in the same way.

import { act } from "../api.ts";
import { Rng } from "../rng.ts";
import type { Prompt, PromptStyle } from "../types.ts";
import { ticTacToe, type TttState } from "./env.ts";
import { bestMove, legalMoves } from "./rules.ts";

/** What a player says given its prompt; the state is passed for scripted players. */
export type TttPolicy = (
  prompt: Prompt,
  state: TttState,
  agent: string,
) => string | Promise<string>;

export interface MatchRecord {
  games: number;
  wins: number;
  draws: number;
  losses: number;
  /** Games the policy lost by an illegal or unparseable move (counted in losses too). */
  forfeits: number;
}

export function randomPlayer(seed: number): TttPolicy {
  const rng = new Rng(seed);
  return (_p, s) => `#### ${rng.pick(legalMoves(s.board)) + 1}`;
}

export const perfectPlayer: TttPolicy = (_p, s) => `#### ${bestMove(s.board) + 1}`;

/** Plays `games` games of `policy` against `opponent`; the policy is X in even games, O in odd. */
export async function playMatch(
  policy: TttPolicy,
  opponent: TttPolicy,
  opts: { games: number; style?: PromptStyle },
): Promise<MatchRecord> {
  const rec: MatchRecord = { games: opts.games, wins: 0, draws: 0, losses: 0, forfeits: 0 };
  const style = opts.style ?? "compact";
  for (let g = 0; g < opts.games; g++) {
    const me = g % 2 === 0 ? "player_x" : "player_o";
    let s = ticTacToe.reset({ opening: [], shaping: false });
    while (!s.terminated) {
      const agent = ticTacToe.turnOrder[s.cursor];
      const player = agent === me ? policy : opponent;
      const text = await player(ticTacToe.observe(s, agent, style), s, agent);
      s = (await act(ticTacToe, s, agent, text)).state;
    }
    const mine = me === "player_x" ? "x" : "o";
    if (s.winner === "draw") rec.draws++;
    else if (s.winner === mine) rec.wins++;
    else rec.losses++;
    if (s.forfeit === me) rec.forfeits++;
  }
  return rec;
}

export function evaluateVsRandom(
  policy: TttPolicy,
  opts: { games: number; seed: number; style?: PromptStyle },
) {
  return playMatch(policy, randomPlayer(opts.seed), opts);
}

export function evaluateVsPerfect(policy: TttPolicy, opts: { games: number; style?: PromptStyle }) {
  return playMatch(policy, perfectPlayer, opts);
}
