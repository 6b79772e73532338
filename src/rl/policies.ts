// The models of a run: one ModelTrainer per trainer of the policy map (a frozen base with one
// LoRA adapter per agent at L2, one shared model at L1, one full model per agent at L3), each
// with a Generator on the same GPU model, so rollouts sample from the weights being trained.
// Agents the config serves from an OpenAI-compatible endpoint (model.endpoint / model.endpoints)
// sample from it instead (an EndpointSampler per URL) and are never trained.

import type { Gpu } from "../gpu/mod.ts";
import { Generator } from "../model/generate.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { ModelWeights } from "../model/weights.ts";
import { ModelTrainer, type TrainMode } from "../train/trainer.ts";
import {
  endpointOf,
  lrSchedule,
  policyLossConfig,
  type RunConfig,
  valueHeadSettings,
} from "./config.ts";
import { EndpointSampler } from "./endpoint.ts";
import { trainerTemperature } from "./generation.ts";
import { loraConfigFor, type PolicyMap, policyOf } from "./policy_map.ts";
import type { AgentPolicy } from "./rollout.ts";

export interface PolicySet {
  map: PolicyMap;
  trainers: ModelTrainer[];
  generators: Generator[];
  /** How an agent samples: its trainer's generator and adapter, or its endpoint. */
  agentPolicy(agent: string): AgentPolicy;
  /** Agents served by an endpoint (frozen: their samples are never trained on). */
  endpointAgents: readonly string[];
  /** The sampler of each endpoint URL. */
  endpoints: ReadonlyMap<string, EndpointSampler>;
  destroy(): void;
}

/** The agents a trainer of `map` trains (its policies' agents). */
export function agentsOf(map: PolicyMap, trainer: number): string[] {
  return map.policies.filter((p) => p.trainer === trainer).flatMap((p) => [...p.agents]);
}

/** Rows a sample may take: prompt + completion. */
export function sampleRows(cfg: RunConfig): number {
  return cfg.rollout.maxPromptTokens + cfg.rollout.maxNewTokens;
}

export interface PolicyInit {
  /** Weights of each trainer (full mode) or the shared base (LoRA mode). */
  weights: ModelWeights | ModelWeights[];
  /** Adapter data per trainer (LoRA mode), e.g. from a checkpoint. */
  loraData?: (Float32Array | undefined)[];
}

/**
 * The policies of `map`. `tokenizer` is needed when the config serves agents from an endpoint
 * (prompt ids → text, reply text → ids).
 */
export async function createPolicies(
  gpu: Gpu,
  cfg: RunConfig,
  map: PolicyMap,
  init: PolicyInit,
  tokenizer?: Tokenizer,
): Promise<PolicySet> {
  const agents = Object.keys(map.byAgent);
  const endpointAgents = agents.filter((a) => endpointOf(cfg, a) !== null);
  const endpoints = new Map<string, EndpointSampler>();
  if (endpointAgents.length && !tokenizer) {
    throw new TypeError("createPolicies: agents served by an endpoint need the tokenizer");
  }
  for (const a of endpointAgents) {
    const url = endpointOf(cfg, a)!;
    if (!endpoints.has(url)) {
      endpoints.set(
        url,
        new EndpointSampler({ url, tokenizer: tokenizer!, prompt: cfg.model.endpointPrompt }),
      );
    }
  }

  // Generation batches every environment's candidates into one call: E·K KV slots.
  const slots = Math.max(cfg.rollout.envsPerStep * cfg.rollout.k, cfg.eval.episodes, 1);
  const trainers: ModelTrainer[] = [];
  for (const [i, plan] of map.trainers.entries()) {
    const weights = Array.isArray(init.weights) ? init.weights[i] : init.weights;
    trainers.push(
      await ModelTrainer.create(gpu, weights, {
        mode: plan.mode,
        lora: loraConfigFor(cfg, plan),
        loraData: init.loraData?.[i],
        seed: cfg.run.seed + i,
        optimizer: {
          beta1: cfg.update.optimizer.beta1,
          beta2: cfg.update.optimizer.beta2,
          eps: cfg.update.optimizer.eps,
          weightDecay: cfg.update.optimizer.weightDecay,
          maxGradNorm: cfg.update.optimizer.maxGradNorm,
        },
        schedule: lrSchedule(cfg),
        // Old log-probs come from the sampler at the rollout temperature: the loss reads logits/T too.
        loss: {
          kind: "policy",
          ...policyLossConfig(cfg),
          temperature: trainerTemperature(cfg, agentsOf(map, i)),
        },
        chunkRows: cfg.update.chunkRows,
        logitRows: cfg.update.logitRows || undefined,
        halfBase: halfBaseFor(cfg, plan.mode, gpu.adapterClass, weights),
        valueHead: valueHeadSettings(cfg),
        slots,
        maxLen: sampleRows(cfg),
      }),
    );
  }
  const generators = await Promise.all(trainers.map((t) => Generator.create(t.model)));
  return {
    map,
    trainers,
    generators,
    endpointAgents,
    endpoints,
    agentPolicy(agent) {
      const url = endpointOf(cfg, agent);
      if (url !== null) return { generator: endpoints.get(url)! };
      const p = policyOf(map, agent);
      return { generator: generators[p.trainer], adapter: p.adapter ?? undefined };
    },
    destroy() {
      trainers.forEach((t) => t.destroy());
    },
  };
}

/** Whether a trainer's frozen base is stored as half floats (update.halfBase). */
export function halfBaseFor(
  cfg: RunConfig,
  mode: TrainMode,
  adapterClass: string,
  weights: ModelWeights,
): boolean {
  const h = cfg.update.halfBase;
  if (h === "off" || mode !== "lora") return false;
  if (h === "on") return true;
  return adapterClass === "gpu" && weights.config.modelType !== "gpt2";
}
