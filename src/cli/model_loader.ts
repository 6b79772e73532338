// Loading a model folder for the command-line tools: weights, tokenizer and a GPU model.

import { denoFolder } from "../io/deno_files.ts";
import { Gpu } from "../gpu/mod.ts";
import { GpuModel } from "../model/gpu_model.ts";
import { loadTokenizer } from "../model/tokenizer.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import { loadModel, type ModelWeights } from "../model/weights.ts";
import { UsageError } from "./cli_args.ts";

export interface LoadedFolder {
  weights: ModelWeights;
  tokenizer: Tokenizer | null;
}

/** Reads DIR: config.json, safetensors and the tokenizer files (required when `needTokenizer`). */
export async function loadFolder(dir: string, needTokenizer: boolean): Promise<LoadedFolder> {
  const folder = denoFolder(dir);
  const weights = await loadModel(folder);
  const load = loadTokenizer(folder, { config: weights.config });
  // Token ids alone need no tokenizer; text does, and then a missing one is an error.
  const tokenizer = needTokenizer ? await load : await load.catch(() => null);
  return { weights, tokenizer };
}

/** A GPU model of `weights` with room for `slots` sequences of up to `maxLen` tokens. */
export async function gpuModel(
  weights: ModelWeights,
  slots: number,
  maxLen: number,
): Promise<{ gpu: Gpu; model: GpuModel }> {
  const gpu = await Gpu.create();
  return { gpu, model: await GpuModel.create(gpu, weights, { slots, maxLen }) };
}

/** "1,2,3" → [1, 2, 3]; throws on anything that is not a list of non-negative integers. */
/** A UsageError when an id is not a token of a vocabulary of `vocabSize`. */
export function checkIdsInVocab(ids: readonly number[], vocabSize: number): void {
  const bad = ids.find((n) => n >= vocabSize);
  if (bad !== undefined) {
    throw new UsageError(
      `--ids: ${bad} is not a token id of this model (its vocabulary has ids 0..${vocabSize - 1})`,
    );
  }
}

export function parseIds(text: string): number[] {
  const ids = text.split(",").map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  if (!ids.length || ids.some((n) => !Number.isInteger(n) || n < 0)) {
    throw new Error(`--ids must be comma-separated non-negative integers, got "${text}"`);
  }
  return ids;
}
