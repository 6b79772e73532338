// Decode cases that run on any adapter, in Deno and in the browser's kernel worker: the fused
// decode step (where the adapter takes it) against the per-op path and the float64 reference,
// and generation with sampling inside the step (where the adapter allows it) against the
// three-dispatch step. Each returns a tolerance ratio (≤ 1 passes; exact checks return 0 or ∞).

import type { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { BackwardKernels } from "../../src/model/backward_kernels.ts";
import { CpuAdapterDecode } from "../../src/model/cpu_adapter/decode.ts";
import { Generator } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { ModelKernels } from "../../src/model/model_kernels.ts";
import { referenceForward } from "../../src/model/reference.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { toleranceRatio } from "../../src/ops/reference.ts";
import { ModelTrainer } from "../../src/train/trainer.ts";
import { halfRounded, TINY_SEQS, tinyTrainerOpts } from "./tiny_fixtures.ts";

/** Whether a model's decode steps read weight textures as current as its parameters. */
const texturesCurrent = (m: GpuModel) =>
  m.decode instanceof CpuAdapterDecode && m.decode.weightTexturesCurrent;
/** Whether a model's fused decode step reads the parameter atlas. */
const atlasUsed = (m: GpuModel) => m.decode instanceof CpuAdapterDecode && m.decode.usesAtlas;

export interface DecodeCase {
  name: string;
  /**
   * The case reads weight textures or the parameter atlas: llvmpipe's decode paths (its matmul
   * picks ask for them), which the browser's worker leaves out (SwiftShader never takes them).
   */
  textures?: true;
  run(gpu: Gpu): Promise<number>;
}

/**
 * A 2-layer model of tiny-llama's width (hidden 64, 4 heads over 2 kv heads, head_dim 16) with
 * random weights and noisy norms; `over` gives its type and what else differs.
 */
function tinyModel(over: Record<string, unknown>, seed: number): ModelWeights {
  return initModel(
    parseModelConfig({
      vocab_size: 264,
      hidden_size: 64,
      intermediate_size: 192,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 16,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      max_position_embeddings: 1024,
      tie_word_embeddings: true,
      bos_token_id: 257,
      eos_token_id: 258,
      ...over,
    }),
    { seed, std: 0.3, normNoise: 0.2 },
  );
}

/** tiny-llama's shape (configs/models/tiny-llama.json). */
const tinyLlama = () => tinyModel({ model_type: "llama" }, 9);
/** tiny-qwen2's shape: q/k/v biases, an untied LM head (head_dim implied). */
const tinyQwen2 = () =>
  tinyModel({
    model_type: "qwen2",
    head_dim: undefined,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
  }, 4);
/** tiny-qwen3's shape: per-head q/k norms (noisy, so they matter). */
const tinyQwen3 = () => tinyModel({ model_type: "qwen3", rms_norm_eps: 1e-6 }, 6);
/** Llama with head_dim 32 (wider than hidden/heads): its texture decode fuses RoPE and the cache write. */
const llamaHd32 = () => tinyModel({ model_type: "llama", intermediate_size: 128, head_dim: 32 }, 6);

const SEQS = [[257, 5, 9, 14, 3, 77, 101], [257, 200, 1, 7], [257, 33, 33, 33, 8, 90]];
const SEQS3 = SEQS;
/** Ten sequences: decode steps of 8–10 rows (the texture form's 8-row tiles). */
const SEQS10 = Array.from(
  { length: 10 },
  (_, i) => [257, ...Array.from({ length: 4 + (i % 3) }, (_, j) => (i * 37 + j * 11) % 256)],
);

/**
 * Logits of each decode step (teacher-forced) after a 2-token prefill, per-op or fused;
 * `weightTextures` pins GpuModelOptions.weightTextures, `atlas` the fused step's parameter atlas.
 * `before(model)` runs after creation.
 */
async function decodeLogits(
  gpu: Gpu,
  w: ModelWeights,
  decodeVariant: "fused" | "ops",
  o: {
    weightTextures?: boolean;
    atlas?: boolean;
    seqs?: number[][];
    before?: (m: GpuModel) => Promise<void>;
    prepare?: boolean;
    after?: (m: GpuModel) => void;
  } = {},
): Promise<Float32Array[]> {
  const SEQS = o.seqs ?? SEQS3;
  const model = await GpuModel.create(gpu, w, {
    slots: SEQS.length,
    maxLen: 16,
    decodeVariant,
    weightTextures: o.weightTextures,
    ...(o.atlas !== undefined ? { decodeForward: { atlas: o.atlas } } : {}),
  });
  try {
    await o.before?.(model);
    if (o.prepare !== false) await model.prepareDecode();
    await model.forward(
      SEQS.flatMap((s, slot) => s.slice(0, 2).map((token, pos) => ({ token, slot, pos }))),
      [],
    );
    const out: Float32Array[] = [];
    for (let pos = 2; pos < Math.max(...SEQS.map((s) => s.length)); pos++) {
      const live = SEQS.map((s, slot) => ({ s, slot })).filter(({ s }) => pos < s.length);
      const rows = live.map(({ s, slot }) => ({ token: s[pos], slot, pos }));
      model.writeRows(rows, rows.map((_, i) => i));
      const rec = gpu.recorder("decode step");
      model.encodeForward(rec, rows.length, rows.length, true);
      rec.submit();
      out.push(await gpu.readFloat32(model.logitsBuffer, rows.length * w.config.vocabSize));
    }
    o.after?.(model);
    return out;
  } finally {
    model.destroy();
  }
}

/** Worst tolerance ratio of teacher-forced decode logits against the float64 reference. */
function againstReference(
  w: ModelWeights,
  seqs: number[][],
  steps: Float32Array[],
  other?: Float32Array[],
): number {
  const V = w.config.vocabSize, refs = seqs.map((s) => referenceForward(w, s).logits);
  let worst = 0;
  steps.forEach((step, k) => {
    const pos = k + 2;
    seqs.map((s, i) => ({ s, i })).filter(({ s }) => pos < s.length).forEach(({ i }, r) => {
      const got = step.subarray(r * V, (r + 1) * V);
      worst = Math.max(
        worst,
        toleranceRatio(got, refs[i].subarray(pos * V, (pos + 1) * V), 2e-4, 1e-3),
      );
      if (other) {
        worst = Math.max(
          worst,
          toleranceRatio(got, other[k].subarray(r * V, (r + 1) * V), 1e-4, 1e-4),
        );
      }
    });
  });
  return worst;
}

/** Writes every parameter tensor of `w` over the model's (same layout; unsplit tensors). */
function overwriteParams(gpu: Gpu, model: GpuModel, w: ModelWeights) {
  for (const t of w.layout.tensors) {
    const [chunk] = model.params.chunks(t);
    gpu.device.queue.writeBuffer(chunk.ref.buffer, chunk.ref.offset, w.data, t.offset, t.size);
  }
}

export function decodeCases(): DecodeCase[] {
  return [
    {
      name:
        "decode steps: the fused step on CPU adapters (llvmpipe's default where the model fits it) equals the per-op path and the reference",
      async run(gpu) {
        const w = tinyLlama(), V = w.config.vocabSize;
        // The default takes the fused step on llvmpipe only (SwiftShader runs the per-op path
        // faster: FUSED_DEFAULT_DRIVERS).
        const plain = await GpuModel.create(gpu, w, { slots: 3, maxLen: 16 });
        const fusedByDefault = plain.decode instanceof CpuAdapterDecode && plain.decode.sharedCache;
        plain.destroy();
        const llvmpipe = gpu.adapterClass === "cpu" && /llvmpipe|lavapipe/i.test(gpu.describe());
        if (fusedByDefault !== llvmpipe) {
          throw new Error(`fused decode by default: ${fusedByDefault} on ${gpu.describe()}`);
        }
        const ops = await decodeLogits(gpu, w, "ops", { weightTextures: false });
        const dflt = await decodeLogits(gpu, w, gpu.adapterClass === "cpu" ? "fused" : "ops");
        const refs = SEQS.map((s) => referenceForward(w, s).logits);
        let worst = 0;
        dflt.forEach((step, k) => {
          const pos = k + 2;
          SEQS.map((s, i) => ({ s, i })).filter(({ s }) => pos < s.length).forEach(({ i }, r) => {
            const got = step.subarray(r * V, (r + 1) * V);
            worst = Math.max(
              worst,
              toleranceRatio(got, refs[i].subarray(pos * V, (pos + 1) * V), 2e-4, 1e-3),
            );
            worst = Math.max(
              worst,
              toleranceRatio(got, ops[k].subarray(r * V, (r + 1) * V), 1e-4, 1e-4),
            );
          });
        });
        return worst;
      },
    },
    {
      name:
        "generation: sampling inside the fused step gives the three-dispatch step's tokens and log-probs",
      async run(gpu) {
        const w = tinyLlama();
        const reqs = SEQS.map((prompt, i) => ({
          prompt,
          maxNewTokens: 6 + i,
          sequence: i,
          sampling: [{ temperature: 0 }, { temperature: 0.9, topK: 8, seed: 2 }, {
            temperature: 1.1,
            topP: 0.8,
            seed: 3,
          }][i],
        }));
        const results = [];
        for (const fuseSampling of [false, true]) {
          const model = await GpuModel.create(gpu, w, { slots: SEQS.length, maxLen: 24 });
          try {
            results.push(await (await Generator.create(model, { fuseSampling })).generate(reqs));
          } finally {
            model.destroy();
          }
        }
        return JSON.stringify(results[0]) === JSON.stringify(results[1]) ? 0 : Infinity;
      },
    },
    {
      name:
        "decode steps reading weight textures (10 down to 3 rows; Llama tied, Qwen2 biased and untied, Llama head_dim 32 with RoPE fused) equal the storage path and the reference",
      textures: true,
      async run(gpu) {
        let worst = 0;
        for (const w of [tinyLlama(), tinyQwen2(), llamaHd32()]) {
          // Ten sequences of 5–7 tokens: steps of 10, 7 and 3 rows (both texture row tiers).
          for (const seqs of [SEQS10]) {
            const storage = await decodeLogits(gpu, w, "ops", { weightTextures: false, seqs });
            let used = false;
            const tex = await decodeLogits(gpu, w, "ops", {
              weightTextures: true,
              seqs,
              after: (m) => used = texturesCurrent(m),
            });
            if (!used) return Infinity; // the texture path must have been taken
            worst = Math.max(worst, againstReference(w, seqs, tex, storage));
          }
        }
        return worst;
      },
    },
    {
      name:
        "the fused step reading the parameter atlas (Llama tied, Qwen2 biased and untied) equals the fused step reading storage and the reference",
      textures: true,
      async run(gpu) {
        if (!gpu.readOnlyStorageTextures) return 0; // the atlas needs storage-texture reads
        let worst = 0;
        for (const w of [tinyLlama(), tinyQwen2()]) {
          const used: boolean[] = [];
          const storage = await decodeLogits(gpu, w, "fused", {
            atlas: false,
            seqs: SEQS10,
            after: (m) => used.push(atlasUsed(m)),
          });
          const atlas = await decodeLogits(gpu, w, "fused", {
            atlas: true,
            seqs: SEQS10,
            after: (m) => used.push(atlasUsed(m)),
          });
          if (used.join() !== "false,true") return Infinity; // each must have taken its path
          worst = Math.max(worst, againstReference(w, SEQS10, atlas, storage));
        }
        return worst;
      },
    },
    {
      name:
        "the parameter atlas follows the parameters: after paramsChanged the next fused step reads the new ones",
      textures: true,
      async run(gpu) {
        if (!gpu.readOnlyStorageTextures) return 0;
        const w0 = tinyLlama(), w1 = tinyQwen2Like(w0);
        let atlas = false;
        // The atlas filled from w0 by a first step, then the parameters become w1 on the GPU (as
        // an optimizer step does) and the model is told.
        const steps = await decodeLogits(gpu, w0, "fused", {
          atlas: true,
          seqs: SEQS10,
          before: async (m) => {
            await m.prepareDecode();
            atlas = atlasUsed(m);
            const rec = gpu.recorder("fills the atlas");
            m.writeRows([{ token: 3, slot: 0, pos: 0 }], [0]);
            m.encodeForward(rec, 1, 1, true);
            rec.submit();
            await gpu.sync();
            overwriteParams(gpu, m, w1);
            m.paramsChanged();
          },
        });
        if (!atlas) return Infinity;
        return againstReference(w1, SEQS10, steps);
      },
    },
    {
      name:
        "weight textures follow the parameters: after paramsChanged the next decode step copies them again",
      textures: true,
      async run(gpu) {
        const w0 = tinyLlama(), w1 = tinyQwen2Like(w0);
        // Textures filled from w0 by a first step, then the parameters become w1 on the GPU (as
        // an optimizer step does) and the model is told: stale until the next step is recorded.
        let stale = false, used = false;
        const steps = await decodeLogits(gpu, w0, "ops", {
          weightTextures: true,
          seqs: SEQS10,
          before: async (m) => {
            await m.prepareDecode();
            const rec = gpu.recorder("fills the textures");
            const rows = SEQS10.map((_, slot) => ({ token: 3, slot, pos: 0 }));
            m.writeRows(rows, rows.map((_, i) => i));
            m.encodeForward(rec, rows.length, rows.length, true);
            rec.submit();
            await gpu.sync();
            if (!texturesCurrent(m)) return;
            overwriteParams(gpu, m, w1);
            m.paramsChanged();
            stale = !texturesCurrent(m);
          },
          after: (m) => used = texturesCurrent(m),
        });
        if (!stale || !used) return Infinity;
        return againstReference(w1, SEQS10, steps);
      },
    },
  ];
}

/** Other random weights in w's layout (a parameter update's stand-in). */
function tinyQwen2Like(w: ModelWeights): ModelWeights {
  const other = initModel(w.config, { seed: 77, std: 0.3, normNoise: 0.2 });
  return { ...w, data: other.data };
}

/**
 * Cases for a Gpu created with adapterClass "gpu" on any adapter (Deno's llvmpipe, the browser's
 * SwiftShader): the GPU class's own kernels, which laptops' browsers run, against the reference.
 * On a device with subgroups (Chrome) the split-K decode picks and the vec4 attention run their
 * subgroup twins.
 */
export function gpuClassCases(): DecodeCase[] {
  return [
    {
      name:
        "GPU class: decode steps of 3 and 8–10 rows (split-K picks; attention with RoPE, the cache write and Qwen2's biases or Qwen3's q/k norms folded in; both with their subgroup twins where the device has subgroups) equal the reference",
      async run(gpu) {
        if (gpu.adapterClass !== "gpu") return Infinity;
        let worst = 0;
        for (const w of [tinyLlama(), tinyQwen2(), tinyQwen3()]) {
          for (const seqs of w.config.qkNorm ? [SEQS3] : [SEQS3, SEQS10]) {
            let picked = true;
            const steps = await decodeLogits(gpu, w, "ops", {
              seqs,
              before: (m) => {
                const mm = m.ops.matmul;
                for (const M of [3, 10]) {
                  picked &&= mm.variantFor({ form: "nt", M, N: 192, K: 64 }).kind === "splitk";
                }
                picked &&= mm.subgroups === gpu.subgroups;
                picked &&= m.kernels.attentionSubgroups === gpu.subgroups;
                // Every adapter this runs on binds 10 storage buffers or more: the whole fold.
                picked &&= m.kernels.attentionFold ===
                  (w.config.qkNorm ? "qk-norm" : w.config.qkvBias ? "rope-bias" : "rope");
                return Promise.resolve();
              },
            });
            if (!picked) return Infinity;
            worst = Math.max(worst, againstReference(w, seqs, steps));
          }
        }
        return worst;
      },
    },
    {
      name:
        "GPU class: the vec4 attention's streaming and split entries, each fold's too, and the training backward's kernels build (the subgroup twins where the device has subgroups)",
      async run(gpu) {
        if (gpu.adapterClass !== "gpu") return Infinity;
        // The case above runs the forms a 16-position cache takes; a 300-position one, streamed
        // and split, takes the rest (run in Deno by gpuClassDenoCases' split case).
        const folds = [
          [{}, "rope"],
          [{ qkNorm: true }, "qk-norm"],
          [{ qkvBias: true }, "rope-bias"],
        ] as const;
        for (const [model, fold] of folds) {
          const k = await ModelKernels.create(gpu, 300, {
            headDim: 64,
            attentionVariant: "flash",
            attentionFold: "qk-norm",
            ...model,
          });
          if (
            k.attentionVariant !== "flash" || k.attnSplit.splits === 0 ||
            k.attentionFold !== fold || k.attentionSubgroups !== gpu.subgroups
          ) return Infinity;
        }
        // The training backward's GPU kernels (attn_dq4, attn_dkv4, RMSNorm's workgroup twins).
        const bk = await BackwardKernels.create(gpu, 1, 300, 64, "workgroup", 1, "workgroup");
        return bk.normSubgroups === gpu.subgroups ? 0 : Infinity;
      },
    },
  ];
}

/**
 * More GPU-class cases, in Deno only (on llvmpipe with the GPU class forced): the training path
 * and the split attention over a long cache. In the browser suite their SwiftShader compiles,
 * beside Deno's suite on two cores, cost minutes; their WGSL has nothing adapter-specific that
 * the decode case above does not also run there.
 */
export function gpuClassDenoCases(): DecodeCase[] {
  return [
    {
      name:
        "GPU class: decode attention split over a 300-position cache equals one workgroup per (head, row) and the reference",
      async run(gpu) {
        const w = tinyQwen2(), V = w.config.vocabSize;
        const long = Array.from({ length: 200 }, (_, i) => (i * 29 + 3) % 256);
        const logits: Float32Array[][] = [];
        for (const attentionSplit of [true, false]) {
          const model = await GpuModel.create(gpu, w, {
            slots: 2,
            maxLen: 300,
            attentionVariant: "workgroup",
            attentionSplit,
          });
          try {
            if (model.kernels.attnSplit.splits !== (attentionSplit ? 3 : 0)) return Infinity;
            await model.forward(long.map((token, pos) => ({ token, slot: 0, pos })), []);
            await model.forward(
              long.slice(0, 3).map((token, pos) => ({ token, slot: 1, pos })),
              [],
            );
            // One row deep in slot 0 (two splits), then both slots in one call.
            const out = [await model.forward([{ token: 7, slot: 0, pos: 200 }], [0])];
            out.push(
              await model.forward(
                [{ token: 9, slot: 0, pos: 201 }, { token: 11, slot: 1, pos: 3 }],
                [
                  0,
                  1,
                ],
              ),
            );
            logits.push(out);
          } finally {
            model.destroy();
          }
        }
        let worst = 0;
        logits[0].forEach((x, i) => {
          worst = Math.max(worst, toleranceRatio(x, logits[1][i], 1e-5, 1e-4));
        });
        const ref = referenceForward(w, [...long.slice(0, 3), 11]).logits.subarray(3 * V);
        return Math.max(worst, toleranceRatio(logits[0][1].subarray(V), ref, 2e-4, 1e-3));
      },
    },

    {
      name:
        "GPU class: a LoRA trainer on a half-float base (fused LoRA forward, half-B kernels) takes two steps bit for bit as the f32 model of the rounded weights",
      async run(gpu) {
        const w = tinyLlama();
        const seqs = TINY_SEQS.map((tokens) => ({
          tokens,
          adapter: 0,
          weights: tokens.slice(1).map(() => 1),
        }));
        const half = await ModelTrainer.create(gpu, w, {
          ...tinyTrainerOpts("lora"),
          halfBase: true,
        });
        const ref = await ModelTrainer.create(gpu, halfRounded(w), tinyTrainerOpts("lora"));
        try {
          if (!half.model.params.isHalf(w.layout.lmHead)) return Infinity;
          for (let step = 0; step < 2; step++) {
            const [a, b] = [await half.step(seqs), await ref.step(seqs)];
            if (a.loss.loss !== b.loss.loss || a.optimizer.gradNorm !== b.optimizer.gradNorm) {
              return Infinity;
            }
          }
          const [la, lb] = [(await half.readLora())!, (await ref.readLora())!];
          return la.length > 0 && la.every((x, i) => x === lb[i]) ? 0 : Infinity;
        } finally {
          half.destroy();
          ref.destroy();
        }
      },
    },
  ];
}
