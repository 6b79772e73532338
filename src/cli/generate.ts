// `deno task generate`: text or token ids in, a completion out, with the WGSL engine and GPU
// sampling. With --json the last stdout line is {"ids":[...new ids...],"text":"..."}.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { checkIdsInVocab, gpuModel, loadFolder, parseIds } from "./model_loader.ts";
import { Generator } from "../model/generate.ts";

export const GENERATE_CLI = defineCli({
  command: "npx deno task generate",
  summary: "Generate a completion with a Llama/Qwen2/Qwen3/GPT-2 model folder on WebGPU.",
  flags: {
    model: { type: "string", required: true, metavar: "DIR", help: "HF model folder" },
    prompt: { type: "string", metavar: "TEXT", help: "prompt text (needs the folder's tokenizer)" },
    ids: { type: "string", metavar: "1,2,3", help: "prompt token ids instead of text" },
    chat: { type: "boolean", help: "wrap --prompt as a user message with the chat template" },
    "max-new-tokens": {
      type: "number",
      integer: true,
      min: 1,
      default: 64,
      help: "tokens to generate",
    },
    temperature: { type: "number", min: 0, default: 1, help: "0 = greedy" },
    "top-p": { type: "number", min: 0, default: 1, help: "nucleus mass (1 = off)" },
    "top-k": {
      type: "number",
      integer: true,
      min: 0,
      default: 0,
      help: "keep the k best tokens (0 = off)",
    },
    "repetition-penalty": {
      type: "number",
      min: 0,
      default: 1,
      help: "HF repetition penalty (1 = off)",
    },
    seed: { type: "number", integer: true, min: 0, default: 0, help: "sampling seed" },
    json: { type: "boolean", help: 'last stdout line: {"ids":[...],"text":"..."}' },
  },
});

if (import.meta.main) {
  const args = parseArgsOrExit(GENERATE_CLI);
  if ((args.prompt === undefined) === (args.ids === undefined)) {
    console.error(`give exactly one of --prompt or --ids\n`);
    Deno.exit(2);
  }
  await runMain(async () => {
    let promptIds: number[];
    try {
      promptIds = args.ids !== undefined ? parseIds(args.ids) : [];
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const { weights, tokenizer } = await loadFolder(args.model, args.prompt !== undefined);
    checkIdsInVocab(promptIds, weights.config.vocabSize);
    if (args.prompt !== undefined) {
      promptIds = args.chat
        ? tokenizer!.encodeChat([{ role: "user", content: args.prompt }], {
          addGenerationPrompt: true,
        })
        : tokenizer!.encode(args.prompt);
    }
    const { gpu, model } = await gpuModel(weights, 1, promptIds.length + args.maxNewTokens);
    const gen = await Generator.create(model);
    const [res] = await gen.generate([{
      prompt: promptIds,
      maxNewTokens: args.maxNewTokens,
      stopIds: tokenizer?.stopIds ?? model.config.eosTokenIds,
      sampling: {
        temperature: args.temperature,
        topP: args.topP,
        topK: args.topK,
        repetitionPenalty: args.repetitionPenalty,
        seed: args.seed,
      },
    }]);
    const text = tokenizer ? tokenizer.decode(res.ids, { skipSpecialTokens: true }) : "";
    if (args.json) console.log(JSON.stringify({ ids: res.ids, text }));
    else console.log(tokenizer ? text : res.ids.join(","));
    model.destroy();
    gpu.destroy();
  });
}
