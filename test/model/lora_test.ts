// LoRA: several adapters over one frozen base in one batch. The forward equals the float64
// reference on weights with the row's adapter merged in; the A/B gradients match finite
// differences; LoRA mode allocates no base gradients.

import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { ModelBackward } from "../../src/model/backward.ts";
import { CpuAdapterDecode } from "../../src/model/cpu_adapter/decode.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import type { ModelRow } from "../../src/model/gpu_model_options.ts";
import { initModel, Rng } from "../../src/model/init.ts";
import { LoraAdapters } from "../../src/model/lora.ts";
import { LoraLayout, mergeLora } from "../../src/model/lora_layout.ts";
import { referenceForward } from "../../src/model/reference.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import { FUSED_SPLITK_STORAGE } from "../../src/ops/matmul.ts";
import { backwardStep } from "./backward_step.ts";

// Three sequences: adapter 0, adapter 1, and the bare base (adapter id out of range).
const SEQS = [[257, 72, 101, 108, 108], [257, 40, 33, 200], [257, 9, 99]];
const ADAPTER = [0, 1, -1];

async function setup(name: string) {
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${name}.json`, import.meta.url)),
  );
  const w = initModel(parseModelConfig(json), { seed: 4, std: 0.3, biasStd: 0.2, normNoise: 0.3 });
  const layout = new LoraLayout(w.config, {
    rank: 4,
    alpha: 8,
    targets: ["q", "k", "v", "o", "gate", "up", "down"],
    adapters: ["tool", "plan"],
  });
  return { w, layout, data: layout.init(9, 0.2) }; // B ≠ 0 so the adapters change the output
}

/** Rows grouped by sequence (so each adapter's rows are contiguous, as the backward needs). */
function rowsOf(): ModelRow[] {
  return SEQS.flatMap((s, slot) =>
    s.map((token, pos) => ({ token, slot, pos, adapter: ADAPTER[slot] }))
  );
}

function refLogits(w: ModelWeights, layout: LoraLayout, data: Float32Array): Float64Array[] {
  return SEQS.map((s, i) => {
    const merged = ADAPTER[i] >= 0 ? mergeLora(w, layout, data, ADAPTER[i]) : w;
    return referenceForward(merged, s).logits;
  });
}

/** Each row's logits (of `got`, V a row) within tolerance of its sequence's reference. */
function assertRowsMatch(got: Float32Array, rows: ModelRow[], want: Float64Array[], V: number) {
  rows.forEach((r, i) => {
    const ratio = toleranceRatio(
      got.subarray(i * V, (i + 1) * V),
      want[r.slot].subarray(r.pos * V, (r.pos + 1) * V),
      2e-4,
      1e-3,
    );
    assert(
      ratio <= 1,
      `row ${i} (slot ${r.slot}, adapter ${r.adapter}): ${ratio.toFixed(2)}× tolerance`,
    );
  });
}

Deno.test("LoRA adapters", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const name of ["tiny-llama", "tiny-qwen3"]) {
      await t.step(
        `${name}: forward equals the reference with each row's adapter merged`,
        async () => {
          const { w, layout, data } = await setup(name);
          const rows = rowsOf();
          const model = await GpuModel.create(gpu, w, {
            slots: 3,
            maxLen: 16,
            chunkRows: rows.length,
          });
          const lora = await LoraAdapters.create(gpu, layout, rows.length, data);
          model.attachLora(lora);
          try {
            const got = await model.forward(rows, rows.map((_, i) => i));
            const V = w.config.vocabSize;
            assertRowsMatch(got, rows, refLogits(w, layout, data), V);
            // The adapters must matter, or the check above proves nothing.
            const base = referenceForward(w, SEQS[0]).logits;
            assert(
              toleranceRatio(got.subarray(0, V), base.subarray(0, V), 2e-4, 1e-3) > 10,
              "adapter 0 changes nothing",
            );
          } finally {
            lora.destroy();
            model.destroy();
          }
        },
      );

      await t.step(
        `${name}, the GPU class's kernels: the split-K folds (RMSNorm into q/k/v and gate/up, SwiGLU into down) feed LoRA the normalized rows and the activation`,
        async () => {
          const { w, layout, data } = await setup(name);
          const rows = rowsOf(), N = rows.length; // 12 rows: split-K at decode rows on GPUs
          const g = await Gpu.create({ adapterClass: "gpu" });
          const model = await GpuModel.create(g, w, { slots: 3, maxLen: 16, chunkRows: N });
          const lora = await LoraAdapters.create(g, layout, N, data);
          model.attachLora(lora);
          try {
            const rec = g.recorder("count");
            model.encodeForward(rec, N, N);
            const plan = rec.finish(), kernels = plan.dispatchKernels;
            plan.destroy();
            const L = w.config.numLayers;
            const count = (k: string) => kernels.filter((x) => x === k).length;
            if (g.device.limits.maxStorageBuffersPerShaderStage >= FUSED_SPLITK_STORAGE) {
              assert(count("matmul_splitk_group_norm:ntg_splitk_norm") === 2 * L, kernels.join());
              assert(count("matmul_splitk_swiglu:nt_splitk_swiglu") === L, kernels.join());
            }
            const got = await model.forward(rows, rows.map((_, i) => i));
            assertRowsMatch(got, rows, refLogits(w, layout, data), w.config.vocabSize);
          } finally {
            lora.destroy();
            model.destroy();
            g.destroy();
          }
        },
      );

      await t.step(
        `${name}: per-op decode steps reading weight textures (norms folded) keep each row's adapter`,
        async () => {
          const { w, layout, data } = await setup(name);
          const V = w.config.vocabSize, want = refLogits(w, layout, data);
          const model = await GpuModel.create(gpu, w, {
            slots: 3,
            maxLen: 16,
            decodeVariant: "ops",
            weightTextures: true,
          });
          const lora = await LoraAdapters.create(gpu, layout, model.chunkRows, data);
          model.attachLora(lora);
          try {
            await model.prepareDecode();
            await model.forward(
              SEQS.flatMap((s, slot) =>
                s.slice(0, 2).map((token, pos) => ({ token, slot, pos, adapter: ADAPTER[slot] }))
              ),
              [],
            );
            for (let pos = 2; pos < Math.max(...SEQS.map((s) => s.length)); pos++) {
              const rows = SEQS.map((s, slot) => ({ s, slot })).filter(({ s }) => pos < s.length)
                .map(({ s, slot }) => ({ token: s[pos], slot, pos, adapter: ADAPTER[slot] }));
              model.writeRows(rows, rows.map((_, i) => i));
              const rec = gpu.recorder("decode step");
              model.encodeForward(rec, rows.length, rows.length, true);
              rec.submit();
              const got = await gpu.readFloat32(model.logitsBuffer, rows.length * V);
              rows.forEach((r, i) => {
                const ratio = toleranceRatio(
                  got.subarray(i * V, (i + 1) * V),
                  want[r.slot].subarray(pos * V, (pos + 1) * V),
                  2e-4,
                  1e-3,
                );
                assert(ratio <= 1, `pos ${pos} slot ${r.slot}: ${ratio.toFixed(2)}× tolerance`);
              });
            }
            assert(
              model.decode instanceof CpuAdapterDecode && model.decode.weightTexturesCurrent,
              "the decode steps must have read the weight textures",
            );
          } finally {
            lora.destroy();
            model.destroy();
          }
        },
      );

      await t.step(
        `${name}: A/B gradients match finite differences; the base gets none`,
        async () => {
          const { w, layout, data } = await setup(name);
          const rows = rowsOf();
          const N = rows.length, V = w.config.vocabSize;
          const model = await GpuModel.create(gpu, w, {
            slots: 3,
            maxLen: 16,
            chunkRows: N,
            training: true,
          });
          const lora = await LoraAdapters.create(gpu, layout, N, data);
          model.attachLora(lora);
          const bwd = await ModelBackward.create(model, { trainable: () => false });
          try {
            assert(bwd.grads.bytes === 0, "LoRA mode must not allocate base gradients");
            const G = seededValues(N * V, 13);
            const dlogits = gpu.upload(G);
            backwardStep(gpu, model, bwd, rows, dlogits);
            const grads = await gpu.readFloat32(lora.grads, layout.totalFloats);
            const loss = (d: Float32Array) => {
              const lg = refLogits(w, layout, d);
              let L = 0;
              rows.forEach((r, i) => {
                for (let v = 0; v < V; v++) L += G[i * V + v] * lg[r.slot][r.pos * V + v];
              });
              return L;
            };
            const rng = new Rng(2);
            const failures: string[] = [];
            for (const e of layout.entries) {
              for (const a of [0, 1]) {
                for (const which of ["A", "B"] as const) {
                  const base = which === "A"
                    ? e.offsetA + a * e.strideA
                    : e.offsetB + a * e.strideB;
                  const size = which === "A"
                    ? layout.cfg.rank * e.inDim
                    : e.outDim * layout.cfg.rank;
                  const slice = grads.subarray(base, base + size);
                  const scale = slice.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
                  const i = base + Math.floor(rng.uniform() * size);
                  const orig = data[i], h = 1e-3;
                  data[i] = orig + h;
                  const hi = data[i], lp = loss(data);
                  data[i] = orig - h;
                  const lo = data[i], lm = loss(data);
                  data[i] = orig;
                  const fd = (lp - lm) / (hi - lo);
                  if (Math.abs(grads[i] - fd) > 2e-3 * scale + 1e-5) {
                    failures.push(
                      `L${e.layer} ${e.module} adapter ${a} ${which}: gpu ${
                        grads[i].toExponential(4)
                      } fd ${fd.toExponential(4)}`,
                    );
                  }
                }
              }
            }
            assert(failures.length === 0, failures.join("\n"));
            dlogits.destroy();
          } finally {
            bwd.destroy();
            lora.destroy();
            model.destroy();
          }
        },
      );
    }
  } finally {
    gpu.destroy();
  }
});
