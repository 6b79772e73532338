// SandboxPool: many executions at once, never more than `concurrency` sandboxes alive.
// Each execution still gets its own fresh sandbox; the pool only bounds and queues them.

import { hardwareConcurrency } from "../runtime.ts";
import { SandboxArgumentError, SandboxPoolClosedError } from "./errors.ts";
import { hostFor, runJs } from "./run.ts";
import type { SandboxHost } from "./host.ts";
import type { ExecResult, PoolStats, RunOptions, SandboxJob, SandboxService } from "./types.ts";
import { resolveRunOptions } from "./types.ts";

/** Most sandboxes a pool keeps started ahead (~30 MiB of resident memory each, idle). */
export const MAX_PREWARMED = 16;

export interface SandboxPoolOptions {
  /** Most executions alive at once (default: the host's hardware concurrency). */
  concurrency?: number;
  /** Options every run starts from; a run's own options override them field by field. */
  defaults?: RunOptions;
  /**
   * Keep `concurrency` sandboxes (at most MAX_PREWARMED) started ahead of their runs (Deno's
   * process host; default false): a run then skips Deno's start-up, tens of ms. Each is still
   * used for one run. Worth it where the CPU is idle while the runs' inputs are made (generation
   * on a GPU); on 2 CPU cores it changed neither the quickstart's time nor its result. close()
   * stops the idle ones. The stock is one per process and heap limit: the last pool to prewarm or
   * close sets its size.
   */
  prewarm?: boolean;
}

interface Waiter {
  start(): void;
  cancel(e: Error): void;
}

export class SandboxPool implements SandboxService {
  readonly concurrency: number;
  readonly defaults: RunOptions;
  #running = 0;
  #completed = 0;
  #peak = 0;
  #queue: Waiter[] = [];
  #closed = false;
  #idle: (() => void)[] = [];
  /** The host holding this pool's stock (prewarm), once known. */
  #stocked: Promise<{ host: SandboxHost; memoryMb: number } | null> = Promise.resolve(null);

  constructor(options: SandboxPoolOptions = {}) {
    const c = options.concurrency ?? hardwareConcurrency();
    if (!Number.isInteger(c) || c < 1) {
      throw new SandboxArgumentError(`concurrency must be an integer ≥ 1 (got ${String(c)})`);
    }
    this.concurrency = c;
    this.defaults = { ...options.defaults };
    const resolved = resolveRunOptions("", this.defaults); // fail at construction, not later
    if (options.prewarm) {
      this.#stocked = hostFor(resolved.isolation).then(async (host) => {
        if (!host.stock) return null;
        await host.stock(Math.min(c, MAX_PREWARMED), resolved.memoryMb);
        return { host, memoryMb: resolved.memoryMb };
      }).catch(() => null); // no sandbox here: each run reports that error itself
    }
  }

  /** Runs one execution when a slot is free. Rejects only for bad options or a closed pool. */
  async run(code: string, options?: RunOptions): Promise<ExecResult> {
    const merged: RunOptions = { ...this.defaults, ...options };
    resolveRunOptions(code, merged); // reject bad options now rather than after queueing
    await this.#acquire();
    try {
      return await runJs(code, merged);
    } finally {
      this.#release();
    }
  }

  /** Runs every job (bounded by the pool); results in the jobs' order. */
  runMany(jobs: readonly SandboxJob[]): Promise<ExecResult[]> {
    return Promise.all(jobs.map((j) => this.run(j.code, j.options)));
  }

  stats(): Promise<PoolStats> {
    return Promise.resolve({
      concurrency: this.concurrency,
      running: this.#running,
      queued: this.#queue.length,
      completed: this.#completed,
      peakRunning: this.#peak,
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#queue.splice(0)) w.cancel(new SandboxPoolClosedError());
    if (this.#running > 0) await new Promise<void>((r) => this.#idle.push(r));
    const stocked = await this.#stocked;
    if (stocked) await stocked.host.stock!(0, stocked.memoryMb);
  }

  #acquire(): Promise<void> {
    if (this.#closed) return Promise.reject(new SandboxPoolClosedError());
    if (this.#running < this.concurrency) {
      this.#start();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({
        start: () => {
          this.#start();
          resolve();
        },
        cancel: reject,
      });
    });
  }

  #start(): void {
    this.#running++;
    this.#peak = Math.max(this.#peak, this.#running);
  }

  #release(): void {
    this.#running--;
    this.#completed++;
    const next = this.#queue.shift();
    if (next) next.start();
    else if (this.#running === 0) { for (const r of this.#idle.splice(0)) r(); }
  }
}
