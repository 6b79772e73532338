// Conversion between the GPU's flat LoRA layout (src/model/lora.ts) and PEFT adapters
// (src/train/peft.ts), for checkpoints that PEFT and vLLM load.

import type { ModelConfig } from "../model/config.ts";
import { type LoraLayout, type LoraModule, peftModuleName } from "../model/lora_layout.ts";
import type { LoraAdapter, LoraTarget } from "./peft.ts";
import { CheckpointMismatchError } from "./errors.ts";

/** Adapter `a` of the flat data as a PEFT adapter (copies). */
export function toPeftAdapter(
  layout: LoraLayout,
  data: Float32Array,
  a: number,
  baseModel: string,
): LoraAdapter {
  // The modules the layout has (targets the model lacks were skipped), under PEFT's names.
  const name = (m: LoraModule) => peftModuleName(layout.model, m) as LoraTarget;
  const targets = [...new Set(layout.entries.map((e) => name(e.module)))];
  return {
    settings: { r: layout.cfg.rank, alpha: layout.cfg.alpha, targetModules: targets, baseModel },
    modules: layout.entries.map((e) => {
      const { A, B } = layout.slices(data, e, a);
      return { layer: e.layer, module: name(e.module), a: A.slice(), b: B.slice() };
    }),
  };
}

/** Writes a PEFT adapter into slot `a` of the flat data; rank, alpha and modules must match. */
export function fromPeftAdapter(
  layout: LoraLayout,
  data: Float32Array,
  a: number,
  adapter: LoraAdapter,
  base: ModelConfig,
) {
  const s = adapter.settings;
  if (s.r !== layout.cfg.rank || s.alpha !== layout.cfg.alpha) {
    throw new CheckpointMismatchError(
      "adapter",
      `has r=${s.r}, alpha=${s.alpha}; the run uses r=${layout.cfg.rank}, alpha=${layout.cfg.alpha}`,
    );
  }
  const byKey = new Map(adapter.modules.map((m) => [`${m.layer}:${m.module}`, m]));
  for (const e of layout.entries) {
    const m = byKey.get(`${e.layer}:${peftModuleName(base, e.module as LoraModule)}`);
    if (!m) {
      throw new CheckpointMismatchError(
        "adapter",
        `lacks layer ${e.layer} ${e.module} (model ${base.modelType})`,
      );
    }
    const { A, B } = layout.slices(data, e, a);
    A.set(m.a);
    B.set(m.b);
  }
}
