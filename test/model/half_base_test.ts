// A half-float frozen base (GpuModelOptions.halfBase, TrainerOptions.halfBase): the embedding,
// projections and LM head stored as packed halves and read by the half-B kernels, which do the
// f32 kernels' arithmetic on B rounded to half. So the model must compute, bit for bit, what an
// f32 model computes whose matrices hold the same values rounded to half: forward logits, greedy
// and sampled generation, and a LoRA step (loss, gradient norm, adapters). The same on a split
// placement (row chunks at 2 bytes an element) within rounding. Half the bytes for the matrices,
// and what a half base cannot do is refused by name.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { Generator } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { ModelTrainer } from "../../src/train/trainer.ts";
import { halfRounded, rowsOf, TINY_SEQS, tinyPreset, tinyTrainerOpts } from "./tiny_fixtures.ts";

const PRESETS = ["tiny-llama", "tiny-llama:untied", "tiny-qwen2", "tiny-qwen3"] as const;

function maxRel(a: Float32Array, b: Float32Array): number {
  let d = 0, s = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i] - b[i]));
    s = Math.max(s, Math.abs(b[i]));
  }
  return d / s;
}

// The f32 model takes the per-op storage decode, as a half base does.
const PLAIN = { decodeVariant: "ops", weightTextures: false } as const;

Deno.test("half base: logits and generation equal the f32 model of the rounded weights, bit for bit", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const name of PRESETS) {
      await t.step(name, async () => {
        const w = await tinyPreset(name);
        const opts = { slots: 2, maxLen: 48, chunkRows: 7 };
        const half = await GpuModel.create(gpu, w, { ...opts, halfBase: true });
        const ref = await GpuModel.create(gpu, halfRounded(w), { ...opts, ...PLAIN });
        const exact = await GpuModel.create(gpu, w, { ...opts, ...PLAIN });
        try {
          const lay = w.layout;
          assert(
            half.params.isHalf(lay.embed) && half.params.isHalf(lay.layerView(0).down!),
            "matrices are half",
          );
          assert(!half.params.isHalf(lay.finalNorm), "norms stay f32");
          assertThrows(() => half.params.ref(lay.embed), "GpuLimitError", "half floats");
          // Matrices are nearly all of a model's floats: at half the bytes, ≤ 60% of the total.
          assert(
            half.params.bytes <= 0.6 * ref.params.bytes,
            `params ${half.params.bytes} vs ${ref.params.bytes} bytes`,
          );
          const rows = rowsOf(TINY_SEQS), want = rows.map((_, i) => i);
          const a = await half.forward(rows, want), b = await ref.forward(rows, want);
          assertEquals([...a], [...b], `${name}: logits`);
          // Rounding the weights is visible, so the equality above proves halves were read.
          assert(maxRel(await exact.forward(rows, want), b) > 1e-5, "rounding changed nothing");
          for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 11 }]) {
            const reqs = TINY_SEQS.map((s, i) => ({
              prompt: s.slice(0, 5 + i),
              maxNewTokens: 12,
              sampling,
            }));
            const ga = await (await Generator.create(half)).generate(reqs);
            const gb = await (await Generator.create(ref)).generate(reqs);
            assertEquals(ga.map((r) => r.ids), gb.map((r) => r.ids), `${name}: tokens`);
            assertEquals(ga.map((r) => r.logprobs), gb.map((r) => r.logprobs), `${name}: logprobs`);
            assert(new Set(gb.flatMap((r) => r.ids)).size > 2, "the output varies");
          }
        } finally {
          half.destroy();
          ref.destroy();
          exact.destroy();
        }
      });
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("half base on a split placement: within rounding of the unsplit half model", async () => {
  const gpu = await Gpu.create();
  // 17408-byte bindings: the [264, 64] embedding (33792 bytes in halves) becomes row chunks.
  const capped = gpu.withMaxBindingBytes(68 * 64 * 4);
  try {
    const w = await tinyPreset("tiny-qwen2");
    const opts = { slots: 2, maxLen: 48, chunkRows: 7, halfBase: true };
    const split = await GpuModel.create(capped, w, opts);
    const plain = await GpuModel.create(gpu, w, opts);
    try {
      const chunks = split.params.chunks(w.layout.embed);
      assert(chunks.length >= 2, `embedding in ${chunks.length} chunks`);
      for (const c of chunks) assertEquals(c.ref.offset % 256, 0, "chunks 256-byte aligned");
      const rows = rowsOf(TINY_SEQS), want = rows.map((_, i) => i);
      const r = maxRel(await split.forward(rows, want), await plain.forward(rows, want));
      assert(r <= 1e-6, `split differs by ${r}`);
    } finally {
      split.destroy();
      plain.destroy();
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("half base: a LoRA step equals the f32 model of the rounded weights, bit for bit", async (t) => {
  const gpu = await Gpu.create();
  const seqs = TINY_SEQS.map((tokens) => ({
    tokens,
    adapter: 0,
    weights: tokens.slice(1).map(() => 1),
  }));
  try {
    for (const name of ["tiny-llama", "tiny-qwen3"]) {
      await t.step(name, async () => {
        const w = await tinyPreset(name);
        const half = await ModelTrainer.create(gpu, w, {
          ...tinyTrainerOpts("lora"),
          halfBase: true,
        });
        const ref = await ModelTrainer.create(gpu, halfRounded(w), tinyTrainerOpts("lora"));
        try {
          assert(half.model.params.isHalf(w.layout.lmHead), "the trainer's base is half");
          for (let step = 0; step < 2; step++) {
            const [ma, mb] = [await half.step(seqs), await ref.step(seqs)];
            assertEquals(ma.loss.loss, mb.loss.loss, `step ${step} loss`);
            assertEquals(ma.optimizer.gradNorm, mb.optimizer.gradNorm, `step ${step} grad norm`);
          }
          const [la, lb] = [(await half.readLora())!, (await ref.readLora())!];
          assertEquals([...la], [...lb], "adapters after two steps");
        } finally {
          half.destroy();
          ref.destroy();
        }
      });
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("half base: what it cannot do is refused by name", async () => {
  const gpu = await Gpu.create();
  try {
    const w = await tinyPreset("tiny-llama");
    await assertRejects(
      () => ModelTrainer.create(gpu, w, { ...tinyTrainerOpts("full"), halfBase: true }),
      "TrainConfigError",
      "LoRA mode",
    );
    await assertRejects(
      () =>
        GpuModel.create(gpu, w, { slots: 1, maxLen: 8, halfBase: true, decodeVariant: "fused" }),
      "KernelArgumentError",
      "f32 weights",
    );
    const gpt2 = initModel(
      parseModelConfig(
        JSON.parse(
          await Deno.readTextFile(new URL("../../configs/models/tiny-gpt2.json", import.meta.url)),
        ),
      ),
      { seed: 1 },
    );
    await assertRejects(
      () => GpuModel.create(gpu, gpt2, { slots: 1, maxLen: 8, halfBase: true }),
      "KernelArgumentError",
      "not gpt2",
    );
  } finally {
    gpu.destroy();
  }
});
