// A model server on this engine: a GPU model with one KV slot per batch row, its Generator, a
// BatchQueue in front of it and the OpenAI-compatible handler (openai.ts). `startServer` mounts
// it with Deno.serve; `deno task serve` (src/cli/serve.ts) is the command-line front.

import type { Gpu } from "../gpu/mod.ts";
import { Generator } from "../model/generate.ts";
import { GpuModel } from "../model/gpu_model.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { ModelWeights } from "../model/weights.ts";
import { BatchQueue } from "./batcher.ts";
import { openAiHandler, type ServerModel } from "./openai.ts";

export interface ModelServerOptions {
  /** The id /v1/models lists and requests name. */
  id: string;
  /** Requests per batched generation (KV cache slots; default 8). */
  maxBatch?: number;
  /** Prompt + completion tokens per sequence (default min(max_position_embeddings, 1024)). */
  maxLen?: number;
  /** How long the first request of a batch waits for more (ms, default 5). */
  windowMs?: number;
}

export interface ModelServer {
  model: ServerModel;
  queue: BatchQueue;
  generator: Generator;
  handler: (req: Request) => Promise<Response>;
  destroy(): void;
}

/** The server's parts on `gpu` (the caller owns the GPU). */
export async function createModelServer(
  gpu: Gpu,
  weights: ModelWeights,
  tokenizer: Tokenizer,
  opts: ModelServerOptions,
): Promise<ModelServer> {
  const maxBatch = opts.maxBatch ?? 8;
  const maxLen = opts.maxLen ?? Math.min(weights.config.maxPositionEmbeddings, 1024);
  const gpuModel = await GpuModel.create(gpu, weights, {
    slots: maxBatch,
    maxLen,
    chunkRows: Math.max(256, maxBatch),
  });
  const generator = await Generator.create(gpuModel);
  const queue = new BatchQueue(generator, {
    windowMs: opts.windowMs,
    maxBatch,
    decode: (ids) => tokenizer.decode(ids, { skipSpecialTokens: true }),
  });
  const model: ServerModel = {
    id: opts.id,
    tokenizer,
    queue,
    maxLen,
    vocabSize: weights.config.vocabSize,
    stopIds: tokenizer.stopIds.length ? tokenizer.stopIds : weights.config.eosTokenIds,
  };
  return {
    model,
    queue,
    generator,
    handler: openAiHandler(model),
    destroy: () => gpuModel.destroy(),
  };
}

export interface RunningServer {
  /** http://host:port, without a trailing slash. */
  url: string;
  port: number;
  /** Stops accepting requests and waits for the open ones. */
  shutdown(): Promise<void>;
}

/** Listens on `port` (0: a free one) with `handler`. */
export function startServer(
  handler: (req: Request) => Promise<Response>,
  opts: { port?: number; hostname?: string; onListen?: (url: string) => void } = {},
): RunningServer {
  const hostname = opts.hostname ?? "127.0.0.1";
  const server = Deno.serve({ port: opts.port ?? 0, hostname, onListen: () => {} }, handler);
  const port = (server.addr as Deno.NetAddr).port;
  const url = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
  opts.onListen?.(url);
  return { url, port, shutdown: () => server.shutdown() };
}
