// SandboxPool: bounded parallelism, order of results, closing, option checks, and the same
// service driven through comlink from another worker.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { hardwareConcurrency } from "../../src/runtime.ts";
import { SandboxPool } from "../../src/sandbox/pool.ts";
import { stockedRuns, stockedSandboxes } from "../../src/sandbox/host_deno.ts";
import type { ExecResult, PoolStats } from "../../src/sandbox/types.ts";
import { runScenario } from "./worker_run.ts";

const SLEEP = (ms: number, tag: string) =>
  `await new Promise((r) => setTimeout(r, ${ms})); print(${JSON.stringify(tag)});`;

Deno.test("SandboxPool: never more than `concurrency` at once, and it reaches the bound", async () => {
  const pool = new SandboxPool({ concurrency: 2 });
  let peakSeen = 0;
  const watch = setInterval(async () => {
    peakSeen = Math.max(peakSeen, (await pool.stats()).running);
  }, 5);
  try {
    const t0 = performance.now();
    const results = await pool.runMany(
      Array.from({ length: 6 }, (_, i) => ({ code: SLEEP(250, `job${i}`) })),
    );
    const wall = performance.now() - t0;
    assertEquals(results.map((r) => r.stdout), [0, 1, 2, 3, 4, 5].map((i) => `job${i}\n`));
    const stats = await pool.stats();
    assertEquals(stats, { concurrency: 2, running: 0, queued: 0, completed: 6, peakRunning: 2 });
    assert(peakSeen === 2, `observed ${peakSeen} running at once`);
    // Three waves of two: at least 3 × 250 ms. That they overlapped is shown by peakSeen, not
    // by an upper bound on wall time, which a loaded CI box would make flaky.
    assert(wall >= 750, `6 jobs × 250 ms on 2 slots finished in ${wall.toFixed(0)} ms`);
  } finally {
    clearInterval(watch);
    await pool.close();
  }
});

Deno.test("SandboxPool: defaults, per-run overrides, option checks, hardware-concurrency default", async () => {
  assertEquals(new SandboxPool().concurrency, hardwareConcurrency());
  assertThrows(() => new SandboxPool({ concurrency: 0 }), "SandboxArgumentError", "concurrency");
  assertThrows(
    () => new SandboxPool({ defaults: { timeoutMs: 0 } }),
    "SandboxArgumentError",
    "timeoutMs",
  );
  const pool = new SandboxPool({
    concurrency: 1,
    defaults: { globals: { n: 2 }, timeoutMs: 5000 },
  });
  try {
    const [a, b] = await Promise.all([
      pool.run("print(n)"),
      pool.run("print(n)", { globals: { n: 3 } }),
    ]);
    assertEquals([a.stdout, b.stdout], ["2\n", "3\n"]);
    await assertRejects(() => pool.run("1", { maxOutputBytes: -1 }), "SandboxArgumentError");
  } finally {
    await pool.close();
  }
});

Deno.test("SandboxPool prewarm: runs take processes started ahead, each fresh; close() stops the idle ones", async () => {
  const memoryMb = 96; // a heap limit no other test stocks
  const pool = new SandboxPool({ concurrency: 2, prewarm: true, defaults: { memoryMb } });
  try {
    for (let i = 0; i < 100 && stockedSandboxes(memoryMb) < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(stockedSandboxes(memoryMb), 2);
    const hits = stockedRuns();
    const a = await pool.run("globalThis.leak = 41; print(leak + 1)");
    const b = await pool.run("print(typeof globalThis.leak)");
    const burst = await pool.runMany(
      Array.from({ length: 4 }, (_, i) => ({ code: `print(${i})` })),
    );
    assertEquals([a.stdout, b.stdout], ["42\n", "undefined\n"]);
    assertEquals(burst.map((r) => r.stdout), ["0\n", "1\n", "2\n", "3\n"]);
    assertEquals(stockedRuns() - hits, 6, "every run took a stocked process");
    assertEquals(stockedSandboxes(memoryMb), 2, "the stock refills");
  } finally {
    await pool.close();
  }
  assertEquals(stockedSandboxes(memoryMb), 0);
});

Deno.test("SandboxPool: close() rejects queued work, lets running work finish, refuses new work", async () => {
  const pool = new SandboxPool({ concurrency: 1 });
  const running = pool.run(SLEEP(100, "ran"));
  const queued = pool.run("print('never')");
  await new Promise((r) => setTimeout(r, 20));
  const stats: PoolStats = await pool.stats();
  assertEquals([stats.running, stats.queued], [1, 1]);
  const closing = pool.close();
  await assertRejects(() => queued, "SandboxPoolClosedError");
  assertEquals((await running as ExecResult).stdout, "ran\n");
  await closing;
  await assertRejects(() => pool.run("1"), "SandboxPoolClosedError", "create a new SandboxPool");
});

Deno.test("SandboxPool through comlink: same results from another worker, errors by name", async () => {
  const r = await runScenario("comlinkPool") as {
    one: ExecResult;
    many: ExecResult[];
    stats: PoolStats;
    badName: string;
  };
  assertEquals(r.one.stdout, "42\n");
  assertEquals(r.many.map((x) => [x.ok, x.stdout, x.timedOut]), [[true, "a\n", false], [
    false,
    "",
    false,
  ], [false, "", true]]);
  assertEquals(r.many[1].error, "Error: b (line 1)");
  assertEquals([r.stats.concurrency, r.stats.completed, r.stats.peakRunning], [2, 4, 2]);
  assertEquals(r.badName, "SandboxArgumentError");
});
