// The browser host: every execution is a fresh module Worker built from a blob of guest.ts's
// own source, with network, storage, thread and GPU globals removed before the code runs.

import { SandboxArgumentError, SandboxUnavailableError } from "./errors.ts";
import { GUEST_FUNCTIONS, guestMain, sandboxStripList, stripGlobals } from "./guest.ts";
import type { GuestEmit, GuestGlobal, GuestRequest } from "./guest.ts";
import type { GuestHandle, GuestLaunch, SandboxHost } from "./host.ts";

/**
 * Runs inside the Worker (serialised with the guest functions): takes the first message as
 * the request, keeps postMessage for itself, strips the scope, then hands over to guestMain.
 */
export function workerBootstrap(g: GuestGlobal): void {
  g.onmessage = (ev: { data: GuestRequest }) => {
    g.onmessage = null;
    const post = g.postMessage.bind(g);
    const emit: GuestEmit = (kind, text, ok) => post([kind, text, ok]);
    stripGlobals(g, sandboxStripList());
    guestMain(g, ev.data, emit);
  };
}

let workerUrl: string | undefined;

/** The Worker's source: each function by its (possibly minified) name, then the bootstrap. */
export function workerSource(): string {
  // `var name = (source)` works for declarations, expressions and arrows alike, whatever a
  // bundler turned them into; module scope keeps these names out of the code's reach.
  const fns = [...GUEST_FUNCTIONS, workerBootstrap];
  const decls = fns.map((f) => `var ${f.name} = (${f.toString()});`);
  return `${decls.join("\n")}\n${workerBootstrap.name}(self);\n`;
}

function sourceUrl(): string {
  // One blob URL for the page's lifetime: it holds code only; every run gets a new Worker.
  workerUrl ??= URL.createObjectURL(new Blob([workerSource()], { type: "text/javascript" }));
  return workerUrl;
}

function launch({ request, onEvent }: GuestLaunch): GuestHandle {
  if (typeof Worker !== "function" || typeof URL.createObjectURL !== "function") {
    throw new SandboxUnavailableError(
      "this host has no Worker/Blob URLs; run the sandbox from a page or a dedicated worker",
    );
  }
  let w: Worker;
  try {
    w = new Worker(sourceUrl(), { type: "module", name: "sandbox" });
  } catch (e) {
    throw new SandboxUnavailableError(
      `could not start a sandbox Worker (${(e as Error).message}); if the page sets a ` +
        "Content-Security-Policy, allow blob: in worker-src",
    );
  }
  let resolveExit = (_why: string | null) => {};
  const exited = new Promise<string | null>((r) => (resolveExit = r));
  let gone = false;
  const finish = (why: string | null) => {
    if (gone) return;
    gone = true;
    w.terminate(); // synchronous for the code: no further message is delivered
    resolveExit(why);
  };
  w.onmessage = (ev: MessageEvent) => {
    const d: unknown = ev.data;
    if (!Array.isArray(d)) return;
    const [kind, text, ok] = d;
    if (kind === "s") onEvent({ kind: "start" });
    if (kind === "o" && typeof text === "string") onEvent({ kind: "out", text });
    if (kind === "e") {
      onEvent({ kind: "end", ok: ok === true, error: ok === true ? null : String(text) });
    }
  };
  w.onerror = (ev: ErrorEvent) => {
    ev.preventDefault();
    finish(`SandboxCrashError: the sandbox worker failed: ${ev.message || "unknown error"}`);
  };
  w.onmessageerror = () => finish("SandboxCrashError: a report from the sandbox could not be read");
  try {
    w.postMessage(request);
  } catch (e) {
    finish(null);
    throw new SandboxArgumentError(
      `globals must be structured-clone data (arrays, objects, numbers, strings, typed arrays, ` +
        `Map, Set, ...): ${(e as Error).message}`,
    );
  }
  return { kill: () => finish(null), exited };
}

export const browserWorkerHost: SandboxHost = { name: "browser-worker", launch };
