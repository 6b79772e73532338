// `deno task sft`: supervised fine-tuning from a JSON config (configs/sft/README.md lists every
// field) on JSONL demonstrations, into runs/sft/<name>/<timestamp>/; `--resume RUN_DIR` continues
// a run exactly where its last checkpoint left it. Ctrl-C checkpoints after the current step and
// stops (twice: abort at once); SIGUSR1 or SIGUSR2 checkpoints and goes on (Deno ≥ 2.9.2 also
// opens its inspector on 127.0.0.1:9229 on SIGUSR1, so SIGUSR2 is the quiet one). Progress is one
// line rewritten in place on a terminal and plain lines otherwise (logs, CI).

import { defineCli, parseArgsOrExit, runMain, usage, UsageError } from "./cli_args.ts";
import { joinPath } from "../io/deno_files.ts";
import { runSft, type SftControl, type SftProgress } from "../train/sft.ts";
import { applySets, loadSftConfig } from "../train/sft_config.ts";

export const SFT_CLI = defineCli({
  command: "npx deno task sft",
  summary:
    "Supervised fine-tuning (LoRA or full) on prompt/completion or chat JSONL, with checkpoints and exact resume.",
  flags: {
    config: {
      type: "string",
      metavar: "FILE",
      help: "run config, e.g. configs/sft/plan_path_tiny.json",
    },
    set: {
      type: "string",
      metavar: "PATH=VALUE",
      help: "override a config field, e.g. --set run.steps=20 (repeatable)",
    },
    resume: {
      type: "string",
      metavar: "RUN_DIR",
      help: "continue this run folder from its latest checkpoint (uses its config.json)",
    },
  },
});

/** Pulls every `--set X` / `--set=X` out of argv (the shared parser allows a flag once). */
export function splitSets(argv: readonly string[]): { sets: string[]; rest: string[] } {
  const sets: string[] = [], rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--set=")) sets.push(a.slice(6));
    else if (a === "--set") {
      const v = argv[++i];
      if (v === undefined || v.startsWith("--")) {
        throw new UsageError("--set needs a value: --set path=value");
      }
      sets.push(v);
    } else rest.push(a);
  }
  for (const s of sets) {
    if (s.indexOf("=") <= 0) {
      throw new UsageError(`--set ${s}: expected path=value, e.g. --set update.optimizer.lr=1e-3`);
    }
  }
  return { sets, rest };
}

const fmtTime = (
  s: number,
) => (s >= 3600
  ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`
  : s >= 60
  ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, "0")}s`
  : `${s.toFixed(0)}s`);

/** Progress on stdout (one rewritten line on a terminal) and log lines on stderr, kept apart. */
function makeDisplay() {
  const tty = Deno.stdout.isTerminal();
  const enc = new TextEncoder();
  let current = "", firstStep: number | null = null;
  const write = (s: string) => Deno.stdout.writeSync(enc.encode(s));
  return {
    progress(p: SftProgress) {
      firstStep ??= p.step - 1;
      const done = p.step - firstStep, eta = (p.elapsedS / done) * (p.totalSteps - p.step);
      current =
        `step ${p.step}/${p.totalSteps} loss ${p.loss.toFixed(4)} lr ${p.lr.toExponential(2)} ` +
        `${p.tokensPerS.toFixed(0)} tok/s epoch ${p.epoch.toFixed(2)}` +
        (p.evalLoss !== undefined ? ` eval ${p.evalLoss.toFixed(4)}` : "") + ` eta ${fmtTime(eta)}`;
      if (tty) write(`\r\x1b[K${current}${p.step === p.totalSteps ? "\n" : ""}`);
      else console.log(current);
      if (p.step === p.totalSteps) current = "";
    },
    log(line: string) {
      if (tty && current) write("\r\x1b[K");
      console.error(line);
      if (tty && current) write(current);
    },
  };
}

if (import.meta.main) {
  let sets: string[] = [], rest: string[] = [];
  try {
    ({ sets, rest } = splitSets(Deno.args));
    // An unknown --set path or a non-number for a number field is a bad argument (exit 2);
    // checking the overrides on an empty config finds those before any file is read.
    applySets({}, sets);
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${usage(SFT_CLI)}`);
    Deno.exit(2);
  }
  const args = parseArgsOrExit(SFT_CLI, rest);
  if ((args.config === undefined) === (args.resume === undefined)) {
    console.error(
      `error: give --config FILE to start a run, or --resume RUN_DIR to continue one (not both)\n\n${
        usage(SFT_CLI)
      }`,
    );
    Deno.exit(2);
  }
  await runMain(async () => {
    const config = await loadSftConfig(
      args.resume !== undefined ? joinPath(args.resume, "config.json") : args.config!,
      sets,
    );
    const display = makeDisplay();
    const control: SftControl = { stop: false, checkpoint: false };
    const onInt = () => {
      if (control.stop) Deno.exit(130);
      control.stop = true;
      display.log("stopping after this step with a checkpoint (Ctrl-C again to abort at once)");
    };
    const onUsr = () => {
      control.checkpoint = true;
      display.log("checkpoint requested: after this step");
    };
    Deno.addSignalListener("SIGINT", onInt);
    // SIGUSR1/2 do not exist on Windows; there Ctrl-C is the only way to ask for a checkpoint.
    const usr = Deno.build.os !== "windows" ? (["SIGUSR1", "SIGUSR2"] as const) : [];
    for (const sig of usr) Deno.addSignalListener(sig, onUsr);
    try {
      if (args.resume !== undefined && sets.length) {
        display.log(`overrides on resume (exactness is yours to judge): ${sets.join(" ")}`);
      }
      await runSft({
        config,
        resumeDir: args.resume,
        control,
        onProgress: display.progress,
        log: display.log,
      });
    } finally {
      Deno.removeSignalListener("SIGINT", onInt);
      for (const sig of usr) Deno.removeSignalListener(sig, onUsr);
    }
  });
}
