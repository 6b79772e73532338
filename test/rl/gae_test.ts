// GAE against a trajectory computed by hand, its limits (λ = 1 is the discounted return minus V,
// λ = 0 the one-step TD error), empty turns, whitening, explained variance, chains and errors.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { chainsOf, explainedVariance, gaeChain, whiten } from "../../src/rl/gae.ts";

const close = (a: readonly number[], b: readonly number[], tol = 1e-12) =>
  a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) <= tol);

Deno.test("GAE over two turns of one agent, by hand", () => {
  // Turn 1: tokens with V = 0.5, 0.25, reward 1 on its last token; turn 2: V = 0.75, reward 2.
  // γ = 0.9, λ = 0.5, γλ = 0.45. Tokens t = 0, 1, 2; V_3 = 0 (the chain ends).
  //   δ2 = 2 + 0.9·0 − 0.75 = 1.25                 A2 = 1.25
  //   δ1 = 1 + 0.9·0.75 − 0.25 = 1.425             A1 = 1.425 + 0.45·1.25 = 1.9875
  //   δ0 = 0 + 0.9·0.25 − 0.5 = −0.275             A0 = −0.275 + 0.45·1.9875 = 0.619375
  const r = gaeChain([{ values: [0.5, 0.25], reward: 1 }, { values: [0.75], reward: 2 }], {
    gamma: 0.9,
    lambda: 0.5,
  });
  assert(
    close(r.advantages[0], [0.619375, 1.9875]) && close(r.advantages[1], [1.25]),
    JSON.stringify(r.advantages),
  );
  assert(
    close(r.returns[0], [1.119375, 2.2375]) && close(r.returns[1], [2]),
    JSON.stringify(r.returns),
  );
});

Deno.test("GAE limits: λ = 1 gives the discounted return minus V, λ = 0 the TD error", () => {
  const turns = [{ values: [0.1, -0.2, 0.3], reward: 0.5 }, { values: [0.4, 0.6], reward: -1 }];
  const g = 0.8;
  const rewards = [0, 0, 0.5, 0, -1], values = [0.1, -0.2, 0.3, 0.4, 0.6];
  const ret = rewards.map((_, t) => rewards.slice(t).reduce((a, r, k) => a + r * g ** k, 0));
  const mc = gaeChain(turns, { gamma: g, lambda: 1 });
  assert(
    close(mc.advantages.flat(), ret.map((x, t) => x - values[t])),
    `λ=1: ${mc.advantages.flat()}`,
  );
  assert(close(mc.returns.flat(), ret), `λ=1 returns: ${mc.returns.flat()}`);
  const td = gaeChain(turns, { gamma: g, lambda: 0 });
  const delta = values.map((v, t) => rewards[t] + g * (values[t + 1] ?? 0) - v);
  assert(close(td.advantages.flat(), delta), `λ=0: ${td.advantages.flat()}`);
});

Deno.test("an empty turn's reward goes to the previous turn's last token", () => {
  const r = gaeChain([{ values: [0, 0], reward: 1 }, { values: [], reward: 2 }], {
    gamma: 1,
    lambda: 1,
  });
  assertEquals(r.advantages, [[3, 3], []]);
  assertEquals(gaeChain([{ values: [], reward: 5 }], { gamma: 1, lambda: 1 }).advantages, [[]]);
});

Deno.test("whitening, explained variance and chains", () => {
  const w = whiten([[1, 2], [3], [4, 5]]).flat();
  const mean = w.reduce((a, b) => a + b, 0) / w.length;
  const sd = Math.sqrt(w.reduce((a, b) => a + (b - mean) ** 2, 0) / (w.length - 1));
  assert(Math.abs(mean) < 1e-12 && Math.abs(sd - 1) < 1e-6, `mean ${mean}, sd ${sd}`);
  assert(
    close(
      w,
      [-1.2649110640673518, -0.6324555320336759, 0, 0.6324555320336759, 1.2649110640673518],
      1e-7,
    ),
    `${w}`,
  );
  assertEquals(whiten([[7]]), [[0]]);
  assertEquals(explainedVariance([1, 2, 3], [1, 2, 3]), 1);
  assertEquals(explainedVariance([1, 2, 3], [2, 2, 2]), 0);
  assert(
    Math.abs(explainedVariance([1, 2, 3], [0, 2, 4]) - 0) < 1e-12,
    "V − R spread equal to R's",
  );
  assert(Number.isNaN(explainedVariance([1, 1], [0, 0])), "constant returns");
  assertEquals(chainsOf(["a1", "b1", "a2", "a3", "b2"], (s) => s[0]), [[0, 2, 3], [1, 4]]);
});

Deno.test("bad input gets GaeInputError", () => {
  assertThrows(
    () => gaeChain([{ values: [0], reward: 1 }], { gamma: 1.5, lambda: 0.9 }),
    "GaeInputError",
    "gamma",
  );
  assertThrows(
    () => gaeChain([{ values: [0], reward: 1 }], { gamma: 1, lambda: -0.1 }),
    "GaeInputError",
    "lambda",
  );
  assertThrows(
    () => gaeChain([{ values: [NaN], reward: 1 }], { gamma: 1, lambda: 1 }),
    "GaeInputError",
    "value",
  );
  assertThrows(
    () => gaeChain([{ values: [0], reward: Infinity }], { gamma: 1, lambda: 1 }),
    "GaeInputError",
    "reward",
  );
  assertThrows(() => explainedVariance([1], [1, 2]), "GaeInputError");
});
