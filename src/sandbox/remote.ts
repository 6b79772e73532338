// The SandboxService interface from another thread: a comlink proxy to pool_worker.ts. The
// caller cannot tell it from an in-thread SandboxPool, except that it must be closed.

import * as Comlink from "comlink";
import type { SandboxPoolOptions } from "./pool.ts";
import type { PoolWorkerApi } from "./pool_worker.ts";
import type { SandboxService } from "./types.ts";

/** Wraps a worker running pool_worker.ts; close() ends the pool and the worker. */
export async function connectSandboxPool(
  worker: Worker,
  options: SandboxPoolOptions = {},
): Promise<SandboxService> {
  const remote = Comlink.wrap<PoolWorkerApi>(worker);
  try {
    await remote.configure(options);
  } catch (e) {
    remote[Comlink.releaseProxy]();
    worker.terminate();
    throw e; // a SandboxArgumentError from the worker, told apart by its name
  }
  return {
    run: (code, opts) => remote.run(code, opts),
    runMany: (jobs) => remote.runMany(jobs),
    stats: () => remote.stats(),
    close: async () => {
      try {
        await remote.close();
      } finally {
        remote[Comlink.releaseProxy]();
        worker.terminate();
      }
    },
  };
}

/**
 * Starts pool_worker.ts in a new module Worker and connects to it. In Deno the worker
 * inherits this process's permissions (it needs --allow-run to start sandboxes).
 */
export function startSandboxPoolWorker(options: SandboxPoolOptions = {}): Promise<SandboxService> {
  // A literal URL, so that Vite bundles the worker for the browser.
  const worker = new Worker(new URL("./pool_worker.ts", import.meta.url), { type: "module" });
  return connectSandboxPool(worker, options);
}
