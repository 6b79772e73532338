// The training loop end to end on a tiny model: it overfits a short text in full and LoRA mode,
// a GRPO step moves a sequence's log-prob in the direction of its advantage, exactly the
// trainable tensors change, and save → load / resume reproduce logits and the next step.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { LoraAdapters } from "../../src/model/lora.ts";
import { LoraLayout } from "../../src/model/lora_layout.ts";
import { referenceLogprobs } from "../../src/model/reference.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { checkpointFiles, readCheckpoint } from "../../src/train/checkpoint.ts";
import { fromPeftAdapter, toPeftAdapter } from "../../src/train/lora_peft.ts";
import { ModelTrainer, type TrainerOptions, type TrainSequence } from "../../src/train/trainer.ts";

const TEXT = "Hello, world! WebGPU trains agents.";

// std 0.3, not HF's 0.02: with a frozen tied head (LoRA mode) 0.02-scale embeddings bound the
// logits to about ±1.3, so no adapter could fit anything; trained models have larger weights.
async function tiny(name = "tiny-llama"): Promise<ModelWeights> {
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${name}.json`, import.meta.url)),
  );
  return initModel(parseModelConfig(json), { seed: 1, std: 0.3 });
}

function sftSequence(promptLen = 0): TrainSequence {
  const tokens = [257, ...new ByteTokenizer().encode(TEXT, { addSpecialTokens: false })];
  return { tokens, weights: tokens.slice(1).map((_, t) => (t + 1 < promptLen ? 0 : 1)) };
}

const base = (mode: "full" | "lora"): TrainerOptions => ({
  mode,
  lora: {
    rank: 8,
    alpha: 16,
    targets: ["q", "k", "v", "o", "gate", "up", "down"],
    adapters: ["a0"],
  },
  optimizer: { weightDecay: 0, maxGradNorm: 1 },
  schedule: { kind: "constant", lr: mode === "full" ? 1e-2 : 2e-2, warmupSteps: 0 },
  loss: { kind: "cross-entropy" },
  chunkRows: 64,
  slots: 4,
  maxLen: 64,
});

Deno.test("trainer", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const mode of ["full", "lora"] as const) {
      await t.step(`${mode}: a tiny model overfits a short text`, async () => {
        const tr = await ModelTrainer.create(gpu, await tiny(), base(mode));
        try {
          const seq = { ...sftSequence(), adapter: 0 };
          const first = await tr.step([seq]);
          let last = first;
          for (let i = 0; i < 150 && last.loss.loss > 0.05; i++) last = await tr.step([seq]);
          assert(
            first.loss.loss > 4,
            `initial loss ${first.loss.loss} should be near ln(264) ≈ 5.6`,
          );
          assert(
            last.loss.loss < 0.05,
            `${mode}: loss ${last.loss.loss.toFixed(4)} after ${last.step} steps`,
          );
        } finally {
          tr.destroy();
        }
      });
    }

    await t.step(
      "GRPO: a positive advantage raises a sequence's log-prob, a negative one lowers it",
      async () => {
        const w = await tiny();
        const tr = await ModelTrainer.create(gpu, w, {
          ...base("full"),
          loss: { kind: "policy" },
          schedule: { kind: "constant", lr: 1e-3, warmupSteps: 0 },
        });
        try {
          const A = [257, 65, 66, 67, 68, 69], B = [257, 70, 71, 72, 73];
          const seqOf = (tokens: number[], advantage: number): TrainSequence => ({
            tokens,
            advantage,
            weights: tokens.slice(1).map(() => 1),
            oldLogp: Array.from(referenceLogprobs(w, tokens)),
          });
          const sum = (x: ArrayLike<number>) => Array.from(x).reduce((a, b) => a + b, 0);
          const before = [sum(referenceLogprobs(w, A)), sum(referenceLogprobs(w, B))];
          const m = await tr.step([seqOf(A, 1), seqOf(B, -1)]);
          const after = await tr.readWeights();
          const [a1, b1] = [sum(referenceLogprobs(after, A)), sum(referenceLogprobs(after, B))];
          assert(a1 > before[0], `log p(A) should rise: ${before[0]} → ${a1}`);
          assert(b1 < before[1], `log p(B) should fall: ${before[1]} → ${b1}`);
          // On-policy the ratio is 1: token-mean of −A over 5 tokens at +1 and 4 at −1 is −1/9.
          assert(
            Math.abs(m.loss.loss - -1 / 9) < 1e-4,
            `policy loss ${m.loss.loss}, expected −1/9`,
          );
        } finally {
          tr.destroy();
        }
      },
    );

    await t.step("full mode changes every tensor; LoRA changes only the used adapter", async () => {
      const w = await tiny("tiny-qwen2");
      const full = await ModelTrainer.create(gpu, w, base("full"));
      try {
        await full.step([sftSequence()]);
        const after = await full.readWeights();
        for (const t of w.layout.tensors) {
          const a = w.data.subarray(t.offset, t.offset + t.size),
            b = after.data.subarray(t.offset, t.offset + t.size);
          assert(a.some((x, i) => x !== b[i]), `full mode: ${t.name} did not change`);
        }
      } finally {
        full.destroy();
      }
      const opts = {
        ...base("lora"),
        lora: { ...base("lora").lora!, adapters: ["used", "unused"] },
      };
      const lora = await ModelTrainer.create(gpu, w, opts);
      try {
        const before = (await lora.readLora())!;
        await lora.step([{ ...sftSequence(), adapter: 0 }]);
        await lora.step([{ ...sftSequence(), adapter: 0 }]); // B moves at step 1, A from step 2
        const after = (await lora.readLora())!;
        const baseAfter = await lora.readWeights();
        assert(
          baseAfter.data.every((x, i) => x === w.data[i]),
          "LoRA mode changed the frozen base",
        );
        const layout = lora.lora!.layout;
        for (const e of layout.entries) {
          for (const [a, expect] of [[0, true], [1, false]] as const) {
            const s0 = layout.slices(before, e, a), s1 = layout.slices(after, e, a);
            const changedA = s0.A.some((x, i) => x !== s1.A[i]),
              changedB = s0.B.some((x, i) => x !== s1.B[i]);
            assertEquals(
              [changedA, changedB],
              [expect, expect],
              `layer ${e.layer} ${e.module} adapter ${a}`,
            );
          }
        }
      } finally {
        lora.destroy();
      }
    });

    await t.step(
      "save → load gives identical logits; a resumed step is bit-identical",
      async () => {
        const w = await tiny();
        const opts = base("lora");
        const seq = { ...sftSequence(), adapter: 0 };
        const tr = await ModelTrainer.create(gpu, w, opts);
        const layout = new LoraLayout(w.config, opts.lora!);
        let resumed: ModelTrainer | null = null;
        try {
          for (let i = 0; i < 3; i++) await tr.step([seq]);
          const data = (await tr.readLora())!;
          const files = await checkpointFiles({
            state: { step: tr.completedSteps, rng: 0 },
            adapters: {
              a0: { adapter: toPeftAdapter(layout, data, 0, "tiny-llama"), base: w.config },
            },
            optimizers: { a0: await tr.optimizerState() },
          });
          const ck = await readCheckpoint(memoryFolder(files, "ckpt"), {
            adapterBases: { a0: w.config },
          });
          const loaded = new Float32Array(layout.totalFloats);
          fromPeftAdapter(layout, loaded, 0, ck.adapters.a0, w.config);
          // Identical logits from the saved and the loaded adapter.
          const logitsWith = async (d: Float32Array) => {
            const m = await GpuModel.create(gpu, w, { slots: 1, maxLen: 64, chunkRows: 64 });
            const ad = await LoraAdapters.create(gpu, layout, 64, d);
            m.attachLora(ad);
            const rows = seq.tokens.map((token, pos) => ({ token, slot: 0, pos, adapter: 0 }));
            const out = await m.forward(rows, rows.map((_, i) => i));
            ad.destroy();
            m.destroy();
            return out;
          };
          const [l1, l2] = [await logitsWith(data), await logitsWith(loaded)];
          assert(l1.every((x, i) => x === l2[i]), "logits differ after save → load");
          // Resume: a fresh trainer from the checkpoint takes the same next step, bit for bit.
          resumed = await ModelTrainer.create(gpu, w, { ...opts, loraData: loaded });
          resumed.restoreOptimizer(ck.optimizers.a0);
          const [m1, m2] = [await tr.step([seq]), await resumed.step([seq])];
          assertEquals(m2.step, m1.step);
          const [d1, d2] = [(await tr.readLora())!, (await resumed.readLora())!];
          assert(d1.every((x, i) => Object.is(x, d2[i])), "resumed step differs");
        } finally {
          resumed?.destroy();
          tr.destroy();
        }
      },
    );
  } finally {
    gpu.destroy();
  }
});
