// Typed config fields, shared by the RL run config (src/rl/config_schema.ts, config.ts) and the SFT
// config (src/train/sft_config.ts): a schema is a tree of sections whose leaves are FieldSpecs (type,
// default, range, effect). What is here walks such a tree: defaults, validation that collects
// every bad field with the reason, `--set a.b=c` applied to raw JSON, and the reference table's
// type column. Each config keeps its own error class, cross-field rules and --set coercion.
// Browser-safe except readJsonConfig (Deno file reads).

/** The field types every schema knows; a schema may add its own (with their checks). */
export type BaseFieldType =
  | "int"
  | "number"
  | "boolean"
  | "string"
  | "enum"
  | "list"
  | "strings"
  | "paths";

/** One leaf of a config: how it parses, its default and what it does. */
export interface FieldSpec<T, K extends string = string> {
  readonly type: K;
  readonly default: T;
  readonly doc: string;
  /** The paper's (or released config's) value, when it has one. */
  readonly paper?: string;
  readonly nullable?: boolean;
  /** Numbers: bounds; lists: least number of items. */
  readonly min?: number;
  readonly max?: number;
  /** Which bounds are strict. */
  readonly exclusive?: "min" | "max" | "both";
  /** Enums: allowed values; lists: allowed items. */
  readonly choices?: readonly string[];
  /** Why the range exists; appended to range errors. */
  readonly why?: string;
}

type Extra = Pick<FieldSpec<unknown>, "paper" | "min" | "max" | "exclusive" | "why">;

export const int = (d: number, doc: string, x: Extra = {}): FieldSpec<number, "int"> => ({
  type: "int",
  default: d,
  doc,
  ...x,
});
export const num = (d: number, doc: string, x: Extra = {}): FieldSpec<number, "number"> => ({
  type: "number",
  default: d,
  doc,
  ...x,
});
export const bool = (d: boolean, doc: string): FieldSpec<boolean, "boolean"> => ({
  type: "boolean",
  default: d,
  doc,
});
export const text = (d: string, doc: string): FieldSpec<string, "string"> => ({
  type: "string",
  default: d,
  doc,
});
export const oneOf = <const C extends readonly string[]>(
  choices: C,
  d: C[number],
  doc: string,
  x: Extra = {},
): FieldSpec<C[number], "enum"> => ({ type: "enum", choices, default: d, doc, ...x });
/** A list of distinct items from `choices`, at least one. */
export const listOf = <const C extends readonly string[]>(
  choices: C,
  d: readonly C[number][],
  doc: string,
  x: Extra = {},
): FieldSpec<readonly C[number][], "list"> => ({
  type: "list",
  choices,
  default: d,
  doc,
  min: 1,
  ...x,
});
/** A list of non-empty strings (stop strings). */
export const strings = (doc: string): FieldSpec<readonly string[], "strings"> => ({
  type: "strings",
  default: [],
  doc,
});
/** A list of distinct file paths, at least `min` (default 1). */
export const paths = (
  d: readonly string[],
  doc: string,
  min = 1,
): FieldSpec<readonly string[], "paths"> => ({ type: "paths", default: d, doc, min });
export const nullable = <T, K extends string>(
  spec: FieldSpec<T, K>,
  d: T | null = null,
): FieldSpec<T | null, K> => ({ ...spec, nullable: true, default: d });

/** A schema's tree: sections of sections and fields. */
export type Node = FieldSpec<unknown> | { readonly [key: string]: Node };
export type Section = { readonly [key: string]: Node };

/** A field's type with its value: the config's TypeScript type from its schema. */
export type ValueOf<S> = S extends FieldSpec<infer T> ? T
  : { readonly [K in keyof S]: ValueOf<S[K]> };

export interface ConfigIssue {
  /** Dotted field path, e.g. "rollout.k" ("" for the whole config). */
  readonly path: string;
  readonly message: string;
}

/** One message for a config's issues: "source: path: why", or a numbered list of them. */
export function issuesMessage(issues: readonly ConfigIssue[], source?: string): string {
  const one = (i: ConfigIssue) => (i.path ? `${i.path}: ${i.message}` : i.message);
  const body = issues.length === 1
    ? one(issues[0])
    : `${issues.length} problems:\n` + issues.map((i) => `  ${one(i)}`).join("\n");
  return (source ? `${source}: ` : "") + body;
}

export const isField = (n: Node): n is FieldSpec<unknown> =>
  typeof (n as FieldSpec<unknown>).doc === "string";
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
export const joinPath = (a: string, b: string) => (a ? `${a}.${b}` : b);
export const show = (v: unknown) => (v === undefined ? "nothing" : JSON.stringify(v));

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** ` (did you mean "x"?)` for the closest option (prefix or small edit distance), else "". */
export function didYouMean(word: string, options: readonly string[]): string {
  const w = word.toLowerCase();
  let best = "", bestD = Infinity;
  for (const o of options) {
    const d = o.toLowerCase().startsWith(w) && w.length >= 3
      ? 0.5
      : editDistance(w, o.toLowerCase());
    if (d < bestD) [best, bestD] = [o, d];
  }
  return bestD <= Math.max(2, Math.floor(word.length / 3)) ? ` (did you mean "${best}"?)` : "";
}

/** Every field with its dotted path, in schema order. */
export function fieldsOf(node: Section, prefix = ""): [string, FieldSpec<unknown>][] {
  return Object.entries(node).flatMap(([k, n]) =>
    isField(n)
      ? [[joinPath(prefix, k), n] as [string, FieldSpec<unknown>]]
      : fieldsOf(n, joinPath(prefix, k))
  );
}

/** The defaults of every field (a fresh object each call). */
export function defaultsOf(node: Section): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(node).map(([k, n]) => [
      k,
      isField(n) ? structuredClone(n.default) : defaultsOf(n),
    ]),
  );
}

/** The value at a dotted path of a plain object (undefined where a section is missing). */
export function valueAt(obj: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((o, k) => (isObject(o) ? o[k] : undefined), obj);
}

const strictLow = (s: FieldSpec<unknown>) => s.exclusive === "min" || s.exclusive === "both";
const strictHigh = (s: FieldSpec<unknown>) => s.exclusive === "max" || s.exclusive === "both";

function rangeProblem(spec: FieldSpec<unknown>, v: number): string | null {
  const low = spec.min !== undefined && (strictLow(spec) ? !(v > spec.min) : !(v >= spec.min));
  const high = spec.max !== undefined && (strictHigh(spec) ? !(v < spec.max) : !(v <= spec.max));
  if (!low && !high) return null;
  return `must be ${rangeText(spec, " and ")}, got ${v}` + (spec.why ? ` (${spec.why})` : "");
}

/** A number field's range, e.g. "> 0 and ≤ 1" ("" for none; lists' min counts items). */
export function rangeText(spec: FieldSpec<unknown>, sep = ", "): string {
  const isList = spec.type === "list" || spec.type === "paths";
  return [
    spec.min !== undefined && !isList ? `${strictLow(spec) ? ">" : "≥"} ${spec.min}` : "",
    spec.max !== undefined ? `${strictHigh(spec) ? "<" : "≤"} ${spec.max}` : "",
  ].filter(Boolean).join(sep);
}

function distinctItems(s: FieldSpec<unknown>, v: readonly string[], what: string): string | null {
  if (new Set(v).size !== v.length) return `lists ${show(v)} with a repeat; name each ${what} once`;
  return v.length < (s.min ?? 0) ? `needs at least ${s.min} ${what}(s)` : null;
}

/** A problem with a value of a field, or null where it fits (the base types' checks). */
export type FieldCheck = (s: FieldSpec<unknown>, v: unknown) => string | null;

export const BASE_CHECKS: { readonly [K in BaseFieldType]: FieldCheck } = {
  int: (s, v) =>
    typeof v !== "number" || !Number.isInteger(v)
      ? `must be a whole number, got ${show(v)}`
      : rangeProblem(s, v),
  number: (s, v) =>
    typeof v !== "number" || !Number.isFinite(v)
      ? `must be a number, got ${show(v)}`
      : rangeProblem(s, v),
  boolean: (_, v) => (typeof v === "boolean" ? null : `must be true or false, got ${show(v)}`),
  string: (_, v) => (typeof v === "string" ? null : `must be a string, got ${show(v)}`),
  enum: (s, v) =>
    typeof v === "string" && s.choices!.includes(v)
      ? null
      : `must be one of ${s.choices!.map((c) => `"${c}"`).join(", ")}, got ${show(v)}` +
        (typeof v === "string" ? didYouMean(v, s.choices!) : ""),
  list: (s, v) => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
      return `must be a list of strings, got ${show(v)}`;
    }
    const bad = v.find((x) => !s.choices!.includes(x));
    if (bad !== undefined) {
      return `"${bad}" is not one of ${s.choices!.join(", ")}` + didYouMean(bad, s.choices!);
    }
    return distinctItems(s, v, "item");
  },
  strings: (_, v) =>
    Array.isArray(v) && v.every((x) => typeof x === "string" && x !== "")
      ? null
      : `must be a list of non-empty strings, e.g. ["</answer>"], got ${show(v)}`,
  paths: (s, v) =>
    Array.isArray(v) && v.every((x) => typeof x === "string" && x !== "")
      ? distinctItems(s, v, "path")
      : `must be a list of file paths, e.g. ["data/train.jsonl"], got ${show(v)}`,
};

/**
 * The section's values from `raw` (defaults where absent), every problem pushed to `issues`:
 * fields that are not in the schema (with the nearest name), values that fail their type's
 * `check`, sections that are not objects.
 */
export function resolveSection(
  node: Section,
  raw: unknown,
  path: string,
  issues: ConfigIssue[],
  check: FieldCheck,
): Record<string, unknown> {
  const names = Object.keys(node);
  if (raw !== undefined && !isObject(raw)) {
    issues.push({
      path,
      message: `must be an object with fields ${names.join(", ")}, got ${show(raw)}`,
    });
    raw = {};
  }
  const obj = (raw ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!(key in node)) {
      issues.push({
        path: joinPath(path, key),
        message: `unknown field${didYouMean(key, names)}; ${path || "the config"} has ${
          names.join(", ")
        }`,
      });
    }
  }
  return Object.fromEntries(names.map((k) => {
    const n = node[k], p = joinPath(path, k), v = obj[k];
    if (!isField(n)) return [k, resolveSection(n, v, p, issues, check)];
    if (v === undefined) return [k, structuredClone(n.default)];
    if (v === null && n.nullable) return [k, null];
    const problem = v === null ? "must not be null" : check(n, v);
    if (problem) issues.push({ path: p, message: problem });
    return [k, structuredClone(problem ? n.default : v)];
  }));
}

/** Raises a config's own error for one bad path. */
export type ErrorAt = (path: string, message: string) => Error;

/**
 * The field a `--set` path names, and the rest of the path where it goes on inside that field
 * (an object field's keys: the caller says whether the field takes them).
 */
export function fieldAt(
  root: Section,
  path: string,
  errorAt: ErrorAt,
): { field: FieldSpec<unknown>; rest: string[] } {
  const parts = path.split(".");
  let node: Node = root;
  for (let i = 0; i < parts.length; i++) {
    if (isField(node)) return { field: node, rest: parts.slice(i) };
    const names = Object.keys(node), here = parts.slice(0, i).join(".");
    if (!(parts[i] in node)) {
      throw errorAt(
        path,
        `unknown field${didYouMean(parts[i], names)}; ${here || "the config"} has ${
          names.join(", ")
        }`,
      );
    }
    node = node[parts[i]];
  }
  if (!isField(node)) {
    throw errorAt(path, `is a section; set one of its fields: ${Object.keys(node).join(", ")}`);
  }
  return { field: node, rest: [] };
}

/** A --set number: a clear error where the text is not one. */
export function setNumber(t: string, path: string, errorAt: ErrorAt): number {
  const n = Number(t);
  if (t.trim() === "" || !Number.isFinite(n)) {
    throw errorAt(path, `--set value "${t}" is not a number`);
  }
  return n;
}

/** A --set JSON value that `ok` accepts, else a clear error saying what it should be. */
export function setJson(
  t: string,
  path: string,
  ok: (v: unknown) => boolean,
  what: string,
  errorAt: ErrorAt,
): unknown {
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    v = undefined;
  }
  if (!ok(v)) throw errorAt(path, `--set value ${t} is not ${what}`);
  return v;
}

/**
 * A copy of `raw` with each `path=value` applied, the value typed by `coerce(path, text)` (before
 * validation); `example` is a --set the error for a malformed one shows.
 */
export function applySetsWith(
  raw: unknown,
  sets: readonly string[],
  coerce: (path: string, value: string) => unknown,
  errorAt: ErrorAt,
  example: string,
): Record<string, unknown> {
  if (!isObject(raw)) throw errorAt("", `a config must be a JSON object, got ${show(raw)}`);
  const out = structuredClone(raw);
  for (const s of sets) {
    const eq = s.indexOf("=");
    if (eq <= 0) throw errorAt("--set", `"${s}" is not path=value, e.g. --set ${example}`);
    const path = s.slice(0, eq).trim(), value = coerce(path, s.slice(eq + 1));
    const parts = path.split(".");
    let obj = out;
    for (const [i, k] of parts.slice(0, -1).entries()) {
      if (obj[k] === undefined) obj[k] = {};
      if (!isObject(obj[k])) {
        throw errorAt(
          parts.slice(0, i + 1).join("."),
          `must be an object to set ${path}, got ${show(obj[k])}`,
        );
      }
      obj = obj[k] as Record<string, unknown>;
    }
    obj[parts[parts.length - 1]] = value;
  }
  return out;
}

/** A config file's JSON (Deno), or the config's error naming the file and what is wrong. */
export async function readJsonConfig(
  path: string,
  errorAt: (path: string, message: string, source: string) => Error,
): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    throw errorAt(
      "",
      e instanceof SyntaxError
        ? `not valid JSON: ${e.message}`
        : `cannot read it: ${(e as Error).message}`,
      path,
    );
  }
}

/** The run name a config file's base name gives ("" for none): characters a folder takes. */
export function nameFromSource(source?: string): string {
  const base = source?.split(/[\\/]/).pop()?.replace(/\.json$/, "") ?? "";
  return base.replace(/[^A-Za-z0-9._-]/g, "_");
}
