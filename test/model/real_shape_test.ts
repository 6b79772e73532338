// The GPU engine at a real checkpoint's full size against transformers: SmolLM2-135M's shape
// (30 layers, hidden 576, 9 heads on 3 kv heads of 64, tied 49152-word head), random-init by
// test/fixtures/real_shapes.ts, through GpuModel.forward on this machine's adapter, compared with
// LlamaForCausalLM's float64 logits (test/fixtures/real-shapes/, made by hf_real_golden.py) at
// 69 columns a position, with the argmax and logsumexp over the whole vocabulary. The yardstick
// is PyTorch's own float32 run of the same model: ours must be within a few times its error.
// Then the backward: the gradient of the causal LM loss (mean cross-entropy of each position
// predicting the next id, as model(ids, labels=ids)) for every one of the 272 parameter tensors,
// at 4 entries each, against transformers' float64 autograd.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { ModelBackward } from "../../src/model/backward.ts";
import { backwardStep } from "./backward_step.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import {
  REAL_SHAPE_IDS,
  REAL_SHAPES,
  type RealShape,
  realShapeWeights,
} from "../fixtures/real_shapes.ts";

interface RealGolden {
  model_class: string;
  ids: number[];
  vocab: number;
  torch_f32_max_err: number;
  loss: number;
  grads: { name: string; max_abs: number; entries: number[]; f64: number[]; f32: number[] }[];
  torch_f32_grad_rel_err: number;
  positions: {
    logsumexp: number;
    argmax: number;
    top5: number[];
    columns: number[];
    logits: number[];
  }[];
}

for (const name of Object.keys(REAL_SHAPES) as RealShape[]) {
  Deno.test(`${name} at full size: the GPU forward equals transformers' float64 logits within a few times PyTorch's own float32 error`, async () => {
    const golden = JSON.parse(
      await Deno.readTextFile(new URL(`../fixtures/real-shapes/${name}.json`, import.meta.url)),
    ) as RealGolden;
    assertEquals(golden.ids, REAL_SHAPE_IDS, "stale golden: run hf_real_golden.py");
    const w = await realShapeWeights(name);
    const V = w.config.vocabSize, T = golden.ids.length;
    assertEquals([golden.vocab, w.config.numLayers], [V, 30]);
    const gpu = await Gpu.create();
    try {
      const model = await GpuModel.create(gpu, w, { slots: 1, maxLen: T, chunkRows: T });
      try {
        const rows = golden.ids.map((token, pos) => ({ token, slot: 0, pos }));
        const logits = await model.forward(rows, rows.map((_, i) => i));
        let err = 0, scale = 0;
        golden.positions.forEach((p, t) => {
          const row = logits.subarray(t * V, (t + 1) * V);
          p.columns.forEach((c, i) => {
            err = Math.max(err, Math.abs(row[c] - p.logits[i]));
            scale = Math.max(scale, Math.abs(p.logits[i]));
          });
          let m = -Infinity, arg = -1;
          for (let v = 0; v < V; v++) if (row[v] > m) [m, arg] = [row[v], v];
          let s = 0;
          for (let v = 0; v < V; v++) s += Math.exp(row[v] - m);
          const lse = m + Math.log(s);
          assert(
            Math.abs(lse - p.logsumexp) < 1e-4,
            `position ${t}: logsumexp ${lse} vs ${p.logsumexp}`,
          );
          // A near-tie may flip under float32; then ours must be transformers' runner-up.
          assert(
            arg === p.argmax ||
              (p.top5.slice(0, 2).includes(arg) && Math.abs(row[arg] - row[p.argmax]) < 1e-4),
            `position ${t}: argmax ${arg} vs ${p.argmax}`,
          );
        });
        assert(scale > 2, `logits of a few units (max ${scale})`);
        const bound = Math.max(8 * golden.torch_f32_max_err, 1e-5);
        assert(
          err < bound,
          `max |ours - transformers float64| ${err} vs PyTorch float32's ${golden.torch_f32_max_err}`,
        );
        console.log(
          `${name}: ours max err ${err.toExponential(2)}, PyTorch float32 ${
            golden.torch_f32_max_err.toExponential(2)
          }`,
        );
      } finally {
        model.destroy();
      }
    } finally {
      gpu.destroy();
    }
  });
}

/** dL/dlogits of the mean next-token cross-entropy over positions 0..T-2 (the last: none). */
function causalLmGrad(logits: Float32Array, ids: number[], V: number) {
  const T = ids.length, n = T - 1, g = new Float32Array(T * V);
  let loss = 0;
  for (let t = 0; t < n; t++) {
    const row = logits.subarray(t * V, (t + 1) * V);
    let m = -Infinity;
    for (let v = 0; v < V; v++) m = Math.max(m, row[v]);
    let s = 0;
    for (let v = 0; v < V; v++) s += Math.exp(row[v] - m);
    for (let v = 0; v < V; v++) g[t * V + v] = Math.exp(row[v] - m) / s / n;
    g[t * V + ids[t + 1]] -= 1 / n;
    loss += (m + Math.log(s) - row[ids[t + 1]]) / n;
  }
  return { g, loss };
}

for (const name of Object.keys(REAL_SHAPES) as RealShape[]) {
  Deno.test(`${name} at full size: the GPU backward's gradients of the causal LM loss equal transformers' float64 autograd, every tensor`, async () => {
    const golden = JSON.parse(
      await Deno.readTextFile(new URL(`../fixtures/real-shapes/${name}.json`, import.meta.url)),
    ) as RealGolden;
    const w = await realShapeWeights(name);
    const V = w.config.vocabSize, T = golden.ids.length;
    const byName = new Map(w.layout.tensors.map((t) => [t.name, t]));
    assertEquals(
      golden.grads.map((g) => g.name).filter((n) => n !== "lm_head.weight").sort(),
      [...byName.keys()].sort(),
      "the same tensors",
    );
    const gpu = await Gpu.create();
    try {
      const model = await GpuModel.create(gpu, w, {
        slots: 1,
        maxLen: T,
        chunkRows: T,
        training: true,
      });
      const bwd = await ModelBackward.create(model);
      try {
        const rows = golden.ids.map((token, pos) => ({ token, slot: 0, pos }));
        const logits = await model.forward(rows, rows.map((_, i) => i));
        const { g, loss } = causalLmGrad(logits, golden.ids, V);
        assert(Math.abs(loss - golden.loss) < 1e-4, `loss ${loss} vs ${golden.loss}`);
        const dlogits = gpu.upload(g);
        backwardStep(gpu, model, bwd, rows, dlogits);
        let worst = 0, at = "";
        for (const want of golden.grads) {
          // A tied head's gradient is the embedding's (PyTorch lists the shared tensor twice).
          const t = byName.get(want.name);
          if (!t) continue;
          const grad = await gpu.readFloat32(bwd.grads.ref(t), t.size);
          want.entries.forEach((i, k) => {
            const rel = Math.abs(grad[i] - want.f64[k]) / want.max_abs;
            if (rel > worst) [worst, at] = [rel, `${want.name}[${i}]`];
          });
        }
        const bound = Math.max(20 * golden.torch_f32_grad_rel_err, 1e-4);
        assert(
          worst < bound,
          `worst |ours - transformers float64| / max|g| ${worst} at ${at}; PyTorch float32's ${golden.torch_f32_grad_rel_err}`,
        );
        console.log(
          `${name}: gradients, worst error / max |g| ${worst.toExponential(2)} (${at}), ` +
            `PyTorch float32 ${golden.torch_f32_grad_rel_err.toExponential(2)}`,
        );
        dlogits.destroy();
      } finally {
        bwd.destroy();
        model.destroy();
      }
    } finally {
      gpu.destroy();
    }
  });
}
