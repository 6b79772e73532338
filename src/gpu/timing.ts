// Wall-clock timing of GPU work: warm up, repeat until a minimum wall time, and take the median
// of several rounds (machines are shared and noisy). The benchmarks and the matmul tuner use it.

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
