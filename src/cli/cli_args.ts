// The command-line parser every CLI shares: flags declared once as data (`--name value`,
// `--name=value`, boolean `--name`), typed results with camelCase keys, generated usage text,
// and the exit convention: `--help` prints usage to stdout and exits 0; a bad argument prints
// the problem and the usage to stderr and exits 2 (1 is left for failures while running; see
// EXIT_CODES for the whole table).
//
//   const spec = defineCli({ command: "npx deno task export", summary: "...", flags: {
//     model: { type: "string", required: true, metavar: "DIR", help: "HF model folder" },
//     "kv-cache": { type: "boolean", help: "..." } } });
//   const args = parseArgsOrExit(spec); // { model: string; kvCache: boolean; help: boolean }

export interface StringFlag {
  readonly type: "string";
  readonly help: string;
  readonly required?: boolean;
  readonly default?: string;
  /** Allowed values; anything else is a usage error. */
  readonly choices?: readonly string[];
  /** Placeholder in the usage text, e.g. "DIR" (default VALUE). */
  readonly metavar?: string;
  /** May be given more than once; the values are joined with `joinWith` in order. */
  readonly repeatable?: { readonly joinWith: string };
}

export interface NumberFlag {
  readonly type: "number";
  readonly help: string;
  readonly required?: boolean;
  readonly default?: number;
  readonly integer?: boolean;
  readonly min?: number;
  readonly metavar?: string;
}

export interface BooleanFlag {
  readonly type: "boolean";
  readonly help: string;
}

export type FlagSpec = StringFlag | NumberFlag | BooleanFlag;

export interface CliSpec<F extends Record<string, FlagSpec>> {
  /** How the command is invoked, e.g. "deno task export". */
  readonly command: string;
  /** One line on what it does. */
  readonly summary: string;
  readonly flags: F;
}

/** "kv-cache" → "kvCache" */
type Camel<S extends string> = S extends `${infer A}-${infer B}` ? `${A}${Capitalize<Camel<B>>}`
  : S;

type ValueOf<S extends FlagSpec> = S extends BooleanFlag ? boolean
  : S extends StringFlag ? (S extends { required: true } | { default: string } ? string
      : string | undefined)
  : S extends { required: true } | { default: number } ? number
  : number | undefined;

/** The parsed arguments: one camelCase key per flag, plus `help`. */
export type ParsedArgs<F extends Record<string, FlagSpec>> =
  & { -readonly [K in keyof F & string as Camel<K>]: ValueOf<F[K]> }
  & { help: boolean };

/** A bad command line; the message says which argument and why. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Identity with inference: keeps literal types (required: true, ...) for ParsedArgs. */
export function defineCli<const F extends Record<string, FlagSpec>>(spec: CliSpec<F>): CliSpec<F> {
  return spec;
}

export function camel(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The usage text: synopsis, summary, one line per flag with its default. */
export function usage(spec: CliSpec<Record<string, FlagSpec>>): string {
  const entries = Object.entries(spec.flags);
  const form = (name: string, f: FlagSpec) =>
    f.type === "boolean"
      ? `--${name}`
      : `--${name} ${f.metavar ?? (f.type === "number" ? "N" : "VALUE")}`;
  const synopsis = entries.map(([n, f]) =>
    f.type !== "boolean" && f.required ? form(n, f) : `[${form(n, f)}]`
  );
  const width = Math.max(6, ...entries.map(([n, f]) => form(n, f).length));
  const lines = entries.map(([n, f]) => {
    let extra = "";
    if (f.type === "string" && f.choices) extra += ` (one of ${f.choices.join(", ")})`;
    if (f.type !== "boolean" && f.default !== undefined) extra += ` (default ${f.default})`;
    if (f.type !== "boolean" && f.required) extra += " (required)";
    if (f.type === "string" && f.repeatable) extra += " (repeatable)";
    return `  ${form(n, f).padEnd(width)}  ${f.help}${extra}`;
  });
  return [
    `usage: ${[spec.command, ...synopsis].join(" ")}`,
    "",
    spec.summary,
    "",
    ...lines,
    `  ${"--help".padEnd(width)}  print this text and exit`,
  ].join("\n");
}

function parseValue(name: string, f: StringFlag | NumberFlag, raw: string): string | number {
  if (f.type === "string") {
    if (f.choices && !f.choices.includes(raw)) {
      throw new UsageError(`--${name} ${raw}: expected one of ${f.choices.join(", ")}`);
    }
    return raw;
  }
  const v = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(v)) {
    throw new UsageError(`--${name} ${raw}: not a number`);
  }
  if (f.integer && !Number.isSafeInteger(v)) {
    throw new UsageError(`--${name} ${raw}: expected an integer`);
  }
  if (f.min !== undefined && v < f.min) {
    throw new UsageError(`--${name} ${raw}: must be at least ${f.min}`);
  }
  return v;
}

/** Parses `argv` against `spec`. Throws UsageError on anything unknown, missing or malformed. */
export function parseArgs<F extends Record<string, FlagSpec>>(
  spec: CliSpec<F>,
  argv: readonly string[],
): ParsedArgs<F> {
  const out: Record<string, unknown> = { help: false };
  const seen = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") {
      out.help = true;
      continue;
    }
    if (!arg.startsWith("--") || arg === "--") {
      throw new UsageError(`unexpected argument "${arg}" (every argument is a --flag)`);
    }
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const f = Object.hasOwn(spec.flags, name) ? spec.flags[name] : undefined;
    if (f === undefined) throw new UsageError(`unknown flag --${name}`);
    const again = seen.has(name);
    if (again && !(f.type === "string" && f.repeatable)) {
      throw new UsageError(`--${name} given twice`);
    }
    seen.add(name);
    if (f.type === "boolean") {
      if (eq >= 0) throw new UsageError(`--${name} is a switch and takes no value`);
      out[camel(name)] = true;
      continue;
    }
    // "--out --force" is a forgotten value, not a directory named "--force"
    const raw: string | undefined = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (raw === undefined || (eq < 0 && raw.startsWith("--"))) {
      throw new UsageError(`--${name} needs a value`);
    }
    const value = parseValue(name, f, raw);
    out[camel(name)] = again && f.type === "string" && f.repeatable
      ? `${out[camel(name)]}${f.repeatable.joinWith}${value}`
      : value;
  }
  if (out.help) return out as ParsedArgs<F>;
  for (const [name, f] of Object.entries(spec.flags)) {
    const key = camel(name);
    if (key in out) continue;
    if (f.type === "boolean") out[key] = false;
    else if (f.default !== undefined) out[key] = f.default;
    else if (f.required) throw new UsageError(`--${name} is required`);
  }
  return out as ParsedArgs<F>;
}

/**
 * parseArgs for a command's entry point: `--help` prints usage and exits 0; a UsageError
 * prints the problem and the usage to stderr and exits 2. `parse` may check more than the flags'
 * specs do (e.g. a list's names) by throwing UsageError.
 */
export function parseArgsOrExit<
  F extends Record<string, FlagSpec>,
  R extends { help: boolean } = ParsedArgs<F>,
>(
  spec: CliSpec<F>,
  argv: readonly string[] = Deno.args,
  parse: (argv: readonly string[]) => R = (a) => parseArgs(spec, a) as unknown as R,
): R {
  let args: R;
  try {
    args = parse(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`error: ${e.message}\n\n${usage(spec)}`);
    Deno.exit(2);
  }
  if (args.help) {
    console.log(usage(spec));
    Deno.exit(0);
  }
  return args;
}

/**
 * Exit codes, the same for every command:
 *
 * | code | meaning |
 * |---|---|
 * | 0 | done |
 * | 1 | a failure while running (no GPU adapter, device lost, disk full: DiskFullError, a bug) |
 * | 2 | bad input: a bad argument, config, model folder, checkpoint, data file or a file that is not there; a run directory another process has open; an output path that cannot be written (NotWritableError: permission denied, read-only) |
 * | 130, 143 | `train` stopped by SIGINT (Ctrl-C) / SIGTERM after writing its checkpoint (128 + the signal's number) |
 */
export const EXIT_CODES = { ok: 0, failure: 1, badInput: 2 } as const;

/** Error names (they survive workers and comlink) that mean the input was bad: exit code 2. */
export const BAD_INPUT_ERRORS: ReadonlySet<string> = new Set([
  "UsageError",
  "ConfigError",
  "RunDirLockedError",
  "CheckpointNotFoundError",
  "CheckpointCorruptError",
  "CheckpointMismatchError",
  "PeftFormatError",
  "SftConfigError",
  "SftDataError",
  "TrainConfigError",
  "UnsupportedModelError",
  "InvalidConfigError",
  "UnexpectedTensorError",
  "TokenizerError",
  "SamplingParamsError",
  "ReadError",
  "SafetensorsError",
  "SafetensorsTruncatedError",
  "SafetensorsHeaderLengthError",
  "SafetensorsHeaderError",
  "UnknownEnvError",
  "NoSoloVariantError",
  "DifficultyError",
  "MathDatasetError",
  "CodeDatasetError",
  "DemoOptionsError",
  "FolderNotEmptyError",
  "NotWritableError",
  "SandboxArgumentError",
  "NotFound",
]);

/** The exit code of a command that threw `e`: 2 for bad input, 1 for anything else. */
export function exitCodeFor(e: unknown): number {
  const name = (e as Error)?.name;
  return typeof name === "string" && BAD_INPUT_ERRORS.has(name)
    ? EXIT_CODES.badInput
    : EXIT_CODES.failure;
}

/**
 * Runs a command's body, turning a thrown error into a one-line message on stderr and the exit
 * code of EXIT_CODES (stack traces only with DEBUG=1), so users see what to do, not where it
 * failed. A body may return its exit code (e.g. 130 after a Ctrl-C); otherwise it is 0.
 */
export async function runMain(body: () => Promise<void | number>): Promise<never> {
  let code: void | number;
  try {
    code = await body();
  } catch (e) {
    const err = e as Error;
    console.error(`error: ${err.name ?? "Error"}: ${err.message ?? String(e)}`);
    if (Deno.env.get("DEBUG") === "1") console.error(err.stack);
    Deno.exit(exitCodeFor(e));
  }
  Deno.exit(code ?? 0);
}
