// `deno task exec-js FILE [--timeout-ms N] [--json]`: runs a JavaScript file in the sandbox
// exactly as the environments run model-written code, and shows what it printed or, with
// --json, the ExecResult as the last stdout line. Exit: 0 ran to the end, 1 failed or timed
// out, 2 bad arguments.

import { defineCli, parseArgsOrExit, runMain, usage } from "./cli_args.ts";
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_MEMORY_MB,
  DEFAULT_TIMEOUT_MS,
  runJs,
} from "../sandbox/mod.ts";

const spec = defineCli({
  command: "npx deno task exec-js FILE",
  summary: "Runs FILE (JavaScript) in the sandbox the environments use: no network, files, " +
    "environment or GPU, a fresh process per run, a hard deadline and an output cap.",
  flags: {
    "timeout-ms": {
      type: "number",
      integer: true,
      min: 1,
      default: DEFAULT_TIMEOUT_MS,
      metavar: "N",
      help: "wall-clock limit for the code, from its first line (start-up not included)",
    },
    "max-output-bytes": {
      type: "number",
      integer: true,
      min: 1,
      default: DEFAULT_MAX_OUTPUT_BYTES,
      metavar: "N",
      help: "printed output beyond this is cut and the run stopped",
    },
    "memory-mb": {
      type: "number",
      integer: true,
      min: 16,
      default: DEFAULT_MEMORY_MB,
      metavar: "N",
      help: "JavaScript heap limit in MiB",
    },
    globals: {
      type: "string",
      metavar: "JSON_FILE",
      help: "a JSON object whose keys become global variables, like a task's grid or start",
    },
    json: {
      type: "boolean",
      help: 'print one JSON line {"ok","stdout","error","timedOut","ms"} instead of the output',
    },
  },
});

/** Exits 2 with the problem and the usage, like cli_args does for flags. */
function usageExit(problem: string): never {
  console.error(`error: ${problem}\n\n${usage(spec)}`);
  Deno.exit(2);
}

/** Separates the one positional FILE from the flags (cli_args takes flags only). */
function splitFile(argv: readonly string[]): { files: string[]; flags: string[] } {
  const files: string[] = [];
  const flags: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("-")) {
      files.push(arg);
      continue;
    }
    flags.push(arg);
    const name = arg.replace(/^--?/, "");
    const f = Object.hasOwn(spec.flags, name)
      ? spec.flags[name as keyof typeof spec.flags]
      : undefined;
    // "--timeout-ms 300": the value travels with its flag even though it is not a --flag.
    if (f && f.type !== "boolean" && i + 1 < argv.length) flags.push(argv[++i]);
  }
  return { files, flags };
}

async function readInputs(file: string, globalsFile: string | undefined) {
  let code: string;
  try {
    code = await Deno.readTextFile(file);
  } catch (e) {
    usageExit(`cannot read FILE ${file}: ${(e as Error).message}`);
  }
  if (globalsFile === undefined) return { code, globals: undefined };
  let globals: unknown;
  try {
    globals = JSON.parse(await Deno.readTextFile(globalsFile));
  } catch (e) {
    usageExit(`--globals ${globalsFile}: not a readable JSON file (${(e as Error).message})`);
  }
  if (globals === null || typeof globals !== "object" || Array.isArray(globals)) {
    usageExit(`--globals ${globalsFile}: expected a JSON object of variables`);
  }
  return { code, globals: globals as Record<string, unknown> };
}

if (import.meta.main) {
  const { files, flags } = splitFile(Deno.args);
  const args = parseArgsOrExit(spec, flags);
  if (files.length !== 1) {
    usageExit(
      files.length === 0 ? "FILE is required" : `one FILE expected, got ${files.join(" ")}`,
    );
  }
  const { code, globals } = await readInputs(files[0], args.globals);
  await runMain(async () => {
    const r = await runJs(code, {
      timeoutMs: args.timeoutMs,
      maxOutputBytes: args.maxOutputBytes,
      memoryMb: args.memoryMb,
      globals,
    });
    if (args.json) {
      console.log(JSON.stringify({ ...r, ms: Math.round(r.ms * 10) / 10 }));
    } else {
      await Deno.stdout.write(new TextEncoder().encode(r.stdout));
      if (r.error) console.error(`error: ${r.error}`);
    }
    if (!r.ok) Deno.exit(1);
  });
}
