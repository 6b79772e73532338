// Hanabi, small (hanabi_v1): two cooperating players, one shared policy. Each sees the partner's
// cards but not its own, and acts with `#### play N`, `#### discard N` or `#### hint <colour|rank>`.
// Team reward (difficulty `shaping` 1, the default): the change in the scripted team's final score
// from the state (oracle.ts oracleValue), so the K candidates of a turn differ by what they do to the
// game — a blind play that scores now but costs a life, or a discard of the last copy, scores below
// the hint that sets up a sure play. `shaping` 0: +1 per card played, −score on bombing out. A
// broken rule wastes the turn and costs the actor −1 locally, unparseable text −2 (docs/algorithm.md).

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
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
import type { Rng } from "../rng.ts";
import { oracleValue, scriptedMove } from "./oracle.ts";
import {
  apply,
  cardName,
  COLOR_LETTERS,
  COLOR_NAMES,
  deal,
  DEFAULT_DIFFICULTY,
  ENV_ID,
  generate,
  type HanabiAction,
  type HanabiDifficulty,
  type HanabiTask,
  type HandCard,
  maxScore,
  type Table,
  taskKey,
  TEST_FRACTION,
} from "./rules.ts";

export const ILLEGAL_PENALTY = -1;

export interface HanabiState extends EnvState {
  task: HanabiTask;
  table: Table;
}

const AGENTS = ["player_0", "player_1"] as const;

/** Enough turns for any legal game; only stalling (illegal moves forever) hits it. */
function maxTurns(t: HanabiTask): number {
  return t.deck.length + t.maxHints + t.colors;
}

function reset(task: HanabiTask): HanabiState {
  return {
    envId: ENV_ID,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    table: deal(task),
  };
}

export function formatAction(a: HanabiAction): string {
  if (a.type !== "hint") return `${a.type} ${a.index + 1}`;
  return a.attribute === "color" ? `hint ${COLOR_NAMES[a.value]}` : `hint ${a.value}`;
}

const ACTION_RE = /^\s*(play|discard|hint)\s+(?:(?:colou?r|rank)\s+)?([a-z]+|\d+)\s*\.?\s*$/i;

/** State-free: indices and names are checked against the game in step(). */
function parseAction(_agent: string, text: string): ParseResult<HanabiAction> {
  if (text.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the message is empty", text) };
  }
  const i = text.lastIndexOf("####");
  if (i < 0) {
    return { ok: false, invalid: invalid("no_answer", "no `####` before the action", text) };
  }
  const m = ACTION_RE.exec(text.slice(i + 4).split("\n")[0]);
  const bad = invalid(
    "malformed",
    "after `####` write `play N`, `discard N`, `hint <colour>` or `hint <rank>`",
    text,
  );
  if (!m) return { ok: false, invalid: bad };
  const verb = m[1].toLowerCase(), arg = m[2].toLowerCase();
  const num = /^\d+$/.test(arg) ? Number(arg) : null;
  if (verb === "hint") {
    if (num !== null) return { ok: true, action: { type: "hint", attribute: "rank", value: num } };
    const color = COLOR_NAMES.findIndex((n) => n === arg || (arg.length === 1 && n[0] === arg));
    return color < 0
      ? { ok: false, invalid: bad }
      : { ok: true, action: { type: "hint", attribute: "color", value: color } };
  }
  if (num === null || num < 1) return { ok: false, invalid: bad };
  return { ok: true, action: { type: verb as "play" | "discard", index: num - 1 } };
}

function step(s: HanabiState, agent: string, a: HanabiAction | Invalid): StepResult<HanabiState> {
  assertTurn(hanabi, s, agent);
  const p = s.cursor;
  const out = apply(s.task, s.table, p, isInvalid(a) ? null : a, isInvalid(a) ? a.reason : null);
  const clock = advanceClock(s, AGENTS.length, maxTurns(s.task), out.over);
  const state: HanabiState = { ...s, ...clock, terminated: out.over, table: out.table };
  const info: Record<string, unknown> = { score: out.table.score, event: out.table.events.at(-1) };
  let local = 0;
  if (isInvalid(a)) [local, info.invalid] = [FORMAT_PENALTY, a];
  else if (out.illegal !== null) {
    [local, info.invalid] = [ILLEGAL_PENALTY, invalid("illegal", out.illegal, formatAction(a))];
  }
  if (state.terminated || state.truncated) {
    const frac = out.table.score / maxScore(s.task);
    info.finalRewards = { player_0: frac, player_1: frac };
  }
  let team = out.reward;
  if (s.task.shaped) {
    // What the action did to the game: the scripted team's final score from here, less from before.
    const before = oracleValue(s.task, s.table, p);
    const after = oracleValue(s.task, out.table, 1 - p);
    [team, info.oracleValue] = [after - before, after];
  }
  return {
    state,
    teamReward: team,
    localReward: local,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

/** What a holder knows about its own card: "R?" colour known, "?2" rank known, "??" nothing. */
function knowledge(c: HandCard): string {
  return `${c.knownColor === null ? "?" : COLOR_LETTERS[c.knownColor]}${c.knownRank ?? "?"}`;
}

function describe(s: HanabiState, p: number): { full: string; compact: string } {
  const { task: t, table: tb } = s;
  const fw = tb.fireworks.map((r, c) => `${COLOR_LETTERS[c]}${r}`).join(" ");
  const mine = tb.hands[p].map((c, i) => `${i + 1}:${knowledge(c)}`).join(" ");
  const mate = tb.hands[1 - p].map((c, i) => `${i + 1}:${cardName(c)}(knows ${knowledge(c)})`).join(
    " ",
  );
  const disc = tb.discards.map(cardName).join(" ") || "none";
  const deck = t.deck.length - tb.next;
  const recent = tb.events.slice(-2).join("; ") || "none";
  const compact = [
    `hanabi p${p} t${s.turn + 1} hints${tb.hints} lives${tb.lives} deck${deck}`,
    `fw ${fw}`,
    `you ${tb.hands[p].map(knowledge).join(" ")}`,
    `mate ${tb.hands[1 - p].map(cardName).join(" ")}`,
    `disc ${disc}`,
    `last ${recent}`,
  ].join("\n") + "\n";
  const full = [
    `You are player_${p}. Turn ${s.turn + 1}. Score ${tb.score}/${maxScore(t)}.`,
    `Fireworks (highest rank played per colour): ${fw}`,
    `Hint tokens: ${tb.hints}/${t.maxHints}. Lives: ${tb.lives}. Cards left in the deck: ${deck}.`,
    `Your hand (what you know; ? = unknown): ${mine}`,
    `Partner's hand: ${mate}`,
    `Discarded: ${disc}`,
    `Recent actions: ${recent}`,
  ].join("\n");
  return { full, compact };
}

function systemPrompt(t: HanabiTask): string {
  const colors = COLOR_NAMES.slice(0, t.colors).join(", ");
  return `You are playing Hanabi, a cooperative card game for two players, with colours ${colors} ` +
    `(letters ${
      COLOR_LETTERS.slice(0, t.colors)
    }) and ranks 1-${t.ranks}. You see your partner's cards but ` +
    `not your own. Together, build each colour's firework in order 1, 2, ... ${t.ranks}. On your turn do one of: ` +
    `play a card (it must be the next rank of its colour, otherwise you lose a life); discard a card (gains ` +
    `a hint token); give your partner a hint naming a colour or a rank, which shows every card of theirs ` +
    `with it (costs a token). Losing all lives scores 0. Cards are numbered from 1 (oldest) in each hand.\n` +
    "End your reply with `#### ` and the action: `#### play 2`, `#### discard 1`, `#### hint red` or `#### hint 3`.";
}

function observe(s: HanabiState, agent: string, style: PromptStyle): Prompt {
  const d = describe(s, AGENTS.indexOf(agent as typeof AGENTS[number]));
  return buildPrompt(style, {
    system: systemPrompt(s.task),
    user: `${d.full}\nYour action?`,
    compact: d.compact,
  });
}

function oracle(s: HanabiState, agent: string): { text: string; action: HanabiAction } {
  const a = scriptedMove(s.task, s.table, AGENTS.indexOf(agent as typeof AGENTS[number]));
  return { text: `#### ${formatAction(a)}`, action: a };
}

/**
 * Exploration for demonstrations: a uniformly random action of any kind (play or discard a card
 * of the hand, hint any colour or rank), legal or not, so the states after misplays, wasted
 * hints and lost lives appear in the data too.
 */
function randomMove(
  s: HanabiState,
  agent: string,
  rng: Rng,
): { text: string; action: HanabiAction } {
  const { task: t, table: tb } = s;
  const n = tb.hands[AGENTS.indexOf(agent as typeof AGENTS[number])].length;
  const k = rng.int(2 * n + t.colors + t.ranks);
  const a: HanabiAction = k < n
    ? { type: "play", index: k }
    : k < 2 * n
    ? { type: "discard", index: k - n }
    : k < 2 * n + t.colors
    ? { type: "hint", attribute: "color", value: k - 2 * n }
    : { type: "hint", attribute: "rank", value: k - 2 * n - t.colors + 1 };
  return { text: `#### ${formatAction(a)}`, action: a };
}

function render(s: HanabiState): Rendered {
  const { task: t, table: tb } = s;
  const status = tb.bombed
    ? "bombed out"
    : s.terminated || s.truncated
    ? "game over"
    : `turn ${s.turn + 1}`;
  const hands = tb.hands.map((h, p) =>
    `player_${p}: ${h.map((c) => `${cardName(c)}[${knowledge(c)}]`).join(" ")}`
  );
  const text = [
    `hanabi: ${status}, score ${tb.score}/${maxScore(t)}, hints ${tb.hints}, lives ${tb.lives}`,
    `fireworks ${tb.fireworks.map((r, c) => `${COLOR_LETTERS[c]}${r}`).join(" ")}`,
    ...hands,
    `discards ${tb.discards.map(cardName).join(" ") || "none"}`,
  ].join("\n");
  return {
    text,
    view: {
      kind: "hanabi",
      status,
      score: tb.score,
      maxScore: maxScore(t),
      fireworks: tb.fireworks.map((rank, c) => ({ color: COLOR_NAMES[c], rank })),
      hints: tb.hints,
      lives: tb.lives,
      deck: t.deck.length - tb.next,
      hands: tb.hands.map((h) => h.map((c) => ({ card: cardName(c), knows: knowledge(c) }))),
      discards: tb.discards.map(cardName),
      events: tb.events,
    },
  };
}

export const hanabi: EnvDefinition<HanabiTask, HanabiState, HanabiAction, HanabiDifficulty> = {
  id: ENV_ID,
  description:
    "Hanabi, small cooperative variant: 2 players, 3 colours x 3 ranks, hints/plays/discards",
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
  success: (s) => s.table.score === maxScore(s.task),
  oracle,
  randomMove,
  solve: (task) => oracleRollout(hanabi, task),
  render,
};
