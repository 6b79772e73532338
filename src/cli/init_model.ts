// `deno task init-model`: a freshly initialised HF model folder (config.json, safetensors,
// generation_config.json, byte tokenizer files) from a preset config such as
// configs/models/tiny-llama.json — the starting point of training runs, exports and benchmarks.

import { defineCli, parseArgsOrExit, runMain } from "./cli_args.ts";
import { writeFilesAtomic } from "../io/deno_files.ts";
import type { FloatDtype } from "../io/dtypes.ts";
import { parseModelConfig } from "../model/config.ts";
import { InvalidConfigError } from "../model/errors.ts";
import { hfFolderFiles, initModel } from "../model/init.ts";

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
    await writeFilesAtomic(args.out, hfFolderFiles(w, { dtype: args.dtype as FloatDtype }));
    console.error(
      `wrote ${args.out}: ${config.modelType}, ${w.layout.numParams} parameters, ${args.dtype}`,
    );
  });
}
