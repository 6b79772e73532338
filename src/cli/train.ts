// `deno task train --config FILE [--set a.b=c ...] [--resume RUN_DIR]`: an AT-GRPO run
// (rollouts, group advantages, PPO-clip updates per policy) with a run directory, validation,
// checkpoints, Ctrl-C / SIGUSR1 checkpointing and exact resume.

import { defineCli, runMain, usage, UsageError } from "./cli_args.ts";
import { ConfigError, loadConfigFile } from "../rl/config.ts";
import { train } from "../rl/train.ts";

export const TRAIN_CLI = defineCli({
  command: "deno task train",
  summary: "Train a team of agents with AT-GRPO on an environment (see configs/*.json).",
  flags: {
    config: { type: "string", required: true, metavar: "FILE", help: "run config JSON (configs/quickstart.json, configs/plan_path_L2_lora.json, ...)" },
    set: { type: "string", metavar: "a.b=c[,x.y=z]", help: "override config fields, e.g. run.steps=5,rollout.k=2" },
    resume: { type: "string", metavar: "RUN_DIR", help: "continue this run from its latest checkpoint" },
  },
});

/** `--set a=1,b.c=x` (commas split overrides; JSON arrays keep theirs). */
export function splitSets(s: string | undefined): string[] {
  if (!s) return [];
  return s.split(/,(?=[A-Za-z_][\w.]*=)/).map((x) => x.trim()).filter(Boolean);
}

if (import.meta.main) {
  const { parseArgs } = await import("./cli_args.ts");
  let args;
  try {
    args = parseArgs(TRAIN_CLI, Deno.args);
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${usage(TRAIN_CLI)}`);
    Deno.exit(2);
  }
  if (args.help) {
    console.log(usage(TRAIN_CLI));
    Deno.exit(0);
  }
  await runMain(async () => {
    let cfg;
    try {
      cfg = await loadConfigFile(args.config, splitSets(args.set));
    } catch (e) {
      if (e instanceof ConfigError) throw new UsageError(e.message);
      throw e;
    }
    const s = await train(cfg, { resume: args.resume });
    const pct = (x: number | undefined) => (x === undefined ? "n/a" : `${(x * 100).toFixed(1)}%`);
    console.log(`\nheld-out success: before ${pct(s.before?.successRate)} → after ${pct(s.after?.successRate)}` +
      (s.best ? ` (best ${pct(s.best.successRate)} at step ${s.best.step})` : ""));
    console.log(`run directory: ${s.runDir}`);
  });
}
