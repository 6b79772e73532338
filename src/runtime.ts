// The one module that knows where the code runs: Deno, a browser page, or a Web Worker,
// and whether WebGPU is there. Everything else asks here instead of poking at globals.

export type RuntimeKind = "deno" | "browser" | "worker" | "node" | "unknown";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** Which JavaScript host this module is running in. */
export function runtimeKind(): RuntimeKind {
  if (typeof g.Deno?.version?.deno === "string") return "deno";
  if (typeof g.WorkerGlobalScope === "function" && g instanceof g.WorkerGlobalScope) {
    return "worker";
  }
  if (typeof g.window === "object" && typeof g.document === "object") return "browser";
  if (typeof g.process?.versions?.node === "string") return "node";
  return "unknown";
}

export const isDeno = (): boolean => runtimeKind() === "deno";
export const isBrowserLike = (): boolean => {
  const k = runtimeKind();
  return k === "browser" || k === "worker";
};

/**
 * An environment variable in Deno: its value, or undefined where it is unset, where the host is
 * not Deno, or where the process may not read it (no --allow-env).
 */
export function envVar(name: string): string | undefined {
  try {
    return g.Deno?.env?.get(name);
  } catch {
    return undefined;
  }
}

/**
 * A local text file's contents in Deno, read synchronously; null where the file does not exist,
 * where the host is not Deno, or where the process may not read it (no --allow-read).
 */
export function readLocalTextSync(path: string): string | null {
  try {
    return g.Deno?.readTextFileSync(path) ?? null;
  } catch (e) {
    if (e instanceof g.Deno.errors.NotFound || e instanceof g.Deno.errors.NotCapable) return null;
    if (e instanceof g.Deno.errors.PermissionDenied) return null;
    throw e;
  }
}

/**
 * The user's cache directory in Deno ($XDG_CACHE_HOME, else $HOME/.cache, %LOCALAPPDATA% on
 * Windows); undefined where there is none to be had.
 */
export function userCacheDir(): string | undefined {
  const xdg = envVar("XDG_CACHE_HOME");
  if (xdg) return xdg;
  if (g.Deno?.build?.os === "windows") return envVar("LOCALAPPDATA");
  const home = envVar("HOME");
  return home ? `${home}/.cache` : undefined;
}

/** The WebGPU entry point, or null where the host has none. */
export function webgpu(): GPU | null {
  const gpu = g.navigator?.gpu;
  return gpu && typeof gpu.requestAdapter === "function" ? gpu as GPU : null;
}

/** Number of logical CPU cores the host reports (1 when unknown). */
export function hardwareConcurrency(): number {
  const n = g.navigator?.hardwareConcurrency;
  return typeof n === "number" && n > 0 ? n : 1;
}

/** A short description of the host for logs: "deno 2.9.6", "browser", ... */
export function runtimeDescription(): string {
  const k = runtimeKind();
  if (k === "deno") return `deno ${g.Deno.version.deno}`;
  if (k === "node") return `node ${g.process.versions.node}`;
  const ua = g.navigator?.userAgent;
  return ua ? `${k} (${ua})` : k;
}

/** Reads a UTF-8 text file: from disk in Deno, over fetch in a browser or worker. */
export async function readText(url: URL | string): Promise<string> {
  const u = typeof url === "string" ? new URL(url, g.location?.href) : url;
  if (isDeno() && u.protocol === "file:") return await g.Deno.readTextFile(u);
  const res = await fetch(u);
  if (!res.ok) throw new Error(`could not read ${u.href}: HTTP ${res.status}`);
  return await res.text();
}
