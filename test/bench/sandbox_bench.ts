// Sandbox throughput and latency, each beside a peer measured in the same run: one short
// execution's p50/p99 against a bare `deno run` of the same code (what our isolation costs
// on top of a process), and executions per second through a SandboxPool.

import { hardwareConcurrency } from "../../src/runtime.ts";
import { runJs } from "../../src/sandbox/run.ts";
import { SandboxPool } from "../../src/sandbox/pool.ts";
import { round } from "./timing.ts";

const SHORT = "let s = 0; for (let i = 0; i < 1000; i++) s += i; print(s);";

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

function summary(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(s, 0.5), 1),
    p99_ms: round(percentile(s, 0.99), 1),
    n: s.length,
  };
}

async function timeEach(n: number, once: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await once(); // warm caches (transpiled runner, code cache)
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await once();
    out.push(performance.now() - t0);
  }
  return out;
}

/** The peer: the same code as a plain `deno run` script, no sandbox around it. */
async function bareDeno(dir: string): Promise<() => Promise<unknown>> {
  const file = `${dir}/short.js`;
  await Deno.writeTextFile(file, SHORT.replace("print(", "console.log("));
  return () =>
    new Deno.Command(Deno.execPath(), { args: ["run", "-q", file], stdout: "null" }).output();
}

async function poolThroughput(concurrency: number, jobs: number) {
  const pool = new SandboxPool({ concurrency });
  try {
    await pool.runMany(Array.from({ length: concurrency }, () => ({ code: SHORT })));
    const t0 = performance.now();
    const results = await pool.runMany(Array.from({ length: jobs }, () => ({ code: SHORT })));
    const s = (performance.now() - t0) / 1000;
    if (!results.every((r) => r.ok && r.stdout === "499500\n")) {
      throw new Error("a benchmark run failed");
    }
    return { concurrency, jobs, executions_per_s: round(jobs / s, 1) };
  } finally {
    await pool.close();
  }
}

/** Latency of one short execution (p50/p99) and pool throughput, with peers and ratios. */
export async function benchSandbox(): Promise<object> {
  const n = 40;
  const dir = await Deno.makeTempDir({ prefix: "sandbox-bench-" });
  try {
    const sandbox = summary(await timeEach(n, () => runJs(SHORT)));
    const bare = summary(await timeEach(n, await bareDeno(dir)));
    const cores = hardwareConcurrency();
    const pooled = await poolThroughput(cores, 16 * cores);
    const serial = await poolThroughput(1, 16);
    return {
      code: SHORT,
      one_execution: sandbox,
      peer_bare_deno_run: bare,
      latency_ratio_p50: round(sandbox.p50_ms / bare.p50_ms, 2),
      pool: pooled,
      pool_concurrency_1: serial,
      pool_speedup: round(pooled.executions_per_s / serial.executions_per_s, 2),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) console.log(JSON.stringify(await benchSandbox()));
