// The fused decode forward (shaders/decode_forward.wgsl): a whole decode step in one dispatch.
// Each step's logits equal the float64 reference's full recomputation and the per-op path's,
// for Llama, Qwen2 (biases, untied head) and Qwen3 (q/k norms), with rows in scrambled slots at
// ragged positions, a row count that is not a multiple of the rows per workgroup, and awkward
// shapes, with rows' LoRA adapters; the per-op path takes over wherever the fused kernel must
// not run.

import { assert, assertEquals, assertThrows } from "../../assert.ts";
import { Gpu } from "../../../src/gpu/mod.ts";
import { KernelArgumentError } from "../../../src/gpu/errors.ts";
import { parseModelConfig } from "../../../src/model/config.ts";
import {
  DECODE_FORWARD_LIMITS,
  decodeForwardLoopBound,
  decodeForwardUnfit,
} from "../../../src/model/cpu_adapter/decode_forward.ts";
import { GpuModel } from "../../../src/model/gpu_model.ts";
import type { GpuModelOptions, ModelRow } from "../../../src/model/gpu_model_options.ts";
import { initModel } from "../../../src/model/init.ts";
import { LoraAdapters } from "../../../src/model/lora.ts";
import { LORA_MODULES, LoraLayout, mergeLora } from "../../../src/model/lora_layout.ts";
import { referenceForward } from "../../../src/model/reference.ts";
import type { ModelWeights } from "../../../src/model/weights.ts";
import { toleranceRatio } from "../../../src/ops/reference.ts";

async function preset(name: string): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(new URL(`../../../configs/models/${name}.json`, import.meta.url)),
  );
}

function weights(json: Record<string, unknown>): ModelWeights {
  return initModel(parseModelConfig(json), { seed: 5, std: 0.3, biasStd: 0.2, normNoise: 0.2 });
}

/** Odd shapes: one kv head per head, head_dim 8, hidden 24, intermediate 20, vocab 260, 3 layers, biases. */
async function awkward(): Promise<Record<string, unknown>> {
  return {
    ...await preset("tiny-qwen2"),
    hidden_size: 24,
    intermediate_size: 20,
    num_hidden_layers: 3,
    num_attention_heads: 3,
    num_key_value_heads: 3,
    head_dim: 8,
    vocab_size: 260,
  };
}

// Five sequences of different lengths in scrambled slots of six.
const SEQS = [
  [257, 5, 9, 14, 3, 77, 101, 2, 64],
  [257, 200, 1],
  [257, 33, 33, 33, 33, 8, 90],
  [257, 12, 250, 7, 7, 19],
  [257, 61, 62, 63, 64],
];
const SLOTS = [4, 0, 2, 5, 1];
const ADAPTERS = [0, 1, -1, 1, 0]; // each sequence's LoRA adapter in the LoRA steps (-1: none)
const PREFILL = 2; // tokens of each sequence prefilled by the per-op path; the rest are decode steps

/**
 * Prefills each sequence's first PREFILL tokens, then runs decode steps (teacher-forced: the
 * next token of each sequence) through encodeForward(decode) and returns every step's logits
 * [N, V] with the step's dispatch count. Sequences that have ended drop out of later steps.
 */
async function decodeSteps(
  gpu: Gpu,
  w: ModelWeights,
  opts: Partial<GpuModelOptions>,
  lora?: LoraAdapters,
) {
  const model = await GpuModel.create(gpu, w, { slots: 6, maxLen: 16, ...opts });
  const adapter = (i: number) => lora ? ADAPTERS[i] : undefined;
  try {
    if (lora) model.attachLora(lora);
    await model.prepareDecode();
    await model.forward(
      SEQS.flatMap((s, i) =>
        s.slice(0, PREFILL).map((token, pos) => ({
          token,
          slot: SLOTS[i],
          pos,
          adapter: adapter(i),
        }))
      ),
      [],
    );
    const steps: {
      rows: { seq: number; pos: number }[];
      logits: Float32Array;
      dispatches: number;
    }[] = [];
    for (let pos = PREFILL;; pos++) {
      const live = SEQS.map((s, i) => ({ s, i })).filter(({ s }) => pos < s.length);
      if (!live.length) break;
      const rows: ModelRow[] = live.map(({ s, i }) => ({
        token: s[pos],
        slot: SLOTS[i],
        pos,
        adapter: adapter(i),
      }));
      model.writeRows(rows, rows.map((_, i) => i));
      const rec = gpu.recorder("decode step");
      model.encodeForward(rec, rows.length, rows.length, true);
      const dispatches = rec.length;
      rec.submit();
      const logits = await gpu.readFloat32(model.logitsBuffer, rows.length * w.config.vocabSize);
      steps.push({ rows: live.map(({ i }) => ({ seq: i, pos })), logits, dispatches });
    }
    return steps;
  } finally {
    model.destroy();
  }
}

Deno.test("fused decode forward", async (t) => {
  const gpu = await Gpu.create();
  try {
    const models: [string, Record<string, unknown>][] = [
      ["tiny-llama", await preset("tiny-llama")],
      ["tiny-qwen2", await preset("tiny-qwen2")],
      ["tiny-qwen3", await preset("tiny-qwen3")],
      ["tiny-llama with attention_bias (q/k/v/o biases)", {
        ...await preset("tiny-llama"),
        attention_bias: true,
      }],
      ["awkward qwen2 (G 1, head_dim 8, hidden 24, vocab 260, 3 layers)", await awkward()],
    ];
    for (const [name, json] of models) {
      await t.step(
        `${name}: every step's logits equal the reference and the per-op path`,
        async () => {
          const w = weights(json);
          const V = w.config.vocabSize;
          const refs = SEQS.map((s) => referenceForward(w, s).logits);
          const fused = await decodeSteps(gpu, w, { decodeVariant: "fused" });
          const ops = await decodeSteps(gpu, w, { decodeVariant: "ops" });
          assertEquals(fused.length, SEQS[0].length - PREFILL);
          fused.forEach((step, k) => {
            assertEquals(step.dispatches, 1, "the whole step is one dispatch");
            assert(ops[k].dispatches > 1);
            step.rows.forEach(({ seq, pos }, r) => {
              const got = step.logits.subarray(r * V, (r + 1) * V);
              const want = refs[seq].subarray(pos * V, (pos + 1) * V);
              const ratio = toleranceRatio(got, want, 2e-4, 1e-3);
              assert(
                ratio <= 1,
                `step ${k} sequence ${seq} (pos ${pos}): ${
                  ratio.toFixed(2)
                }× the reference tolerance`,
              );
              const opsRatio = toleranceRatio(
                got,
                ops[k].logits.subarray(r * V, (r + 1) * V),
                1e-4,
                1e-4,
              );
              assert(
                opsRatio <= 1,
                `step ${k} sequence ${seq}: ${opsRatio.toFixed(2)}× the per-op tolerance`,
              );
            });
          });
        },
      );
    }

    await t.step(
      "rows per workgroup, columns per lane, workgroup size, where the inputs live and where the weights are read do not change the result",
      async () => {
        const w = weights(await preset("tiny-llama"));
        const base = await decodeSteps(gpu, w, { decodeVariant: "fused" });
        for (
          const decodeForward of [
            { rows: 1 },
            { rows: 3, workgroup: 24, cores: 1 },
            { rows: 8, cores: 1 },
            { cols: 4 },
            { cols: 16, rows: 2 },
            { rows: 16, cores: 1, cols: 4 },
            { workgroupInputs: false },
            { atlas: true, workgroupInputs: false, rows: 8 },
            { atlas: false },
          ]
        ) {
          const got = await decodeSteps(gpu, w, { decodeVariant: "fused", decodeForward });
          got.forEach((s, k) => {
            assertEquals(s.dispatches, 1);
            const ratio = toleranceRatio(s.logits, base[k].logits, 1e-4, 1e-4);
            assert(ratio <= 1, `${JSON.stringify(decodeForward)} step ${k}: ${ratio.toFixed(2)}×`);
          });
        }
      },
    );

    await t.step(
      "a training model's decode steps (RL rollouts) take the fused path too",
      async () => {
        const w = weights(await preset("tiny-qwen3"));
        const base = await decodeSteps(gpu, w, { decodeVariant: "fused" });
        const training = await decodeSteps(gpu, w, { decodeVariant: "fused", training: true });
        training.forEach((s, k) => {
          assertEquals(s.dispatches, 1);
          if (gpu.adapterClass === "cpu") {
            assertEquals(Array.from(s.logits), Array.from(base[k].logits), `step ${k}`);
          } else {
            // GPU-class kernels fold the RMSNorm into a prefill's few-row products in inference
            // only (a training forward keeps 1/rms): the caches round differently.
            const ratio = toleranceRatio(s.logits, base[k].logits, 1e-5, 1e-4);
            assert(ratio <= 1, `step ${k}: ${ratio.toFixed(2)}× the tolerance`);
          }
        });
      },
    );

    await t.step(
      "rows' LoRA adapters apply inside the fused step (rank 4k); other ranks take the per-op path",
      async () => {
        const w = weights(await preset("tiny-llama"));
        const V = w.config.vocabSize;
        for (const rank of [4, 2]) {
          const layout = new LoraLayout(w.config, {
            rank,
            alpha: 2 * rank,
            targets: [...LORA_MODULES],
            adapters: ["a", "b"],
          });
          const data = new Float32Array(layout.totalFloats).map((_, i) => Math.sin(i * 0.37) * 0.2);
          const adapters = async () => await LoraAdapters.create(gpu, layout, 256, data);
          const fused = await decodeSteps(gpu, w, { decodeVariant: "fused" }, await adapters());
          const ops = await decodeSteps(gpu, w, { decodeVariant: "ops" }, await adapters());
          const refs = SEQS.map((s, i) =>
            referenceForward(ADAPTERS[i] >= 0 ? mergeLora(w, layout, data, ADAPTERS[i]) : w, s)
              .logits
          );
          const base = SEQS.map((s) => referenceForward(w, s).logits);
          fused.forEach((step, k) => {
            assertEquals(step.dispatches, rank === 4 ? 1 : ops[k].dispatches, `rank ${rank}`);
            step.rows.forEach(({ seq, pos }, r) => {
              const got = step.logits.subarray(r * V, (r + 1) * V);
              const ratio = toleranceRatio(
                got,
                refs[seq].subarray(pos * V, (pos + 1) * V),
                2e-4,
                1e-3,
              );
              assert(
                ratio <= 1,
                `rank ${rank} step ${k} sequence ${seq}: ${
                  ratio.toFixed(2)
                }× the reference tolerance`,
              );
              const opsRatio = toleranceRatio(
                got,
                ops[k].logits.subarray(r * V, (r + 1) * V),
                1e-4,
                1e-4,
              );
              assert(
                opsRatio <= 1,
                `rank ${rank} step ${k} sequence ${seq}: ${
                  opsRatio.toFixed(2)
                }× the per-op tolerance`,
              );
              // The adapters must matter, or the checks above prove nothing.
              if (ADAPTERS[seq] >= 0) {
                assert(
                  toleranceRatio(got, base[seq].subarray(pos * V, (pos + 1) * V), 2e-4, 1e-3) > 1,
                );
              }
            });
          });
        }
      },
    );

    await t.step("the host's limits are the shader's", async () => {
      const wgsl = await Deno.readTextFile(
        new URL("../../../shaders/decode_forward_core.wgsl", import.meta.url),
      );
      for (const [name, value] of Object.entries(DECODE_FORWARD_LIMITS)) {
        const m = wgsl.match(new RegExp(`^const ${name}: u32 = (\\d+)u;`, "m"));
        assertEquals(Number(m?.[1]), value, `${name} in decode_forward_core.wgsl`);
      }
    });

    await t.step("models it cannot run are named, and the default falls back", async () => {
      const limits = { maxWorkgroupBytes: 32768, maxBindingBytes: 2 ** 27 };
      const one = { buffers: [{ size: 1024 } as GPUBuffer], anySplit: false };
      const cfg = (over: Record<string, unknown>) =>
        parseModelConfig({ ...JSON.parse(JSON.stringify(models[0][1])), ...over });
      assertEquals(decodeForwardUnfit(cfg({}), 64, one, limits), null);
      assert(decodeForwardUnfit(cfg({ head_dim: 12 }), 64, one, limits)?.includes("head_dim 12"));
      assert(
        decodeForwardUnfit(cfg({ head_dim: 128 }), 64, one, limits)?.includes(
          "attention registers",
        ),
      );
      assert(
        decodeForwardUnfit(cfg({ vocab_size: 263 }), 64, one, limits)?.includes("vocabulary 263"),
      );
      assert(
        decodeForwardUnfit(cfg({ num_hidden_layers: 33 }), 64, one, limits)?.includes("33 layers"),
      );
      // Ten storage buffers, SwiftShader's limit in Chromium, hold the forward.
      assertEquals(
        decodeForwardUnfit(cfg({}), 64, one, { ...limits, maxStorageBuffers: 10 }),
        null,
      );
      assert(
        decodeForwardUnfit(cfg({}), 64, one, { ...limits, maxStorageBuffers: 9 })?.includes(
          "10 storage buffers",
        ),
      );
      // Only the attention chunks' maxima and sums are workgroup memory (the rest is scratch).
      assert(
        decodeForwardUnfit(cfg({}), 64, one, { ...limits, maxWorkgroupBytes: 128 })?.includes(
          "workgroup memory",
        ),
      );
      assert(
        decodeForwardUnfit(cfg({ hidden_size: 2048, intermediate_size: 5632 }), 64, one, limits)
          ?.includes("loop iterations"),
      );
      assert(
        decodeForwardUnfit(cfg({}), 64, one, limits, { cols: 12 })?.includes("columns per lane 12"),
      );
      assert(
        decodeForwardUnfit(cfg({}), 64, one, limits, { rows: 8, cols: 16 })?.includes(
          "accumulators",
        ),
      );
      assert(
        decodeForwardUnfit(cfg({ hidden_size: 68, intermediate_size: 200 }), 64, one, limits, {
          cols: 8,
        })?.includes("must divide"),
      );
      assertEquals(
        decodeForwardUnfit(cfg({ hidden_size: 68, intermediate_size: 200 }), 64, one, limits),
        null,
        "the default width divides",
      );
      assert(
        decodeForwardUnfit(cfg({}), 64, { ...one, anySplit: true }, limits)?.includes(
          "one storage binding",
        ),
      );
      assert(
        decodeForwardUnfit(cfg({}), 64, one, limits, { workgroup: 8 })?.includes("at least 16"),
      );
      assert(
        decodeForwardUnfit(cfg({}), 64, one, limits, { rows: 17 })?.includes(
          "rows per workgroup 17",
        ),
      );
      // llvmpipe's loop cap: 32 layers of hidden 128 over a 4096-position cache is too many
      // (over 2048 positions too, with 4 columns per lane).
      const deep = cfg({ hidden_size: 128, intermediate_size: 384, num_hidden_layers: 32 });
      assertEquals(decodeForwardUnfit(deep, 64, one, limits), null);
      assertEquals(decodeForwardUnfit(deep, 2048, one, limits), null);
      assert(decodeForwardUnfit(deep, 2048, one, limits, { cols: 4 })?.includes("loop iterations"));
      assert(decodeForwardUnfit(deep, 4096, one, limits)?.includes("loop iterations"));
      assert(
        decodeForwardLoopBound(cfg({}), 64, 4, 16) < decodeForwardLoopBound(cfg({}), 128, 4, 16),
      );
      // Rows' adapters add their x·Aᵀ loops (a step's bound divides the cap for chained sampling steps).
      assert(
        decodeForwardLoopBound(cfg({}), 64, 8, 16, 2, 4) >
          decodeForwardLoopBound(cfg({}), 64, 8, 16, 2) + 500,
      );
      // Pinned "fused" on a model that does not fit is an error; the default takes the per-op path.
      const big = weights({
        ...models[0][1],
        head_dim: 12,
        num_attention_heads: 4,
        num_key_value_heads: 2,
      });
      await assertThrowsAsync(
        () => GpuModel.create(gpu, big, { slots: 2, maxLen: 8, decodeVariant: "fused" }),
        "head_dim 12",
      );
      const m = await GpuModel.create(gpu, big, { slots: 2, maxLen: 8 });
      try {
        m.writeRows([{ token: 1, slot: 0, pos: 0 }, { token: 2, slot: 1, pos: 0 }], [0, 1]);
        const rec = gpu.recorder("fallback");
        m.encodeForward(rec, 2, 2, true);
        assert(rec.length > 1);
        rec.submit();
        assertThrows(
          () => m.encodeForward(gpu.recorder("bad"), 2, 1, true),
          "KernelArgumentError",
          "all 2 rows",
        );
      } finally {
        m.destroy();
      }
    });
  } finally {
    gpu.destroy();
  }
});

async function assertThrowsAsync(fn: () => Promise<unknown>, includes: string) {
  try {
    await fn();
  } catch (e) {
    assert(
      e instanceof KernelArgumentError,
      `expected KernelArgumentError, got ${(e as Error).name}`,
    );
    assert(
      (e as Error).message.includes(includes),
      `"${(e as Error).message}" should mention "${includes}"`,
    );
    return;
  }
  throw new Error("expected an error");
}
