// The GPU engine at a real checkpoint's full size against transformers: SmolLM2-135M's shape
// (30 layers, hidden 576, 9 heads on 3 kv heads of 64, tied 49152-word head), random-init by
// test/fixtures/real_shapes.ts, through GpuModel.forward on this machine's adapter, compared with
// LlamaForCausalLM's float64 logits (test/fixtures/real-shapes/, made by hf_real_golden.py) at
// 69 columns a position, with the argmax and logsumexp over the whole vocabulary. The yardstick
// is PyTorch's own float32 run of the same model: ours must be within a few times its error.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
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
