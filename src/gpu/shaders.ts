// WGSL sources by name. Files in shaders/ are used unchanged: Deno reads them as text next to
// this module; a bundled web app registers them up front (Vite `?raw` imports) instead.
// Generated shaders (the matmul tiles, src/ops/matmul_gen.ts) are registered as functions by
// the module that uses them and written when a pipeline first asks for them.

import { readText } from "../runtime.ts";

const registered = new Map<string, string>();
const generators = new Map<string, () => string>();
const loading = new Map<string, Promise<string>>();

/** Registers sources (name without ".wgsl" → text), e.g. from Vite's import.meta.glob. */
export function registerShaders(sources: Record<string, string>): void {
  for (const [path, text] of Object.entries(sources)) {
    const name = path.replace(/^.*\//, "").replace(/\.wgsl$/, "");
    registered.set(name, text);
  }
}

/**
 * A shader derived from another: `transform` of the base's text with its includes resolved
 * (the matmuls reading half-float weights, src/ops/matmul_half.ts).
 */
export interface ShaderTransform {
  base: string;
  transform: (source: string) => string;
}
const transforms = new Map<string, ShaderTransform>();

/** Registers derived shaders (name → base and transform, applied once). */
export function registerShaderTransforms(ts: Readonly<Record<string, ShaderTransform>>): void {
  for (const [name, t] of Object.entries(ts)) transforms.set(name, t);
}

/**
 * A twin of a shader: the base's text with some of its includes swapped for others (resolved the
 * same way, recursively), after `enable` directives. A kernel whose workgroup reductions run on
 * subgroup operations is its base with workgroup_reduce swapped for workgroup_reduce_sg and
 * `enable subgroups` (subgroupTwin): one source, two forms.
 */
export interface ShaderTwin {
  base: string;
  swap: Readonly<Record<string, string>>;
  enable?: readonly string[];
}
const twins = new Map<string, ShaderTwin>();

/** Registers twins (name → base, the includes it swaps and its enable directives). */
export function registerShaderTwins(ts: Readonly<Record<string, ShaderTwin>>): void {
  for (const [name, t] of Object.entries(ts)) twins.set(name, t);
}

/** The suffix of a kernel's subgroup twin (Gpu.subgroups: the adapter has subgroup operations). */
export const SUBGROUP_TWIN = "_sg";

/**
 * Registers NAME_sg for each NAME: its workgroup sums and maxima (by default
 * shaders/workgroup_reduce.wgsl; `swap` names other reduction includes and their subgroup forms,
 * e.g. loss_reduce → loss_reduce_sg) through subgroup operations (workgroup_reduce_sg.wgsl).
 * Returns the names given.
 */
export function registerSubgroupTwins<T extends string>(
  bases: readonly T[],
  swap: Readonly<Record<string, string>> = { workgroup_reduce: "workgroup_reduce_sg" },
): readonly T[] {
  for (const base of bases) {
    twins.set(base + SUBGROUP_TWIN, { base, swap, enable: ["subgroups"] });
  }
  return bases;
}

/** Registers generated shaders (name → a function that writes its WGSL, called once). */
export function registerShaderGenerators(gens: Readonly<Record<string, () => string>>): void {
  for (const [name, gen] of Object.entries(gens)) generators.set(name, gen);
}

/**
 * A line `//! include NAME` in a shader stands for the text of shaders/NAME.wgsl (once per
 * shader, resolved recursively): kernels share WGSL functions without copies.
 */
const INCLUDE = /^\/\/! include ([A-Za-z0-9_]+)[ \t]*$/gm;

/** The WGSL text of shaders/<name>.wgsl (or a generated shader), its includes resolved. */
export async function shaderSource(name: string): Promise<string> {
  const twin = twins.get(name);
  if (twin) {
    const used = new Set<string>();
    const body = await expand(twin.base, new Set([twin.base]), twin.swap, used);
    const unused = Object.keys(twin.swap).filter((n) => !used.has(n));
    if (unused.length) {
      throw new Error(
        `WGSL shader twin "${name}": its base "${twin.base}" includes no ${unused.join(", ")} ` +
          "to swap, so the twin would be the base itself: fix the twin's registration",
      );
    }
    return (twin.enable ?? []).map((e) => `enable ${e};\n`).join("") + body;
  }
  const t = transforms.get(name);
  if (t) {
    const done = registered.get(name);
    if (done !== undefined) return done;
    const made = t.transform(await shaderSource(t.base));
    registered.set(name, made);
    return made;
  }
  return await expand(name, new Set([name]));
}

/**
 * name's text with its includes resolved; `swap` (a twin's) replaces included names first, and
 * `used` collects the ones it replaced.
 */
async function expand(
  name: string,
  seen: Set<string>,
  swap: Readonly<Record<string, string>> = {},
  used = new Set<string>(),
): Promise<string> {
  const text = await rawSource(name);
  const target = (n: string) => {
    const to = Object.hasOwn(swap, n) ? swap[n] : undefined;
    if (to === undefined) return n;
    used.add(n);
    return to;
  };
  const names = [...text.matchAll(INCLUDE)].map((m) => target(m[1]));
  if (!names.length) return text;
  const parts = new Map<string, string>();
  for (const n of names) {
    if (parts.has(n)) continue;
    if (seen.has(n)) {
      parts.set(n, `// (${n} included above)`);
      continue;
    }
    seen.add(n);
    parts.set(n, await expand(n, seen, swap, used));
  }
  const done = new Set<string>();
  return text.replace(INCLUDE, (_, m: string) => {
    const n = target(m);
    return done.has(n) ? `// (${n} included above)` : (done.add(n), parts.get(n)!);
  });
}

function rawSource(name: string): Promise<string> {
  const text = registered.get(name);
  if (text !== undefined) return Promise.resolve(text);
  const gen = generators.get(name);
  if (gen) {
    const made = gen();
    registered.set(name, made);
    return Promise.resolve(made);
  }
  let p = loading.get(name);
  if (!p) {
    // The base goes through a variable so bundlers do not turn this Deno path into assets:
    // bundled apps register their shaders instead.
    const base = import.meta.url;
    p = readText(new URL(`../../shaders/${name}.wgsl`, base)).catch((e) => {
      loading.delete(name);
      throw new Error(
        `WGSL shader "${name}" not found (${(e as Error).message}). In a bundled app, ` +
          `register shaders with registerShaders(import.meta.glob("shaders/*.wgsl", {query: "?raw"})); ` +
          "generated shaders and uniform structs are registered by the module that declares them " +
          "(src/ops/matmul_gen.ts, uniformStruct in src/gpu/uniforms.ts): import it first",
      );
    });
    loading.set(name, p);
  }
  return p;
}
