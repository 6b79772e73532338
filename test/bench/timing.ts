// Timing helpers for the benchmarks: timeIt (src/gpu/timing.ts: warm up, repeat until a minimum
// wall time, median of several rounds) and unit conversions.

export { timeIt, type Timing } from "../../src/gpu/timing.ts";

export const gflops = (flops: number, ms: number): number => flops / ms / 1e6;
export const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
