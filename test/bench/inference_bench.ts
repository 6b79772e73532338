// Inference throughput of the WGSL engine beside onnxruntime-web (wasm) on the same weights in
// the same run: prefill tokens/s and greedy batched-decode tokens/s at several batch sizes.

import type { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { Generator } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { benchPrompts, ortDecodeBench } from "./decode_peer.ts";
import { round } from "./timing.ts";

export interface InferenceBenchOptions {
  presets: string[];
  batches: number[];
  promptLen: number;
  newTokens: number;
  rounds: number;
}

async function ours(gpu: Gpu, preset: string, batch: number, o: InferenceBenchOptions) {
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${preset}.json`, import.meta.url)),
  );
  const w = initModel(parseModelConfig(json), { seed: 1 });
  const model = await GpuModel.create(gpu, w, {
    slots: batch,
    maxLen: o.promptLen + o.newTokens + 1,
    chunkRows: 256,
  });
  const gen = await Generator.create(model);
  const prompts = benchPrompts(batch, o.promptLen, w.config.vocabSize);
  const prefill: number[] = [], decode: number[] = [];
  try {
    for (let r = 0; r <= o.rounds; r++) { // round 0 warms up
      const t0 = performance.now();
      // Prefill = the forward over every prompt token (one row per token, logits of the last).
      await model.forward(
        prompts.flatMap((p, slot) => p.map((token, pos) => ({ token, slot, pos }))),
        [0],
      );
      const t1 = performance.now();
      // Decode: the chained greedy steps of a generate, timed inside it (from the first step's
      // submission to the last readback), as the peer times its steps after its prefill.
      const timing = { prefillMs: 0, decodeMs: 0, decodeSteps: 0 };
      await gen.generate(
        prompts.map((prompt, i) => ({
          prompt,
          maxNewTokens: o.newTokens,
          sequence: i,
          sampling: { temperature: 0 },
        })),
        { timing },
      );
      if (r === 0) continue;
      prefill.push(batch * o.promptLen / ((t1 - t0) / 1000));
      decode.push(batch * o.newTokens / (timing.decodeMs / 1000));
    }
  } finally {
    model.destroy();
  }
  const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
  return { prefill_tok_s: round(med(prefill), 1), decode_tok_s: round(med(decode), 1), weights: w };
}

export async function benchInference(gpu: Gpu, o: InferenceBenchOptions, log: (s: string) => void) {
  const rows = [];
  for (const preset of o.presets) {
    for (const batch of o.batches) {
      const mine = await ours(gpu, preset, batch, o);
      let peer: { prefill_tok_s: number; decode_tok_s: number } | null = null;
      let peerError: string | null = null;
      try {
        peer = await ortDecodeBench(mine.weights, {
          batch,
          promptLen: o.promptLen,
          newTokens: o.newTokens,
          rounds: o.rounds,
        });
      } catch (e) {
        peerError = `${(e as Error).name}: ${(e as Error).message}`;
      }
      const row = {
        preset,
        batch,
        prompt_len: o.promptLen,
        new_tokens: o.newTokens,
        prefill_tok_s: mine.prefill_tok_s,
        decode_tok_s: mine.decode_tok_s,
        ort_prefill_tok_s: peer?.prefill_tok_s ?? null,
        ort_decode_tok_s: peer?.decode_tok_s ?? null,
        prefill_ratio: peer ? round(mine.prefill_tok_s / peer.prefill_tok_s) : null,
        decode_ratio: peer ? round(mine.decode_tok_s / peer.decode_tok_s) : null,
        peer_error: peerError,
      };
      log(
        `${preset} batch ${batch}: prefill ${row.prefill_tok_s} tok/s (ORT ${row.ort_prefill_tok_s}), decode ${row.decode_tok_s} tok/s (ORT ${row.ort_decode_tok_s})`,
      );
      rows.push(row);
    }
  }
  return { peer: "onnxruntime-web wasm, 1 thread, KV-cache graph", rows };
}
