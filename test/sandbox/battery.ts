// The hostile-code battery: programs that try to escape, exhaust or poison the sandbox, each
// with the check that proves it was contained, plus a host health check afterwards. Runs in
// Deno (battery_test.ts) and in a browser page (runHostileBattery is the page's entry point).

import { isDeno } from "../../src/runtime.ts";
import { SandboxPool } from "../../src/sandbox/pool.ts";
import type { ExecResult, RunOptions } from "../../src/sandbox/types.ts";

export interface BatteryOptions {
  /** How to run one program (default: a SandboxPool of the host's hardware concurrency). */
  run?: (code: string, options?: RunOptions) => Promise<ExecResult>;
  /** An http(s) URL the sandbox tries to reach; pair it with probeHits. */
  probeUrl?: string;
  /** How many requests the probe server has seen (must stay 0). */
  probeHits?: () => number | Promise<number>;
  /** A file the sandbox tries to read; `secret` is its content. */
  secretFile?: string;
  /** A file: URL of a module exporting `secret`, which the sandbox tries to import. */
  localModule?: string;
  /** An environment variable of the host holding `secret`. */
  secretEnv?: string;
  /** Text that must appear in no program's output or error. */
  secret?: string;
  /** A path the sandbox tries to create through a subprocess; checked by markerExists. */
  markerFile?: string;
  markerExists?: () => boolean | Promise<boolean>;
  /** Limit for the programs expected to time out (default 1000; the others get 20 s). */
  timeoutMs?: number;
  /** Names of programs to leave out, with the reason (notInBrowser ones are left out there). */
  skip?: Record<string, string>;
}

export interface ProgramResult {
  name: string;
  contained: boolean;
  /** Why it counts as contained or not. */
  detail: string;
  result: ExecResult | null;
  skipped?: string;
}

export interface BatteryReport {
  results: ProgramResult[];
  allContained: boolean;
  hostHealthy: boolean;
  health: string[];
}

interface Program {
  name: string;
  code: string;
  options?: RunOptions;
  /** Runs until stopped: gets the short limit; every other program gets a generous one. */
  expectsTimeout?: boolean;
  /** Why this program cannot run in a browser page, if it cannot (reported as skipped). */
  notInBrowser?: string;
  /** null when contained, else what went wrong. */
  check(r: ExecResult, limitMs: number): string | null;
}

// Each probe prints "blocked:<what>" or "LEAK:<what>"; the program ends with "done".
const ATTEMPT = `
async function attempt(what, fn) {
  try {
    const v = await fn();
    print("LEAK:" + what + ":" + String(v).slice(0, 80));
  } catch (e) {
    print("blocked:" + what + ":" + (e && e.name));
  }
}
`;

function probes(body: string): string {
  return `${ATTEMPT}\n${body}\nprint("done");`;
}

function allBlocked(r: ExecResult): string | null {
  if (r.stdout.includes("LEAK")) {
    return `escaped: ${r.stdout.split("\n").filter((l) => l.includes("LEAK")).join("; ")}`;
  }
  if (!r.ok || !r.stdout.includes("done")) {
    return `the probes did not all run: ${r.error ?? r.stdout.slice(-200)}`;
  }
  return null;
}

function timedOut(r: ExecResult, limitMs: number): string | null {
  if (!r.timedOut) return `expected a timeout, got ok=${r.ok} error=${r.error}`;
  // Loose bound (CI machines are loaded); test/sandbox/run_test.ts holds the precise one.
  if (r.ms > limitMs + 5000) return `stopped only after ${Math.round(r.ms)} ms`;
  return null;
}

function failedWith(pattern: RegExp): (r: ExecResult) => string | null {
  return (r) =>
    !r.ok && !r.timedOut && pattern.test(r.error ?? "")
      ? null
      : `expected an error matching ${pattern}, got ok=${r.ok} timedOut=${r.timedOut} error=${r.error}`;
}

const MEMORY = failedWith(/MemoryLimitError|RangeError|SandboxCrashError/);

export const PROGRAMS: readonly Program[] = [
  { name: "infinite loop", code: "while (true) {}", expectsTimeout: true, check: timedOut },
  {
    name: "Atomics.wait forever",
    // Pages that are not cross-origin isolated have no SharedArrayBuffer: spin there instead.
    code: "if (typeof SharedArrayBuffer !== 'function') for (;;) {}\n" +
      "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);",
    expectsTimeout: true,
    check: timedOut,
  },
  {
    name: "promise-chain loop",
    code: "const spin = () => Promise.resolve().then(spin);\nspin();",
    expectsTimeout: true,
    check: timedOut,
  },
  {
    name: "setTimeout loop",
    code: "const tick = () => setTimeout(tick, 0);\ntick();",
    expectsTimeout: true,
    check: timedOut,
  },
  {
    name: "setInterval forever",
    code: "setInterval(() => {}, 1);",
    expectsTimeout: true,
    check: timedOut,
  },
  {
    name: "busy loop in a timer",
    code: "setTimeout(() => { for (;;) {} }, 5);\nprint('scheduled');",
    expectsTimeout: true,
    check: timedOut,
  },
  {
    name: "memory bomb (heap)",
    code: "const a = [];\nfor (;;) a.push(new Array(1e5).fill(a.length));",
    options: { memoryMb: 64, timeoutMs: 10_000 },
    // Measured in headless Chromium: the renderer process dies ("Target crashed"), tab and all.
    notInBrowser: "browsers have no per-Worker heap limit: a heap blow-up crashes the tab (mod.ts)",
    check: MEMORY,
  },
  {
    name: "memory bomb (ArrayBuffers)",
    code: "const a = [];\nfor (;;) a.push(new Uint8Array(32 << 20).fill(1));",
    options: { memoryMb: 64, timeoutMs: 3000 },
    // Deno's watchdog stops it; Chromium refuses the allocations and the deadline stops it.
    check: (r, limit) => isDeno() || timedOut(r, limit) !== null ? MEMORY(r) : null,
  },
  {
    name: "string doubling",
    code: 'let s = "x";\nfor (;;) s += s;',
    check: failedWith(/RangeError/),
  },
  {
    // A program must not pass by printing the answer and failing where nobody awaits it.
    name: "failure hidden in a rejection",
    code: 'print("answer: 42");\n(async () => { await null; throw new Error("hidden"); })();',
    check: failedWith(/Error: hidden/),
  },
  {
    name: "stack overflow",
    code: "const f = (n) => f(n + 1) + 1;\nf(0);",
    check: failedWith(/RangeError/),
  },
  {
    name: "output flood",
    code: 'for (;;) console.log("flood ".repeat(20));',
    options: { maxOutputBytes: 4096 },
    check: (r) =>
      failedWith(/OutputLimitError/)(r) ??
        (r.stdout.length > 4096 + 100 ? `kept ${r.stdout.length} characters` : null) ??
        (r.stdout.includes("[output truncated at 4096 bytes]") ? null : "the cut is not announced"),
  },
  {
    name: "one giant print",
    code: 'print("x".repeat(50e6));',
    options: { maxOutputBytes: 4096 },
    check: (r) =>
      failedWith(/OutputLimitError/)(r) ?? (r.stdout.length > 4096 + 100 ? "kept too much" : null),
  },
  {
    name: "fetch and friends",
    code: probes(`
await attempt("fetch", async () => (await fetch(probeUrl || "http://127.0.0.1:9/")).status);
await attempt("XMLHttpRequest", () => { const x = new XMLHttpRequest(); x.open("GET", probeUrl); x.send(); return "sent"; });
await attempt("EventSource", () => new EventSource(probeUrl || "http://127.0.0.1:9/"));
await attempt("sendBeacon", () => navigator.sendBeacon(probeUrl, "x") || Promise.reject(new Error("no")));`),
    check: allBlocked,
  },
  {
    name: "WebSocket",
    code: probes(`
await attempt("WebSocket", () => new WebSocket((probeUrl || "http://127.0.0.1:9/").replace(/^http/, "ws")));
await attempt("WebTransport", () => new WebTransport("https://127.0.0.1:9/"));`),
    check: allBlocked,
  },
  {
    name: "read a file",
    code: probes(`
await attempt("Deno.readTextFile", () => Deno.readTextFile(secretFile));
await attempt("fetch file:", async () => (await fetch("file://" + secretFile)).text());
await attempt("process.binding", () => process.binding("fs"));
await attempt("indexedDB", () => indexedDB.open("x"));
await attempt("caches", () => caches.open("x"));
await attempt("storage", () => navigator.storage.getDirectory());`),
    check: allBlocked,
  },
  {
    name: "environment variables",
    code: probes(`
await attempt("Deno.env.get", () => Deno.env.get(secretEnv) ?? Promise.reject(new Error("unset")));
await attempt("Deno.env.toObject", () => JSON.stringify(Deno.env.toObject()));
await attempt("process.env", () => process.env[secretEnv] ?? Promise.reject(new Error("unset")));`),
    check: allBlocked,
  },
  {
    name: "subprocess",
    code: probes(`
await attempt("Deno.Command", () => new Deno.Command("sh", { args: ["-c", "touch " + markerFile] }).outputSync().code);
await attempt("Deno.run", () => Deno.run({ cmd: ["touch", markerFile] }));
await attempt("process.dlopen", () => process.dlopen({}, "/lib/libc.so.6"));`),
    check: allBlocked,
  },
  {
    name: "dynamic import (remote)",
    code: probes(
      `await attempt("import remote", () => import((probeUrl || "https://deno.land/") + "mod.js"));`,
    ),
    check: (r) =>
      failedWith(/SandboxPolicyError/)(r) ?? (r.stdout.includes("LEAK") ? "escaped" : null),
  },
  {
    name: "dynamic import (local file)",
    code: probes(`await attempt("import local", () => import(localModule || "./guest.ts"));`),
    check: (r) =>
      failedWith(/SandboxPolicyError/)(r) ?? (r.stdout.includes("LEAK") ? "escaped" : null),
  },
  {
    name: "import through generated code",
    code: probes(`
const imp = "imp" + "ort";
await attempt("eval", () => eval(imp + "('data:text/javascript,export default 1')"));
await attempt("Function", () => Function("return " + imp + "('data:text/javascript,export default 1')")());
await attempt("async ctor", () => (async () => {}).constructor("return 1")());
await attempt("generator ctor", () => (function* () {}).constructor("yield 1")().next().value);
await attempt("setTimeout string", () => setTimeout("print('LEAK:setTimeout-string')", 0));
await attempt("Reflect.construct", () => Reflect.construct(Function, ["return 1"])());`),
    check: allBlocked,
  },
  {
    name: "new Worker",
    code: probes(`
await attempt("Worker", () => new Worker("data:text/javascript,postMessage(1)", { type: "module" }));
await attempt("SharedWorker", () => new SharedWorker("data:text/javascript,1"));
await attempt("BroadcastChannel", () => new BroadcastChannel("x"));`),
    check: allBlocked,
  },
  {
    name: "navigator.gpu",
    code: probes(`
const adapter = async (gpu) => (await gpu.requestAdapter()) ?? Promise.reject(new Error("no adapter"));
await attempt("navigator.gpu", () => adapter(navigator.gpu));
await attempt("prototype gpu", () => adapter(Object.getPrototypeOf(navigator).gpu));
await attempt("GPU constructor", () => adapter(new GPU()));`),
    check: allBlocked,
  },
  {
    name: "reach the host",
    code: probes(`
await attempt("postMessage", () => { postMessage({ kind: "e", ok: true }); return "posted"; });
await attempt("self.close", () => { self.close(); return "closed"; });
await attempt("Deno.kill self", () => Deno.kill(Deno.pid, "SIGKILL"));
await attempt("process.exit", () => process.exit(0));
await attempt("constructor chain", () => this.constructor.constructor("return Deno")().pid);
await attempt("window", () => window.document.title);`),
    check: allBlocked,
  },
  {
    name: "prototype pollution",
    code: `Object.prototype.polluted = "yes";
Array.prototype.push = () => 0;
JSON.stringify = () => "hacked";
String.prototype.slice = () => "hacked";
globalThis.leftover = 1;
print("polluted");`,
    check: (r) => (r.ok && r.stdout === "polluted\n" ? null : `got ${JSON.stringify(r)}`),
  },
];

/** Run after "prototype pollution": a fresh sandbox must see pristine built-ins. */
export const NEXT_RUN_CLEAN: Program = {
  name: "next run is clean",
  code: `const dirty = [];
if (({}).polluted !== undefined) dirty.push("Object.prototype");
if ([1].push(2) !== 2) dirty.push("Array.prototype.push");
if (JSON.stringify({ a: 1 }) !== '{"a":1}') dirty.push("JSON.stringify");
if ("abc".slice(1) !== "bc") dirty.push("String.prototype.slice");
if (typeof leftover !== "undefined") dirty.push("globals");
print(dirty.length ? "DIRTY " + dirty.join(",") : "clean");`,
  check: (r) => (r.ok && r.stdout === "clean\n" ? null : `not clean: ${r.stdout}${r.error ?? ""}`),
};

interface HostSnapshot {
  objectProtoKeys: string;
  push: unknown;
  stringify: unknown;
  fetch: string;
  gpu: string;
}

function snapshot(): HostSnapshot {
  const nav = (globalThis as { navigator?: { gpu?: unknown } }).navigator;
  return {
    objectProtoKeys: Object.getOwnPropertyNames(Object.prototype).sort().join(","),
    push: Array.prototype.push,
    stringify: JSON.stringify,
    fetch: typeof globalThis.fetch,
    gpu: typeof nav?.gpu,
  };
}

type Run = (code: string, options?: RunOptions) => Promise<ExecResult>;

async function runOne(
  p: Program,
  run: Run,
  opts: BatteryOptions,
  globals: Record<string, unknown>,
) {
  const skipped = opts.skip?.[p.name] ?? (isDeno() ? undefined : p.notInBrowser);
  if (skipped !== undefined) {
    return { name: p.name, contained: true, detail: "skipped", result: null, skipped };
  }
  // A program that should finish must not fail because a loaded machine started it slowly.
  const limit = p.options?.timeoutMs ?? (p.expectsTimeout ? opts.timeoutMs ?? 1000 : 20_000);
  const result = await run(p.code, { timeoutMs: limit, ...p.options, globals });
  let problem = p.check(result, limit);
  const leaked = opts.secret && (result.stdout + (result.error ?? "")).includes(opts.secret);
  if (leaked) problem = "the secret appeared in the output";
  return { name: p.name, contained: problem === null, detail: problem ?? "contained", result };
}

async function checkHealth(
  before: HostSnapshot,
  run: Run,
  opts: BatteryOptions,
): Promise<string[]> {
  const problems: string[] = [];
  const after = snapshot();
  for (const k of Object.keys(before) as (keyof HostSnapshot)[]) {
    if (before[k] !== after[k]) problems.push(`host ${k} changed`);
  }
  if ((({}) as Record<string, unknown>).polluted !== undefined) {
    problems.push("host Object.prototype polluted");
  }
  const normal = await run("print(6 * 7)", { timeoutMs: 10_000 });
  if (!normal.ok || normal.stdout !== "42\n") {
    problems.push(`a normal run failed: ${JSON.stringify(normal)}`);
  }
  const hits = opts.probeHits ? await opts.probeHits() : 0;
  if (hits > 0) problems.push(`the probe server was reached ${hits} time(s)`);
  if (opts.markerExists && await opts.markerExists()) problems.push("the marker file was created");
  return problems;
}

/** Runs every program (concurrently, bounded by `run`), then checks the host's health. */
export async function runHostileBattery(opts: BatteryOptions = {}): Promise<BatteryReport> {
  const before = snapshot();
  const globals = {
    probeUrl: opts.probeUrl ?? "",
    secretFile: opts.secretFile ?? "/etc/hostname",
    localModule: opts.localModule ?? "",
    secretEnv: opts.secretEnv ?? "HOME",
    markerFile: opts.markerFile ?? "/tmp/sandbox-marker",
  };
  const polluter = PROGRAMS.find((p) => p.name === "prototype pollution")!;
  const rest = PROGRAMS.filter((p) => p !== polluter);
  const pool = opts.run ? null : new SandboxPool();
  const run: Run = opts.run ?? ((code, o) => pool!.run(code, o));
  try {
    // Sequential on purpose: the second must start after the first has polluted its sandbox.
    const first = await runOne(polluter, run, opts, globals);
    const second = await runOne(NEXT_RUN_CLEAN, run, opts, globals);
    const others = await Promise.all(rest.map((p) => runOne(p, run, opts, globals)));
    const results = [first, second, ...others];
    const health = await checkHealth(before, run, opts);
    return {
      results,
      allContained: results.every((r) => r.contained),
      hostHealthy: health.length === 0,
      health,
    };
  } finally {
    await pool?.close();
  }
}
