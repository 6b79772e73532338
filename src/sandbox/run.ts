// runJs: one execution in a fresh sandbox, the same in Deno and in a browser. Owns the policy
// every host shares: the start-up limit and the code's wall-clock deadline, the output cap, and the shape of the result.

import { isDeno } from "../runtime.ts";
import { SandboxUnavailableError } from "./errors.ts";
import type { GuestHandle, SandboxHost } from "./host.ts";
import { browserWorkerHost } from "./host_browser.ts";
import type { ExecResult, Isolation, ResolvedRunOptions, RunOptions } from "./types.ts";
import { resolveRunOptions } from "./types.ts";

/**
 * Runs `code` in a fresh sandbox and reports how it ended. Never throws for anything the code
 * does; throws SandboxArgumentError for bad options and SandboxUnavailableError when this
 * host cannot sandbox (e.g. Deno without --allow-run).
 */
export async function runJs(code: string, options?: RunOptions): Promise<ExecResult> {
  const opts = resolveRunOptions(code, options);
  const host = await hostFor(opts.isolation);
  return await runOnHost(host, code, opts);
}

// Through a variable: bundlers must neither bundle nor emit this Deno-only module.
const DENO_HOST_MODULE = "./host_deno.ts";

/** The host for an isolation mode in this runtime. */
export async function hostFor(isolation: Isolation): Promise<SandboxHost> {
  const deno = isDeno();
  if (isolation === "process" || (isolation === "auto" && deno)) {
    if (!deno) {
      throw new SandboxUnavailableError(
        'isolation "process" needs Deno; in a browser use isolation "worker" or "auto"',
      );
    }
    const url = new URL(DENO_HOST_MODULE, import.meta.url).href;
    try {
      const mod = await import(/* @vite-ignore */ url);
      return (mod as { denoProcessHost: SandboxHost }).denoProcessHost;
    } catch (e) {
      throw new SandboxUnavailableError(
        `could not load the Deno sandbox host ${url} (${(e as Error).message}); ` +
          "grant read access to src/sandbox (or -A)",
      );
    }
  }
  if (deno) {
    // Measured with Deno 2.9: a Worker with permissions "none" can still end the host with
    // import("node:process") → kill(pid), and its heap blow-up aborts the whole process.
    throw new SandboxUnavailableError(
      'isolation "worker" is refused in Deno: a Deno Worker cannot be contained (it can kill ' +
        'the host process and its memory blow-up aborts it); use isolation "process" (the default)',
    );
  }
  return browserWorkerHost;
}

/** UTF-8 length without allocating (output floods pass through here). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes` (never splits a pair). */
export function utf8Prefix(s: string, maxBytes: number): string {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c < 0xdc00 && i + 1 < s.length;
    const w = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (n + w > maxBytes) return s.slice(0, i);
    n += w;
    if (pair) i++;
  }
  return s;
}

/** Printed output with a hard byte cap; says so in the text when it cut. */
export class OutputBuffer {
  #parts: string[] = [];
  #bytes = 0;
  truncated = false;
  constructor(readonly maxBytes: number) {}

  /** Appends; false once the cap is passed (the caller then stops the run). */
  push(text: string): boolean {
    if (this.truncated) return false;
    const n = utf8Length(text);
    if (this.#bytes + n <= this.maxBytes) {
      this.#parts.push(text);
      this.#bytes += n;
      return true;
    }
    this.#parts.push(utf8Prefix(text, this.maxBytes - this.#bytes));
    this.#bytes = this.maxBytes;
    this.truncated = true;
    return false;
  }

  text(): string {
    const body = this.#parts.join("");
    return this.truncated ? `${body}\n[output truncated at ${this.maxBytes} bytes]\n` : body;
  }
}

type Outcome = Pick<ExecResult, "ok" | "error" | "timedOut">;

/** Drives one launch on `host`: deadline, output cap, result. Resolves after cleanup. */
export function runOnHost(
  host: SandboxHost,
  code: string,
  opts: ResolvedRunOptions,
): Promise<ExecResult> {
  const t0 = performance.now();
  const out = new OutputBuffer(opts.maxOutputBytes);
  return new Promise<ExecResult>((resolve, reject) => {
    let outcome: Outcome | null = null;
    let handle: GuestHandle | undefined;
    // deno-lint-ignore prefer-const -- assigned below, after `settle` (which closes over it) exists
    let gone: Promise<string | null> | undefined;
    const settle = (o: Outcome) => {
      if (outcome || !handle || !gone) return;
      outcome = o;
      clearTimeout(timer);
      handle.kill();
      // Resolve only once the sandbox is gone, so no process or worker outlives its result.
      gone.then(() =>
        resolve({
          ok: o.ok,
          stdout: out.text(),
          error: o.error,
          timedOut: o.timedOut,
          ms: performance.now() - t0,
        })
      );
    };
    // Two clocks: start-up (process or Worker, runtime, request) has its own generous limit, so
    // a loaded host does not eat the code's time; the code's deadline counts from its first line.
    let timer = setTimeout(() =>
      settle({
        ok: false,
        error: `StartupTimeoutError: the sandbox did not start within ${opts.startupMs} ms ` +
          "(the host is overloaded?); the code did not run",
        timedOut: false,
      }), opts.startupMs);
    let started = false;
    const startCodeClock = () => {
      if (started || outcome) return;
      started = true;
      clearTimeout(timer);
      timer = setTimeout(() =>
        settle({
          ok: false,
          error: `TimeoutError: the code ran longer than ${opts.timeoutMs} ms and was stopped`,
          timedOut: true,
        }), opts.timeoutMs);
    };
    try {
      handle = host.launch({
        request: {
          code,
          helpers: opts.helpers,
          globals: opts.globals,
          maxOutputBytes: opts.maxOutputBytes,
        },
        memoryMb: opts.memoryMb,
        onEvent(ev) {
          if (ev.kind === "start") return startCodeClock();
          if (ev.kind === "end") return settle({ ok: ev.ok, error: ev.error, timedOut: false });
          if (out.push(ev.text)) return;
          settle({
            ok: false,
            error: `OutputLimitError: the code printed more than ${opts.maxOutputBytes} bytes; ` +
              "the output was cut there and the run stopped (print less)",
            timedOut: false,
          });
        },
      });
    } catch (e) {
      clearTimeout(timer);
      reject(e);
      return;
    }
    // A host bug must not become an unhandled rejection (fatal in Deno): report it instead.
    gone = handle.exited.catch((e) => `SandboxCrashError: ${(e as Error).message}`);
    gone.then((why) =>
      settle({
        ok: false,
        error: why ?? "SandboxCrashError: the sandbox stopped without reporting how the code ended",
        timedOut: false,
      })
    );
  });
}
