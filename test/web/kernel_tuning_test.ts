// The app's "Tune kernels for this GPU" (web/app/kernel_tuning.ts) under Deno's WebGPU with a
// memory store: the matmul picks are in the store, and registered, before the kernel tuners
// start, so a page closed during those keeps them; at the end the entry holds both.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryStore } from "../../src/browser/run_store.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { resetTunedPicks } from "../../src/ops/tuned_picks.ts";
import { loadConfigFile } from "../../src/rl/config.ts";
import { PICKS_FILE, tuneForRun } from "../../web/app/kernel_tuning.ts";

Deno.test("app kernel tuning: the matmul picks are stored before the kernel tuners run, then the whole entry", async () => {
  const gpu = await Gpu.create();
  try {
    const json = JSON.parse(await Deno.readTextFile("configs/models/tiny-llama.json"));
    const config = parseModelConfig({ ...json, vocab_size: 5000 });
    const base = {
      weights: initModel(config, { seed: 1 }),
      tokenizer: new ByteTokenizer(),
      label: "tiny-llama, vocabulary 5000",
      folder: null,
    };
    const runConfig = await loadConfigFile("configs/quickstart.json", [
      "rollout.envsPerStep=2",
      "rollout.k=2",
      "rollout.maxPromptTokens=48",
      "rollout.maxNewTokens=16",
      "update.chunkRows=64",
    ]);
    const store = memoryStore();
    const read = () => {
      const bytes = store.files.get(PICKS_FILE);
      return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null;
    };
    // The first GPU job is the matmul tuner; what the store holds when the second (the sampler
    // tuner's) starts is what a page closed then would keep.
    const atJob: unknown[] = [];
    const report = await tuneForRun({
      gpu,
      base,
      config: runConfig,
      store,
      now: () => Date.UTC(2026, 10, 29),
      log: () => {},
      gpuJob: (fn) => {
        atJob.push(read());
        return fn();
      },
    }, {
      variants: "^r8c8_wg8x1$",
      minMs: 5,
      sampler: "on",
      lora: "off",
      attention: "off",
      loss: "off",
    });
    assert(atJob.length >= 2, `${atJob.length} GPU jobs: the sampler tuner did not run`);
    assertEquals(atJob[0], null, "nothing stored before the matmul tuner");
    const early = atJob[1] as { entries: Record<string, unknown>[] };
    assertEquals(early.entries.length, 1);
    assert(Object.keys(early.entries[0].picks as object).length > 0, JSON.stringify(early));
    assertEquals(early.entries[0].samplerPicks, undefined);
    const final = read();
    assertEquals(final.entries.length, 1);
    assertEquals(final.entries[0].picks, early.entries[0].picks);
    assert(final.entries[0].samplerPicks?.["5000"], JSON.stringify(final.entries[0]));
    assert(report.sampler, "the report has the sampler's times");
  } finally {
    resetTunedPicks();
    gpu.destroy();
  }
});
