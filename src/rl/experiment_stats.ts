// Paired significance for the paper table (src/rl/experiment.ts): two methods evaluated on the
// same held-out tasks pair up task by task, so the question "is A better than B?" is asked of the
// discordant pairs only (A solved a task that B did not, or the reverse). The exact McNemar test
// is a two-sided binomial test on those: under "no difference" each discordant pair goes either
// way with probability 1/2. Pure functions, no GPU.

/** The outcome of a paired test: b = pairs only A solved, c = pairs only B solved, n = all pairs. */
export interface PairedTest {
  b: number;
  c: number;
  /** Two-sided exact McNemar p-value (1 when there is no discordant pair). */
  p: number;
  n: number;
}

/**
 * Two-sided exact McNemar test: p = min(1, 2·P(X ≤ min(b, c))) for X ~ Bin(b + c, 1/2); p = 1
 * when b + c = 0. Summed in log space so that large counts neither overflow nor underflow.
 */
export function mcnemarExact(b: number, c: number): number {
  for (const [name, v] of [["b", b], ["c", c]] as const) {
    if (!Number.isInteger(v) || v < 0) {
      throw new RangeError(`mcnemarExact: ${name} must be a count (got ${v})`);
    }
  }
  const n = b + c, k = Math.min(b, c);
  if (n === 0) return 1;
  // log C(n, i) − n·ln 2 for i = 0..k; the terms grow with i (k ≤ n/2), so the last is the largest.
  const logs: number[] = [-n * Math.LN2];
  for (let i = 0; i < k; i++) logs.push(logs[i] + Math.log(n - i) - Math.log(i + 1));
  const top = logs[logs.length - 1];
  const tail = Math.exp(top) * logs.reduce((s, l) => s + Math.exp(l - top), 0);
  return Math.min(1, 2 * tail);
}

/**
 * Exact McNemar test on paired 0/1 outcomes: a[i] and b[i] are one pairing unit (a seed of each
 * method), each a list of per-task successes in the same task order; all (unit, task) pairs are
 * pooled.
 */
export function pairedTest(
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
): PairedTest {
  if (a.length !== b.length) {
    throw new RangeError(`pairedTest: ${a.length} vs ${b.length} pairing units`);
  }
  let nb = 0, nc = 0, n = 0;
  a.forEach((xs, i) => {
    const ys = b[i];
    if (xs.length !== ys.length) {
      throw new RangeError(
        `pairedTest: unit ${i} has ${xs.length} vs ${ys.length} tasks (not the same tasks)`,
      );
    }
    xs.forEach((x, t) => {
      const y = ys[t];
      if (x && !y) nb++;
      else if (!x && y) nc++;
      n++;
    });
  });
  return { b: nb, c: nc, p: mcnemarExact(nb, nc), n };
}
