// Small Hanabi rules (2 players, 2–5 colours × 2–5 ranks): the deck, the generator, and what
// play / discard / hint do to the state. Cooperative: the team scores +1 per card played; losing
// the last life zeroes the score (the Hanabi Learning Environment default). The env's team reward
// is this score's change, or (difficulty `shaping` 1, the default) the change in the scripted
// team's final score from the state (oracle.ts `oracleValue`).
// Variant: discarding at full hint tokens is allowed (the token is wasted), so a player is never
// forced into a hint it does not mean.

import { generateInSplit, intKnob, resolveDifficulty } from "../api.ts";
import type { GenerateOptions } from "../types.ts";

export const ENV_ID = "hanabi_v1";

export const COLOR_NAMES = ["red", "green", "blue", "yellow", "white"] as const;
export const COLOR_LETTERS = "RGBYW";

export interface HanabiDifficulty {
  [key: string]: number;
  colors: number;
  ranks: number;
  handSize: number;
  /** Hint tokens at the start and at most. */
  hints: number;
  lives: number;
  /**
   * Team reward. 1 (default): each action's change in the scripted team's final score when it
   * plays on from the state (src/envs/hanabi/oracle.ts `oracleValue`), so a turn's candidates are
   * compared by what they do to the game, not by the card they score now. 0: +1 per card played,
   * −score on bombing out.
   */
  shaping: number;
}

export const DEFAULT_DIFFICULTY: HanabiDifficulty = {
  colors: 3,
  ranks: 3,
  handSize: 3,
  hints: 5,
  lives: 3,
  shaping: 1,
};

export interface Card {
  id: number;
  color: number;
  /** 1-based. */
  rank: number;
}

/** A card in a hand with what its holder has been told about it. */
export interface HandCard extends Card {
  knownColor: number | null;
  knownRank: number | null;
  notColors: number[];
  notRanks: number[];
  /** Touched by some hint. */
  clued: boolean;
}

export interface HanabiTask {
  colors: number;
  ranks: number;
  handSize: number;
  maxHints: number;
  lives: number;
  /** Deck order; the first 2·handSize cards are dealt alternately. */
  deck: Card[];
  /** Team reward by the scripted team's value (difficulty `shaping` 1); absent or false: per card played. */
  shaped?: boolean;
}

export type HanabiAction =
  | { type: "play"; index: number }
  | { type: "discard"; index: number }
  | { type: "hint"; attribute: "color" | "rank"; value: number };

export interface HintRecord {
  from: number;
  to: number;
  attribute: "color" | "rank";
  value: number;
  touched: number[];
  /** First touched card (in hand order) no earlier hint had touched; null if all were clued. */
  focus: number | null;
}

export interface Table {
  hands: HandCard[][];
  /** Index into task.deck of the next card to draw. */
  next: number;
  fireworks: number[];
  hints: number;
  lives: number;
  score: number;
  bombed: boolean;
  discards: Card[];
  hintLog: HintRecord[];
  /** Actions left once the deck is empty (each player gets one more turn); null before. */
  actionsLeft: number | null;
  /** Plain-language record of every action, newest last. */
  events: string[];
}

export const TEST_FRACTION = 0.1;

export function copiesOf(rank: number, ranks: number): number {
  return rank === 1 ? 3 : rank === ranks ? 1 : 2;
}

export function cardName(c: { color: number; rank: number }): string {
  return `${COLOR_LETTERS[c.color]}${c.rank}`;
}

export function maxScore(t: HanabiTask): number {
  return t.colors * t.ranks;
}

export function taskKey(t: HanabiTask): string {
  return `${t.colors}x${t.ranks}h${t.handSize}/${t.maxHints}/${t.lives}|${
    t.deck.map(cardName).join("")
  }`;
}

export function generate(seed: number, opts: GenerateOptions<HanabiDifficulty>): HanabiTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const colors = intKnob(ENV_ID, d, "colors", 2, 5);
  const ranks = intKnob(ENV_ID, d, "ranks", 2, 5);
  const handSize = intKnob(ENV_ID, d, "handSize", 2, 5);
  const maxHints = intKnob(ENV_ID, d, "hints", 1, 8);
  const lives = intKnob(ENV_ID, d, "lives", 1, 5);
  const shaped = intKnob(ENV_ID, d, "shaping", 0, 1) === 1;
  const cards: Omit<Card, "id">[] = [];
  for (let c = 0; c < colors; c++) {
    for (let r = 1; r <= ranks; r++) {
      for (let k = 0; k < copiesOf(r, ranks); k++) cards.push({ color: c, rank: r });
    }
  }
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const deck = rng.shuffle(cards).map((c, id) => ({ id, ...c }));
    if (deck.length < 2 * handSize + 1) return null;
    return { colors, ranks, handSize, maxHints, lives, deck, ...(shaped ? { shaped } : {}) };
  });
}

function inHand(c: Card): HandCard {
  return { ...c, knownColor: null, knownRank: null, notColors: [], notRanks: [], clued: false };
}

export function deal(t: HanabiTask): Table {
  const hands: HandCard[][] = [[], []];
  for (let i = 0; i < 2 * t.handSize; i++) hands[i % 2].push(inHand(t.deck[i]));
  return {
    hands,
    next: 2 * t.handSize,
    fireworks: Array(t.colors).fill(0),
    hints: t.maxHints,
    lives: t.lives,
    score: 0,
    bombed: false,
    discards: [],
    hintLog: [],
    actionsLeft: null,
    events: [],
  };
}

export interface Outcome {
  table: Table;
  /** Team reward of this action: +1 per card played, −score on the last life lost. */
  reward: number;
  /** Set when the action breaks a rule; the table is then unchanged except for the clock. */
  illegal: string | null;
  over: boolean;
}

/** Why `a` is not allowed for player p here, or null. */
export function illegalReason(t: HanabiTask, tb: Table, p: number, a: HanabiAction): string | null {
  const hand = tb.hands[p];
  if (a.type !== "hint") {
    return a.index >= 0 && a.index < hand.length
      ? null
      : `card ${a.index + 1} does not exist (hand of ${hand.length})`;
  }
  if (tb.hints === 0) return "no hint tokens left; play or discard";
  const [lo, hi] = a.attribute === "color" ? [0, t.colors - 1] : [1, t.ranks];
  if (a.value < lo || a.value > hi) return `no such ${a.attribute} in this game`;
  const partner = tb.hands[1 - p];
  const touches = partner.some((c) => (a.attribute === "color" ? c.color : c.rank) === a.value);
  return touches ? null : "a hint must touch at least one of your partner's cards";
}

function drawInto(t: HanabiTask, tb: Table, hand: HandCard[]): Pick<Table, "next" | "actionsLeft"> {
  if (tb.next < t.deck.length) {
    hand.push(inHand(t.deck[tb.next]));
    const next = tb.next + 1;
    return { next, actionsLeft: next === t.deck.length ? 2 : tb.actionsLeft };
  }
  return { next: tb.next, actionsLeft: tb.actionsLeft };
}

function playOrDiscard(
  t: HanabiTask,
  tb: Table,
  p: number,
  a: HanabiAction & { index: number },
): Outcome {
  const hand = tb.hands[p].slice();
  const [card] = hand.splice(a.index, 1);
  const fireworks = tb.fireworks.slice();
  let { hints, lives, score } = tb;
  let reward = 0, bombed = false;
  let discards = tb.discards;
  let event: string;
  if (a.type === "play" && fireworks[card.color] === card.rank - 1) {
    fireworks[card.color] = card.rank;
    score++;
    reward = 1;
    if (card.rank === t.ranks) hints = Math.min(t.maxHints, hints + 1); // finishing a colour refunds a hint
    event = `played ${cardName(card)}`;
  } else {
    discards = [...discards, { id: card.id, color: card.color, rank: card.rank }];
    if (a.type === "play") {
      lives--;
      event = `misplayed ${cardName(card)} (lost a life)`;
      if (lives === 0) [bombed, reward, score] = [true, -score, 0];
    } else {
      hints = Math.min(t.maxHints, hints + 1);
      event = `discarded ${cardName(card)}`;
    }
  }
  const clock = drawInto(t, tb, hand);
  const hands = tb.hands.map((h, i) => (i === p ? hand : h));
  const table: Table = {
    ...tb,
    ...clock,
    hands,
    fireworks,
    hints,
    lives,
    score,
    bombed,
    discards,
    events: [...tb.events, `player_${p} ${event}`],
  };
  return { table, reward, illegal: null, over: false };
}

function hint(tb: Table, p: number, a: HanabiAction & { type: "hint" }): Outcome {
  const q = 1 - p;
  const isColor = a.attribute === "color";
  const touched: number[] = [];
  let focus: number | null = null;
  const hand = tb.hands[q].map((c) => {
    const hit = (isColor ? c.color : c.rank) === a.value;
    if (!hit) {
      return isColor
        ? { ...c, notColors: [...c.notColors, a.value] }
        : { ...c, notRanks: [...c.notRanks, a.value] };
    }
    touched.push(c.id);
    if (!c.clued && focus === null) focus = c.id;
    return isColor
      ? { ...c, knownColor: a.value, clued: true }
      : { ...c, knownRank: a.value, clued: true };
  });
  const record: HintRecord = {
    from: p,
    to: q,
    attribute: a.attribute,
    value: a.value,
    touched,
    focus,
  };
  const what = isColor ? COLOR_NAMES[a.value] : `rank ${a.value}`;
  const positions = touched.map((id) => tb.hands[q].findIndex((c) => c.id === id) + 1).join(",");
  const table: Table = {
    ...tb,
    hands: tb.hands.map((h, i) => (i === q ? hand : h)),
    hints: tb.hints - 1,
    hintLog: [...tb.hintLog, record],
    events: [...tb.events, `player_${p} hinted ${what}: player_${q}'s cards ${positions}`],
  };
  return { table, reward: 0, illegal: null, over: false };
}

/** Applies player p's action. Illegal actions change nothing but the clock (the caller's job). */
export function apply(
  t: HanabiTask,
  tb: Table,
  p: number,
  a: HanabiAction | null,
  why: string | null,
): Outcome {
  let out: Outcome;
  if (a === null) out = { table: tb, reward: 0, illegal: why ?? "no action", over: false };
  else {
    const illegal = illegalReason(t, tb, p, a);
    if (illegal !== null) out = { table: tb, reward: 0, illegal, over: false };
    else out = a.type === "hint" ? hint(tb, p, a) : playOrDiscard(t, tb, p, a);
  }
  let table = out.table;
  // The final round counts every action after the last draw, legal or not.
  if (tb.actionsLeft !== null) table = { ...table, actionsLeft: tb.actionsLeft - 1 };
  if (out.illegal !== null) {
    table = { ...table, events: [...table.events, `player_${p} wasted the turn (${out.illegal})`] };
  }
  const over = table.bombed || table.score === maxScore(t) || table.actionsLeft === 0;
  return { ...out, table, over };
}
