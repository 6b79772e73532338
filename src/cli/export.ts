// `deno task export`: writes an HF model folder (config.json + safetensors) as an ONNX decoder
// graph for onnxruntime-web — the full-sequence graph, or with --kv-cache the decode graph with
// past/present key/values (transformers.js naming). The file is written atomically.

import { defineCli, parseArgsOrExit, runMain } from "./cli_args.ts";
import { denoFolder, writeFileAtomic } from "../io/deno_files.ts";
import { exportOnnx } from "../model/onnx/export.ts";
import { loadModel } from "../model/weights.ts";

export const EXPORT_CLI = defineCli({
  command: "npx deno task export",
  summary:
    "Export a Llama/Qwen2/Qwen3 model folder (not GPT-2) as an ONNX graph (input_ids → logits).",
  flags: {
    model: { type: "string", required: true, metavar: "DIR", help: "HF model folder to read" },
    onnx: { type: "string", required: true, metavar: "OUT.onnx", help: "file to write" },
    "kv-cache": {
      type: "boolean",
      help: "export the decode graph (position_ids, past_key_values.{i}.key/value → present.*)",
    },
    "max-positions": {
      type: "number",
      integer: true,
      min: 1,
      help: "rows of the RoPE tables, the largest position + 1 (default max_position_embeddings)",
    },
  },
});

if (import.meta.main) {
  const args = parseArgsOrExit(EXPORT_CLI);
  await runMain(async () => {
    const w = await loadModel(denoFolder(args.model));
    const bytes = exportOnnx(w, { kvCache: args.kvCache, maxPositions: args.maxPositions });
    await writeFileAtomic(args.onnx, bytes);
    const mb = (bytes.length / 2 ** 20).toFixed(1);
    console.error(
      `wrote ${args.onnx}: ${w.config.modelType}, ${w.layout.numParams} parameters, ${mb} MiB` +
        (args.kvCache ? ", KV-cache graph" : ""),
    );
  });
}
