// Evaluation on held-out tasks: one episode per task with the current policies (greedy, or a
// set temperature), reporting success rate, average turns and reward per agent.

import type { AnyEnvDefinition, CodeExecutor, PromptStyle } from "../envs/types.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { RunConfig } from "./config.ts";
import { evalTemperature } from "./config.ts";
import { evalGeneration, promptStyleFor } from "./generation.ts";
import type { PolicySet } from "./policies.ts";
import { type Episode, rolloutTree } from "./rollout.ts";

export interface EvalResult {
  episodes: number;
  successRate: number;
  avgTurns: number;
  rewardByAgent: Record<string, number>;
  temperature: number;
  /** Which split the tasks came from (held-out: test). */
  split: "train" | "test";
  /** 1 where episode i succeeded, in task order: the same tasks at every evaluation, so two results pair up. */
  successes: number[];
  /** Prompts cut to rollout.maxPromptTokens (their middle dropped). */
  clippedPrompts: number;
  /** The first few episodes' transcripts, for logs. */
  samples: Episode[];
}

export interface EvalDeps {
  env: AnyEnvDefinition;
  tokenizer: Tokenizer;
  policies: PolicySet;
  executor?: CodeExecutor;
}

/**
 * Tasks numbered from cfg.env.testSeed; the same tasks at every evaluation. The test split is the
 * held-out one; the train split shows whether training improved the tasks it draws from.
 */
export function evalTasks(
  cfg: RunConfig,
  env: AnyEnvDefinition,
  episodes: number,
  split: "train" | "test" = "test",
): unknown[] {
  return Array.from(
    { length: episodes },
    (_, i) => env.generate(cfg.env.testSeed + i, { split, difficulty: cfg.env.difficulty }),
  );
}

export interface EvalOptions {
  episodes?: number;
  temperature?: number;
  style?: PromptStyle;
  /** Default "test" (held-out). */
  split?: "train" | "test";
}

export async function evaluate(
  deps: EvalDeps,
  cfg: RunConfig,
  opts: EvalOptions = {},
): Promise<EvalResult> {
  const episodes = opts.episodes ?? cfg.eval.episodes;
  const temperature = opts.temperature ?? evalTemperature(cfg);
  const split = opts.split ?? "test";
  const tasks = evalTasks(cfg, deps.env, episodes, split);
  const r = await rolloutTree(
    {
      env: deps.env,
      tokenizer: deps.tokenizer,
      policyOf: (a) => deps.policies.agentPolicy(a),
      executor: deps.executor,
    },
    tasks,
    {
      mode: "tree",
      K: 1,
      alpha: cfg.rewards.alpha,
      maxNewTokens: cfg.rollout.maxNewTokens,
      sampling: { temperature, topP: cfg.rollout.sampling.topP, topK: cfg.rollout.sampling.topK },
      generationOf: (agent) => evalGeneration(cfg, agent, temperature),
      style: opts.style ?? promptStyleFor(cfg.rollout.promptStyle, deps.tokenizer),
      seed: cfg.run.seed + 7777,
      step: 0,
      maxPromptTokens: cfg.rollout.maxPromptTokens,
      maxTurns: cfg.rollout.maxTurns,
      // With one candidate the partner's real next step credits the tool (no extra generation),
      // so a tool agent's reward here is α·team + local as in training.
      toolCredit: cfg.rewards.toolCredit,
    },
  );
  const rewardByAgent: Record<string, number> = {};
  for (const e of r.episodes) {
    for (const [a, v] of Object.entries(e.rewardByAgent)) {
      rewardByAgent[a] = (rewardByAgent[a] ?? 0) + v / r.episodes.length;
    }
  }
  return {
    episodes: r.episodes.length,
    successRate: r.episodes.filter((e) => e.success).length / Math.max(1, r.episodes.length),
    avgTurns: r.episodes.reduce((s, e) => s + e.turns, 0) / Math.max(1, r.episodes.length),
    rewardByAgent,
    temperature,
    split,
    successes: r.episodes.map((e) => (e.success ? 1 : 0)),
    clippedPrompts: r.clippedPrompts,
    samples: r.episodes.slice(0, 3),
  };
}
