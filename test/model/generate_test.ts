// Batched generation on the GPU: greedy equals the float64 reference's full-recomputation
// greedy; a sequence's samples do not depend on its batch; stop ids and length limits; the
// log-probs of scoring and of sampling agree with the reference.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { Generator, MIN_SHARED_PREFIX, prefillPlan } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { referenceGreedy, referenceLogprobs } from "../../src/model/reference.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { LoraAdapters } from "../../src/model/lora.ts";
import { CpuAdapterDecode } from "../../src/model/cpu_adapter/decode.ts";
import { LORA_MODULES, LoraLayout } from "../../src/model/lora_layout.ts";

async function tiny(name: string): Promise<ModelWeights> {
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${name}.json`, import.meta.url)),
  );
  return initModel(parseModelConfig(json), { seed: 12, std: 0.4, biasStd: 0.2, normNoise: 0.2 });
}

const P1 = [257, 72, 105, 33], P2 = [257, 10, 20, 30, 40, 50, 60], P3 = [257, 99];

Deno.test("generation", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const name of ["tiny-llama", "tiny-qwen2", "tiny-qwen3"]) {
      await t.step(
        `${name}: batched greedy equals reference greedy for ragged prompts`,
        async () => {
          const w = await tiny(name);
          const model = await GpuModel.create(gpu, w, { slots: 3, maxLen: 32 });
          const gen = await Generator.create(model);
          try {
            const reqs = [P1, P2, P3].map((prompt) => ({
              prompt,
              maxNewTokens: 8,
              sampling: { temperature: 0 },
            }));
            const got = await gen.generate(reqs);
            [P1, P2, P3].forEach((p, i) =>
              assertEquals(got[i].ids, referenceGreedy(w, p, 8), `prompt ${i}`)
            );
            // Steps chained on the GPU between readbacks: same tokens whatever the chunk size.
            const chunked = await gen.generate(
              reqs.map((r, i) => ({ ...r, maxNewTokens: 8 - i })),
              { stepsPerSync: 3 },
            );
            const single = await gen.generate(reqs.map((r, i) => ({ ...r, maxNewTokens: 8 - i })), {
              stepsPerSync: 1,
            });
            assertEquals(chunked.map((r) => r.ids), single.map((r) => r.ids));
            // Length-bound requests (no stop ids, no onStep) decode all 14 steps before one readback.
            const long = reqs.map((r, i) => ({ ...r, maxNewTokens: 14 - i }));
            let steps = 0;
            const streamed = await gen.generate(long, { onStep: () => steps++ });
            const timing = { prefillMs: -1, decodeMs: -1, decodeSteps: -1 };
            assertEquals(
              (await gen.generate(long, { timing })).map((r) => r.ids),
              streamed.map((r) => r.ids),
            );
            assertEquals(timing.decodeSteps, 14, "one chain of the longest request's 14 steps");
            assert(
              timing.prefillMs >= 0 && timing.decodeMs > 0,
              `phase timings ${JSON.stringify(timing)}`,
            );
            assertEquals(
              steps,
              16,
              "with onStep the default 8-step chunks stay (2 readbacks of 8)",
            );
          } finally {
            model.destroy();
          }
        },
      );
    }

    await t.step(
      "a model's later generate calls reuse its decode plan's bind groups and give the same tokens",
      async () => {
        const w = await tiny("tiny-llama");
        // The per-op decode step on storage buffers, as GPUs run it (the CPU adapters' fused
        // step is a dispatch or two; groups binding weight textures are each plan's own).
        const model = await GpuModel.create(gpu, w, {
          slots: 3,
          maxLen: 32,
          decodeVariant: "ops",
          weightTextures: false,
        });
        const gen = await Generator.create(model);
        const dev = gpu.device, create = dev.createBindGroup.bind(dev);
        let made = 0;
        dev.createBindGroup = (d: GPUBindGroupDescriptor) => (made++, create(d));
        try {
          const reqs = [P1, P2, P3].map((prompt, i) => ({
            prompt,
            maxNewTokens: 6,
            sampling: { temperature: 0.9, seed: 5 },
            sequence: i,
          }));
          const runs = [];
          const counts = [];
          for (let r = 0; r < 3; r++) {
            made = 0;
            runs.push((await gen.generate(reqs)).map((x) => x.ids));
            counts.push(made);
          }
          assertEquals(runs[1], runs[0]);
          assertEquals(runs[2], runs[0]);
          // The first call builds the forward's groups; later ones only those of the buffers a
          // call makes for itself (its sampling parameters and outputs).
          assert(counts[1] < counts[0] / 2, `bind groups made per call: ${counts.join(", ")}`);
        } finally {
          dev.createBindGroup = create;
          model.destroy();
        }
      },
    );

    await t.step("samples are keyed by (seed, sequence, step), not by batch position", async () => {
      const w = await tiny("tiny-llama");
      const model = await GpuModel.create(gpu, w, { slots: 3, maxLen: 32 });
      const gen = await Generator.create(model);
      try {
        const a = {
          prompt: P1,
          maxNewTokens: 10,
          sequence: 7,
          sampling: { temperature: 1, seed: 42 },
        };
        const alone = await gen.generate([a]);
        const mixed = await gen.generate([
          { prompt: P2, maxNewTokens: 5, sequence: 1, sampling: { temperature: 1, seed: 3 } },
          { prompt: P3, maxNewTokens: 3 },
          a,
        ]);
        assertEquals(mixed[2].ids, alone[0].ids);
        const other = await gen.generate([{ ...a, sequence: 8 }]);
        assert(
          JSON.stringify(other[0].ids) !== JSON.stringify(alone[0].ids),
          "another sequence id should give other samples",
        );
      } finally {
        model.destroy();
      }
    });

    await t.step(
      "more requests than one batch holds run as consecutive batches with the same samples",
      async () => {
        const w = await tiny("tiny-llama");
        const small = await GpuModel.create(gpu, w, { slots: 2, maxLen: 32 });
        const big = await GpuModel.create(gpu, w, { slots: 5, maxLen: 32 });
        try {
          const [g2, g5] = await Promise.all([Generator.create(small), Generator.create(big)]);
          assertEquals(g2.maxBatch, 2);
          const reqs = [P1, P2, P3, P2, P1].map((prompt, i) => ({
            prompt,
            maxNewTokens: 6 + i,
            stopIds: i === 3 ? [104] : undefined,
            sampling: { temperature: 1, seed: 5 },
          }));
          let streamed = 0;
          const timing = { prefillMs: -1, decodeMs: -1, decodeSteps: -1 };
          const split = await g2.generate(reqs, {
            timing,
            onStep: (_s, res) => (streamed = Math.max(streamed, res.length)),
          });
          const whole = await g5.generate(reqs);
          assertEquals(split.map((r) => [r.ids, r.finish]), whole.map((r) => [r.ids, r.finish]));
          split.forEach((r, i) => assertEquals(r.logprobs.length, r.ids.length, `request ${i}`));
          assertEquals(streamed, 5, "onStep sees every request's results");
          assert(
            timing.decodeSteps >= 7 + 9 + 10,
            `three batches' decode steps summed: ${timing.decodeSteps}`,
          );
        } finally {
          small.destroy();
          big.destroy();
        }
      },
    );

    await t.step(
      "onFinish reports each request once, as soon as its sequence ends, across batches",
      async () => {
        const w = await tiny("tiny-llama");
        const model = await GpuModel.create(gpu, w, { slots: 2, maxLen: 40 });
        const gen = await Generator.create(model);
        try {
          // Batches of 2: [3 tokens, 20 tokens], then [5 tokens]; 4 steps per readback.
          const reqs = [3, 20, 5].map((n, i) => ({
            prompt: [P1, P2, P3][i],
            maxNewTokens: n,
            sampling: { temperature: 1, seed: 9 },
          }));
          let step = 0;
          const seen: { index: number; step: number; ids: number[] }[] = [];
          const got = await gen.generate(reqs, {
            stepsPerSync: 4,
            onStep: (s) => (step = s),
            onFinish: (index, r) => seen.push({ index, step, ids: [...r.ids] }),
          });
          assertEquals(seen.map((x) => x.index), [0, 1, 2]);
          seen.forEach((x) =>
            assertEquals(
              x.ids,
              got[x.index].ids,
              `request ${x.index} was reported with its final tokens`,
            )
          );
          // The 3-token request was reported at the first readback (steps 0–3), before the 20-token one ended.
          assert(seen[0].step < 4, `the short request was reported at step ${seen[0].step}`);
          assert(
            seen[1].step >= 16,
            `the 20-token request was reported at step ${seen[1].step}, before its last readback`,
          );
        } finally {
          model.destroy();
        }
      },
    );

    await t.step("stop ids end a sequence; maxNewTokens bounds it", async () => {
      const w = await tiny("tiny-qwen2");
      const model = await GpuModel.create(gpu, w, { slots: 2, maxLen: 32 });
      const gen = await Generator.create(model);
      try {
        const free = await gen.generate([{
          prompt: P2,
          maxNewTokens: 6,
          sampling: { temperature: 0 },
        }]);
        assertEquals(free[0].ids.length, 6);
        assertEquals(free[0].finish, "length");
        const stopAt = free[0].ids[2];
        const stopped = await gen.generate([{
          prompt: P2,
          maxNewTokens: 6,
          sampling: { temperature: 0 },
          stopIds: [stopAt],
        }]);
        const first = free[0].ids.indexOf(stopAt);
        assertEquals(stopped[0].ids, free[0].ids.slice(0, first + 1));
        assertEquals(stopped[0].finish, "stop");
      } finally {
        model.destroy();
      }
    });

    await t.step("log-probs of scoring and of sampling match the reference", async () => {
      const w = await tiny("tiny-qwen3");
      const model = await GpuModel.create(gpu, w, { slots: 1, maxLen: 32 });
      const gen = await Generator.create(model);
      try {
        const ids = [...P2, 1, 2, 3];
        const got = await gen.logprobs(ids);
        const want = referenceLogprobs(w, ids);
        want.forEach((v, i) =>
          assert(Math.abs(got[i] - v) < 1e-3, `position ${i}: ${got[i]} vs ${v}`)
        );
        const g = await gen.generate([{
          prompt: P1,
          maxNewTokens: 5,
          sampling: { temperature: 0 },
        }]);
        const scored = referenceLogprobs(w, [...P1, ...g[0].ids]).slice(P1.length - 1);
        g[0].logprobs.forEach((v, i) =>
          assert(Math.abs(v - scored[i]) < 1e-3, `sampled logprob ${i}: ${v} vs ${scored[i]}`)
        );
      } finally {
        model.destroy();
      }
    });

    await t.step(
      "sampling inside the fused decode step gives the tokens and log-probs of the three-dispatch step",
      async () => {
        const w = await tiny("tiny-llama");
        const layout = new LoraLayout(w.config, {
          rank: 4,
          alpha: 8,
          targets: [...LORA_MODULES],
          adapters: ["a", "b"],
        });
        const data = new Float32Array(layout.totalFloats).map((_, i) => Math.sin(i * 0.37) * 0.2);
        const sampling = [
          { temperature: 0 },
          { temperature: 0.8, seed: 4 },
          { temperature: 1.2, topK: 5, seed: 5 },
          { temperature: 0.9, topP: 0.7, seed: 6 },
          { temperature: 1, topK: 40, topP: 0.95, seed: 7 },
        ];
        const prompts = [P1, P2, P3, [257, 5, 6], [257, 200, 201, 202, 203]];
        for (const withLora of [false, true]) {
          const runs = [];
          for (const fuseSampling of [false, true]) {
            const model = await GpuModel.create(gpu, w, { slots: 5, maxLen: 40 });
            try {
              if (withLora) model.attachLora(await LoraAdapters.create(gpu, layout, 256, data));
              const gen = await Generator.create(model, { fuseSampling });
              const reqs = prompts.map((prompt, i) => ({
                prompt,
                maxNewTokens: 9 + i,
                sampling: sampling[i],
                stopIds: i === 2 ? [258] : undefined,
                adapter: withLora ? [0, 1, -1, 1, 0][i] : undefined,
              }));
              const all = await gen.generate(reqs);
              const chunked = await gen.generate(reqs, { stepsPerSync: 3 });
              assertEquals(chunked, all, "chained steps per readback do not change the samples");
              // On CPU adapters (where the fused decode runs) the fused variant must really be used.
              const variants = model.decode instanceof CpuAdapterDecode
                ? model.decode.fusedVariants
                : [];
              if (fuseSampling && gpu.adapterClass === "cpu") {
                assert(model.canSampleInStep, "the sampling step was compiled");
                // The plain fused forward never runs in a generation that samples inside the
                // step: only the sampling variant is compiled (it is tens of seconds on llvmpipe).
                assertEquals(variants, [withLora ? "1:sample" : "0:sample"]);
                // 9-13 steps in one dispatch, or 3 per dispatch when chained 3 per readback.
                assert(
                  model.sampleStepsPerDispatch >= 13,
                  `${model.sampleStepsPerDispatch} steps per dispatch`,
                );
              }
              if (!fuseSampling) {
                assert(!model.canSampleInStep);
                assert(variants.every((v) => !v.endsWith(":sample")), variants.join(", "));
              }
              runs.push(all);
            } finally {
              model.destroy();
            }
          }
          assertEquals(runs[1], runs[0], withLora ? "with LoRA adapters" : "base model");
          assert(
            runs[0].some((r) => new Set(r.ids).size > 2),
            "the samples vary (or the check proves little)",
          );
        }
      },
    );

    await t.step(
      "a prompt prefix shared by several requests (same adapter) is prefilled once and they generate as if each prefilled its own",
      async () => {
        const w = await tiny("tiny-qwen2");
        const layout = new LoraLayout(w.config, {
          rank: 4,
          alpha: 8,
          targets: [...LORA_MODULES],
          adapters: ["a", "b"],
        });
        const data = new Float32Array(layout.totalFloats).map((_, i) => Math.cos(i * 0.29) * 0.2);
        const long = Array.from({ length: 20 }, (_, i) => 10 + ((i * 13) % 240));
        // longB: long's first 18 tokens, then its own (a task's prompt after a shared system
        // message); longC: the same on adapter 0, whose roots begin otherwise.
        const longB = [...long.slice(0, 18), 5, 6, 7, 8, 9, 3];
        // Groups: P2 ×3 on adapter 0, P2 once on adapter 1 (another adapter: not shared), long ×3
        // on the base, P3 (one position to prefill) ×2, longB sharing 18 positions of long's.
        const spec: [number[], number][] = [
          [P2, 0],
          [long, -1],
          [P2, 0],
          [P3, -1],
          [P2, 1],
          [long, -1],
          [P2, 0],
          [P3, -1],
          [long, -1],
          [longB, -1],
          [longB, 0],
          [longB, -1], // a repeat of a prompt that itself shares a prefix: copied after its rest
        ];
        const runs: { ids: number[][]; logprobs: number[][]; tokens: number }[] = [];
        for (const sharePrefill of [false, true]) {
          const model = await GpuModel.create(gpu, w, { slots: spec.length, maxLen: 48 });
          try {
            model.attachLora(await LoraAdapters.create(gpu, layout, 256, data));
            const gen = await Generator.create(model);
            const reqs = spec.map(([prompt, adapter], i) => ({
              prompt,
              maxNewTokens: 10,
              adapter,
              sampling: i % 2 ? { temperature: 0 } : { temperature: 1, topK: 30, seed: 3 },
            }));
            const timing = { prefillMs: 0, decodeMs: 0, decodeSteps: 0, prefillTokens: 0 };
            const res = await gen.generate(reqs, { sharePrefill, timing });
            runs.push({
              ids: res.map((r) => r.ids),
              logprobs: res.map((r) => r.logprobs),
              tokens: timing.prefillTokens,
            });
          } finally {
            model.destroy();
          }
        }
        assertEquals(
          prefillPlan(spec.map(([prompt, adapter]) => ({ prompt, adapter, maxNewTokens: 1 }))),
          [
            { from: 0, n: 0, whole: false },
            { from: 1, n: 0, whole: false },
            { from: 0, n: 6, whole: true },
            { from: 3, n: 0, whole: false },
            { from: 4, n: 0, whole: false },
            { from: 1, n: 19, whole: true },
            { from: 0, n: 6, whole: true },
            { from: 3, n: 1, whole: true },
            { from: 1, n: 19, whole: true },
            { from: 1, n: 18, whole: false },
            { from: 10, n: 0, whole: false },
            { from: 9, n: 23, whole: true },
          ],
        );
        // every prompt but its last token, then roots whole and longB's 5 positions after 18
        assertEquals(runs[0].tokens, 4 * 6 + 3 * 19 + 2 * 1 + 3 * 23);
        assertEquals(runs[1].tokens, 6 + 19 + 1 + 6 + 23 + 5);
        assert(MIN_SHARED_PREFIX <= 18, "longB's 18 shared tokens are worth a copy");
        assertEquals(runs[1].ids, runs[0].ids);
        runs[0].logprobs.forEach((lp, i) =>
          lp.forEach((x, j) =>
            // The shared prefill runs fewer rows, so other matmul tiles: rounding, not more.
            assert(
              Math.abs(x - runs[1].logprobs[i][j]) < 1e-4,
              `request ${i} step ${j}: ${x} vs ${runs[1].logprobs[i][j]}`,
            )
          )
        );
        // Greedy requests that share a prompt continue it alike (request 5 copies request 1's).
        assertEquals(runs[1].ids[5], runs[1].ids[1]);
        assert(
          new Set(runs[1].ids.map((x) => x.join())).size > 3,
          "the generations differ across prompts",
        );
      },
    );
  } finally {
    gpu.destroy();
  }
});
