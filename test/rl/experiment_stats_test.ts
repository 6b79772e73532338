// The paper table's paired test (src/rl/experiment_stats.ts): the exact McNemar p-value against
// hand-computed binomial tails and against an exact big-integer sum, and the pairing of per-task
// successes into discordant counts.

import { assert, assertEquals } from "../assert.ts";
import { mcnemarExact, pairedTest } from "../../src/rl/experiment_stats.ts";

const close = (a: number, b: number, rel = 1e-12) =>
  Math.abs(a - b) <= rel * Math.max(1e-300, Math.abs(b));

/** 2·Σ_{i ≤ min(b,c)} C(n, i) / 2^n with exact integers (Pascal's rule), capped at 1. */
function exactP(b: number, c: number): number {
  const n = b + c, k = Math.min(b, c);
  let row: bigint[] = [1n];
  for (let m = 1; m <= n; m++) {
    row = Array.from(
      { length: m + 1 },
      (_, i) => (i > 0 ? row[i - 1] : 0n) + (i < m ? row[i] : 0n),
    );
  }
  const tail = row.slice(0, k + 1).reduce((s, x) => s + x, 0n);
  const scale = 10n ** 40n;
  const p = Number((2n * tail * scale) / (2n ** BigInt(n))) / 1e40;
  return Math.min(1, p);
}

Deno.test("mcnemarExact: hand-computed binomial tails", () => {
  // n = 12: P(X ≤ 2) = (1 + 12 + 66) / 4096.
  assert(close(mcnemarExact(10, 2), 2 * 79 / 4096), String(mcnemarExact(10, 2)));
  assert(Math.abs(mcnemarExact(10, 2) - 0.0386) < 5e-5);
  assertEquals(mcnemarExact(0, 0), 1, "no discordant pair: no evidence either way");
  assert(close(mcnemarExact(0, 5), 2 / 32), String(mcnemarExact(0, 5)));
  assert(close(mcnemarExact(3, 0), 2 / 8), String(mcnemarExact(3, 0)));
  assertEquals(mcnemarExact(1, 0), 1, "2 · 1/2 = 1");
  assertEquals(mcnemarExact(5, 5), 1, "a balanced split is capped at 1");
  // n = 7: P(X ≤ 1) = 8 / 128.
  assert(close(mcnemarExact(1, 6), 2 * 8 / 128), String(mcnemarExact(1, 6)));
});

Deno.test("mcnemarExact: symmetric in b and c, and equal to an exact big-integer sum", () => {
  for (
    const [b, c] of [[0, 1], [2, 9], [7, 4], [13, 13], [30, 11], [60, 20], [400, 600], [900, 1100]]
  ) {
    assertEquals(mcnemarExact(b, c), mcnemarExact(c, b), `${b}, ${c}`);
    assert(
      close(mcnemarExact(b, c), exactP(b, c), 1e-9),
      `${b}, ${c}: ${mcnemarExact(b, c)} vs ${exactP(b, c)}`,
    );
  }
  // Far tails stay finite and positive (no 2^-n underflow to 0 before the sum).
  const tiny = mcnemarExact(0, 1060);
  assert(tiny > 0 && tiny < 1e-300, String(tiny));
});

Deno.test("mcnemarExact: counts only", () => {
  for (const [b, c] of [[-1, 2], [1.5, 2], [2, NaN]]) {
    let err: Error | null = null;
    try {
      mcnemarExact(b, c);
    } catch (e) {
      err = e as Error;
    }
    assert(err instanceof RangeError, `${b}, ${c}`);
  }
});

Deno.test("pairedTest: discordant pairs pooled over units and tasks", () => {
  const a = [[1, 1, 0, 0, 1], [1, 0, 1, 1, 1]];
  const b = [[0, 1, 0, 1, 0], [0, 0, 0, 1, 1]];
  // Unit 0: only-A at tasks 0, 4; only-B at task 3. Unit 1: only-A at tasks 0, 2.
  const t = pairedTest(a, b);
  assertEquals([t.b, t.c, t.n], [4, 1, 10]);
  assert(close(t.p, 2 * 6 / 32), String(t.p));
  const r = pairedTest(b, a);
  assertEquals([r.b, r.c, r.n, r.p], [1, 4, 10, t.p], "swapping the methods swaps b and c, not p");
  assertEquals(pairedTest([], []), { b: 0, c: 0, p: 1, n: 0 });
  assertEquals(pairedTest([[1, 0]], [[1, 0]]), { b: 0, c: 0, p: 1, n: 2 }, "identical outcomes");
});

Deno.test("pairedTest: the units and their tasks must line up", () => {
  for (const [a, b] of [[[[1]], []], [[[1, 0]], [[1]]]] as number[][][][]) {
    let err: Error | null = null;
    try {
      pairedTest(a, b);
    } catch (e) {
      err = e as Error;
    }
    assert(err instanceof RangeError, JSON.stringify([a, b]));
  }
});
