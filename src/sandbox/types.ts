// The sandbox's public shapes (options, results, the service interface the pool and its
// comlink proxy share) and the one place where run options get their defaults and checks.

import { SandboxArgumentError } from "./errors.ts";

/** How one execution ended. The same object in Deno and in a browser. */
export interface ExecResult {
  /** True when the code ran to the end (timers included) without an uncaught error. */
  ok: boolean;
  /** Everything the code printed (console.*, print), capped at maxOutputBytes. */
  stdout: string;
  /** "Name: message" of what stopped the code, or null when ok. */
  error: string | null;
  /** True when the run was stopped because it passed timeoutMs. */
  timedOut: boolean;
  /** Wall-clock milliseconds from launch to result, sandbox start-up included. */
  ms: number;
}

/** Where the code runs: a `deno run` subprocess (Deno) or a blob Worker (browser). */
export type Isolation = "auto" | "process" | "worker";

export interface RunOptions {
  /**
   * Wall-clock limit for the code, counted from when it starts running; the sandbox's own
   * start-up is not included (default 5000).
   */
  timeoutMs?: number;
  /**
   * Wall-clock limit for the sandbox to start (process or Worker, runtime, request) before
   * the code runs; past it the run ends with a StartupTimeoutError (default 30000).
   */
  startupMs?: number;
  /** Printed output beyond this many UTF-8 bytes is cut and the run stopped (default 65536). */
  maxOutputBytes?: number;
  /** V8 heap limit of the sandbox in MiB; Deno only, see mod.ts (default 256). */
  memoryMb?: number;
  /** Plain data (structuredClone-able) predefined as global variables, e.g. { grid, start }. */
  globals?: Record<string, unknown>;
  /**
   * Trusted JavaScript run at global scope before the code, e.g. a `bfs` helper. Declare
   * helpers with `function name() {}` or `var`: `let`/`const` stay private to the helpers.
   */
  helpers?: string;
  /** "auto": process in Deno, worker in a browser. */
  isolation?: Isolation;
}

/** RunOptions with every default filled in and checked. */
export interface ResolvedRunOptions {
  timeoutMs: number;
  startupMs: number;
  maxOutputBytes: number;
  memoryMb: number;
  globals: Record<string, unknown>;
  helpers: string;
  isolation: Isolation;
}

/** One execution for SandboxService.runMany. */
export interface SandboxJob {
  code: string;
  options?: RunOptions;
}

export interface PoolStats {
  /** Most executions the pool runs at once. */
  concurrency: number;
  running: number;
  queued: number;
  completed: number;
  /** Highest `running` seen since the pool was made: never above `concurrency`. */
  peakRunning: number;
}

/**
 * What the trainer and environments call. SandboxPool implements it in-thread; the comlink
 * proxy from startSandboxPoolWorker implements it from another worker.
 */
export interface SandboxService {
  run(code: string, options?: RunOptions): Promise<ExecResult>;
  runMany(jobs: readonly SandboxJob[]): Promise<ExecResult[]>;
  stats(): Promise<PoolStats>;
  /** Refuses new work, rejects queued work and waits for running executions to end. */
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_STARTUP_MS = 30_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;
export const DEFAULT_MEMORY_MB = 256;

// Names the guest defines itself or that would shadow what the code needs to run.
const RESERVED_GLOBALS = new Set([
  "console",
  "print",
  "globalThis",
  "self",
  "eval",
  "Function",
  "undefined",
  "NaN",
  "Infinity",
  "setTimeout",
  "setInterval",
  "clearTimeout",
  "clearInterval",
]);
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function checkInteger(name: string, v: unknown, min: number, max: number, unit: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new SandboxArgumentError(
      `${name} must be an integer number of ${unit} from ${min} to ${max} (got ${String(v)})`,
    );
  }
  return v;
}

function checkGlobals(globals: unknown): Record<string, unknown> {
  if (globals === undefined) return {};
  if (globals === null || typeof globals !== "object" || Array.isArray(globals)) {
    throw new SandboxArgumentError(
      "globals must be an object mapping variable names to plain data, e.g. { grid: [[0, 1]] }",
    );
  }
  for (const name of Object.keys(globals)) {
    if (!IDENTIFIER.test(name)) {
      throw new SandboxArgumentError(
        `globals.${name}: "${name}" is not a JavaScript identifier; rename it`,
      );
    }
    if (RESERVED_GLOBALS.has(name)) {
      throw new SandboxArgumentError(
        `globals.${name}: "${name}" is reserved by the sandbox; pick another name`,
      );
    }
  }
  return globals as Record<string, unknown>;
}

/** Fills in defaults and checks every option; throws SandboxArgumentError saying what to fix. */
export function resolveRunOptions(code: unknown, options: RunOptions = {}): ResolvedRunOptions {
  if (typeof code !== "string") {
    throw new SandboxArgumentError(`code must be a string of JavaScript (got ${typeof code})`);
  }
  const isolation = options.isolation ?? "auto";
  if (!["auto", "process", "worker"].includes(isolation)) {
    throw new SandboxArgumentError(
      `isolation must be "auto", "process" or "worker" (got ${String(isolation)})`,
    );
  }
  if (options.helpers !== undefined && typeof options.helpers !== "string") {
    throw new SandboxArgumentError("helpers must be a string of JavaScript source");
  }
  return {
    timeoutMs: checkInteger(
      "timeoutMs",
      options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      1,
      3_600_000,
      "ms",
    ),
    startupMs: checkInteger(
      "startupMs",
      options.startupMs ?? DEFAULT_STARTUP_MS,
      1,
      3_600_000,
      "ms",
    ),
    maxOutputBytes: checkInteger(
      "maxOutputBytes",
      options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      1,
      64 * 1024 * 1024,
      "bytes",
    ),
    memoryMb: checkInteger("memoryMb", options.memoryMb ?? DEFAULT_MEMORY_MB, 16, 16384, "MiB"),
    globals: checkGlobals(options.globals),
    helpers: options.helpers ?? "",
    isolation,
  };
}
