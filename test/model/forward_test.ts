// The GPU forward pass against the independent float64 reference (src/model/reference.ts):
// tiny Llama, Qwen2 (q/k/v biases) and Qwen3 (q/k norms, explicit head_dim) models, loaded from
// HF folders written in F32, F16 and BF16; KV-cache decoding against full recomputation; a
// ragged batch of two sequences in one call.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import type { FloatDtype } from "../../src/io/dtypes.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import type { ModelRow } from "../../src/model/gpu_model_options.ts";
import { FOLD_WORKGROUP_BYTES } from "../../src/model/attention_fold.ts";
import {
  attentionSplits,
  laneAttentionFits,
  ModelKernels,
  scoresFit,
  VEC4_ATTENTION_BYTES,
} from "../../src/model/model_kernels.ts";
import { hfFolderFiles, initModel } from "../../src/model/init.ts";
import { LoraAdapters } from "../../src/model/lora.ts";
import { LORA_MODULES, LoraLayout } from "../../src/model/lora_layout.ts";
import { referenceForward } from "../../src/model/reference.ts";
import { loadModel, type ModelWeights } from "../../src/model/weights.ts";
import { toleranceRatio } from "../../src/ops/reference.ts";

const PRESETS = ["tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-qwen3:hd6"] as const;

async function preset(name: string, dtype: FloatDtype): Promise<ModelWeights> {
  // "<preset>:hd6": head_dim 6, which runs the scalar attention kernel (vec4 needs a multiple of 4).
  const [base, variant] = name.split(":");
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${base}.json`, import.meta.url)),
  );
  if (variant === "hd6") json.head_dim = 6;
  if (variant === "hd128") json.head_dim = 128;
  // Larger weights than HF's 0.02 so attention is far from uniform and errors would show.
  const w = initModel(parseModelConfig(json), { seed: 7, std: 0.25, biasStd: 0.2, normNoise: 0.3 });
  return await loadModel(memoryFolder(hfFolderFiles(w, { dtype }), `${name}-${dtype}`));
}

const PROMPT = [257, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 3, 200, 258];

Deno.test("GPU forward matches the float64 reference", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const name of PRESETS) {
      for (const dtype of ["F32", "F16", "BF16"] as const) {
        await t.step(`${name} ${dtype}: logits at every position`, async () => {
          const w = await preset(name, dtype);
          // Both RMSNorm variants: per-row invocations (CPU default) and workgroup reductions.
          const normVariant = dtype === "F16" ? "workgroup" : "rows";
          // Both vec4 attention kernels: one invocation per (row, head) (CPU default) and one
          // workgroup per (row, head) (GPU default).
          const attentionVariant = dtype === "BF16" ? "workgroup" : "lane";
          const model = await GpuModel.create(gpu, w, {
            slots: 2,
            maxLen: 64,
            chunkRows: 7,
            normVariant,
            attentionVariant,
          });
          try {
            const rows: ModelRow[] = PROMPT.map((token, pos) => ({ token, slot: 1, pos }));
            const got = await model.forward(rows, rows.map((_, i) => i));
            const want = referenceForward(w, PROMPT).logits;
            const r = toleranceRatio(got, want, 2e-4, 1e-3);
            assert(r <= 1, `${name} ${dtype}: logits differ by ${r.toFixed(2)}× the tolerance`);
          } finally {
            model.destroy();
          }
        });
      }
    }

    for (const name of PRESETS) {
      await t.step(`${name}: KV-cache decode equals full recomputation`, async () => {
        const w = await preset(name, "F32");
        const model = await GpuModel.create(gpu, w, {
          slots: 3,
          maxLen: 64,
          attentionVariant: name === "tiny-qwen2" ? "workgroup" : "lane",
        });
        try {
          const prompt = PROMPT.slice(0, 6), rest = PROMPT.slice(6);
          await model.forward(prompt.map((token, pos) => ({ token, slot: 2, pos })), []);
          const stepwise: Float32Array[] = [];
          for (let i = 0; i < rest.length; i++) {
            stepwise.push(
              await model.forward([{ token: rest[i], slot: 2, pos: prompt.length + i }], [0]),
            );
          }
          const full = referenceForward(w, PROMPT).logits;
          const V = w.config.vocabSize;
          stepwise.forEach((row, i) => {
            const want = full.subarray((prompt.length + i) * V, (prompt.length + i + 1) * V);
            const r = toleranceRatio(row, want, 2e-4, 1e-3);
            assert(r <= 1, `step ${i}: ${r.toFixed(2)}× tolerance`);
          });
        } finally {
          model.destroy();
        }
      });
    }

    await t.step("a ragged batch: two sequences of different lengths in one call", async () => {
      const w = await preset("tiny-qwen2", "F32");
      const model = await GpuModel.create(gpu, w, { slots: 2, maxLen: 32 });
      try {
        const a = PROMPT.slice(0, 9), b = PROMPT.slice(4, 8);
        // Interleave the two prompts' rows; each row only sees its own slot's earlier positions.
        const rows: ModelRow[] = [];
        for (let i = 0; i < Math.max(a.length, b.length); i++) {
          if (i < a.length) rows.push({ token: a[i], slot: 0, pos: i });
          if (i < b.length) rows.push({ token: b[i], slot: 1, pos: i });
        }
        const lastA = rows.findLastIndex((r) => r.slot === 0),
          lastB = rows.findLastIndex((r) => r.slot === 1);
        const got = await model.forward(rows, [lastA, lastB]);
        const V = w.config.vocabSize;
        const wantA = referenceForward(w, a).logits.subarray((a.length - 1) * V);
        const wantB = referenceForward(w, b).logits.subarray((b.length - 1) * V);
        assert(toleranceRatio(got.subarray(0, V), wantA, 2e-4, 1e-3) <= 1, "sequence A");
        assert(toleranceRatio(got.subarray(V), wantB, 2e-4, 1e-3) <= 1, "sequence B");
      } finally {
        model.destroy();
      }
    });

    await t.step(
      "a training-mode model returns the wanted rows' logits too (a trainer's model scores log-probs)",
      async () => {
        const w = await preset("tiny-llama", "F32");
        const model = await GpuModel.create(gpu, w, {
          slots: 2,
          maxLen: 32,
          chunkRows: 8,
          training: true,
        });
        try {
          const rows: ModelRow[] = PROMPT.map((token, pos) => ({ token, slot: 0, pos }));
          const want = [16, 2, 9, 3]; // out of order, across the 8-row chunks
          const got = await model.forward(rows, want);
          const V = w.config.vocabSize, ref = referenceForward(w, PROMPT).logits;
          want.forEach((r, i) => {
            const ratio = toleranceRatio(
              got.subarray(i * V, (i + 1) * V),
              ref.subarray(r * V, (r + 1) * V),
              2e-4,
              1e-3,
            );
            assert(ratio <= 1, `row ${r}: logits differ by ${ratio.toFixed(2)}× the tolerance`);
          });
        } finally {
          model.destroy();
        }
      },
    );

    await t.step(
      "lane and streaming (flash) attention over a long context with head_dim 128 equal the workgroup kernel",
      async () => {
        // 128 = the widest head the lane kernel takes (its head-dim loops unroll); 600 positions.
        // Two query heads per kv head: the lane side runs the pair entry (attention_lane_g2).
        const w = await preset("tiny-qwen3:hd128", "F32");
        const tokens = Array.from({ length: 600 }, (_, i) => (i * 37 + 11) % 256 + 1);
        const rows: ModelRow[] = tokens.map((token, pos) => ({ token, slot: 0, pos }));
        const want = rows.map((_, i) => i).filter((i) => i % 50 === 49);
        const logits: Float32Array[] = [];
        for (const attentionVariant of ["lane", "workgroup", "flash"] as const) {
          const model = await GpuModel.create(gpu, w, {
            slots: 1,
            maxLen: 640,
            chunkRows: 256,
            attentionVariant,
          });
          try {
            assert(
              model.kernels.attentionVariant === attentionVariant,
              `asked for ${attentionVariant}, got ${model.kernels.attentionVariant}`,
            );
            logits.push(await model.forward(rows, want));
          } finally {
            model.destroy();
          }
        }
        const r = toleranceRatio(logits[0], logits[1], 1e-5, 1e-4);
        assert(r <= 1, `lane vs workgroup logits differ by ${r.toFixed(2)}× the tolerance`);
        // The streaming kernel: 600 positions are three 256-position tiles, the last ragged.
        const f = toleranceRatio(logits[2], logits[1], 1e-5, 1e-4);
        assert(f <= 1, `flash vs workgroup logits differ by ${f.toFixed(2)}× the tolerance`);
      },
    );

    await t.step(
      "decode attention split over positions equals one workgroup per (head, row)",
      async () => {
        // head_dim 128, two query heads per kv head; a 300-position cache: 3 splits of 128
        // positions. Decode rows at 1 position (one split), at a split boundary (128, 129), and
        // deep in the context, alone and ragged in one call; a prefill chunk of 256 rows × 4
        // heads is over SPLIT_ROW_HEADS (64) and takes the plain kernel on both models.
        const w = await preset("tiny-qwen3:hd128", "F32");
        assertEquals(attentionSplits(700), { span: 128, splits: 6 });
        assertEquals(attentionSplits(128).splits, 0);
        assertEquals(attentionSplits(32768), { span: 512, splits: 64 });
        const tokens = Array.from({ length: 260 }, (_, i) => (i * 37 + 11) % 256 + 1);
        const calls: ModelRow[][] = [
          [{ token: 5, slot: 1, pos: 0 }],
          [{ token: 7, slot: 0, pos: 128 }],
          [{ token: 9, slot: 0, pos: 129 }, { token: 11, slot: 1, pos: 1 }],
          [{ token: 13, slot: 0, pos: 259 }, { token: 17, slot: 2, pos: 150 }],
        ];
        const logits: Float32Array[][] = [];
        for (const attentionSplit of [true, false]) {
          const model = await GpuModel.create(gpu, w, {
            slots: 3,
            maxLen: 300,
            chunkRows: 256,
            attentionVariant: "workgroup",
            attentionSplit,
          });
          try {
            assertEquals(model.kernels.attnSplit.splits, attentionSplit ? 3 : 0);
            // Caches: slot 0 the 260 tokens, slot 2 the first 150 (prefill, no splits).
            await model.forward(tokens.map((token, pos) => ({ token, slot: 0, pos })), []);
            await model.forward(
              tokens.slice(0, 150).map((token, pos) => ({ token, slot: 2, pos })),
              [],
            );
            const got: Float32Array[] = [];
            for (const rows of calls) got.push(await model.forward(rows, rows.map((_, i) => i)));
            logits.push(got);
          } finally {
            model.destroy();
          }
        }
        calls.forEach((rows, i) => {
          const r = toleranceRatio(logits[0][i], logits[1][i], 1e-5, 1e-4);
          assert(r <= 1, `call ${i} (${rows.length} rows): ${r.toFixed(2)}× the tolerance`);
        });
        // Against the float64 reference too: slot 1 decoded [5, 11] from position 0.
        const want = referenceForward(w, [5, 11]).logits;
        const V = w.config.vocabSize;
        const r = toleranceRatio(logits[0][2].subarray(V, 2 * V), want.subarray(V), 2e-4, 1e-3);
        assert(r <= 1, `slot 1's second token: ${r.toFixed(2)}× the tolerance`);
      },
    );

    await t.step(
      "decode steps with RoPE, the cache write and Qwen3's q/k norms or Qwen2's q/k/v biases folded into attention equal them unfolded, caches included",
      async () => {
        // Every fold form: the scores in workgroup memory (Llama, Qwen2 biases; Qwen3, its q/k
        // norms folded too or not, two query heads per kv head), the split form (3 splits, the rows deep in the second or
        // in the first) and the flash form, and a training model's decode steps, which take the
        // same dispatches as an inference model's (a rollout from the trainer's model).
        const forms = [
          { name: "tiny-llama", maxLen: 40, attentionVariant: "workgroup" },
          { name: "tiny-qwen2", maxLen: 40, attentionVariant: "workgroup" },
          { name: "tiny-qwen3:hd128", maxLen: 300, attentionVariant: "workgroup" },
          {
            name: "tiny-qwen3:hd128",
            maxLen: 300,
            attentionVariant: "flash",
            attentionSplit: false,
          },
          { name: "tiny-llama", maxLen: 40, attentionVariant: "workgroup", training: true },
          // A rollout of Qwen2 with LoRA on every projection: the folded biases are added after
          // the adapters' terms, not before (a rounding apart).
          { name: "tiny-qwen2", maxLen: 40, attentionVariant: "workgroup", lora: true },
        ] as const;
        const dispatchesBy = new Map<string, number>();
        for (const form of forms) {
          const w = await preset(form.name, "F32");
          const L = w.config.numLayers;
          const long = form.maxLen > 128;
          const prompt = Array.from({ length: long ? 136 : 20 }, (_, i) => (i * 37 + 11) % 256 + 1);
          // Slot 0 decodes deep in its context, slot 1 from position 3, slot 2 from 1 (one row
          // per slot a step; slot 2 joins late: a ragged batch).
          const adapter = "lora" in form ? 0 : undefined;
          const steps = Array.from({ length: 6 }, (_, k) =>
            [
              { token: 5 + k, slot: 0, pos: prompt.length + k, adapter },
              { token: 9 + k, slot: 1, pos: 3 + k, adapter },
              ...(k >= 2 ? [{ token: 13 + k, slot: 2, pos: k - 1, adapter }] : []),
            ] as ModelRow[]);
          // Asked for the most (Qwen3 and Qwen2: RoPE alone too), and for none.
          const asked = w.config.qkNorm || w.config.qkvBias
            ? ["qk-norm", "rope", "none"] as const
            : ["qk-norm", "none"] as const;
          const runs: {
            fold: string;
            logits: Float32Array[];
            caches: Float32Array[];
            dispatches: number;
          }[] = [];
          for (const attentionFold of asked) {
            const model = await GpuModel.create(gpu, w, {
              slots: 3,
              maxLen: form.maxLen,
              chunkRows: 256,
              attentionVariant: form.attentionVariant,
              attentionSplit: "attentionSplit" in form ? form.attentionSplit : undefined,
              attentionFold,
              training: "training" in form,
              // Both sides' q/k norms sum as the fold does (one workgroup a head).
              normVariant: "workgroup",
            });
            try {
              if ("lora" in form) {
                const layout = new LoraLayout(w.config, {
                  rank: 4,
                  alpha: 8,
                  targets: [...LORA_MODULES],
                  adapters: ["a"],
                });
                const data = new Float32Array(layout.totalFloats).map((_, i) =>
                  Math.sin(i * 0.37) * 0.2
                );
                model.attachLora(await LoraAdapters.create(gpu, layout, 256, data));
              }
              // The most folds a model's q/k norms or q/k/v biases, where it has them.
              const want = attentionFold !== "qk-norm"
                ? attentionFold
                : w.config.qkNorm
                ? "qk-norm"
                : w.config.qkvBias
                ? "rope-bias"
                : "rope";
              assertEquals(model.kernels.attentionFold, want, "the fold compiled");
              await model.forward(
                prompt.map((token, pos) => ({ token, slot: 0, pos, adapter })),
                [],
              );
              await model.forward(
                prompt.slice(0, 3).map((token, pos) => ({ token, slot: 1, pos, adapter })),
                [],
              );
              await model.forward([{ token: 3, slot: 2, pos: 0, adapter }], []);
              const logits: Float32Array[] = [];
              for (const rows of steps) {
                model.writeRows(rows, rows.map((_, i) => i));
                const rec = gpu.recorder("decode step");
                model.encodeForward(rec, rows.length, rows.length, true);
                rec.submit();
                logits.push(
                  await gpu.readFloat32(model.logitsBuffer, rows.length * w.config.vocabSize),
                );
              }
              const count = gpu.recorder("count");
              model.encodeForward(count, 3, 3, true);
              const plan = count.finish(), dispatches = plan.dispatchCount;
              plan.destroy();
              const caches = await Promise.all(
                [...model.kCache, ...model.vCache].map((r) => gpu.readFloat32(r)),
              );
              runs.push({ fold: want, logits, caches, dispatches });
            } finally {
              model.destroy();
            }
          }
          const plain = runs[runs.length - 1];
          dispatchesBy.set(`${form.name} ${"training" in form}`, runs[0].dispatches);
          for (const fold of runs.slice(0, -1)) {
            const what = `${form.name} ${form.attentionVariant}${
              "training" in form ? " (training model)" : "lora" in form ? " (LoRA)" : ""
            }, fold ${fold.fold}`;
            // rope_store (and Qwen3's q/k norm dispatch, or Qwen2's bias adds) gone, attention
            // taking their place.
            const saved = fold.fold === "qk-norm" || fold.fold === "rope-bias" ? 2 * L : L;
            assertEquals(fold.dispatches, plain.dispatches - saved, `${what}: dispatches a step`);
            fold.logits.forEach((x, i) => {
              const r = toleranceRatio(x, plain.logits[i], 1e-5, 1e-4);
              assert(r <= 1, `${what}, step ${i}: ${r.toFixed(2)}× the tolerance`);
            });
            // Exact but for rounding: with LoRA the folded biases add after the adapters' terms.
            const [abs, rel] = "lora" in form ? [1e-5, 1e-4] : [1e-6, 1e-6];
            fold.caches.forEach((x, i) => {
              const r = toleranceRatio(x, plain.caches[i], abs, rel);
              assert(r <= 1, `${what}, cache ${i}: ${r.toFixed(2)}× the tolerance`);
            });
            if ("lora" in form) continue;
            // Slot 2's decoded tokens against the float64 reference.
            const V = w.config.vocabSize, seq = [3, 15, 16, 17, 18];
            const ref = referenceForward(w, seq).logits;
            const last = fold.logits[5].subarray(2 * V, 3 * V);
            const r = toleranceRatio(last, ref.subarray(4 * V), 2e-4, 1e-3);
            assert(r <= 1, `${what}: slot 2 against the reference, ${r.toFixed(2)}× the tolerance`);
          }
        }
        assertEquals(
          dispatchesBy.get("tiny-llama true"),
          dispatchesBy.get("tiny-llama false"),
          "a training model's decode step records what an inference model's does",
        );
      },
    );

    await t.step(
      "every fold fits a device that binds 10 storage buffers a stage (Chrome's common limit); fewer take less",
      async () => {
        const want: Record<number, Record<string, string>> = {
          10: { "tiny-llama": "rope", "tiny-qwen2": "rope-bias", "tiny-qwen3": "qk-norm" },
          9: { "tiny-llama": "rope", "tiny-qwen2": "rope", "tiny-qwen3": "rope" },
          8: { "tiny-llama": "none", "tiny-qwen2": "none", "tiny-qwen3": "none" },
        };
        for (const cap of [10, 9, 8]) {
          const small = await Gpu.create({ capLimits: { maxStorageBuffersPerShaderStage: cap } });
          try {
            assertEquals(small.device.limits.maxStorageBuffersPerShaderStage, cap);
            for (const name of ["tiny-llama", "tiny-qwen2", "tiny-qwen3"]) {
              const w = await preset(name, "F32");
              const logits: Float32Array[] = [];
              for (const attentionFold of ["qk-norm", "none"] as const) {
                const model = await GpuModel.create(small, w, {
                  slots: 1,
                  maxLen: 16,
                  attentionVariant: "workgroup",
                  attentionFold,
                  normVariant: "workgroup",
                });
                try {
                  if (attentionFold !== "none") {
                    assertEquals(model.kernels.attentionFold, want[cap][name], `${name} at ${cap}`);
                  }
                  await model.forward([5, 6, 7].map((token, pos) => ({ token, slot: 0, pos })), []);
                  model.writeRows([{ token: 8, slot: 0, pos: 3 }], [0]);
                  const rec = small.recorder("decode step");
                  model.encodeForward(rec, 1, 1, true);
                  rec.submit();
                  logits.push(await small.readFloat32(model.logitsBuffer, w.config.vocabSize));
                } finally {
                  model.destroy();
                }
              }
              const r = toleranceRatio(logits[0], logits[1], 1e-5, 1e-4);
              assert(r <= 1, `${name} at ${cap}: the fold ${r.toFixed(2)}× the tolerance`);
            }
          } finally {
            small.destroy();
          }
        }
      },
    );

    await t.step("lane attention only where llvmpipe's loop cap cannot cut it short", async () => {
      assert(
        laneAttentionFits(128, 4096, 1) && laneAttentionFits(64, 4096, 7),
        "common shapes take the lane kernel",
      );
      assert(!laneAttentionFits(256, 64, 1), "head_dim 256: the head-dim loops would not unroll");
      assert(
        !laneAttentionFits(64, 40000, 1) && !laneAttentionFits(64, 16384, 4),
        "positions · (G + 1) over the cap",
      );
      const k = await ModelKernels.create(gpu, 64, { headDim: 256, attentionVariant: "lane" });
      assert(k.attentionVariant === "workgroup", "head_dim 256 falls back to the workgroup kernel");
    });

    await t.step(
      "a context whose scores overflow workgroup memory streams them (flash), any variant asked",
      async () => {
        const bytes = gpu.device.limits.maxComputeWorkgroupStorageSize;
        const long = bytes / 4; // more positions than the scores array can hold
        assert(!scoresFit(gpu, long, true) && scoresFit(gpu, 256, true));
        for (const attentionVariant of ["workgroup", undefined] as const) {
          const k = await ModelKernels.create(gpu, long, { headDim: 64, attentionVariant });
          assertEquals(
            k.attentionVariant,
            gpu.adapterClass === "cpu" && !attentionVariant ? "lane" : "flash",
          );
        }
        // The folded decode attention holds more than attention4 in workgroup memory: at the
        // longest cache attention4 holds, the fold (Qwen3's, the largest) streams its scores
        // instead of failing to compile.
        const edge = Math.floor((bytes - VEC4_ATTENTION_BYTES) / 4);
        assert(
          scoresFit(gpu, edge, true) && !scoresFit(gpu, edge, true, FOLD_WORKGROUP_BYTES.rope),
        );
        const folded = await ModelKernels.create(gpu, edge, {
          headDim: 64,
          attentionVariant: "workgroup",
          attentionFold: "qk-norm",
          qkNorm: true,
        });
        assertEquals([folded.attentionVariant, folded.attentionFold], ["workgroup", "qk-norm"]);
        // head_dim 6 has no streaming form: a named error, not a pipeline failure
        let err: Error | null = null;
        await ModelKernels.create(gpu, long, { headDim: 6 }).catch((e) => (err = e));
        assert(err !== null && (err as Error).name === "KernelArgumentError", String(err));
        assert((err as Error).message.includes("stream longer contexts"), (err as Error).message);
      },
    );

    await t.step("bad rows are named errors", async () => {
      const w = await preset("tiny-llama", "F32");
      const model = await GpuModel.create(gpu, w, { slots: 1, maxLen: 8 });
      try {
        for (
          const row of [{ token: 9999, slot: 0, pos: 0 }, { token: 1, slot: 1, pos: 0 }, {
            token: 1,
            slot: 0,
            pos: 8,
          }]
        ) {
          let name = "";
          try {
            await model.forward([row], [0]);
          } catch (e) {
            name = (e as Error).name;
          }
          assert(
            name === "KernelArgumentError",
            `${JSON.stringify(row)} gave ${name || "no error"}`,
          );
        }
      } finally {
        model.destroy();
      }
    });
  } finally {
    gpu.destroy();
  }
});
