// The models of a run: one ModelTrainer per trainer of the policy map (a frozen base with one
// LoRA adapter per agent at L2, one shared model at L1, one full model per agent at L3), each
// with a Generator on the same GPU model, so rollouts sample from the weights being trained.

import type { Gpu } from "../gpu/mod.ts";
import { Generator } from "../model/generate.ts";
import type { ModelWeights } from "../model/weights.ts";
import { ModelTrainer } from "../train/trainer.ts";
import { lrSchedule, policyLossConfig, type RunConfig } from "./config.ts";
import { loraConfigFor, type PolicyMap, policyOf } from "./policy_map.ts";
import type { AgentPolicy } from "./rollout.ts";

export interface PolicySet {
  map: PolicyMap;
  trainers: ModelTrainer[];
  generators: Generator[];
  /** How an agent samples: its trainer's generator and adapter. */
  agentPolicy(agent: string): AgentPolicy;
  destroy(): void;
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

export async function createPolicies(gpu: Gpu, cfg: RunConfig, map: PolicyMap, init: PolicyInit): Promise<PolicySet> {
  // Generation batches every environment's candidates into one call: E·K KV slots.
  const slots = Math.max(cfg.rollout.envsPerStep * cfg.rollout.k, cfg.eval.episodes, 1);
  const trainers: ModelTrainer[] = [];
  for (const [i, plan] of map.trainers.entries()) {
    const weights = Array.isArray(init.weights) ? init.weights[i] : init.weights;
    trainers.push(await ModelTrainer.create(gpu, weights, {
      mode: plan.mode,
      lora: loraConfigFor(cfg, plan),
      loraData: init.loraData?.[i],
      seed: cfg.run.seed + i,
      optimizer: {
        beta1: cfg.update.optimizer.beta1, beta2: cfg.update.optimizer.beta2, eps: cfg.update.optimizer.eps,
        weightDecay: cfg.update.optimizer.weightDecay, maxGradNorm: cfg.update.optimizer.maxGradNorm,
      },
      schedule: lrSchedule(cfg),
      // Old log-probs come from the sampler at the rollout temperature: the loss reads logits/T too.
      loss: { kind: "policy", ...policyLossConfig(cfg), temperature: cfg.rollout.sampling.temperature },
      chunkRows: cfg.update.chunkRows,
      slots,
      maxLen: sampleRows(cfg),
    }));
  }
  const generators = await Promise.all(trainers.map((t) => Generator.create(t.model)));
  return {
    map,
    trainers,
    generators,
    agentPolicy(agent) {
      const p = policyOf(map, agent);
      return { generator: generators[p.trainer], adapter: p.adapter ?? undefined };
    },
    destroy() {
      trainers.forEach((t) => t.destroy());
    },
  };
}
