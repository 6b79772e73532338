// Test harnesses for Code: the JavaScript programs that run a function against reference cases
// (suite "REF") or against a tester's assertion statements (suite "GEN") in the sandbox, and the
// reading of the one result line each prints. Programs are built here, as text; nothing runs here.
//
// What the harness guards against (the sandbox is the security boundary; this is about honest
// scores): the function under test runs in its own function scope and cannot see the cases or the
// harness, whose names carry a tag hashed from the program (a program cannot contain its own
// hash), so printed output cannot forge a result line; user output is capped and never starts with
// "@@"; results are structuredClone'd before comparison (no proxies or getters); in GEN programs
// the function, `assert` and `assertEqual` are constants of the tests' block, so tests cannot
// redefine them (that is a SyntaxError), and a test that never calls the function fails.
// Not covered: a test or function that loops forever loses its whole run (timeout), and code that
// breaks out of its scope on purpose (`})(); ...`) can disturb its own run.

import { hash32 } from "../rng.ts";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface TestCase {
  args: Json[];
  expected: Json;
}

export type SuiteKind = "REF" | "GEN";

export interface SuiteResult {
  /** One entry per test, in order; tests a run never reached count as failed. */
  pass: boolean[];
  /** The first few failures, "label: reason" (at most 3, 160 characters each). */
  failures: string[];
  /** GEN only: setup code outside any test threw, so the tests after it never ran. */
  aborted: string | null;
}

/** Characters of its own output a program may print (excess is dropped). */
const USER_OUTPUT_MAX = 400;

const HELPERS = `(function () {
  "use strict";
  const out = console.log.bind(console);
  let budget = ${USER_OUTPUT_MAX}, calls = 0, seen = 0;
  const pass = [], failures = [];
  class AssertionFailed extends Error {}
  function show(v, max) {
    let s;
    try { s = JSON.stringify(v); } catch (_) { s = undefined; }
    if (s === undefined) s = String(v);
    max = max || 60;
    return s.length > max ? s.slice(0, max - 3) + "..." : s;
  }
  function sink() {
    if (budget <= 0) return;
    const s = Array.from(arguments, (x) => typeof x === "string" ? x : show(x, 200)).join(" ");
    const line = (s.startsWith("@@") ? " " + s : s).slice(0, budget);
    budget -= line.length + 1;
    out(line);
  }
  for (const k of ["log", "info", "warn", "error", "debug", "trace", "dir", "table"]) console[k] = sink;
  try { if (typeof globalThis.print === "function") globalThis.print = sink; } catch (_) { /* fixed */ }
  function eq(a, b) {
    if (typeof a === "number" && typeof b === "number") {
      if (Number.isInteger(a) && Number.isInteger(b)) return a === b;
      return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
    }
    if (a === b) return true;
    if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => eq(x, b[i]));
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && eq(a[k], b[k]));
  }
  function why(e) {
    if (e instanceof AssertionFailed) return e.message;
    return "threw " + (e instanceof Error ? e.name + ": " + e.message : show(e));
  }
  function record(ok, label, reason) {
    pass.push(ok);
    if (!ok && failures.length < 3) failures.push((label + ": " + reason).slice(0, 160));
  }
  return {
    assert(cond, message) {
      if (!cond) throw new AssertionFailed(message === undefined ? "assertion failed" : String(message));
    },
    assertEqual(actual, expected) {
      let a = actual;
      try { a = structuredClone(actual); } catch (_) { throw new AssertionFailed("got a value that is not plain data"); }
      if (!eq(a, expected)) throw new AssertionFailed("expected " + show(expected) + ", got " + show(a));
    },
    wrap(fn, name) {
      return function () {
        calls++;
        if (typeof fn !== "function") throw new TypeError(name + " is not defined as a function");
        return fn.apply(undefined, arguments);
      };
    },
    cases(fn, name, cases) {
      for (const [args, expected] of cases) {
        const label = name + "(" + args.map((a) => show(a)).join(", ") + ")";
        if (typeof fn !== "function") { record(false, label, name + " is not defined as a function"); continue; }
        try {
          const got = structuredClone(fn(...structuredClone(args)));
          record(eq(got, expected), label, "expected " + show(expected) + ", got " + show(got));
        } catch (e) { record(false, label, why(e)); }
      }
    },
    test(label, name, body) {
      try {
        body();
        if (calls === seen) record(false, label, "the test never calls " + name);
        else record(true, label, "");
      } catch (e) { record(false, label, why(e)); }
      seen = calls;
    },
    report(kind, tag, total, aborted) {
      while (pass.length < total) pass.push(false);
      const a = aborted === null ? null : why(aborted).slice(0, 160);
      out("@@" + kind + ":" + tag + " " + JSON.stringify({ pass: pass.slice(0, total), failures, aborted: a }));
    },
  };
})()`;

/** A 64-bit tag from the program's content: a program cannot print a tag it does not know. */
export function suiteTag(kind: SuiteKind, fnName: string, source: string, tests: string): string {
  const key = `${kind}\n${fnName}\n${source}\n${tests}`;
  return hash32(`a|${key}`).toString(36) + hash32(`b|${key}`).toString(36);
}

export function casesText(cases: readonly TestCase[]): string {
  return JSON.stringify(cases.map((c) => [c.args, c.expected]));
}

function prologue(tag: string, fnName: string, source: string): string {
  return `const __h${tag} = ${HELPERS};\nconst __f${tag} = (function () {\n${source}\n;` +
    `return typeof ${fnName} === "function" ? ${fnName} : undefined;\n})();\n`;
}

/** Runs `source`'s function `fnName` on every reference case; prints one REF line. */
export function refProgram(fnName: string, source: string, cases: readonly TestCase[]): string {
  const text = casesText(cases);
  const tag = suiteTag("REF", fnName, source, text);
  return prologue(tag, fnName, source) +
    `(function () {\n"use strict";\n__h${tag}.cases(__f${tag}, ${
      JSON.stringify(fnName)
    }, ${text});\n` +
    `__h${tag}.report("REF", "${tag}", ${cases.length}, null);\n})();\n`;
}

/** Runs the tester's statements against `source`'s function `fnName`; prints one GEN line. */
export function genProgram(fnName: string, source: string, testsCode: string): string {
  const tag = suiteTag("GEN", fnName, source, testsCode);
  const h = `__h${tag}`;
  const plan = testPlan(testsCode);
  let k = 0;
  const body = plan.statements.map((s) => {
    if (!s.test) return `${s.text}\n;`;
    const label = `test ${++k}: ${s.text.replace(/\s+/g, " ").slice(0, 60)}`;
    return `${h}.test(${JSON.stringify(label)}, ${JSON.stringify(fnName)}, () => {\n${s.text}\n});`;
  }).join("\n");
  return prologue(tag, fnName, source) +
    `(function () {\n"use strict";\nlet __aborted = null;\ntry {\n` +
    `const ${fnName} = ${h}.wrap(__f${tag}, ${JSON.stringify(fnName)}), ` +
    `assert = ${h}.assert, assertEqual = ${h}.assertEqual;\n${body}\n` +
    `} catch (e) {\n__aborted = e;\n} finally {\n${h}.report("GEN", "${tag}", ${plan.tests}, __aborted);\n}\n})();\n`;
}

/** The result line a program would print: how the oracle states its pre-executed results. */
export function suiteLine(kind: SuiteKind, tag: string, r: SuiteResult): string {
  return `@@${kind}:${tag} ${
    JSON.stringify({ pass: r.pass, failures: r.failures, aborted: r.aborted })
  }`;
}

/** The suite's result from a program's output, or null when the line is missing or malformed. */
export function parseSuite(
  stdout: string,
  kind: SuiteKind,
  tag: string,
  total: number,
): SuiteResult | null {
  const head = `@@${kind}:${tag} `;
  const line = stdout.split("\n").find((l) => l.startsWith(head));
  if (line === undefined) return null;
  let r: unknown;
  try {
    r = JSON.parse(line.slice(head.length));
  } catch {
    return null;
  }
  const { pass, failures, aborted } = (r ?? {}) as Record<string, unknown>;
  const ok = Array.isArray(pass) && pass.length === total &&
    pass.every((p) => typeof p === "boolean") && Array.isArray(failures) &&
    failures.every((f) => typeof f === "string") &&
    (aborted === null || typeof aborted === "string");
  return ok ? { pass, failures, aborted } as SuiteResult : null;
}

/** What a program printed itself (result lines removed), capped for prompts. */
export function userOutput(stdout: string): string {
  const own = stdout.split("\n").filter((l) => !l.startsWith("@@")).join("\n").trim();
  return own.length > 300 ? own.slice(0, 300) + "…" : own;
}

// ---- splitting a tester's code into statements -------------------------------------------------

function skipString(code: string, i: number): number {
  const q = code[i++];
  while (i < code.length) {
    const c = code[i];
    if (c === "\\") i += 2;
    else if (c === q) return i + 1;
    else if (q !== "`" && c === "\n") return i; // unterminated: stop at the line end
    else if (q === "`" && c === "$" && code[i + 1] === "{") i = skipBraces(code, i + 2);
    else i++;
  }
  return i;
}

/** From just after "${" to just after its closing "}". */
function skipBraces(code: string, i: number): number {
  let depth = 1;
  while (i < code.length) {
    const c = code[i];
    if (c === '"' || c === "'" || c === "`") {
      i = skipString(code, i);
      continue;
    }
    if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
    i++;
  }
  return i;
}

/** A line ending in an operator continues (but `i++` / `i--` end their statement). */
const CONTINUES_AFTER = /(?:[,([{*/%=&|?:.<>]|(?:^|[^+])\+|(?:^|[^-])-)$/;
const CONTINUES_BEFORE = /^(?:[.?:)\]},*/%=&|<>]|else\b|catch\b|finally\b)/;

/**
 * Top-level statements of `code`, split at `;` and at line ends outside brackets (unless the line
 * obviously continues). `skeleton` is the text with comments and string contents removed, for
 * classifying statements without being fooled by `// assert(...)`.
 */
export function splitStatements(code: string): { text: string; skeleton: string }[] {
  const out: { text: string; skeleton: string }[] = [];
  let depth = 0, start = 0, skel = "";
  const push = (end: number) => {
    const text = code.slice(start, end).trim();
    if (skel.trim() !== "") out.push({ text, skeleton: skel.trim() });
    start = end + 1;
    skel = "";
  };
  let i = 0;
  while (i < code.length) {
    const c = code[i], next = code[i + 1];
    if (c === "/" && (next === "/" || next === "*")) {
      const j = next === "/" ? code.indexOf("\n", i) : code.indexOf("*/", i + 2);
      i = j < 0 ? code.length : next === "/" ? j : j + 2;
      skel += " ";
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      i = skipString(code, i);
      skel += '""';
      continue;
    }
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth = Math.max(0, depth - 1);
    const breaks = depth === 0 && (c === ";" ||
      (c === "\n" && !CONTINUES_AFTER.test(skel.trimEnd()) &&
        !CONTINUES_BEFORE.test(code.slice(i + 1).trimStart())));
    if (breaks) push(i);
    else skel += c;
    i++;
  }
  push(code.length);
  return out;
}

const ASSERT_CALL = /\bassert(?:Equal)?\s*\(/;

/** The tester's statements, each marked as a test (it calls assert/assertEqual) or setup. */
export function testPlan(
  code: string,
): { statements: { text: string; test: boolean }[]; tests: number } {
  const statements = splitStatements(code).map((s) => ({
    text: s.text,
    test: ASSERT_CALL.test(s.skeleton),
  }));
  return { statements, tests: statements.filter((s) => s.test).length };
}

/** Reference cases written as the tester's statements (the oracle tester's code). */
export function casesAsAsserts(fnName: string, cases: readonly TestCase[]): string {
  return cases.map((c) =>
    `assertEqual(${fnName}(${c.args.map((a) => JSON.stringify(a)).join(", ")}), ${
      JSON.stringify(c.expected)
    });\n`
  ).join("");
}
