// The peer for batched decoding: onnxruntime-web (wasm backend, in this process) running the
// KV-cache ONNX export of the same weights: prefill of a batch of prompts, then greedy decoding
// one token per sequence per step, timed the way the WGSL engine's generation is (median of
// rounds after a warm-up, every round from an empty cache). Also runnable on its own:
//   deno run -A test/bench/decode_peer.ts --preset configs/models/tiny-llama.json --batch 8

import { defineCli, parseArgsOrExit } from "../../src/cli/cli_args.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { exportOnnx } from "../../src/model/onnx/export.ts";
import { argmaxLast, OrtDecoder } from "../../src/model/onnx/ort_runner.ts";
import { loadModel, type ModelWeights } from "../../src/model/weights.ts";
import { round } from "./timing.ts";

export interface DecodeBenchOptions {
  readonly batch: number;
  /** Prompt tokens per sequence (all prompts the same length). */
  readonly promptLen: number;
  /** Greedy decode steps; each adds one token to every sequence. */
  readonly newTokens: number;
  /** Timed rounds (median reported). Default 3. */
  readonly rounds?: number;
  /** onnxruntime-web wasm threads (default 1; fixed for the process by the first session). */
  readonly numThreads?: number;
}

export interface DecodeBenchResult {
  readonly prefill_tok_s: number;
  readonly decode_tok_s: number;
  readonly peer: string;
  readonly batch: number;
  readonly prompt_len: number;
  readonly new_tokens: number;
  readonly threads: number;
  readonly rounds: number;
  /** Greedy tokens of the last round, [batch][newTokens], to cross-check another engine. */
  readonly tokens: number[][];
}

/** Deterministic prompts spread over the vocabulary (no tokenizer needed). [batch][promptLen] */
export function benchPrompts(batch: number, promptLen: number, vocab: number): number[][] {
  return Array.from(
    { length: batch },
    (_, b) => Array.from({ length: promptLen }, (_, t) => (b * 31 + t * 17 + 5) % vocab),
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One generation: prefill, then `newTokens` greedy steps. Returns the two phases' seconds. */
async function generate(dec: OrtDecoder, prompts: number[][], newTokens: number) {
  const cache = dec.emptyCache(prompts.length);
  const t0 = performance.now();
  let next = argmaxLast(await dec.step(cache, prompts));
  const t1 = performance.now();
  const tokens: number[][] = prompts.map(() => []);
  for (let s = 0; s < newTokens; s++) {
    next.forEach((id, b) => tokens[b].push(id));
    next = argmaxLast(await dec.step(cache, next.map((id) => [id])));
  }
  const t2 = performance.now();
  return { prefillS: (t1 - t0) / 1000, decodeS: (t2 - t1) / 1000, tokens };
}

/**
 * onnxruntime-web wasm throughput on a model folder (or weights already in memory): prefill
 * tokens/s (batch · promptLen per prefill) and greedy decode tokens/s (batch per step).
 */
export async function ortDecodeBench(
  weightsFolderOrModel: string | ModelWeights,
  opts: DecodeBenchOptions,
): Promise<DecodeBenchResult> {
  const { batch, promptLen, newTokens } = opts;
  const rounds = opts.rounds ?? 3;
  const w = typeof weightsFolderOrModel === "string"
    ? await loadModel(denoFolder(weightsFolderOrModel))
    : weightsFolderOrModel;
  const cfg = w.config;
  // RoPE tables only as long as the run needs: a smaller file, same function
  const onnx = exportOnnx(w, { kvCache: true, maxPositions: promptLen + newTokens + 1 });
  const dec = await OrtDecoder.create(onnx, cfg, { numThreads: opts.numThreads });
  try {
    const prompts = benchPrompts(batch, promptLen, cfg.vocabSize);
    await generate(dec, prompts, Math.min(2, newTokens)); // warm-up: allocations, first-run costs
    const prefill: number[] = [], decode: number[] = [];
    let tokens: number[][] = [];
    for (let r = 0; r < rounds; r++) {
      const g = await generate(dec, prompts, newTokens);
      prefill.push((batch * promptLen) / g.prefillS);
      decode.push((batch * newTokens) / g.decodeS);
      tokens = g.tokens;
    }
    return {
      prefill_tok_s: round(median(prefill), 1),
      decode_tok_s: round(median(decode), 1),
      peer: "onnxruntime-web wasm",
      batch,
      prompt_len: promptLen,
      new_tokens: newTokens,
      threads: opts.numThreads ?? 1,
      rounds,
      tokens,
    };
  } finally {
    await dec.release();
  }
}

const BENCH_CLI = defineCli({
  command: "deno run -A test/bench/decode_peer.ts",
  summary: "onnxruntime-web (wasm) prefill and greedy-decode throughput on one model.",
  flags: {
    model: { type: "string", metavar: "DIR", help: "HF model folder (or use --preset)" },
    preset: { type: "string", metavar: "FILE", help: "config to initialise a model from (seed 0)" },
    batch: { type: "number", integer: true, min: 1, default: 1, help: "sequences" },
    "prompt-len": { type: "number", integer: true, min: 1, default: 32, help: "prompt tokens" },
    "new-tokens": { type: "number", integer: true, min: 1, default: 32, help: "decode steps" },
    rounds: { type: "number", integer: true, min: 1, default: 3, help: "timed rounds" },
    threads: { type: "number", integer: true, min: 1, default: 1, help: "wasm threads" },
  },
});

if (import.meta.main) {
  const a = parseArgsOrExit(BENCH_CLI);
  if ((a.model === undefined) === (a.preset === undefined)) {
    console.error("error: give exactly one of --model or --preset");
    Deno.exit(2);
  }
  const source = a.model ??
    initModel(parseModelConfig(JSON.parse(await Deno.readTextFile(a.preset!))), { seed: 0 });
  const r = await ortDecodeBench(source, {
    batch: a.batch,
    promptLen: a.promptLen,
    newTokens: a.newTokens,
    rounds: a.rounds,
    numThreads: a.threads,
  });
  console.log(JSON.stringify({ ...r, tokens: undefined, model: a.model ?? a.preset }));
  Deno.exit(0);
}
