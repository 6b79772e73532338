// TRUSTED CODE ONLY. An in-process CodeExecutor built on `new Function`: no isolation, no
// permissions boundary, and no way to stop a synchronous infinite loop. It exists so tests can
// check that the oracle's own tool programs (code written in this repository) print what the
// oracle claims, without the sandbox. Never hand it model-written code: use src/sandbox.

import type { CodeExecutor, ExecResult } from "../../src/envs/types.ts";

export const trustedExecutor: CodeExecutor = {
  run(code: string, opts: { globals?: Record<string, unknown> }): Promise<ExecResult> {
    const t0 = performance.now();
    const lines: string[] = [];
    const sink = { log: (...xs: unknown[]) => lines.push(xs.map(String).join(" ")) };
    const globals = structuredClone(opts.globals ?? {}); // the sandbox gets copies too
    try {
      new Function("console", ...Object.keys(globals), code)(sink, ...Object.values(globals));
      const stdout = lines.length ? lines.join("\n") + "\n" : "";
      return Promise.resolve({
        ok: true,
        stdout,
        error: null,
        timedOut: false,
        ms: performance.now() - t0,
      });
    } catch (e) {
      const error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      return Promise.resolve({
        ok: false,
        stdout: lines.join("\n"),
        error,
        timedOut: false,
        ms: performance.now() - t0,
      });
    }
  },
};
