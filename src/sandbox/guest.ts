// The code that runs inside the sandbox (a Deno subprocess or a browser Worker): it removes the
// host's capabilities, captures printed output, predefines the task's variables, runs the code
// and reports how it ended through an `emit` callback that each host's bootstrap provides.
//
// The browser host serialises these functions with Function.prototype.toString() into the
// Worker's source, so each refers only to its arguments, to other functions of this file and
// to built-ins: no imports, no module-level constants, no TypeScript-only runtime features.

/** What the host sends into the sandbox. Structured-clone data only. */
export interface GuestRequest {
  code: string;
  helpers: string;
  globals: Record<string, unknown>;
  maxOutputBytes: number;
}

/**
 * "s": the code starts now (the sandbox is up, the code compiled; the deadline counts from
 * here). "o": a chunk of printed output. "e": the end; text is the error ("" when ok).
 */
export type GuestEmit = (kind: "s" | "o" | "e", text: string, ok: boolean) => void;

/** The capabilities each host must remove before the code runs. */
export interface StripList {
  globals: string[];
  navigator: string[];
}

// The sandbox's global object is hostile territory: the code can replace anything on it.
// deno-lint-ignore no-explicit-any
export type GuestGlobal = any;

/** Globals that reach the network, storage, other threads, the GPU or the host itself. */
export function sandboxStripList(): StripList {
  const words = (s: string) => s.split(/\s+/).filter(Boolean);
  const globals = [
    ...words("fetch XMLHttpRequest WebSocket WebSocketStream WebTransport EventSource"), // network
    ...words(`indexedDB caches CacheStorage Cache cookieStore localStorage sessionStorage
      webkitRequestFileSystem webkitRequestFileSystemSync webkitResolveLocalFileSystemURL
      requestFileSystem FileSystemHandle FileSystemDirectoryHandle FileSystemFileHandle
      FileSystemSyncAccessHandle`), // storage
    // other threads and windows; postMessage/onmessage are the Worker's channel to the host
    ...words(`Worker SharedWorker ServiceWorker importScripts BroadcastChannel postMessage
      onmessage onmessageerror close open opener parent top`),
    // host runtimes: Deno and its Node compatibility layer
    ...words(`Deno process Buffer global require module setImmediate clearImmediate alert
      confirm prompt`),
    // timers the guest cannot count when deciding that the program has finished
    ...words("requestAnimationFrame cancelAnimationFrame requestIdleCallback"),
  ];
  const navigator = words(`gpu ml storage locks usb hid serial bluetooth serviceWorker
    permissions sendBeacon mediaDevices wakeLock`);
  return { globals, navigator };
}

/** Deletes each name from `obj` and from every object on its prototype chain. */
export function deleteEverywhere(obj: GuestGlobal, names: string[]): void {
  for (let o = obj; o !== null && o !== undefined; o = Object.getPrototypeOf(o)) {
    for (const name of names) {
      const d = Object.getOwnPropertyDescriptor(o, name);
      if (!d) continue;
      // Non-configurable properties cannot be deleted: make them useless instead.
      if (!Reflect.deleteProperty(o, name) && d.writable) o[name] = undefined;
    }
  }
}

export function stripGlobals(g: GuestGlobal, list: StripList): void {
  const nav = g.navigator;
  if (nav) deleteEverywhere(nav, list.navigator);
  deleteEverywhere(g, list.globals);
}

export function quoteString(s: string): string {
  return "'" + s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n") + "'";
}

export function formatKey(k: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(k) ? k : quoteString(k);
}

/** One-line, Node-like rendering (`[ 1, 2 ]`, `{ a: 'x' }`), identical in every host. */
export function formatValue(v: unknown, nested: boolean, depth: number, seen: unknown[]): string {
  if (typeof v === "string") return nested ? quoteString(v) : v;
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "bigint") return String(v) + "n";
  if (typeof v === "symbol") return v.toString();
  if (typeof v === "function") {
    const isClass = /^class\b/.test(Function.prototype.toString.call(v));
    if (isClass) return `[class ${v.name || "(anonymous)"}]`;
    return v.name ? `[Function: ${v.name}]` : "[Function (anonymous)]";
  }
  if (v === null || typeof v !== "object") return String(v);
  if (seen.includes(v)) return "[Circular]";
  if (v instanceof Error) return nested ? `[${v.name}: ${v.message}]` : `${v.name}: ${v.message}`;
  if (v instanceof Date) return isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
  if (v instanceof RegExp) return String(v);
  if (depth > 2) return Array.isArray(v) ? "[Array]" : "[Object]";
  seen.push(v);
  try {
    return formatContainer(v as object, depth, seen);
  } finally {
    seen.pop();
  }
}

export function formatContainer(v: object, depth: number, seen: unknown[]): string {
  const item = (x: unknown) => formatValue(x, true, depth + 1, seen);
  const wrap = (open: string, parts: string[], close: string) =>
    parts.length === 0 ? open + close : `${open} ${parts.join(", ")} ${close}`;
  const list = (xs: ArrayLike<unknown>) => {
    const parts: string[] = [];
    for (let i = 0; i < Math.min(xs.length, 100); i++) parts.push(item(xs[i]));
    if (xs.length > 100) parts.push(`... ${xs.length - 100} more items`);
    return parts;
  };
  if (Array.isArray(v)) return wrap("[", list(v), "]");
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
    const xs = v as unknown as ArrayLike<unknown>;
    return wrap(`${v.constructor.name}(${xs.length}) [`, list(xs), "]");
  }
  if (v instanceof Map) {
    const parts = [...v].slice(0, 100).map(([k, x]) => `${item(k)} => ${item(x)}`);
    return wrap(`Map(${v.size}) {`, parts, "}");
  }
  if (v instanceof Set) return wrap(`Set(${v.size}) {`, [...v].slice(0, 100).map(item), "}");
  const proto = Object.getPrototypeOf(v);
  const ctor = proto === null ? "[Object: null prototype] " : proto.constructor?.name;
  const prefix = ctor && ctor !== "Object" ? ctor.trimEnd() + " " : "";
  const parts = Object.keys(v).map((k) =>
    `${formatKey(k)}: ${item((v as Record<string, unknown>)[k])}`
  );
  return prefix + wrap("{", parts, "}");
}

/** console.log's argument rendering, with the common printf directives (%s %d %i %f %j %o). */
export function formatArgs(args: unknown[]): string {
  const rest = args.slice();
  let head = "";
  if (typeof rest[0] === "string" && rest.length > 1 && rest[0].includes("%")) {
    const fmt = rest.shift() as string;
    head = fmt.replace(/%([sdifjoO%])/g, (m, c: string) => {
      if (c === "%") return "%";
      if (rest.length === 0) return m;
      const x = rest.shift();
      if (c === "s") return typeof x === "string" ? x : formatValue(x, true, 1, []);
      if (c === "d" || c === "i") {
        const n = typeof x === "bigint" ? x : Number(x);
        return c === "i" && typeof n === "number" ? String(Math.trunc(n)) : String(n);
      }
      if (c === "f") return String(Number(x));
      if (c === "j") return JSON.stringify(x) ?? "undefined";
      return formatValue(x, true, 0, []);
    });
  }
  const tail = rest.map((x) => formatValue(x, false, 0, []));
  return head === "" ? tail.join(" ") : [head, ...tail].join(" ");
}

/** "Name: message (line N)" for a thrown value; N counts lines of the submitted code. */
export function describeError(e: unknown): string {
  try {
    let text: string;
    if (e !== null && typeof e === "object" && "message" in e) {
      const err = e as { name?: unknown; message?: unknown; stack?: unknown };
      const name = String(err.name ?? "Error");
      const message = String(err.message ?? "");
      text = message ? `${name}: ${message}` : name;
      // The code is compiled as the body of `async function anonymous(\n) {\n…`: two lines in.
      const m = /solution\.js(?:, <anonymous>)?:(\d+):\d+/.exec(String(err.stack ?? ""));
      if (m) text += ` (line ${Number(m[1]) - 2})`;
    } else {
      text = "Uncaught " + formatValue(e, true, 0, []);
    }
    return text.length > 2000 ? text.slice(0, 2000) + "…" : text;
  } catch {
    return "Error: the thrown value could not be described";
  }
}

/** Line (1-based) of the first `import(` or `import.meta` in the code, 0 when none. */
export function findDynamicImport(code: string): number {
  // Comments may sit between `import` and `(`. Occurrences inside strings also count: a
  // false alarm costs one rejected program, a miss would let the code load remote modules.
  const m = /(?<![.\w$])import(?:\s|\/\*[\s\S]*?\*\/|\/\/[^\n]*)*[(.]/.exec(code);
  return m ? code.slice(0, m.index).split("\n").length : 0;
}

/**
 * Removes eval and the Function constructors, so that the only code that ever runs is the
 * source findDynamicImport has seen: nothing can build an `import()` out of strings.
 */
export function disableCodeGeneration(g: GuestGlobal): void {
  const blocked = function () {
    throw new EvalError(
      "code generation from strings (eval, new Function) is disabled in the sandbox",
    );
  };
  blocked.prototype = Function.prototype; // keeps `f instanceof Function` true
  const protos = [
    Function.prototype,
    Object.getPrototypeOf(async function () {}),
    Object.getPrototypeOf(function* () {}),
    Object.getPrototypeOf(async function* () {}),
  ];
  const fixed = { value: blocked, writable: false, configurable: false };
  for (const p of protos) Object.defineProperty(p, "constructor", fixed);
  Object.defineProperty(g, "Function", fixed);
  Object.defineProperty(g, "eval", fixed);
}

export interface Lifecycle {
  emit: GuestEmit;
  ended(): boolean;
  /** Runs a callback of the code; an uncaught error ends the run, as in Node. */
  call(fn: (...a: unknown[]) => unknown, args: unknown[]): void;
  fail(e: unknown): void;
  /** Ends the run with an already-described error ("" = success). */
  stop(error: string): void;
  track(id: unknown): void;
  untrack(id: unknown): void;
  mainDone(): void;
  done: Promise<void>;
}

/** Decides when the program has finished: main body done and no timer left, like Node. */
export function createLifecycle(g: GuestGlobal, emit: GuestEmit): Lifecycle {
  const setT = g.setTimeout;
  const live = new Set<unknown>();
  let ended = false, mainFinished = false;
  let resolve = () => {};
  const done = new Promise<void>((r) => (resolve = r));
  const end = (error: string) => {
    if (ended) return;
    ended = true;
    emit("e", error, error === "");
    resolve();
  };
  // Two macrotask hops before "finished": promise callbacks and the unhandled-rejection event
  // must run first. One hop is enough in Deno; Chromium queues that event as a separate task
  // that one hop sometimes overtook (measured: rejections reported as success).
  const idle = () => mainFinished && live.size === 0;
  const check = () => idle() && setT(() => setT(() => idle() && end(""), 0), 0);
  const life: Lifecycle = {
    emit,
    ended: () => ended,
    call(fn, args) {
      if (ended) return;
      try {
        fn(...args);
      } catch (e) {
        life.fail(e);
      }
    },
    fail: (e) => end(describeError(e)),
    stop: end,
    track: (id) => live.add(id),
    untrack(id) {
      live.delete(id);
      check();
    },
    mainDone() {
      mainFinished = true;
      check();
    },
    done,
  };
  const onError = (ev: { preventDefault(): void; error?: unknown; reason?: unknown }) => {
    ev.preventDefault();
    life.fail("reason" in ev ? ev.reason : ev.error);
  };
  g.addEventListener("unhandledrejection", onError);
  g.addEventListener("error", onError);
  return life;
}

/** Timers the lifecycle can see; string callbacks (hidden eval) are refused. */
export function installTimers(g: GuestGlobal, life: Lifecycle): void {
  const [setT, clearT, setI, clearI] = [
    g.setTimeout,
    g.clearTimeout,
    g.setInterval,
    g.clearInterval,
  ];
  const needFn = (name: string, cb: unknown) => {
    if (typeof cb !== "function") throw new TypeError(`${name} needs a function callback`);
  };
  const define = (name: string, value: unknown) =>
    Object.defineProperty(g, name, { value, writable: true, configurable: true });
  define("setTimeout", (cb: (...a: unknown[]) => unknown, ms?: number, ...args: unknown[]) => {
    needFn("setTimeout", cb);
    const id = setT(() => {
      life.call(cb, args);
      life.untrack(id);
    }, ms);
    life.track(id);
    return id;
  });
  define("setInterval", (cb: (...a: unknown[]) => unknown, ms?: number, ...args: unknown[]) => {
    needFn("setInterval", cb);
    const id = setI(() => life.call(cb, args), ms);
    life.track(id);
    return id;
  });
  define("clearTimeout", (id: unknown) => {
    clearT(id);
    life.untrack(id);
  });
  define("clearInterval", (id: unknown) => {
    clearI(id);
    life.untrack(id);
  });
}

/** console.* and print() write to the captured stdout, nowhere else. */
export function installOutput(g: GuestGlobal, life: Lifecycle, maxBytes: number): void {
  let total = 0;
  // Stop sending once past the cap (the host cuts at exactly maxBytes and stops the run);
  // a UTF-8 byte is at least one UTF-16 unit, so maxBytes + 1 units always trip it.
  const write = (text: string) => {
    if (life.ended() || total > maxBytes) return;
    total += text.length;
    life.emit("o", text.length > maxBytes ? text.slice(0, maxBytes + 1) : text, true);
  };
  const line = (...args: unknown[]) => write(formatArgs(args) + "\n");
  const counts = new Map<string, number>();
  const starts = new Map<string, number>();
  const now = () => g.performance.now();
  const con = {
    log: line,
    info: line,
    debug: line,
    warn: line,
    error: line,
    trace: line,
    dir: (x: unknown) => line(x),
    table: (x: unknown) => line(x),
    group: line,
    groupCollapsed: line,
    groupEnd: () => {},
    assert: (cond: unknown, ...a: unknown[]) => {
      if (!cond) line(...(a.length ? ["Assertion failed:", ...a] : ["Assertion failed"]));
    },
    count: (label = "default") => {
      counts.set(label, (counts.get(label) ?? 0) + 1);
      line(`${label}: ${counts.get(label)}`);
    },
    countReset: (label = "default") => counts.delete(label),
    time: (label = "default") => starts.set(label, now()),
    timeLog: (label = "default") =>
      line(`${label}: ${(now() - (starts.get(label) ?? now())).toFixed(3)}ms`),
    timeEnd: (label = "default") => {
      con.timeLog(label);
      starts.delete(label);
    },
  };
  Object.defineProperty(g, "console", { value: con, writable: true, configurable: true });
  Object.defineProperty(g, "print", { value: line, writable: true, configurable: true });
}

/** The task's variables become ordinary, overwritable globals (the code may shadow them). */
export function defineGlobals(g: GuestGlobal, globals: Record<string, unknown>): void {
  for (const name of Object.keys(globals)) {
    Object.defineProperty(g, name, {
      value: globals[name],
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
}

/** Compiles the code as an async function body, so top-level `await` works. */
export function compileProgram(code: string): () => Promise<unknown> {
  const line = findDynamicImport(code);
  if (line > 0) {
    const err = new Error(
      `import() and import.meta are not available in the sandbox (line ${line})`,
    );
    err.name = "SandboxPolicyError";
    throw err;
  }
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  return new AsyncFunction(code + "\n//# sourceURL=solution.js");
}

/**
 * Runs one request to its end and resolves once the end has been emitted. The host's
 * bootstrap has already captured its channel and called stripGlobals.
 */
export async function guestMain(g: GuestGlobal, req: GuestRequest, emit: GuestEmit): Promise<void> {
  const life = createLifecycle(g, emit);
  installOutput(g, life, req.maxOutputBytes);
  installTimers(g, life);
  defineGlobals(g, req.globals);
  let main: () => Promise<unknown>;
  try {
    main = compileProgram(req.code);
  } catch (e) {
    life.fail(e);
    return life.done;
  }
  if (req.helpers) {
    try {
      (0, g.eval)(req.helpers); // indirect eval: the helpers' functions become globals
    } catch (e) {
      life.stop(`helpers failed: ${describeError(e)}`);
      return life.done;
    }
  }
  disableCodeGeneration(g);
  emit("s", "", true);
  try {
    await main();
  } catch (e) {
    life.fail(e);
  }
  life.mainDone();
  return life.done;
}

/** Every function above, in an order that lets their sources be concatenated into a script. */
export const GUEST_FUNCTIONS: readonly ((...args: never[]) => unknown)[] = [
  sandboxStripList,
  deleteEverywhere,
  stripGlobals,
  quoteString,
  formatKey,
  formatValue,
  formatContainer,
  formatArgs,
  describeError,
  findDynamicImport,
  disableCodeGeneration,
  createLifecycle,
  installTimers,
  installOutput,
  defineGlobals,
  compileProgram,
  guestMain,
];
