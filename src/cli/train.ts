// `deno task train --config FILE [--set a.b=c ...] [--resume RUN_DIR]`: an AT-GRPO run
// (rollouts, group advantages, PPO-clip updates per policy) with a run directory, validation,
// checkpoints, Ctrl-C / SIGUSR1 checkpointing and exact resume.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { ConfigError, loadConfigFile } from "../rl/config.ts";
import { train, type TrainSummary } from "../rl/train.ts";

export const TRAIN_CLI = defineCli({
  command: "deno task train",
  summary: "Train a team of agents with AT-GRPO on an environment (see configs/*.json).",
  flags: {
    config: { type: "string", required: true, metavar: "FILE", help: "run config JSON (configs/quickstart.json, configs/plan_path_L2_lora.json, ...)" },
    set: { type: "string", metavar: "a.b=c[,x.y=z]", repeatable: { joinWith: "," }, help: "override config fields, e.g. run.steps=5,rollout.k=2" },
    resume: { type: "string", metavar: "RUN_DIR", help: "continue this run from its latest checkpoint" },
  },
});

/** `--set a=1,b.c=x` (commas split overrides; JSON arrays keep theirs). */
export function splitSets(s: string | undefined): string[] {
  if (!s) return [];
  return s.split(/,(?=[A-Za-z_][\w.]*=)/).map((x) => x.trim()).filter(Boolean);
}

/** The before/after table printed at the end of a run. */
export function resultTable(s: TrainSummary): string {
  const pct = (x: number | undefined) => (x === undefined ? "n/a" : `${(x * 100).toFixed(1)}%`);
  const num = (x: number | undefined) => (x === undefined ? "n/a" : x.toFixed(2));
  const agents = [...new Set([...Object.keys(s.before?.rewardByAgent ?? {}), ...Object.keys(s.after?.rewardByAgent ?? {})])];
  const rows: [string, string, string][] = [
    ["held-out success", pct(s.before?.successRate), pct(s.after?.successRate)],
    ["average turns", num(s.before?.avgTurns), num(s.after?.avgTurns)],
    ...agents.map((a): [string, string, string] => [`reward: ${a}`, num(s.before?.rewardByAgent[a]), num(s.after?.rewardByAgent[a])]),
  ];
  const w = Math.max(...rows.map((r) => r[0].length));
  const lines = [`${"".padEnd(w)}  before    after`, ...rows.map(([k, b, a]) => `${k.padEnd(w)}  ${b.padStart(6)}  ${a.padStart(7)}`)];
  if (s.best) lines.push(`best held-out success ${pct(s.best.successRate)} at step ${s.best.step} (checkpoint in best/)`);
  return lines.join("\n");
}

if (import.meta.main) {
  const args = parseArgsOrExit(TRAIN_CLI);
  await runMain(async () => {
    let cfg;
    try {
      cfg = await loadConfigFile(args.config, splitSets(args.set));
    } catch (e) {
      if (e instanceof ConfigError) throw new UsageError(e.message);
      throw e;
    }
    const s = await train(cfg, { resume: args.resume });
    console.log("\n" + resultTable(s));
    console.log(`run directory: ${s.runDir}`);
  });
}
