// Tensors over the storage binding limit, stored as row chunks (src/model/gpu_params.ts). The
// test seam `gpu.withMaxBindingBytes(CAP)` caps bindings at 17408 bytes (68 rows of 64 floats), so
// on the tiny presets the [264, 64] embedding and LM head become 4 chunks (68+68+68+60 rows: the
// boundaries 68, 136, 204 are not multiples of 8, so they fall inside the matmul tiles), gate/up
// [192, 64] 3 and down [64, 192] 4. Every result of the split model is compared with the same model unsplit on the same device:
// forward logits, greedy and sampled generation, gradients (full and LoRA), one AdamW step, and a
// checkpoint saved from the split model resumed on both placements.

import { assert, assertEquals } from "../assert.ts";
import { Gpu, GpuLimitError } from "../../src/gpu/mod.ts";
import { Generator } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { allocParams, planChunks, readParamTensor } from "../../src/model/gpu_params.ts";
import { slice } from "../../src/model/weights.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { rowsOf, TINY_SEQS, tinyPreset, tinyTrainerOpts } from "./tiny_fixtures.ts";
import { AdamW } from "../../src/train/adamw.ts";
import { TrainConfigError } from "../../src/train/errors.ts";
import { checkpointFiles, readCheckpoint } from "../../src/train/checkpoint.ts";
import { ModelTrainer, type TrainSequence } from "../../src/train/trainer.ts";

const CAP = 68 * 64 * 4;
const PRESETS = [
  "tiny-llama",
  "tiny-llama:untied",
  "tiny-qwen2",
  "tiny-qwen2:tied",
  "tiny-qwen3",
] as const;

/** max |a − b| / max |b|, after checking both are finite and b is not all zeros. */
function relDiff(a: Float32Array, b: Float32Array, what: string): number {
  assertEquals(a.length, b.length, `${what}: lengths`);
  let d = 0, s = 0;
  for (let i = 0; i < a.length; i++) {
    assert(Number.isFinite(a[i]) && Number.isFinite(b[i]), `${what}: non-finite value at ${i}`);
    d = Math.max(d, Math.abs(a[i] - b[i]));
    s = Math.max(s, Math.abs(b[i]));
  }
  assert(s > 0, `${what}: the unsplit values are all zero, so the comparison would prove nothing`);
  return d / s;
}

function closeTo(a: Float32Array, b: Float32Array, tol: number, what: string) {
  const r = relDiff(a, b, what);
  assert(
    r <= tol,
    `${what}: split differs from unsplit by ${
      r.toExponential(2)
    } of the largest value (tolerance ${tol})`,
  );
}

/** The split really happened: ≥ 3 chunks for the embedding and head, a boundary off every tile size. */
function assertSplit(model: GpuModel) {
  const lay = model.weights.layout;
  for (const t of [lay.embed, lay.lmHead]) {
    const chunks = model.params.chunks(t);
    assert(chunks.length >= 3, `${t.name} should be split into ≥ 3 chunks, got ${chunks.length}`);
    assert(
      chunks.some((c) => c.rowStart % 8 !== 0),
      `${t.name}: a chunk boundary should not be a multiple of 8`,
    );
    for (const c of chunks) {
      assertEquals(
        c.ref.offset % 256,
        0,
        `${t.name}: chunk at row ${c.rowStart} starts on a 256-byte boundary`,
      );
      assert(c.ref.size <= CAP, `${t.name}: chunk of ${c.ref.size} bytes over the cap`);
    }
  }
  assert(model.split !== null && model.splitTmp !== null, "split kernels are in use");
}

Deno.test("split tensors: placement", async (t) => {
  const gpu = await Gpu.create();
  try {
    const w = await tinyPreset("tiny-qwen2");
    const lay = w.layout;
    await t.step("row chunks: equal multiples of 4 rows, aligned, each under the cap", () => {
      const plan = planChunks(lay.embed, CAP);
      assertEquals(plan.map((c) => c.rows), [68, 68, 68, 60]);
      assertEquals(plan.map((c) => c.rowStart), [0, 68, 136, 204]);
      plan.forEach((c) => assertEquals(c.offset % 64, 0));
      assertEquals(planChunks(lay.layerView(0).down, CAP).map((c) => c.rows), [16, 16, 16, 16]);
      assertEquals(
        planChunks(lay.embed, lay.embed.size * 4).length,
        1,
        "a tensor that fits is one chunk",
      );
    });
    await t.step("what cannot be split is a GpuLimitError that says what to do", () => {
      let err: unknown = null;
      try {
        planChunks(lay.layerView(0).down, 700); // a [64, 192] row is 768 bytes
      } catch (e) {
        err = e;
      }
      assert(err instanceof GpuLimitError, `expected GpuLimitError, got ${err}`);
      assert(
        /single row/.test((err as Error).message) &&
          /larger maxStorageBufferBindingSize/.test((err as Error).message),
        (err as Error).message,
      );
      let err1d: unknown = null;
      try {
        planChunks(lay.finalNorm, 256 - 64);
      } catch (e) {
        err1d = e;
      }
      assert(
        err1d instanceof GpuLimitError && /1-D/.test((err1d as Error).message),
        `1-D: ${err1d}`,
      );
    });
    await t.step(
      "chunks spread over several buffers read back as the original tensors",
      async () => {
        const p = allocParams(gpu.withMaxBindingBytes(CAP), w, w.data, "p", {
          maxBufferBytes: 2 * CAP,
        });
        try {
          assert(p.buffers.length > 3, `expected many buffers, got ${p.buffers.length}`);
          const bufs = new Set(p.chunks(lay.embed).map((c) => c.ref.buffer));
          assert(bufs.size >= 2, "the embedding's chunks should lie in more than one buffer");
          assert(p.isSplit(lay.embed) && p.anySplit);
          let threw = false;
          try {
            p.ref(lay.embed);
          } catch (e) {
            threw = e instanceof GpuLimitError && /chunks\(t\)/.test((e as Error).message);
          }
          assert(threw, "ref() of a split tensor throws, naming chunks()");
          for (const tensor of lay.tensors) {
            assertEquals(
              Array.from(await readParamTensor(gpu, p, tensor)),
              Array.from(slice(w.data, tensor)),
              tensor.name,
            );
          }
        } finally {
          p.destroy();
        }
      },
    );
    await t.step(
      "buffers break where they did unsplit (optimizer state is saved per buffer)",
      () => {
        const small = { maxBufferBytes: 96 * 1024 }; // several buffers, every tensor fits one
        const a = allocParams(gpu.withMaxBindingBytes(CAP), w, null, "a", small),
          b = allocParams(gpu, w, null, "b", small);
        try {
          assert(a.anySplit && !b.anySplit && b.buffers.length > 1);
          assertEquals(a.buffers.map((x) => x.size), b.buffers.map((x) => x.size));
        } finally {
          a.destroy();
          b.destroy();
        }
      },
    );
    await t.step("AdamW plans its chunks under the cap", async () => {
      // 17408 bytes hold one 4096-float workgroup chunk: asking for two must be refused.
      await AdamW.create(gpu.withMaxBindingBytes(CAP), { numel: 1 << 16, chunkFloats: 4096 }).then((
        o,
      ) => o.destroy());
      let err: unknown = null;
      try {
        await AdamW.create(gpu.withMaxBindingBytes(CAP), { numel: 1 << 16, chunkFloats: 8192 });
      } catch (e) {
        err = e;
      }
      assert(
        err instanceof TrainConfigError && /no larger than 4096/.test((err as Error).message),
        `got ${err}`,
      );
      (await AdamW.create(gpu, { numel: 1 << 16, chunkFloats: 8192 })).destroy();
    });
    await t.step("a capped model whose row does not fit a binding names the tensor", async () => {
      let err: unknown = null;
      try {
        (await GpuModel.create(gpu.withMaxBindingBytes(512), w, { slots: 1, maxLen: 16 }))
          .destroy();
      } catch (e) {
        err = e;
      }
      assert(
        err instanceof GpuLimitError && /mlp\.down_proj/.test((err as Error).message),
        `got ${err}`,
      );
    });
    await t.step("nothing split: no split kernels, no scratch, the same dispatches", async () => {
      const plain = await GpuModel.create(gpu, w, { slots: 1, maxLen: 16, chunkRows: 4 });
      const split = await GpuModel.create(gpu.withMaxBindingBytes(CAP), w, {
        slots: 1,
        maxLen: 16,
        chunkRows: 4,
      });
      try {
        assert(plain.split === null && plain.splitTmp === null && !plain.params.anySplit);
        const count = (m: GpuModel) => {
          const rec = gpu.recorder("count");
          m.encodeForward(rec, 4, 2);
          const n = rec.length;
          rec.finish().destroy();
          return n;
        };
        assert(
          count(split) > count(plain),
          "the split model dispatches more (per chunk), the plain one does not",
        );
      } finally {
        plain.destroy();
        split.destroy();
      }
    });
  } finally {
    gpu.destroy();
  }
});

Deno.test("split tensors: forward logits and greedy generation equal the unsplit model", async (t) => {
  const gpu = await Gpu.create();
  const capped = gpu.withMaxBindingBytes(CAP);
  try {
    for (const name of PRESETS) {
      await t.step(name, async () => {
        const w = await tinyPreset(name);
        const opts = { slots: 2, maxLen: 48, chunkRows: 7 };
        const plain = await GpuModel.create(gpu, w, opts);
        const split = await GpuModel.create(capped, w, opts);
        try {
          assertSplit(split);
          assert(!plain.params.anySplit, "the uncapped model is not split");
          const rows = rowsOf(TINY_SEQS);
          const want = rows.map((_, i) => i);
          const a = await split.forward(rows, want), b = await plain.forward(rows, want);
          closeTo(a, b, 1e-6, `${name} logits`);
          // Greedy, and seeded sampling (same logits, same Philox draws: the same tokens).
          for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 11 }]) {
            const reqs = TINY_SEQS.map((s, i) => ({
              prompt: s.slice(0, 5 + i),
              maxNewTokens: 12,
              sampling,
            }));
            const [ga, gb] = [
              await (await Generator.create(split)).generate(reqs),
              await (await Generator.create(plain)).generate(reqs),
            ];
            assertEquals(
              ga.map((r) => r.ids),
              gb.map((r) => r.ids),
              `${name}: tokens at temperature ${sampling.temperature}`,
            );
            assert(gb.every((r) => r.ids.length === 12), "generation ran its full length");
            assert(
              new Set(gb.flatMap((r) => r.ids)).size > 2,
              "the output varies (not a degenerate constant)",
            );
          }
        } finally {
          plain.destroy();
          split.destroy();
        }
      });
    }
  } finally {
    gpu.destroy();
  }
});

const SEQ_TRAIN: TrainSequence[] = TINY_SEQS.map((tokens, i) => ({
  tokens,
  adapter: 0,
  weights: tokens.slice(1).map((_, k) => (k < i ? 0 : 1)),
}));

Deno.test("split tensors: gradients and one AdamW step equal the unsplit model", async (t) => {
  const gpu = await Gpu.create();
  const capped = gpu.withMaxBindingBytes(CAP);
  try {
    for (const name of PRESETS) {
      for (const mode of ["full", "lora"] as const) {
        if (mode === "lora" && name.endsWith(":tied")) continue;
        await t.step(`${name} ${mode}`, async () => {
          const w = await tinyPreset(name);
          const plain = await ModelTrainer.create(gpu, w, tinyTrainerOpts(mode));
          const split = await ModelTrainer.create(capped, w, tinyTrainerOpts(mode));
          try {
            assertSplit(split.model);
            const [ma, mb] = [await split.step(SEQ_TRAIN), await plain.step(SEQ_TRAIN)];
            assert(
              Math.abs(ma.loss.loss - mb.loss.loss) <= 1e-6 * Math.abs(mb.loss.loss),
              `loss ${ma.loss.loss} vs ${mb.loss.loss}`,
            );
            assert(
              Math.abs(ma.optimizer.gradNorm - mb.optimizer.gradNorm) <=
                1e-5 * mb.optimizer.gradNorm,
              `grad norm ${ma.optimizer.gradNorm} vs ${mb.optimizer.gradNorm}`,
            );
            const lay = w.layout;
            if (mode === "full") {
              // The gradients of the step are still in place (zeroed only before the next one).
              for (const tensor of lay.tensors) {
                const ga = await readParamTensor(gpu, split.backward.grads, tensor);
                const gb = await readParamTensor(gpu, plain.backward.grads, tensor);
                closeTo(ga, gb, 2e-5, `${name} grad ${tensor.name}`);
              }
              const [pa, pb] = [await split.readWeights(), await plain.readWeights()];
              for (const tensor of lay.tensors) {
                const before = slice(w.data, tensor), after = slice(pb.data, tensor);
                assert(
                  after.some((v, i) => v !== before[i]),
                  `${tensor.name} should change in the step`,
                );
                closeTo(
                  slice(pa.data, tensor),
                  after,
                  2e-5,
                  `${name} ${tensor.name} after the step`,
                );
              }
            } else {
              const n = split.lora!.layout.totalFloats;
              closeTo(
                await gpu.readFloat32(split.lora!.grads, n),
                await gpu.readFloat32(plain.lora!.grads, n),
                2e-5,
                `${name} LoRA grads`,
              );
              const [la, lb] = [(await split.readLora())!, (await plain.readLora())!];
              closeTo(la, lb, 2e-5, `${name} LoRA after the step`);
            }
          } finally {
            plain.destroy();
            split.destroy();
          }
        });
      }
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("split tensors: a checkpoint holds whole tensors and resumes on either placement", async () => {
  const gpu = await Gpu.create();
  const capped = gpu.withMaxBindingBytes(CAP);
  const w = await tinyPreset("tiny-qwen2");
  const opts = tinyTrainerOpts("full");
  const tr = await ModelTrainer.create(capped, w, opts);
  const resumed: ModelTrainer[] = [];
  try {
    assertSplit(tr.model);
    await tr.step(SEQ_TRAIN);
    const files = await checkpointFiles({
      state: { step: tr.completedSteps, rng: 0 },
      models: { m: { weights: await tr.readWeights() } },
      optimizers: { m: await tr.optimizerState() },
    });
    // The file format does not change: one tensor of the full shape per HF name.
    const ck = await readCheckpoint(memoryFolder(files, "ckpt"));
    const loaded = ck.models.m;
    assertEquals(loaded.layout.embed.shape, [264, 64]);
    assertEquals(loaded.layout.lmHead.shape, [264, 64]);
    // Resumed split (same placement) and unsplit (one binding per tensor): the same next step.
    for (const g of [capped, gpu]) {
      const r = await ModelTrainer.create(g, loaded, opts);
      resumed.push(r);
      r.restoreOptimizer(ck.optimizers.m);
    }
    const m0 = await tr.step(SEQ_TRAIN);
    const [m1, m2] = [await resumed[0].step(SEQ_TRAIN), await resumed[1].step(SEQ_TRAIN)];
    assertEquals([m1.step, m2.step], [m0.step, m0.step]);
    const [p0, p1, p2] = [
      await tr.readWeights(),
      await resumed[0].readWeights(),
      await resumed[1].readWeights(),
    ];
    assert(
      p0.data.every((x, i) => Object.is(x, p1.data[i])),
      "resuming on the same placement is bit-identical",
    );
    closeTo(p2.data, p0.data, 2e-5, "resumed unsplit vs split");
    assert(p0.data.some((x, i) => x !== loaded.data[i]), "the resumed step changed the parameters");
  } finally {
    for (const r of resumed) r.destroy();
    tr.destroy();
    gpu.destroy();
  }
});
