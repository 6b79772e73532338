// `deno task eval --config FILE [--checkpoint DIR] [--episodes N] [--temperature T] [--split S] [--json]`:
// held-out success rate, average turns and reward per agent of a run's policies (or of the
// untrained base). With --json the last stdout line is the result object, with each task's
// success (`successes`, in task order: two evaluations of the same tasks pair up).

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { splitSets } from "./train.ts";
import { Gpu } from "../gpu/mod.ts";
import { SandboxPool } from "../sandbox/mod.ts";
import { ConfigError, loadConfigFile } from "../rl/config.ts";
import { envForConfig } from "../rl/env_for.ts";
import { evaluate } from "../rl/evaluate.ts";
import { createPolicies } from "../rl/policies.ts";
import { policyMapFor } from "../rl/policy_map.ts";
import { loadCheckpointInto } from "../rl/run_dir.ts";
import { loadBase } from "../rl/train.ts";

export const EVAL_CLI = defineCli({
  command: "npx deno task eval",
  summary: "Evaluate a run's agents on held-out tasks.",
  flags: {
    config: {
      type: "string",
      required: true,
      metavar: "FILE",
      help: "the run's config (its run directory's config.json works)",
    },
    set: {
      type: "string",
      metavar: "a.b=c[,x.y=z]",
      repeatable: { joinWith: "," },
      help: "config overrides",
    },
    checkpoint: {
      type: "string",
      metavar: "DIR",
      help: "checkpoint directory (checkpoints/step-N or best); default: the untrained base",
    },
    episodes: {
      type: "number",
      integer: true,
      min: 1,
      help: "held-out tasks (default eval.episodes)",
    },
    temperature: {
      type: "number",
      min: 0,
      help: "sampling temperature (default: greedy, or 0.6 for code/math)",
    },
    split: {
      type: "string",
      metavar: "S",
      help: "test (held-out, the default) or train: the tasks training draws from",
    },
    json: {
      type: "boolean",
      help: "last stdout line: the result as JSON (successes: 1/0 per task, in order)",
    },
  },
});

if (import.meta.main) {
  const args = parseArgsOrExit(EVAL_CLI);
  await runMain(async () => {
    let cfg;
    try {
      cfg = await loadConfigFile(args.config, splitSets(args.set));
    } catch (e) {
      if (e instanceof ConfigError) throw new UsageError(e.message);
      throw e;
    }
    const split = args.split ?? "test";
    if (split !== "test" && split !== "train") {
      throw new UsageError(`--split must be test or train, not ${JSON.stringify(split)}`);
    }
    const env = envForConfig(cfg);
    const { weights, tokenizer } = await loadBase(cfg);
    const map = policyMapFor(cfg);
    const ck = args.checkpoint
      ? await loadCheckpointInto(args.checkpoint, cfg, map, weights)
      : null;
    const gpu = await Gpu.create();
    const policies = await createPolicies(
      gpu,
      { ...cfg, eval: { ...cfg.eval, episodes: args.episodes ?? cfg.eval.episodes } },
      map,
      ck?.init ?? { weights },
      tokenizer,
    );
    const executor = env.toolAgents.length ? new SandboxPool({ prewarm: true }) : undefined;
    try {
      const r = await evaluate({ env, tokenizer, policies, executor }, cfg, {
        episodes: args.episodes,
        temperature: args.temperature,
        split,
      });
      const result = {
        env: cfg.env.id,
        level: cfg.level,
        checkpoint: args.checkpoint ?? null,
        split,
        episodes: r.episodes,
        successRate: r.successRate,
        avgTurns: r.avgTurns,
        rewardByAgent: r.rewardByAgent,
        temperature: r.temperature,
        successes: r.successes,
      };
      if (args.json) console.log(JSON.stringify(result));
      else {
        console.log(
          `${cfg.env.id} ${cfg.level}: success ${
            (r.successRate * 100).toFixed(1)
          }% over ${r.episodes} ${split === "test" ? "held-out" : "training-split"} tasks, ${
            r.avgTurns.toFixed(2)
          } turns on average`,
        );
        for (const [a, v] of Object.entries(r.rewardByAgent)) {
          console.log(`  ${a}: mean reward ${v.toFixed(3)}`);
        }
      }
    } finally {
      await executor?.close();
      policies.destroy();
      gpu.destroy();
    }
  });
}
