// `deno task serve --model DIR [--port N]`: an OpenAI-compatible server (/v1/models,
// /v1/completions, /v1/chat/completions, streaming) on this engine; concurrent requests share one
// batched generation. Agents reach it (or vLLM, SGLang, llama.cpp) through config model.endpoint
// or model.endpoints; see docs/serve.md.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { loadFolder } from "./model_loader.ts";
import { Gpu } from "../gpu/mod.ts";
import { createModelServer, startServer } from "../serve/server.ts";

export const SERVE_CLI = defineCli({
  command: "npx deno task serve",
  summary:
    "Serve a Llama/Qwen2/Qwen3 model folder over an OpenAI-compatible HTTP API (completions, chat, streaming).",
  flags: {
    model: {
      type: "string",
      required: true,
      metavar: "DIR",
      help: "HF model folder (config.json, safetensors, tokenizer)",
    },
    port: {
      type: "number",
      integer: true,
      min: 0,
      default: 8000,
      help: "port to listen on (0: a free one, printed)",
    },
    host: {
      type: "string",
      default: "127.0.0.1",
      metavar: "ADDR",
      help: "address to listen on (0.0.0.0: every interface)",
    },
    name: {
      type: "string",
      metavar: "ID",
      help: "model id in /v1/models and requests (default: the folder's base name)",
    },
    "max-batch": {
      type: "number",
      integer: true,
      min: 1,
      default: 8,
      help: "requests per batched generation (KV cache slots)",
    },
    "max-len": {
      type: "number",
      integer: true,
      min: 2,
      help: "prompt + completion tokens per request (default min(max_position_embeddings, 1024))",
    },
    "batch-window-ms": {
      type: "number",
      min: 0,
      default: 5,
      help: "how long a request waits for others to share its batch",
    },
  },
});

if (import.meta.main) {
  const args = parseArgsOrExit(SERVE_CLI);
  await runMain(async () => {
    const { weights, tokenizer } = await loadFolder(args.model, true);
    if (args.maxLen !== undefined && args.maxLen > weights.config.maxPositionEmbeddings) {
      throw new UsageError(
        `--max-len ${args.maxLen} exceeds the model's max_position_embeddings ${weights.config.maxPositionEmbeddings}`,
      );
    }
    const id = args.name ?? (args.model.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || "model");
    const gpu = await Gpu.create();
    const srv = await createModelServer(gpu, weights, tokenizer!, {
      id,
      maxBatch: args.maxBatch,
      maxLen: args.maxLen,
      windowMs: args.batchWindowMs,
    });
    const running = startServer(srv.handler, { port: args.port, hostname: args.host });
    // The URL line first, so scripts that start the server with --port 0 can read it.
    console.log(
      `serving ${id} at ${running.url}/v1 (max batch ${args.maxBatch}, ${srv.model.maxLen} tokens per request)`,
    );
    await new Promise<void>((resolve) => {
      for (const sig of ["SIGINT", "SIGTERM"] as const) {
        Deno.addSignalListener(sig, () => resolve());
      }
    });
    await running.shutdown();
    srv.destroy();
    gpu.destroy();
  });
}
