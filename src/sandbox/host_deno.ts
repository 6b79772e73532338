// The Deno host: every execution is a fresh `deno run` subprocess with no permissions, no
// environment, no GPU backend, Node built-ins mapped away and a V8 heap limit, watched from
// here for resident memory; killing it is always safe for the host. See mod.ts for why not a
// Worker.

import { builtinModules } from "node:module";
import { SandboxArgumentError, SandboxUnavailableError } from "./errors.ts";
import type { GuestHandle, GuestLaunch, SandboxHost } from "./host.ts";
import { encodeWire } from "./wire.ts";

/** Resident memory the runtime needs beside the V8 heap (measured idle: ~30 MiB; at a heap
 * out-of-memory with a 256 MiB limit: 280–330 MiB), so heap blow-ups meet V8's own limit first
 * and the watchdog catches what the heap limit does not count (ArrayBuffers, wasm memory). */
export const RSS_OVERHEAD_MB = 128;
const WATCHDOG_MS = 20;
const STDERR_TAIL = 8192;

// Through a variable, like run.ts: bundlers must not emit the runner as an asset.
const RUNNER_MODULE = "./runner_deno.ts";

let importMap: string | undefined;

/** An import map (as a data: URL) sending every Node built-in to a module that throws. */
export function blockedBuiltinsImportMap(): string {
  if (importMap === undefined) {
    const target = "data:text/javascript," +
      encodeURIComponent(
        'throw new Error("Node built-in modules are not available in the sandbox")',
      );
    const imports: Record<string, string> = {};
    for (const name of builtinModules) {
      const bare = name.replace(/^node:/, "");
      imports[bare] = target;
      imports[`node:${bare}`] = target;
    }
    importMap = "data:application/json," + encodeURIComponent(JSON.stringify({ imports }));
  }
  return importMap;
}

/** The `deno` command line of one sandbox process (exported for the process-layer tests). */
export function sandboxDenoArgs(memoryMb: number, entry: string): string[] {
  return [
    "run",
    "--quiet",
    "--no-prompt", // no --allow-* at all: every permission is denied, never asked for
    "--no-config",
    "--no-remote",
    "--no-npm",
    `--import-map=${blockedBuiltinsImportMap()}`,
    `--v8-flags=--max-old-space-size=${memoryMb}`,
    entry,
  ];
}

function readEnv(name: string): string | undefined {
  const ok = Deno.permissions.querySync({ name: "env", variable: name }).state === "granted";
  return ok ? Deno.env.get(name) : undefined;
}

/** The sandbox's entire environment: where Deno keeps its cache, and no GPU backend. */
export function sandboxEnv(): Record<string, string> {
  // DENO_WEBGPU_BACKEND=none leaves wgpu with no backend: navigator.gpu yields no adapter even
  // in a Worker the code might create through a path the guest did not strip.
  const env: Record<string, string> = {
    DENO_WEBGPU_BACKEND: "none",
    DENO_NO_UPDATE_CHECK: "1",
    NO_COLOR: "1",
  };
  for (const name of ["DENO_DIR", "HOME", "XDG_CACHE_HOME"]) {
    const v = readEnv(name);
    if (v) env[name] = v;
  }
  return env;
}

let spawnChecked = false;

function requireSpawnPermission(): string {
  if (!spawnChecked) {
    const run = Deno.permissions.querySync({ name: "run", command: Deno.execPath() });
    if (run.state !== "granted") {
      throw new SandboxUnavailableError(
        `the Deno sandbox runs code in \`deno run\` subprocesses: grant --allow-run ` +
          `(or --allow-run=${Deno.execPath()}, or -A) to the process that calls runJs`,
      );
    }
    spawnChecked = true;
  }
  const runner = new URL(RUNNER_MODULE, import.meta.url);
  if (runner.protocol !== "file:") {
    throw new SandboxUnavailableError(
      `the sandbox runner must be a local file, not ${runner.href}`,
    );
  }
  return runner.pathname;
}

function canWatchMemory(): boolean {
  return Deno.build.os === "linux" &&
    Deno.permissions.querySync({ name: "read", path: "/proc" }).state === "granted";
}

/** Resident set size of a process in bytes, or null once it is gone. */
export function residentBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function writeRequest(stdin: WritableStream<Uint8Array>, bytes: Uint8Array): Promise<void> {
  const w = stdin.getWriter();
  try {
    await w.write(bytes);
    await w.close();
  } catch {
    // The sandbox died before reading: `exited` says why. Release the pipe either way.
    await w.abort().catch(() => {});
  }
}

async function readTail(stream: ReadableStream<Uint8Array>, max: number): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) {
    text = (text + decoder.decode(chunk, { stream: true })).slice(-max);
  }
  return text;
}

type OnEvent = GuestLaunch["onEvent"];

function parseFrame(body: string, onEvent: OnEvent): boolean {
  try {
    if (body === "s") {
      onEvent({ kind: "start" });
      return true;
    }
    if (body.startsWith("o ")) {
      const text = JSON.parse(body.slice(2));
      if (typeof text !== "string") return false;
      onEvent({ kind: "out", text });
      return true;
    }
    if (body.startsWith("e ") && (body[2] === "0" || body[2] === "1")) {
      const error = JSON.parse(body.slice(4));
      onEvent({ kind: "end", ok: body[2] === "1", error: body[2] === "1" ? null : String(error) });
      return true;
    }
  } catch {
    // fall through: malformed
  }
  return false;
}

/** Relays the nonce-framed reports on stdout; returns an error text if the framing breaks. */
async function readFrames(
  stream: ReadableStream<Uint8Array>,
  nonce: string,
  maxLine: number,
  onEvent: OnEvent,
): Promise<string | null> {
  const prefix = nonce + " ";
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of stream) { // leaving the loop early cancels the stream
    pending += decoder.decode(chunk, { stream: true });
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      // Only the runner knows the nonce; anything else on stdout is noise, never a report.
      if (!line.startsWith(prefix)) continue;
      if (!parseFrame(line.slice(prefix.length), onEvent)) {
        return "SandboxCrashError: the sandbox sent a malformed report";
      }
    }
    if (pending.length > maxLine) {
      return `SandboxCrashError: the sandbox wrote a line longer than ${maxLine} characters`;
    }
  }
  return null;
}

function crashText(status: Deno.CommandStatus, stderr: string): string {
  const how = status.signal ? `signal ${status.signal}` : `exit code ${status.code}`;
  const last = stderr.trim().split("\n").pop()?.trim();
  return `SandboxCrashError: the sandbox process ended (${how}) before the code finished` +
    (last ? `: ${last}` : "");
}

function encodeRequest(nonce: string, request: GuestLaunch["request"]): Uint8Array {
  try {
    return new TextEncoder().encode(encodeWire({ nonce, ...request }, "request"));
  } catch (e) {
    throw new SandboxArgumentError(
      `globals must be plain data (arrays, objects, numbers, strings, typed arrays, Map, Set, ` +
        `Date, ...): ${(e as Error).message}`,
    );
  }
}

/** Sandbox processes running now (killed if this process exits first). */
const live = new Set<Deno.ChildProcess>();
let unloadHook = false;

/** SIGKILLs every sandbox process still running (this process is about to exit). */
export function killLiveSandboxes(): void {
  for (const c of live) {
    try {
      c.kill("SIGKILL");
    } catch {
      // already exited
    }
  }
}

function spawnSandbox(memoryMb: number, runner: string): Deno.ChildProcess {
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: sandboxDenoArgs(memoryMb, runner),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      clearEnv: true,
      env: sandboxEnv(),
      // Its own session and process group: a terminal's Ctrl-C (SIGINT to the foreground process
      // group) or a group SIGTERM reaches the trainer, which finishes its step, and not the code
      // it is running, which would otherwise die mid-step and score as an exec_error.
      detached: true,
    }).spawn();
    live.add(child);
    child.status.finally(() => live.delete(child));
    if (!unloadHook) {
      // Out of the group, a sandbox no longer dies with its host on a signal: an exit through
      // Deno.exit (a second Ctrl-C) takes the running ones along.
      globalThis.addEventListener("unload", killLiveSandboxes);
      unloadHook = true;
    }
    return child;
  } catch (e) {
    throw new SandboxUnavailableError(
      `could not start the sandbox process ${Deno.execPath()}: ${(e as Error).message}`,
    );
  }
}

/** Calls onExceed (once) when the process's resident memory passes memoryMb + overhead. */
function watchMemory(pid: number, memoryMb: number, onExceed: (why: string) => void) {
  if (!canWatchMemory()) return undefined;
  const limitMb = memoryMb + RSS_OVERHEAD_MB;
  let fired = false;
  return setInterval(() => {
    const rss = residentBytes(pid);
    if (fired || rss === null || rss <= limitMb * 2 ** 20) return;
    fired = true;
    onExceed(
      `MemoryLimitError: the code used more than ${limitMb} MiB of memory ` +
        `(${Math.round(rss / 2 ** 20)} MiB resident) and was stopped; use less memory`,
    );
  }, WATCHDOG_MS);
}

// ---------------------------------------------------------------------------------------------
// The stock: sandbox processes started before their request arrives, so that a run does not
// wait for Deno's start-up (the runner loads its modules, then blocks reading stdin). Each is
// still used for exactly one run. Started by SandboxPool({ prewarm: true }) while the GPU
// generates; idle ones are unref'd (they never keep this process alive) and cost ~30 MiB of
// resident memory each.

interface Stocked {
  child: Deno.ChildProcess;
  alive: boolean;
}

/** Idle stocked processes by V8 heap limit, and how many of each to keep. */
const stock = new Map<number, Stocked[]>();
const stockWanted = new Map<number, number>();

function refillStock(memoryMb: number): void {
  const want = stockWanted.get(memoryMb) ?? 0;
  const list = stock.get(memoryMb) ?? [];
  stock.set(memoryMb, list);
  const runner = requireSpawnPermission();
  while (list.length < want) {
    const child = spawnSandbox(memoryMb, runner);
    const entry: Stocked = { child, alive: true };
    child.status.finally(() => (entry.alive = false));
    child.unref();
    list.push(entry);
  }
}

/** A live stocked process for this heap limit, or null; its place is refilled. */
function takeStocked(memoryMb: number): Deno.ChildProcess | null {
  const list = stock.get(memoryMb);
  let got: Deno.ChildProcess | null = null;
  while (list?.length && !got) {
    const e = list.shift()!;
    if (e.alive) got = e.child;
    else releaseIdle(e.child).catch(() => {});
  }
  if (list && (stockWanted.get(memoryMb) ?? 0) > 0) refillStock(memoryMb);
  if (got) {
    got.ref();
    stockHits++;
  }
  return got;
}

/** Kills an idle process and releases its pipes. */
async function releaseIdle(child: Deno.ChildProcess): Promise<void> {
  child.ref(); // awaited below: an unref'd status would let the event loop end first
  try {
    child.kill("SIGKILL");
  } catch {
    // already exited
  }
  await Promise.allSettled([child.stdin.close(), child.stdout.cancel(), child.stderr.cancel()]);
  await child.status;
}

/**
 * Keeps `count` idle sandbox processes with this V8 heap limit ready (0: none), starting the
 * missing ones now; lowering the count kills the surplus and resolves once they are gone.
 */
export async function stockSandboxes(count: number, memoryMb: number): Promise<void> {
  stockWanted.set(memoryMb, count);
  const list = stock.get(memoryMb) ?? [];
  const surplus = list.splice(count);
  if (count > 0) refillStock(memoryMb);
  await Promise.all(surplus.map((e) => releaseIdle(e.child)));
}

/** Idle stocked processes now (alive or not yet reaped), by heap limit: for tests and stats. */
export function stockedSandboxes(memoryMb: number): number {
  return stock.get(memoryMb)?.length ?? 0;
}

let stockHits = 0;
/** Runs so far that took a stocked process instead of starting one. */
export function stockedRuns(): number {
  return stockHits;
}

function launch({ request, memoryMb, onEvent }: GuestLaunch): GuestHandle {
  const runner = requireSpawnPermission();
  const nonce = crypto.randomUUID();
  const payload = encodeRequest(nonce, request);
  const child = takeStocked(memoryMb) ?? spawnSandbox(memoryMb, runner);
  let killed = false;
  let memoryKill: string | null = null;
  const kill = () => {
    if (killed) return;
    killed = true;
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
  };
  const watchdog = watchMemory(child.pid, memoryMb, (why) => {
    memoryKill = why;
    kill();
  });
  // A report line is at most (maxOutputBytes + 1) UTF-16 units, JSON-escaped (≤ 6 each).
  const maxLine = 6 * (request.maxOutputBytes + 1) + nonce.length + 64;
  const frames = readFrames(child.stdout, nonce, maxLine, onEvent)
    .catch((e) => `SandboxCrashError: lost the sandbox's reports (${(e as Error).message})`)
    .then((err) => {
      if (err) kill();
      return err;
    });
  const exited = (async () => {
    const [status, framing, stderr] = await Promise.all([
      child.status,
      frames,
      readTail(child.stderr, STDERR_TAIL).catch(() => ""),
      writeRequest(child.stdin, payload),
    ]);
    clearInterval(watchdog);
    if (memoryKill) return memoryKill;
    // V8 aborts the process with "Fatal JavaScript out of memory" at the heap limit.
    if (/out of memory/i.test(stderr)) {
      return `MemoryLimitError: the code filled the ${memoryMb} MiB JavaScript heap and was ` +
        "stopped; use less memory";
    }
    if (killed) return framing;
    return framing ?? (status.success ? null : crashText(status, stderr));
  })();
  return { kill, exited };
}

export const denoProcessHost: SandboxHost = { name: "deno-process", launch, stock: stockSandboxes };
