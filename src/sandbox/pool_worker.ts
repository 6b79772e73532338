// Worker entry that serves a SandboxPool over comlink, so the trainer can drive sandboxes
// from its own worker. Start it with startSandboxPoolWorker (remote.ts), not by hand.

import * as Comlink from "comlink";
import { SandboxPool } from "./pool.ts";
import type { SandboxPoolOptions } from "./pool.ts";
import type { ExecResult, PoolStats, RunOptions, SandboxJob } from "./types.ts";

let pool = new SandboxPool();

/** What this worker exposes: SandboxService plus `configure`. */
export const poolWorkerApi = {
  /** Replaces the pool (call before any run; the old pool is closed first). */
  async configure(options: SandboxPoolOptions): Promise<void> {
    await pool.close();
    pool = new SandboxPool(options);
  },
  run: (code: string, options?: RunOptions): Promise<ExecResult> => pool.run(code, options),
  runMany: (jobs: readonly SandboxJob[]): Promise<ExecResult[]> => pool.runMany(jobs),
  stats: (): Promise<PoolStats> => pool.stats(),
  close: (): Promise<void> => pool.close(),
};

export type PoolWorkerApi = typeof poolWorkerApi;

Comlink.expose(poolWorkerApi);
