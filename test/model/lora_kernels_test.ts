// The LoRA kernels one module at a time, every output element against a float64 reference:
// the vec4 register-tiled kernels (lora_vec4.wgsl, in/out/rank multiples of 4) and the scalar
// ones (rank 3), with row counts that leave a partial 4-row tile, 4-row tiles that straddle two
// adapters, and base-only rows (adapter id out of range). The vec4 weight gradients run both
// ways of reducing over rows (one lane per tile, or a workgroup's lanes splitting the rows, the
// GPU class's), with an adapter owning more rows than a workgroup has lanes.

import { assert, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import {
  LORA_FORWARD_ENV,
  LoraAdapters,
  loraForwardFor,
  type LoraReduce,
  vec4Entry,
} from "../../src/model/lora.ts";
import { LoraLayout } from "../../src/model/lora_layout.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";

const tinyJson = JSON.parse(
  await Deno.readTextFile(new URL("../../configs/models/tiny-llama.json", import.meta.url)),
);
const tiny = parseModelConfig(tinyJson);
// Reductions longer than a workgroup's 64 lanes of vec4s (in and out up to 520 floats), so the
// workgroup kernels' lanes each take several slices.
const wide = parseModelConfig({ ...tinyJson, hidden_size: 288, intermediate_size: 520 });
// Decode rows over a gate/up group of 2600 outputs: the fused forward splits the columns over
// 3 workgroups (lora.ts fusedColumnChunks), whose spans do not end at the modules' boundary.
const wider = parseModelConfig({ ...tinyJson, hidden_size: 288, intermediate_size: 1300 });

function referenceAt(
  layout: LoraLayout,
  layer: number,
  data: Float32Array,
  module: string,
  ids: number[],
  x: Float32Array,
  y0: Float32Array,
  dy: Float32Array,
  dx0: Float32Array,
) {
  const e = layout.entry(layer, module)!,
    r = layout.cfg.rank,
    s = layout.scale,
    n = layout.cfg.adapters.length;
  const N = ids.length, I = e.inDim, O = e.outDim;
  const y = Float64Array.from(y0),
    dx = Float64Array.from(dx0),
    grads = new Float64Array(layout.totalFloats);
  for (let row = 0; row < N; row++) {
    const a = ids[row];
    if (a < 0 || a >= n) continue;
    const A = (j: number, k: number) => data[e.offsetA + a * e.strideA + j * I + k];
    const B = (o: number, j: number) => data[e.offsetB + a * e.strideB + o * r + j];
    const U = Array.from({ length: r }, (_, j) => {
      let t = 0;
      for (let k = 0; k < I; k++) t += x[row * I + k] * A(j, k);
      return t;
    });
    const dU = Array.from({ length: r }, (_, j) => {
      let t = 0;
      for (let o = 0; o < O; o++) t += dy[row * O + o] * B(o, j);
      return s * t;
    });
    for (let o = 0; o < O; o++) {
      let t = 0;
      for (let j = 0; j < r; j++) t += U[j] * B(o, j);
      y[row * O + o] += s * t;
    }
    for (let k = 0; k < I; k++) {
      let t = 0;
      for (let j = 0; j < r; j++) t += dU[j] * A(j, k);
      dx[row * I + k] += t;
    }
    for (let o = 0; o < O; o++) {
      for (let j = 0; j < r; j++) {
        grads[e.offsetB + a * e.strideB + o * r + j] += s * dy[row * O + o] * U[j];
      }
    }
    for (let j = 0; j < r; j++) {
      for (let k = 0; k < I; k++) {
        grads[e.offsetA + a * e.strideA + j * I + k] += dU[j] * x[row * I + k];
      }
    }
  }
  return { y, dx, grads };
}

Deno.test("LoRA kernels against float64 (every element)", async (t) => {
  const gpu = await Gpu.create();
  try {
    const configs = [[tiny, [4, 8, 3]], [wide, [8]]] as const;
    for (const [cfg, ranks] of configs) {
      for (const rank of ranks) {
        for (const module of ["q", "gate", "down"]) {
          // Adapter 0 on rows 0–4, adapter 1 on 5–10 (tile 4–7 straddles), then base-only rows.
          // Adapter 0 on 70 rows and adapter 1 on 81: more than the 64 lanes of a workgroup.
          const long = [...Array(70).fill(0), ...Array(81).fill(1), -1];
          const cases = cfg === wide
            ? [long, [1]]
            : [[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, -1, -1], [1], [0, 0, 1, 1, 1, 1, 1], long];
          const reductions: LoraReduce[] = rank % 4 === 0 ? ["lane", "workgroup"] : ["lane"];
          for (
            const [ids, reduce] of cases.flatMap((c) => reductions.map((r) => [c, r] as const))
          ) {
            const name = `${
              cfg === wide ? "wide " : ""
            }rank ${rank} ${module} N=${ids.length} ${reduce}`;
            await t.step(name, async () => {
              const layout = new LoraLayout(cfg, {
                rank,
                alpha: 2 * rank,
                targets: ["q", "gate", "down"],
                adapters: ["tool", "plan"],
              });
              const e = layout.entry(0, module)!;
              assert(
                vec4Entry(e, rank) === (rank % 4 === 0),
                "the test covers the intended kernel family",
              );
              const data = layout.init(5, 0.3);
              const N = ids.length;
              const x = seededValues(N * e.inDim, 1), y0 = seededValues(N * e.outDim, 2);
              const dy = seededValues(N * e.outDim, 3), dx0 = seededValues(N * e.inDim, 4);
              const lora = await LoraAdapters.create(gpu, layout, N, data, reduce);
              const bufs = [x, y0, dy, dx0].map((a) => gpu.upload(a));
              try {
                lora.setRows(ids);
                const rec = gpu.recorder();
                lora.encodeZeroGrads(rec);
                lora.encodeForward(rec, N, 0, module, bufs[0], bufs[1]);
                lora.encodeBackward(rec, N, 0, module, bufs[0], bufs[2], bufs[3]);
                rec.submit();
                const want = referenceAt(layout, 0, data, module, ids, x, y0, dy, dx0);
                const y = await gpu.readFloat32(bufs[1], N * e.outDim);
                const dx = await gpu.readFloat32(bufs[3], N * e.inDim);
                const grads = await gpu.readFloat32(lora.grads, layout.totalFloats);
                for (
                  const [name, got, exp] of [["y", y, want.y], ["dx", dx, want.dx], [
                    "grads",
                    grads,
                    want.grads,
                  ]] as const
                ) {
                  const ratio = toleranceRatio(got, exp, 1e-4, 1e-4);
                  assert(ratio <= 1, `${name}: ${ratio.toFixed(2)}× tolerance`);
                }
                // The LoRA terms must be visible at this tolerance, or the check proves nothing.
                assert(
                  toleranceRatio(y, y0, 1e-4, 1e-4) > 10 || ids.every((a) => a < 0),
                  "the adapters changed nothing",
                );
              } finally {
                bufs.forEach((b) => b.destroy());
                lora.destroy();
              }
            });
          }
        }
      }
    }
  } finally {
    gpu.destroy();
  }
});

// The fused forward (lora_fused.wgsl: one dispatch per group of modules sharing an input) on
// layer 1 of the tiny and wide shapes: q/k/v, gate/up and down, every targeted module's y against
// float64, and the U it saves checked through the backward of every module of the group (dB
// needs U). Targets that leave a module of a group out (k, gate) and a rank whose tile exceeds
// the kernel's workgroup U (so the group runs split) are covered too.
Deno.test("fused LoRA forward of a group against float64", async (t) => {
  const gpu = await Gpu.create();
  try {
    const groups = [["q", "k", "v"], ["gate", "up"], ["down"]];
    const all = ["q", "k", "v", "o", "gate", "up", "down"] as const;
    const cases = [
      { cfg: tiny, rank: 8, targets: all, ids: [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, -1, -1] },
      { cfg: tiny, rank: 4, targets: ["q", "v", "up", "down"] as const, ids: [1] },
      { cfg: wide, rank: 8, targets: all, ids: [...Array(70).fill(0), ...Array(81).fill(1), -1] },
      { cfg: tiny, rank: 96, targets: all, ids: [1, 1, 0, 0, 0] }, // q/k/v: 4 · 3 · 96 > 1024, split
      { cfg: wider, rank: 8, targets: all, ids: [1, -1, 0] },
    ];
    for (const { cfg, rank, targets, ids } of cases) {
      for (const group of groups) {
        const shape = cfg === wide ? "wide" : cfg === wider ? "wider" : "tiny";
        const name = `${shape} rank ${rank} ${group.join("/")} ` +
          `of ${targets.length} targets, N=${ids.length}`;
        await t.step(name, async () => {
          const layout = new LoraLayout(cfg, {
            rank,
            alpha: 2 * rank,
            targets: [...targets],
            adapters: ["tool", "plan"],
          });
          const used = group.filter((m) => layout.entry(1, m));
          const data = layout.init(7, 0.3);
          const N = ids.length;
          const inDim = layout.entry(1, used[0])!.inDim;
          const x = seededValues(N * inDim, 11);
          const outs = used.map((m, i) => {
            const e = layout.entry(1, m)!;
            return {
              m,
              e,
              y0: seededValues(N * e.outDim, 12 + i),
              dy: seededValues(N * e.outDim, 20 + i),
            };
          });
          const lora = await LoraAdapters.create(gpu, layout, N, data, "workgroup", "fused");
          const xb = gpu.upload(x), dxb = gpu.zeros(N * inDim);
          const ys = outs.map((o) => gpu.upload(o.y0)), dys = outs.map((o) => gpu.upload(o.dy));
          try {
            lora.setRows(ids);
            const rec = gpu.recorder();
            lora.encodeZeroGrads(rec);
            // An untargeted module is skipped: its y (here x itself) must stay untouched.
            const parts = group.map((m) => ({ module: m, y: ys[used.indexOf(m)] ?? xb }));
            lora.encodeForwardGroup(rec, N, 1, parts, xb);
            outs.forEach((o, i) => lora.encodeBackward(rec, N, 1, o.m, xb, dys[i], dxb));
            rec.submit();
            const dx = new Float64Array(N * inDim), grads = new Float64Array(layout.totalFloats);
            for (const [i, o] of outs.entries()) {
              const want = referenceAt(
                layout,
                1,
                data,
                o.m,
                ids,
                x,
                o.y0,
                o.dy,
                new Float32Array(N * inDim),
              );
              const y = await gpu.readFloat32(ys[i], N * o.e.outDim);
              const ratio = toleranceRatio(y, want.y, 1e-4, 1e-4);
              assert(ratio <= 1, `y of ${o.m}: ${ratio.toFixed(2)}× tolerance`);
              assert(
                toleranceRatio(y, o.y0, 1e-4, 1e-4) > 10,
                `the ${o.m} adapter changed nothing`,
              );
              want.dx.forEach((v, k) => (dx[k] += v));
              want.grads.forEach((v, k) => (grads[k] += v));
            }
            const gotDx = await gpu.readFloat32(dxb, N * inDim);
            const gotGrads = await gpu.readFloat32(lora.grads, layout.totalFloats);
            assert(toleranceRatio(gotDx, dx, 1e-4, 1e-4) <= 1, "dx");
            assert(
              toleranceRatio(gotGrads, grads, 1e-4, 1e-4) <= 1,
              "grads (dB reads the saved U)",
            );
          } finally {
            [xb, dxb, ...ys, ...dys].forEach((b) => b.destroy());
            lora.destroy();
          }
        });
      }
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("LoRA forward by adapter class, and PETTINGLLMS_LORA_FORWARD over it", () => {
  const saved = Deno.env.get(LORA_FORWARD_ENV);
  try {
    Deno.env.delete(LORA_FORWARD_ENV);
    assert(loraForwardFor("gpu") === "fused" && loraForwardFor("cpu") === "split", "defaults");
    Deno.env.set(LORA_FORWARD_ENV, "split");
    assert(loraForwardFor("gpu") === "split", "split over the GPU default");
    Deno.env.set(LORA_FORWARD_ENV, "fused");
    assert(loraForwardFor("cpu") === "fused", "fused over the CPU default");
    Deno.env.set(LORA_FORWARD_ENV, "fast");
    assertThrows(() => loraForwardFor("gpu"), "KernelArgumentError", 'must be "split" or "fused"');
  } finally {
    if (saved === undefined) Deno.env.delete(LORA_FORWARD_ENV);
    else Deno.env.set(LORA_FORWARD_ENV, saved);
  }
});
