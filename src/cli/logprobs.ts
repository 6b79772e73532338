// `deno task logprobs`: scores a token sequence. logprobs[i] = log p(ids[i+1] | ids[0..i]),
// n − 1 values; with --json the last stdout line is {"logprobs":[...]}.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { checkIdsInVocab, gpuModel, loadFolder, parseIds } from "./model_loader.ts";
import { Generator } from "../model/generate.ts";

export const LOGPROBS_CLI = defineCli({
  command: "npx deno task logprobs",
  summary:
    "Per-token log-probabilities of a sequence under a Llama/Qwen2/Qwen3/GPT-2 model folder.",
  flags: {
    model: { type: "string", required: true, metavar: "DIR", help: "HF model folder" },
    ids: {
      type: "string",
      required: true,
      metavar: "1,2,3",
      help: "the token ids to score (at least 2)",
    },
    json: { type: "boolean", help: 'last stdout line: {"logprobs":[...]}' },
  },
});

if (import.meta.main) {
  const args = parseArgsOrExit(LOGPROBS_CLI);
  await runMain(async () => {
    let ids: number[];
    try {
      ids = parseIds(args.ids);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    if (ids.length < 2) {
      throw new UsageError(
        `--ids ${args.ids}: give at least 2 ids (each after the first is scored given those before it)`,
      );
    }
    const { weights } = await loadFolder(args.model, false);
    checkIdsInVocab(ids, weights.config.vocabSize);
    const { gpu, model } = await gpuModel(weights, 1, ids.length);
    const lp = Array.from(await (await Generator.create(model)).logprobs(ids));
    if (args.json) console.log(JSON.stringify({ logprobs: lp }));
    else lp.forEach((v, i) => console.log(`${ids[i + 1]}\t${v.toFixed(6)}`));
    model.destroy();
    gpu.destroy();
  });
}
