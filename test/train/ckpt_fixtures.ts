// Deterministic checkpoint contents for the checkpoint tests and the crash-writer child process:
// a tiny Qwen2 (biases, GQA, untied head) with a LoRA adapter, a full model, optimizer moments
// and RNG state, all derived from one seed so a reader can rebuild what it expects.

import { seededValues } from "../../src/ops/reference.ts";
import { type ModelConfig, parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import type { OptimizerState } from "../../src/train/adamw.ts";
import type { CheckpointContents } from "../../src/train/checkpoint.ts";
import {
  type LoraAdapter,
  loraModuleDims,
  type LoraSettings,
  loraSlots,
} from "../../src/train/peft.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";

export async function preset(name: string): Promise<ModelConfig> {
  const url = new URL(`../../configs/models/${name}.json`, import.meta.url);
  return parseModelConfig(JSON.parse(await Deno.readTextFile(url)));
}

export function randomAdapter(cfg: ModelConfig, settings: LoraSettings, seed: number): LoraAdapter {
  const modules = loraSlots(cfg, settings).map(({ layer, module }, i) => {
    const d = loraModuleDims(cfg, module);
    return {
      layer,
      module,
      a: seededValues(settings.r * d.in, seed * 1000 + 2 * i),
      b: seededValues(d.out * settings.r, seed * 1000 + 2 * i + 1),
    };
  });
  return { settings, modules };
}

export const LORA: LoraSettings = {
  r: 4,
  alpha: 8,
  targetModules: ["q_proj", "v_proj", "o_proj", "down_proj"],
  baseModel: "tests/tiny-qwen2",
};

export function randomOptimizer(sizes: number[], seed: number, step: number): OptimizerState {
  return {
    step,
    hyper: { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 },
    moments: sizes.map((n, i) => ({
      m: seededValues(n, seed + 2 * i, -1e-3, 1e-3),
      v: seededValues(n, seed + 2 * i + 1, 0, 1e-6),
    })),
  };
}

export const TOKENIZER = new Map([
  ["tokenizer.json", new TextEncoder().encode('{"version":"1.0","model":{"type":"BPE"}}')],
  ["tokenizer_config.json", new TextEncoder().encode('{"model_max_length":1024}')],
]);

/** A checkpoint with every kind of part. */
export async function contents(seed: number): Promise<CheckpointContents> {
  const cfg = await preset("tiny-qwen2");
  return {
    state: {
      step: seed,
      rng: { sampler: [seed, 0xdeadbeef, 7], envs: { seed: 42 + seed, cursor: 3 } },
      extra: { best: 0.25 * seed },
    },
    adapters: { planner: { adapter: randomAdapter(cfg, LORA, seed), base: cfg } },
    models: { tool: { weights: initModel(cfg, { seed }), tokenizerFrom: memoryFolder(TOKENIZER) } },
    optimizers: { planner: randomOptimizer([1000, 37], seed, seed) },
  };
}
