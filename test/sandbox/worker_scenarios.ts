// Worker-based sandbox scenarios, run as a script (`deno run -A worker_scenarios.ts NAME`)
// that prints one JSON line. Tests spawn it because under `deno test` this project's
// deno.json ("types": ["@webgpu/types"]) makes Deno type-check every new Worker for seconds;
// `deno run` does not check, so the Workers start in milliseconds as they do in production.

import { browserWorkerHost } from "../../src/sandbox/host_browser.ts";
import { startSandboxPoolWorker } from "../../src/sandbox/remote.ts";
import { runOnHost } from "../../src/sandbox/run.ts";
import type { ExecResult, RunOptions } from "../../src/sandbox/types.ts";
import { resolveRunOptions } from "../../src/sandbox/types.ts";

function inWorker(code: string, options: RunOptions = {}): Promise<ExecResult> {
  return runOnHost(browserWorkerHost, code, resolveRunOptions(code, options));
}

/** The browser host (blob module Worker) with trusted programs: Deno Workers cannot contain
 * hostile code (see mod.ts), but they run the very Worker source a browser runs. */
async function browserHost(): Promise<Record<string, unknown>> {
  const scope = await inWorker(
    `print(grid[1][0], seen.get("k"));
print([typeof fetch, typeof WebSocket, typeof Worker, typeof postMessage, typeof importScripts,
  typeof Deno, typeof navigator.gpu, typeof close, typeof indexedDB].join(" "));`,
    { globals: { grid: [[0], [7]], seen: new Map([["k", "v"]]) } },
  );
  const thrown = await inWorker("\nthrow new TypeError('bad');");
  const evaluated = await inWorker("eval('1')");
  await inWorker("Object.prototype.polluted = 1; globalThis.left = 1;");
  const next = await inWorker("print(({}).polluted, typeof left)");
  const t0 = performance.now();
  // The deadline counts from the code's first line (Worker start-up has its own limit; when it
  // counted, a fresh-clone CI run once saw a 1 s deadline before the print).
  const busy = await inWorker("print('x'); while (true) {}", { timeoutMs: 3000 });
  const busyWall = performance.now() - t0;
  const flood = await inWorker("for (;;) print('abcdefgh');", { maxOutputBytes: 20 });
  // The host's reports, in order: the code's deadline counts from "start".
  const events: string[] = [];
  await new Promise<void>((resolve) => {
    const h = browserWorkerHost.launch({
      request: { code: "print(1)", helpers: "", globals: {}, maxOutputBytes: 100 },
      memoryMb: 64,
      onEvent(e) {
        events.push(e.kind);
        if (e.kind === "end") h.kill(), resolve();
      },
    });
  });
  return { scope, thrown, evaluated, next, busy, busyWall, flood, events };
}

/** A SandboxPool in another worker, driven through comlink. */
async function comlinkPool(): Promise<Record<string, unknown>> {
  const remote = await startSandboxPoolWorker({ concurrency: 2, defaults: { timeoutMs: 5000 } });
  try {
    const one = await remote.run("print(n * 2)", { globals: { n: 21 } });
    const many = await remote.runMany([
      { code: "print('a')" },
      { code: "throw new Error('b')" },
      { code: "while (true) {}", options: { timeoutMs: 300 } },
    ]);
    const stats = await remote.stats();
    let badName = "";
    try {
      await remote.run("1", { timeoutMs: -1 });
    } catch (e) {
      badName = (e as Error).name;
    }
    return { one, many, stats, badName };
  } finally {
    await remote.close();
  }
}

const scenarios: Record<string, () => Promise<Record<string, unknown>>> = {
  browserHost,
  comlinkPool,
};
const name = Deno.args[0];
if (!(name in scenarios)) {
  console.error(`usage: deno run -A worker_scenarios.ts ${Object.keys(scenarios).join("|")}`);
  Deno.exit(2);
}
console.log(JSON.stringify(await scenarios[name]()));
// Deno 2.9's worker.terminate() leaves a busy-looping Worker thread spinning (denoland/deno
// PR #35657), so the process would never end on its own after the busy scenario.
Deno.exit(0);
