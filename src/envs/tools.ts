// What tool agents share: pulling code out of a model's message, running it through the injected
// CodeExecutor with the task's variables as globals, and reading its printed answer.

import { invalid } from "./api.ts";
import type { CodeAction, CodeExecutor, ExecResult, Invalid } from "./types.ts";

export type { CodeAction };

/** Tool code gets this long; BFS on a 10×10 grid takes microseconds, so this only stops loops. */
export const TOOL_TIMEOUT_MS = 2000;

/** Longest stdout kept in states and prompts: a runaway print must not bloat the next prompt. */
export const STDOUT_KEEP = 600;

const FENCE = /```[ \t]*(?:javascript|js|typescript|ts)?[ \t]*\n([\s\S]*?)```/gi;

/**
 * The code in a message: the last fenced block if there is one (chat models wrap code), else the
 * whole message (tiny models write bare code). Empty → Invalid.
 */
export function parseCode(
  text: string,
): { ok: true; action: CodeAction } | { ok: false; invalid: Invalid } {
  if (text.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the message is empty; write JavaScript", text) };
  }
  let code: string | null = null;
  for (const m of text.matchAll(FENCE)) code = m[1];
  if (code === null) {
    if (text.includes("```")) {
      return { ok: false, invalid: invalid("malformed", "unclosed ``` code fence", text) };
    }
    code = text;
  }
  if (code.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the code block is empty", text) };
  }
  return { ok: true, action: { kind: "code", code, execution: null } };
}

/**
 * Runs tool code: `prelude` (helper source such as `bfs`) is prepended because functions cannot
 * cross a worker boundary as globals; plain task data goes in `globals`.
 */
export async function runTool(
  executor: CodeExecutor,
  action: CodeAction,
  prelude: string,
  globals: Record<string, unknown>,
): Promise<CodeAction> {
  const source = prelude === "" ? action.code : `${prelude}\n;\n${action.code}`;
  const r = await executor.run(source, { globals, timeoutMs: TOOL_TIMEOUT_MS });
  const execution: ExecResult = {
    ok: r.ok,
    stdout: r.stdout.length > STDOUT_KEEP ? r.stdout.slice(0, STDOUT_KEEP) : r.stdout,
    error: r.error,
    timedOut: r.timedOut,
    ms: r.ms,
  };
  return { ...action, execution };
}

/** Why an execution gives no usable output, or null when it ran fine. */
export function executionProblem(e: ExecResult): string | null {
  if (e.timedOut) return "the code timed out (infinite loop?)";
  if (!e.ok) return `the code threw: ${e.error ?? "unknown error"}`;
  if (e.stdout.trim() === "") return "the code printed nothing; print the answer with console.log";
  return null;
}

/** An ExecResult for oracle moves, whose output the env computes natively (no sandbox needed). */
export function nativeExecution(stdout: string): ExecResult {
  return { ok: true, stdout, error: null, timedOut: false, ms: 0 };
}
