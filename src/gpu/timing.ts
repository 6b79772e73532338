// Wall-clock timing of GPU work: warm up, repeat until a minimum wall time, and take the median
// of several rounds (machines are shared and noisy). The benchmarks and the matmul tuner use it.

import type { Gpu } from "./mod.ts";
import type { Recorder } from "./recorder.ts";

export interface Timing {
  msPerRep: number;
  reps: number;
  rounds: number;
}

/** Times `run(reps)` (which must include its own GPU sync) and returns the median per rep. */
export async function timeIt(
  run: (reps: number) => Promise<void>,
  minMs = 300,
  rounds = 3,
): Promise<Timing> {
  await run(1);
  let reps = 1;
  let t0 = performance.now();
  await run(reps);
  let dt = performance.now() - t0;
  while (dt < minMs / rounds && reps < 1 << 12) {
    reps = Math.min(
      1 << 12,
      Math.max(reps * 2, Math.ceil(reps * (minMs / rounds) / Math.max(dt, 0.1))),
    );
    t0 = performance.now();
    await run(reps);
    dt = performance.now() - t0;
  }
  const per: number[] = [dt / reps];
  for (let r = 1; r < rounds; r++) {
    t0 = performance.now();
    await run(reps);
    per.push((performance.now() - t0) / reps);
  }
  per.sort((a, b) => a - b);
  return { msPerRep: per[Math.floor(per.length / 2)], reps, rounds };
}

/**
 * How the tuners choose (matmul variants, sampler splits, the fused LoRA target): every candidate
 * is screened with one short timing (minMs / 5); the `keep` fastest, and `base` (what runs today,
 * where it is valid here), are timed again at minMs over 3 rounds, and the fastest of those final
 * timings wins, so a pick is never slower than `base` in the figures it was chosen by.
 */
export async function screenThenTime<T>(
  candidates: readonly T[],
  base: T | undefined,
  score: (candidate: T, minMs: number, rounds: number) => Promise<number>,
  o: { minMs: number; keep: number },
): Promise<{ best: T; bestMs: number; times: Map<T, { ms: number; final: boolean }> }> {
  const times = new Map<T, { ms: number; final: boolean }>();
  for (const c of candidates) times.set(c, { ms: await score(c, o.minMs / 5, 1), final: false });
  const finalists = [...times].sort((a, b) => a[1].ms - b[1].ms).slice(0, o.keep).map(([c]) => c);
  if (base !== undefined && !finalists.includes(base)) finalists.push(base);
  if (!finalists.length) throw new RangeError("screenThenTime: no candidate to time");
  let best = finalists[0], bestMs = Infinity;
  for (const c of finalists) {
    const ms = await score(c, o.minMs, 3);
    times.set(c, { ms, final: true });
    if (ms < bestMs) [best, bestMs] = [c, ms];
  }
  return { best, bestMs, times };
}

/**
 * Median ms of one `encode` (timeIt): `reps` encodes recorded into one submission, then a sync.
 * What the kernel tuners time.
 */
export async function msPerEncode(
  gpu: Gpu,
  label: string,
  encode: (rec: Recorder) => void,
  minMs: number,
  rounds: number,
): Promise<number> {
  return (await timeIt(
    async (reps) => {
      const rec = gpu.recorder(label);
      for (let i = 0; i < reps; i++) encode(rec);
      rec.submit();
      await gpu.sync();
    },
    minMs,
    rounds,
  )).msPerRep;
}
