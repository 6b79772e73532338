// Specialization levels → policies: which model and LoRA adapter each agent generates with and
// trains, for the paper's L0–L3. The train loop builds one ModelTrainer per entry of `trainers`
// (LoRA adapters in `adapters` order) and routes every sample by `policyOf(map, agent)`; each
// policy trains on the union of its agents' samples.
//
//   L0  one agent does the whole task (single-agent prompts)   1 trainer, 1 policy
//   L1  one shared model, roles told apart by prompt           1 trainer, 1 policy
//   L2  frozen shared base + one LoRA adapter per agent        1 trainer (LoRA), 1 policy per agent
//   L3  one full model per agent                               1 trainer (full) per agent

import type { AgentId } from "../envs/types.ts";
import { envForConfig } from "./env_for.ts";
import type { LoraConfig } from "../model/lora_layout.ts";
import type { TrainMode } from "../train/trainer.ts";
import { ConfigError, type Level, LEVELS, type RunConfig } from "./config.ts";

/** One set of weights the train loop creates a ModelTrainer for. */
export interface TrainerPlan {
  readonly name: string;
  readonly mode: TrainMode;
  /** LoRA adapter names; a sample's adapter id indexes this list. Empty in full mode. */
  readonly adapters: readonly string[];
}

/** What one group of agents generates with and trains: a trainer and, in LoRA mode, an adapter. */
export interface Policy {
  readonly name: string;
  readonly agents: readonly AgentId[];
  /** Index into PolicyMap.trainers. */
  readonly trainer: number;
  /** Adapter id within that trainer (null in full mode: the trainer's own weights). */
  readonly adapter: number | null;
}

export interface PolicyMap {
  readonly level: Level;
  /** L0: the rollout uses single-agent prompts; one agent plays every turn. */
  readonly singleAgent: boolean;
  readonly trainers: readonly TrainerPlan[];
  readonly policies: readonly Policy[];
  /** Agent → index into `policies`. */
  readonly byAgent: Readonly<Record<AgentId, number>>;
}

type Plan = Pick<PolicyMap, "trainers" | "policies">;

/** One policy over every agent, on one trainer (L0's "single", L1's "shared"). */
function onePolicy(name: string, mode: TrainMode, agents: readonly AgentId[]): Plan {
  const lora = mode === "lora";
  return {
    trainers: [{ name, mode, adapters: lora ? [name] : [] }],
    policies: [{ name, agents, trainer: 0, adapter: lora ? 0 : null }],
  };
}

/** The plan per level; the mode checks repeat the config rules for callers that skip parseConfig. */
const PLANS: { readonly [L in Level]: (mode: TrainMode, agents: readonly AgentId[]) => Plan } = {
  L0: (mode, agents) => onePolicy("single", mode, agents),
  L1: (mode, agents) => onePolicy("shared", mode, agents),
  L2: (mode, agents) => {
    if (mode !== "lora") {
      throw ConfigError.at(
        "update.mode",
        `level L2 puts one LoRA adapter per agent on a frozen base; set "lora" (got "${mode}")`,
      );
    }
    return {
      trainers: [{ name: "base", mode, adapters: agents }],
      policies: agents.map((a, i) => ({ name: a, agents: [a], trainer: 0, adapter: i })),
    };
  },
  L3: (mode, agents) => {
    if (mode !== "full") {
      throw ConfigError.at(
        "update.mode",
        `level L3 trains one full model per agent; set "full" (got "${mode}")`,
      );
    }
    return {
      trainers: agents.map((a) => ({ name: a, mode, adapters: [] })),
      policies: agents.map((a, i) => ({ name: a, agents: [a], trainer: i, adapter: null })),
    };
  },
};

/** The policies of `level` for an env's agents (PettingZoo possibleAgents order). */
export function buildPolicyMap(
  level: Level,
  mode: TrainMode,
  agents: readonly AgentId[],
): PolicyMap {
  if (!LEVELS.includes(level)) {
    throw ConfigError.at("level", `"${level}" is not one of ${LEVELS.join(", ")}`);
  }
  if (!agents.length) {
    throw ConfigError.at(
      "env.id",
      "the environment lists no agents; a policy map needs at least one",
    );
  }
  if (new Set(agents).size !== agents.length) {
    throw ConfigError.at(
      "env.id",
      `agent names repeat (${agents.join(", ")}); each agent needs its own name`,
    );
  }
  const plan = PLANS[level](mode, agents);
  const byAgent: Record<AgentId, number> = {};
  plan.policies.forEach((p, i) => p.agents.forEach((a) => (byAgent[a] = i)));
  return { level, singleAgent: level === "L0", ...plan, byAgent };
}

/** The policy map of a validated config (agents from the registry). */
export function policyMapFor(c: RunConfig): PolicyMap {
  return buildPolicyMap(c.level, c.update.mode, envForConfig(c).possibleAgents);
}

/** The policy an agent's samples belong to. */
export function policyOf(map: PolicyMap, agent: AgentId): Policy {
  const i = map.byAgent[agent];
  if (i === undefined) {
    throw new RangeError(
      `agent "${agent}" has no policy; agents: ${Object.keys(map.byAgent).join(", ")}`,
    );
  }
  return map.policies[i];
}

/** TrainerOptions.lora for a trainer of this map (undefined in full mode). */
export function loraConfigFor(c: RunConfig, trainer: TrainerPlan): LoraConfig | undefined {
  if (trainer.mode !== "lora") return undefined;
  const { rank, alpha, targets } = c.update.lora;
  return { rank, alpha, targets, adapters: trainer.adapters };
}
