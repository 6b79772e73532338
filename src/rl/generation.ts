// How each agent generates, in training rollouts and in validation: temperature, top-p, top-k,
// stop strings and the token budget, resolved from the config's run-wide fields and its per-agent
// overrides (rollout.agents, eval.agents), and the prompt style a tokenizer gets.
//
// One constraint shapes the rules: the policy loss reads logits/T at one temperature per trainer
// (the sampler's old log-probs are of that distribution), so agents that share a trainer (L1, L2)
// must sample their training rollouts at the same temperature. Top-p, top-k and stop strings do
// not enter the log-probs (they are of the full softmax), so they are free per agent.

import type { PromptStyle } from "../envs/types.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { RunConfig } from "./config.ts";
import type { SamplingSettings } from "./rollout.ts";

/** The fields an agent may override. */
export const AGENT_GENERATION_KEYS = [
  "temperature",
  "topP",
  "topK",
  "maxNewTokens",
  "stop",
] as const;

/** One agent's overrides, as written in the config. */
export interface AgentGenerationOverride {
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly maxNewTokens?: number;
  readonly stop?: readonly string[];
}

/** An agent's resolved generation settings. */
export interface AgentGeneration {
  readonly sampling: SamplingSettings;
  readonly maxNewTokens: number;
  readonly stop: readonly string[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** What is wrong with one agent's override object, or null (the config's type check). */
export function agentOverrideProblem(o: unknown): string | null {
  if (!isObject(o)) {
    return `must be an object such as {"temperature": 0.7}, got ${JSON.stringify(o)}`;
  }
  for (const [k, v] of Object.entries(o)) {
    if (!(AGENT_GENERATION_KEYS as readonly string[]).includes(k)) {
      return `unknown key "${k}"; use ${AGENT_GENERATION_KEYS.join(", ")}`;
    }
    const num = typeof v === "number" && Number.isFinite(v);
    if (k === "temperature" && !(num && (v as number) >= 0)) {
      return `temperature must be a number ≥ 0, got ${JSON.stringify(v)}`;
    }
    if (k === "topP" && !(num && (v as number) > 0 && (v as number) <= 1)) {
      return `topP must be in (0, 1], got ${JSON.stringify(v)}`;
    }
    if (k === "topK" && !(num && Number.isInteger(v) && (v as number) >= 0)) {
      return `topK must be a whole number ≥ 0 (0 = off), got ${JSON.stringify(v)}`;
    }
    if (k === "maxNewTokens" && !(num && Number.isInteger(v) && (v as number) >= 1)) {
      return `maxNewTokens must be a whole number ≥ 1, got ${JSON.stringify(v)}`;
    }
    if (k === "stop" && !(Array.isArray(v) && v.every((s) => typeof s === "string" && s !== ""))) {
      return `stop must be a list of non-empty strings, got ${JSON.stringify(v)}`;
    }
  }
  return null;
}

function merge(base: AgentGeneration, o: AgentGenerationOverride | undefined): AgentGeneration {
  if (!o) return base;
  return {
    sampling: {
      ...base.sampling,
      ...(o.temperature !== undefined && { temperature: o.temperature }),
      ...(o.topP !== undefined && { topP: o.topP }),
      ...(o.topK !== undefined && { topK: o.topK }),
    },
    maxNewTokens: o.maxNewTokens ?? base.maxNewTokens,
    stop: o.stop ?? base.stop,
  };
}

/** An agent's settings in training rollouts: rollout.sampling and maxNewTokens, then rollout.agents[agent]. */
export function trainGeneration(c: RunConfig, agent: string): AgentGeneration {
  const { temperature, topP, topK, repetitionPenalty, stop } = c.rollout.sampling;
  return merge({
    sampling: { temperature, topP, topK, repetitionPenalty },
    maxNewTokens: c.rollout.maxNewTokens,
    stop,
  }, c.rollout.agents[agent]);
}

/**
 * An agent's settings in validation: `temperature` (the caller's, else the config's eval
 * temperature), eval.topP/topK/maxNewTokens/stop (null: the rollout's), then eval.agents[agent].
 */
export function evalGeneration(c: RunConfig, agent: string, temperature: number): AgentGeneration {
  const base: AgentGeneration = {
    sampling: {
      temperature,
      topP: c.eval.topP ?? c.rollout.sampling.topP,
      topK: c.eval.topK ?? c.rollout.sampling.topK,
    },
    maxNewTokens: c.eval.maxNewTokens ?? c.rollout.maxNewTokens,
    stop: c.eval.stop ?? c.rollout.sampling.stop,
  };
  return merge(base, c.eval.agents[agent]);
}

/** Problems with the per-agent sections once the env's agents are known: unknown agents, budgets, shared temperatures. */
export function agentGenerationIssues(
  c: RunConfig,
  agents: readonly string[],
): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const section of ["rollout", "eval"] as const) {
    for (const [a, o] of Object.entries(c[section].agents)) {
      const path = `${section}.agents.${a}`;
      if (!agents.includes(a)) {
        out.push({
          path,
          message: `${c.env.id} has no agent "${a}"; agents: ${agents.join(", ")}`,
        });
      } else if (o.maxNewTokens !== undefined && o.maxNewTokens > c.rollout.maxNewTokens) {
        out.push({
          path: `${path}.maxNewTokens`,
          message:
            `${o.maxNewTokens} > rollout.maxNewTokens (${c.rollout.maxNewTokens}), which sizes the KV cache and each training sample; raise rollout.maxNewTokens`,
        });
      }
    }
  }
  const shared = c.level === "L1" || c.level === "L2";
  for (const [a, o] of Object.entries(c.rollout.agents)) {
    if (shared && o.temperature !== undefined && o.temperature !== c.rollout.sampling.temperature) {
      out.push({
        path: `rollout.agents.${a}.temperature`,
        message:
          `${o.temperature} ≠ rollout.sampling.temperature (${c.rollout.sampling.temperature}): at ${c.level} the agents share one trainer, whose ` +
          `loss reads logits at one temperature; set it in rollout.sampling.temperature, or use level L3 (a model per agent)`,
      });
    }
    if (o.temperature === 0) {
      out.push({
        path: `rollout.agents.${a}.temperature`,
        message:
          "0 (greedy) makes the K candidates identical, so every group has zero variance; use > 0",
      });
    }
  }
  return out;
}

/** The loss temperature of a trainer: the training temperature of its agents (one, by agentGenerationIssues). */
export function trainerTemperature(c: RunConfig, agents: readonly string[]): number {
  return agents.length
    ? trainGeneration(c, agents[0]).sampling.temperature
    : c.rollout.sampling.temperature;
}

/** The style prompts are rendered in: "auto" is chat for an HF tokenizer with a chat template, else compact. */
export function promptStyleFor(
  style: "auto" | PromptStyle,
  tokenizer: Pick<Tokenizer, "kind" | "hasChatTemplate">,
): PromptStyle {
  if (style !== "auto") return style;
  return tokenizer.kind === "hf" && tokenizer.hasChatTemplate ? "chat" : "compact";
}
