// The tiny presets and batches shared by tests that compare two placements or storages of one
// model (split_tensors_test.ts, half_base_test.ts): the same weights, rows and trainer settings.

import { parseModelConfig } from "../../src/model/config.ts";
import { isBaseMatrix, type ModelRow } from "../../src/model/gpu_model_options.ts";
import { initModel } from "../../src/model/init.ts";
import { type ModelWeights, slice } from "../../src/model/weights.ts";
import { roundToHalf } from "../../src/ops/matmul_half.ts";
import type { TrainerOptions } from "../../src/train/trainer.ts";

/** Ids in every chunk of a [264, 64] embedding split at 68 rows, on both sides of each boundary. */
export const TINY_SEQS = [
  [257, 67, 68, 72, 101, 108, 135, 136, 33, 10, 200, 203, 204, 263, 3],
  [257, 40, 33, 200, 40, 68, 204, 0, 99],
];

/** configs/models/NAME.json, ":untied" / ":tied" overriding tie_word_embeddings; seeded init. */
export async function tinyPreset(name: string): Promise<ModelWeights> {
  const [base, variant] = name.split(":");
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${base}.json`, import.meta.url)),
  );
  if (variant === "untied") json.tie_word_embeddings = false;
  if (variant === "tied") json.tie_word_embeddings = true;
  return initModel(parseModelConfig(json), { seed: 5, std: 0.25, biasStd: 0.2, normNoise: 0.3 });
}

/** The sequences interleaved as rows (slot = sequence). */
export function rowsOf(seqs: number[][]): ModelRow[] {
  const rows: ModelRow[] = [];
  for (let p = 0; p < Math.max(...seqs.map((s) => s.length)); p++) {
    seqs.forEach((s, slot) => p < s.length && rows.push({ token: s[p], slot, pos: p }));
  }
  return rows;
}

/** A cross-entropy trainer over TINY_SEQS: LoRA r 4 on every projection, or full. */
export const tinyTrainerOpts = (mode: "full" | "lora"): TrainerOptions => ({
  mode,
  lora: {
    rank: 4,
    alpha: 8,
    targets: ["q", "k", "v", "o", "gate", "up", "down"],
    adapters: ["a0"],
  },
  // A large ε keeps Adam's first step (≈ lr·g/(|g|+ε)) smooth in g, so rounding-level gradient
  // differences stay rounding-level in the parameters.
  optimizer: { weightDecay: 0.01, maxGradNorm: 1, eps: 1e-3 },
  schedule: { kind: "constant", lr: 1e-2, warmupSteps: 0 },
  loss: { kind: "cross-entropy" },
  chunkRows: 32,
  slots: 2,
  maxLen: 32,
});

/** The same weights with every matrix a half base stores rounded to half. */
export function halfRounded(w: ModelWeights): ModelWeights {
  const data = new Float32Array(w.data);
  for (const t of w.layout.tensors) {
    if (isBaseMatrix(t)) slice(data, t).set(roundToHalf(slice(w.data, t)));
  }
  return { ...w, data };
}
