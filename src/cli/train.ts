// `deno task train --config FILE [--set a.b=c ...]` / `deno task train --resume RUN_DIR [--set ...]`:
// an AT-GRPO run (rollouts, group advantages, PPO-clip updates per policy) with a run directory,
// validation, checkpoints, Ctrl-C / SIGTERM / SIGUSR2 checkpointing and exact resume; metrics
// also as TensorBoard scalars and, with --set logging.wandb.project=NAME, to W&B (docs/logging.md).

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { ConfigError, loadConfigFile, type RunConfig } from "../rl/config.ts";
import {
  configDifferences,
  formatDifferences,
  resumeConfig,
  SIGNAL_EXIT,
  train,
  type TrainSummary,
} from "../rl/train.ts";

export const TRAIN_CLI = defineCli({
  command: "npx deno task train",
  summary: "Train a team of agents with AT-GRPO on an environment (see configs/*.json). " +
    "Ctrl-C or SIGTERM: finish the step, checkpoint, exit 130/143 (twice: stop at once); SIGUSR2 (or SIGUSR1): checkpoint after this step. " +
    "Metrics go to metrics.jsonl and TensorBoard (events.out.tfevents.* in the run directory); " +
    "--set logging.wandb.project=NAME (with WANDB_API_KEY) also sends them to Weights & Biases (docs/logging.md).",
  flags: {
    config: {
      type: "string",
      metavar: "FILE",
      help:
        "run config JSON (configs/quickstart.json, configs/plan_path_L2_lora.json, ...); required unless --resume",
    },
    set: {
      type: "string",
      metavar: "a.b=c[,x.y=z]",
      repeatable: { joinWith: "," },
      help:
        "override config fields, e.g. run.steps=5,rollout.k=2; with --resume, on top of the run's config (run length, saving, evaluation only)",
    },
    resume: {
      type: "string",
      metavar: "RUN_DIR",
      help: "continue this run from its latest checkpoint, with the config it was started with",
    },
  },
});

/** `--set a=1,b.c=x` (commas split overrides; JSON arrays keep theirs). An empty override is a UsageError. */
export function splitSets(s: string | undefined): string[] {
  if (s === undefined) return [];
  const parts = s.split(/,(?=[A-Za-z_][\w.]*=)/).map((x) => x.trim());
  if (parts.some((p) => !p)) {
    throw new UsageError(
      `--set "${s}": an empty override; give path=value, e.g. --set run.steps=5`,
    );
  }
  return parts;
}

/** The before/after table printed at the end of a run. */
export function resultTable(s: TrainSummary): string {
  const pct = (x: number | undefined) => (x === undefined ? "n/a" : `${(x * 100).toFixed(1)}%`);
  const num = (x: number | undefined) => (x === undefined ? "n/a" : x.toFixed(2));
  const agents = [
    ...new Set([
      ...Object.keys(s.before?.rewardByAgent ?? {}),
      ...Object.keys(s.after?.rewardByAgent ?? {}),
    ]),
  ];
  const rows: [string, string, string][] = [
    ["held-out success", pct(s.before?.successRate), pct(s.after?.successRate)],
    ["average turns", num(s.before?.avgTurns), num(s.after?.avgTurns)],
    ...agents.map((
      a,
    ): [string, string, string] => [
      `reward: ${a}`,
      num(s.before?.rewardByAgent[a]),
      num(s.after?.rewardByAgent[a]),
    ]),
  ];
  const w = Math.max(...rows.map((r) => r[0].length));
  const lines = [
    `${"".padEnd(w)}  before    after`,
    ...rows.map(([k, b, a]) => `${k.padEnd(w)}  ${b.padStart(6)}  ${a.padStart(7)}`),
  ];
  if (s.best) {
    lines.push(
      `best held-out success ${
        pct(s.best.successRate)
      } at step ${s.best.step} (checkpoint in best/)`,
    );
  }
  return lines.join("\n");
}

/** The config a command line asks for: --config FILE (+ --set), or with --resume the run's own (+ --set). */
export async function trainConfig(
  args: { config?: string; set?: string; resume?: string },
): Promise<RunConfig> {
  const sets = splitSets(args.set);
  try {
    if (!args.resume) {
      if (!args.config) {
        throw new UsageError("--config is required (or --resume RUN_DIR to continue a run)");
      }
      return await loadConfigFile(args.config, sets);
    }
    const cfg = await resumeConfig(args.resume, sets);
    if (args.config) {
      // The file the run was started from may have had --set overrides since: it must agree with
      // the run's config, or the resume would change the run silently.
      const diffs = configDifferences(cfg, await loadConfigFile(args.config, sets));
      if (diffs.length) {
        throw new UsageError(
          `--config ${args.config} differs from the config of the run being resumed: ${
            formatDifferences(diffs)
          }. ` +
            `Leave out --config (--resume uses the run's own config) and change run length, saving or evaluation with --set`,
        );
      }
    }
    return cfg;
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
}

if (import.meta.main) {
  // Read first: a parent that dies while the model loads must still be noticed.
  const parent = Deno.build.os === "windows" ? undefined : Deno.ppid;
  const args = parseArgsOrExit(TRAIN_CLI);
  await runMain(async () => {
    const cfg = await trainConfig(args);
    const s = await train(cfg, { resume: args.resume, watchParent: parent });
    console.log("\n" + resultTable(s));
    console.log(`run directory: ${s.runDir}`);
    return s.stoppedBy ? SIGNAL_EXIT[s.stoppedBy] : 0;
  });
}
