// Timing helpers for the benchmarks: warm up, then repeat until a minimum wall time, and
// report the median of several rounds (this machine is shared and noisy).

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

export const gflops = (flops: number, ms: number): number => flops / ms / 1e6;
export const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
