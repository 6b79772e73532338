// `deno task match`: greedy exact match of a model folder on demonstration records (the JSONL
// that `deno task demos` writes and `deno task sft` reads). With --json the last stdout line is
// {"exact":N,"total":N,"rate":R}.

import { defineCli, parseArgsOrExit, runMain } from "./cli_args.ts";
import { gpuModel, loadFolder } from "./model_loader.ts";
import { Generator } from "../model/generate.ts";
import { loadSftFiles } from "../train/sft_data.ts";
import { greedyMatch, matchTargets } from "../train/sft_match.ts";

export const MATCH_CLI = defineCli({
  command: "npx deno task match",
  summary:
    "How often a model's greedy completion of each record's prompt is the record's completion, word for word " +
    "(prompt/completion or chat JSONL, e.g. held-out oracle demonstrations).",
  flags: {
    model: { type: "string", required: true, metavar: "DIR", help: "HF model folder" },
    data: {
      type: "string",
      required: true,
      metavar: "FILE.jsonl[,FILE...]",
      help: "demonstration files, in order",
    },
    limit: { type: "number", integer: true, min: 1, help: "only the first N records" },
    batch: {
      type: "number",
      integer: true,
      min: 1,
      default: 64,
      help: "sequences generated together",
    },
    "max-new-tokens": {
      type: "number",
      integer: true,
      min: 1,
      help: "generation budget (default: the longest expected completion's tokens + 1)",
    },
    show: {
      type: "number",
      integer: true,
      min: 0,
      default: 10,
      help: "misses to print (expected → got)",
    },
    json: { type: "boolean", help: 'last stdout line: {"exact":N,"total":N,"rate":R}' },
  },
});

if (import.meta.main) {
  const args = parseArgsOrExit(MATCH_CLI);
  await runMain(async () => {
    const records = (await loadSftFiles(args.data.split(",").map((f) => f.trim()).filter(Boolean)))
      .slice(0, args.limit);
    const { weights, tokenizer } = await loadFolder(args.model, true);
    const targets = matchTargets(tokenizer!, records);
    const maxNew = args.maxNewTokens ?? Math.max(...targets.map((t) => t.expectedTokens));
    const batch = Math.min(args.batch, targets.length);
    const { gpu, model } = await gpuModel(
      weights,
      batch,
      Math.max(...targets.map((t) => t.prompt.length)) + maxNew,
    );
    try {
      const r = await greedyMatch(await Generator.create(model), tokenizer!, targets, {
        batch,
        maxNewTokens: maxNew,
      });
      for (const m of r.misses.slice(0, args.show)) {
        console.log(
          `${m.source.file}:${m.source.line}: expected ${JSON.stringify(m.expected)}, got ${
            JSON.stringify(m.got)
          }`,
        );
      }
      const rate = r.exact / r.total;
      console.log(`exact ${r.exact}/${r.total} (${(100 * rate).toFixed(1)}%)`);
      if (args.json) console.log(JSON.stringify({ exact: r.exact, total: r.total, rate }));
    } finally {
      model.destroy();
      gpu.destroy();
    }
  });
}
