// Hanabi rules on a hand-made deck: successful play, misplay, bombing out, hints and their
// knowledge, token limits, the final round after the deck runs out, and the action parser.

import { assert, assertEquals } from "../assert.ts";
import { FORMAT_PENALTY } from "../../src/envs/api.ts";
import { hanabi, type HanabiState, ILLEGAL_PENALTY } from "../../src/envs/hanabi/env.ts";
import type { Card, HanabiAction, HanabiTask } from "../../src/envs/hanabi/rules.ts";
import type { Invalid } from "../../src/envs/types.ts";
import { oracleValue } from "../../src/envs/hanabi/oracle.ts";
import { Rng } from "../../src/envs/rng.ts";

/** Cards as "R1"-style names; deal alternates: p0 gets deck[0], deck[2]; p1 deck[1], deck[3]. */
function task(names: string[], over: Partial<HanabiTask> = {}): HanabiTask {
  const deck: Card[] = names.map((n, id) => ({
    id,
    color: "RG".indexOf(n[0]),
    rank: Number(n[1]),
  }));
  return { colors: 2, ranks: 2, handSize: 2, maxHints: 2, lives: 2, deck, ...over };
}

function play(s: HanabiState, text: string) {
  const agent = hanabi.turnOrder[s.cursor];
  const p = hanabi.parseAction(agent, text);
  return hanabi.step(s, agent, p.ok ? p.action : p.invalid);
}

const names = (s: HanabiState, p: number) =>
  s.table.hands[p].map((c) => "RG"[c.color] + c.rank).join(" ");

Deno.test("hanabi: play, hint knowledge, misplay, discard refund, bomb-out", () => {
  let s = hanabi.reset(task(["R1", "G1", "R2", "G2", "R1", "G1", "R1", "G1"]));
  assertEquals([names(s, 0), names(s, 1)], ["R1 R2", "G1 G2"]);
  let r = play(s, "#### play 1");
  assertEquals([r.teamReward, r.localReward, r.state.table.fireworks, names(r.state, 0)], [1, 0, [
    1,
    0,
  ], "R2 R1"]);
  r = play(r.state, "#### hint red");
  assertEquals(r.state.table.hints, 1);
  assertEquals(r.state.table.hands[0].map((c) => [c.knownColor, c.clued]), [[0, true], [0, true]]);
  assertEquals(r.state.table.hintLog[0].focus, 2, "focus = first newly touched card (the R2)");
  r = play(r.state, "#### play 2"); // the new R1 on a red firework at 1: misplay
  assertEquals([r.teamReward, r.state.table.lives, r.state.table.discards.length], [0, 1, 1]);
  r = play(r.state, "#### discard 1");
  assertEquals(r.state.table.hints, 2);
  r = play(r.state, "#### hint 2"); // p0 tells p1 about its G2
  assertEquals(r.state.table.hands[1].find((c) => c.rank === 2)?.knownRank, 2);
  s = r.state;
  r = play(s, "#### play 1"); // p1's G2 with green at 0: last life → bomb-out zeroes the score
  assertEquals([r.teamReward, r.state.table.score, r.state.table.bombed, r.terminated], [
    -1,
    0,
    true,
    true,
  ]);
  assertEquals(r.info.finalRewards, { player_0: 0, player_1: 0 });
});

Deno.test("hanabi: rule breaks waste the turn at −1; junk at −2", () => {
  const s = hanabi.reset(task(["R1", "G1", "R2", "G2", "R1", "G1", "R1", "G1"], { maxHints: 1 }));
  // p1 holds G1 G2: a red hint would touch nothing.
  for (const bad of ["#### play 3", "#### hint 5", "#### hint yellow", "#### hint red"]) {
    const r = play(s, bad);
    assertEquals([r.localReward, r.teamReward], [ILLEGAL_PENALTY, 0], bad);
    assertEquals(r.state.table.hands, s.table.hands);
    assertEquals(r.state.cursor, 1, "the turn passes");
  }
  const noTokens = play(play(s, "#### hint green").state, "#### hint red");
  assertEquals(noTokens.localReward, ILLEGAL_PENALTY);
  assert((noTokens.info.invalid as Invalid).reason.includes("no hint tokens"));
  assertEquals(play(s, "#### dance").localReward, FORMAT_PENALTY);
});

Deno.test("hanabi: after the last card is drawn each player acts once more", () => {
  // 5 cards: 4 dealt, 1 to draw.
  const s0 = hanabi.reset(task(["R1", "G1", "R2", "G2", "R1"]));
  let r = play(s0, "#### play 1"); // draws the last card
  assertEquals([r.state.table.next, r.state.table.actionsLeft, r.terminated], [5, 2, false]);
  r = play(r.state, "#### play 1"); // p1 G1
  assertEquals([r.state.table.actionsLeft, r.terminated], [1, false]);
  r = play(r.state, "#### play 1"); // p0 R2
  assertEquals([r.terminated, r.state.table.score], [true, 3]);
  assertEquals(r.info.finalRewards, { player_0: 0.75, player_1: 0.75 });
  assert(!hanabi.success(r.state));
});

Deno.test("hanabi: a perfect game is a success", () => {
  // p0: R1 R2, p1: G1 G2; plays in order fill both fireworks (4 = 2 colours × 2 ranks).
  let s = hanabi.reset(task(["R1", "G1", "R2", "G2", "R1", "G1", "R1", "G1"]));
  for (const t of ["#### play 1", "#### play 1", "#### play 1", "#### play 1"]) {
    s = play(s, t).state;
  }
  assertEquals([s.table.score, s.terminated, hanabi.success(s)], [4, true, true]);
});

Deno.test("hanabi: parser accepts the documented forms and rejects the rest", () => {
  const ok: [string, HanabiAction][] = [
    ["#### play 2", { type: "play", index: 1 }],
    ["I will play.\n#### Play 3.", { type: "play", index: 2 }],
    ["#### discard 1", { type: "discard", index: 0 }],
    ["#### hint red", { type: "hint", attribute: "color", value: 0 }],
    ["#### hint colour Blue", { type: "hint", attribute: "color", value: 2 }],
    ["#### hint g", { type: "hint", attribute: "color", value: 1 }],
    ["#### hint rank 3", { type: "hint", attribute: "rank", value: 3 }],
    ["#### hint 1 #### play 1", { type: "play", index: 0 }],
  ];
  for (const [text, action] of ok) {
    const p = hanabi.parseAction("player_0", text);
    assert(p.ok, text);
    assertEquals(p.action, action, text);
  }
  const bad: [string, string][] = [
    ["", "empty"],
    ["play 1", "no_answer"],
    ["#### play", "malformed"],
    ["#### play 0", "malformed"],
    ["#### play two", "malformed"],
    ["#### hint purple", "malformed"],
    ["#### jump 1", "malformed"],
  ];
  for (const [text, code] of bad) {
    const p = hanabi.parseAction("player_0", text);
    assert(!p.ok, text);
    assertEquals(p.invalid.code, code, text);
  }
});

Deno.test("hanabi: a player sees the partner's cards, not its own", () => {
  const s = hanabi.reset(task(["R1", "G1", "R2", "G2", "R1", "G1", "R1", "G1"]));
  const p0 = hanabi.observe(s, "player_0", "compact");
  assert(p0.style === "compact");
  assert(p0.text.includes("mate G1 G2") && p0.text.includes("you ?? ??"), p0.text);
  const p1 = hanabi.observe(s, "player_1", "chat");
  assert(p1.style === "chat" && p1.messages[1].content.includes("R1(knows ??)"));
  assert(!p1.messages[1].content.includes("G2"), "player_1 must not see its own G2");
});

Deno.test("hanabi: the shaped team reward is the scripted team's value change (default difficulty)", () => {
  assertEquals(hanabi.defaultDifficulty.shaping, 1);
  const gen = (seed: number) =>
    hanabi.generate(seed, { split: "train", difficulty: { colors: 2, ranks: 2, handSize: 2 } });
  assertEquals(gen(1).shaped, true);
  assertEquals(
    hanabi.generate(1, {
      split: "train",
      difficulty: { colors: 2, ranks: 2, handSize: 2, shaping: 0 },
    }).shaped,
    undefined,
  );
  const rng = new Rng(9);
  for (let seed = 0; seed < 40; seed++) {
    const t = gen(seed);
    // The scripted team's own moves never change its value: every reward is 0.
    let s = hanabi.reset(t);
    while (!s.terminated && !s.truncated) {
      const agent = hanabi.turnOrder[s.cursor];
      const r = hanabi.step(s, agent, hanabi.oracle(s, agent).action);
      assertEquals(r.teamReward, 0, `seed ${seed}: an oracle move changed the oracle's value`);
      s = r.state;
    }
    // Any play: the rewards telescope to the final score (0 after a bomb) less the start's value.
    s = hanabi.reset(t);
    const v0 = oracleValue(t, s.table, 0);
    let total = 0;
    while (!s.terminated && !s.truncated) {
      const agent = hanabi.turnOrder[s.cursor];
      const r = hanabi.step(s, agent, hanabi.randomMove!(s, agent, rng).action);
      total += r.teamReward;
      s = r.state;
    }
    const final = s.terminated
      ? (s.table.bombed ? 0 : s.table.score)
      : oracleValue(t, s.table, s.cursor);
    assertEquals(total, final - v0, `seed ${seed}`);
  }
  // p0 holds R1 R2, p1 G1 G2, 2 lives: the blind play of R2 costs a life; hinting p1's G1 does not.
  const s = hanabi.reset(task(["R1", "G1", "R2", "G2", "R1", "G1", "R1", "G1"], { shaped: true }));
  const misplay = play(s, "#### play 2"), hint = play(s, "#### hint 1");
  assert(
    misplay.teamReward < hint.teamReward,
    `misplay ${misplay.teamReward} vs hint ${hint.teamReward}`,
  );
  const lucky = play(s, "#### play 1"); // R1, unhinted: it scores now and the scripted team would not have risked it
  assert(
    lucky.teamReward > 0 && lucky.teamReward > misplay.teamReward,
    `blind R1 ${lucky.teamReward}`,
  );
});
