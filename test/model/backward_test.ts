// Finite-difference checks of the backward pass: for every parameter tensor of tiny Llama
// (tied head), Qwen2 (biases) and Qwen3 (q/k norms), the GPU gradient of L = Σ G ⊙ logits
// (G fixed and random, so dL/dlogits = G) is compared with central differences of the float64
// reference on a batch of two sequences of different lengths.
// Tolerance: |gpu − fd| ≤ 2e-3 · max|grad of that tensor| + 1e-5.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { ModelBackward } from "../../src/model/backward.ts";
import { backwardStep } from "./backward_step.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import type { ModelRow } from "../../src/model/gpu_model_options.ts";
import { initModel, Rng } from "../../src/model/init.ts";
import { referenceForward } from "../../src/model/reference.ts";
import type { ModelWeights, ParamTensor } from "../../src/model/weights.ts";
import { seededValues } from "../../src/ops/reference.ts";

const SEQS = [[257, 72, 101, 108, 108, 111], [257, 40, 33, 200, 40]];

async function tinyModel(name: string): Promise<ModelWeights> {
  // "<preset>:hd6": the preset with head_dim 6, which runs the scalar attention kernels (the vec4
  // ones need a multiple of 4).
  const [base, variant] = name.split(":");
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${base}.json`, import.meta.url)),
  );
  if (variant === "hd6") json.head_dim = 6;
  return initModel(parseModelConfig(json), { seed: 3, std: 0.3, biasStd: 0.2, normNoise: 0.3 });
}

/** Rows of both sequences interleaved, and the logits row of each (seq, pos). */
function batchRows(): ModelRow[] {
  const rows: ModelRow[] = [];
  for (let p = 0; p < Math.max(...SEQS.map((s) => s.length)); p++) {
    SEQS.forEach((s, slot) => p < s.length && rows.push({ token: s[p], slot, pos: p }));
  }
  return rows;
}

/** L = Σ_r Σ_v G[r, v] · logits[r, v] in float64. */
function cpuLoss(w: ModelWeights, rows: ModelRow[], G: Float32Array): number {
  const V = w.config.vocabSize;
  const perSeq = SEQS.map((s) => referenceForward(w, s).logits);
  let L = 0;
  rows.forEach((r, i) => {
    const lg = perSeq[r.slot];
    for (let v = 0; v < V; v++) L += G[i * V + v] * lg[r.pos * V + v];
  });
  return L;
}

function probeIndices(t: ParamTensor, w: ModelWeights, rng: Rng): number[] {
  const C = w.config.hiddenSize;
  if (t.role === "embed") { // rows of tokens that occur, else the gradient is trivially 0
    const toks = [...new Set(SEQS.flat())];
    return [0, 1, 2].map((i) => toks[(i * 5) % toks.length] * C + Math.floor(rng.uniform() * C));
  }
  return [0, 1, 2].map(() => Math.floor(rng.uniform() * t.size));
}

Deno.test("backward matches finite differences of the float64 reference", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const name of ["tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-qwen3:hd6"]) {
      await t.step(name, async () => {
        const w = await tinyModel(name);
        const rows = batchRows();
        const N = rows.length, V = w.config.vocabSize;
        // Every attention variant (the backward's dQ kernel follows the forward's): one
        // invocation per (row, head) (CPU default), one workgroup per (row, head) (GPUs) and its
        // streaming form (GPUs, long contexts; dQ is the tiled attn_dq4 for both, attn_dq where
        // head_dim is not a multiple of 4).
        const attentionVariant = name === "tiny-qwen2"
          ? "workgroup"
          : name === "tiny-llama"
          ? "flash"
          : "lane";
        // Both RMSNorm variants too (the backward's dx kernel follows the forward's): one
        // invocation per row (CPU default) and a workgroup per row (GPUs); tiny-qwen3 has q/k norms.
        const normVariant = name === "tiny-qwen3" ? "workgroup" : "rows";
        const model = await GpuModel.create(gpu, w, {
          slots: 2,
          maxLen: 16,
          chunkRows: N,
          training: true,
          attentionVariant,
          normVariant,
        });
        assertEquals(model.kernels.normVariant, normVariant);
        const bwd = await ModelBackward.create(model);
        try {
          const G = seededValues(N * V, 11);
          const dlogits = gpu.upload(G);
          backwardStep(gpu, model, bwd, rows, dlogits);
          const rng = new Rng(5);
          const failures: string[] = [];
          for (const tensor of w.layout.tensors) {
            const grad = await gpu.readFloat32(bwd.grads.ref(tensor), tensor.size);
            const scale = grad.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
            for (const i of probeIndices(tensor, w, rng)) {
              const at = tensor.offset + i, orig = w.data[at];
              const h = 1e-3 * Math.max(1, Math.abs(orig));
              w.data[at] = orig + h;
              const hi = w.data[at], lp = cpuLoss(w, rows, G);
              w.data[at] = orig - h;
              const lo = w.data[at], lm = cpuLoss(w, rows, G);
              w.data[at] = orig;
              const fd = (lp - lm) / (hi - lo);
              if (Math.abs(grad[i] - fd) > 2e-3 * scale + 1e-5) {
                failures.push(
                  `${tensor.name}[${i}]: gpu ${grad[i].toExponential(4)} vs fd ${
                    fd.toExponential(4)
                  } (scale ${scale.toExponential(2)})`,
                );
              }
            }
          }
          assert(failures.length === 0, `gradient mismatches:\n${failures.join("\n")}`);
          dlogits.destroy();
        } finally {
          bwd.destroy();
          model.destroy();
        }
      });
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("over a 600-position context (three dQ tiles) every attention variant gives the lane kernel's gradients", async () => {
  // The finite-difference test above covers one tile; here attn_dq and the streaming forward
  // cross tile boundaries (256 positions a tile, the last ragged).
  const gpu = await Gpu.create();
  try {
    const w = await tinyModel("tiny-llama");
    const rows: ModelRow[] = Array.from({ length: 600 }, (_, pos) => ({
      token: (pos * 37 + 11) % 256 + 1,
      slot: 0,
      pos,
    }));
    const G = seededValues(rows.length * w.config.vocabSize, 12);
    const grads: Float32Array[][] = [];
    for (const attentionVariant of ["lane", "workgroup", "flash"] as const) {
      const model = await GpuModel.create(gpu, w, {
        slots: 1,
        maxLen: 640,
        chunkRows: 600,
        training: true,
        attentionVariant,
      });
      assertEquals(model.kernels.attentionVariant, attentionVariant);
      const bwd = await ModelBackward.create(model);
      try {
        const dlogits = gpu.upload(G);
        backwardStep(gpu, model, bwd, rows, dlogits);
        const g: Float32Array[] = [];
        for (const tensor of w.layout.tensors) {
          g.push(await gpu.readFloat32(bwd.grads.ref(tensor), tensor.size));
        }
        grads.push(g);
        dlogits.destroy();
      } finally {
        bwd.destroy();
        model.destroy();
      }
    }
    for (const [v, name] of [[1, "workgroup"], [2, "flash"]] as const) {
      w.layout.tensors.forEach((tensor, i) => {
        const a = grads[0][i], b = grads[v][i];
        const scale = a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
        const d = a.reduce((m, x, j) => Math.max(m, Math.abs(x - b[j])), 0);
        assert(
          d <= 1e-4 * scale + 1e-6,
          `${name}: ${tensor.name} differs by ${d} (max |g| ${scale})`,
        );
      });
    }
  } finally {
    gpu.destroy();
  }
});
