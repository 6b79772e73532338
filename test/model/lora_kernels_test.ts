// The LoRA kernels one module at a time, every output element against a float64 reference:
// the vec4 register-tiled kernels (lora_vec4.wgsl, in/out/rank multiples of 4) and the scalar
// ones (rank 3), with row counts that leave a partial 4-row tile, 4-row tiles that straddle two
// adapters, and base-only rows (adapter id out of range). The vec4 weight gradients run both
// ways of reducing over rows (one lane per tile, or a workgroup's lanes splitting the rows, the
// GPU class's), with an adapter owning more rows than a workgroup has lanes.

import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { LoraAdapters, LoraLayout, type LoraReduce, vec4Entry } from "../../src/model/lora.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";

const tinyJson = JSON.parse(
  await Deno.readTextFile(new URL("../../configs/models/tiny-llama.json", import.meta.url)),
);
const tiny = parseModelConfig(tinyJson);
// Reductions longer than a workgroup's 64 lanes of vec4s (in and out up to 520 floats), so the
// workgroup kernels' lanes each take several slices.
const wide = parseModelConfig({ ...tinyJson, hidden_size: 288, intermediate_size: 520 });

function reference(
  layout: LoraLayout,
  data: Float32Array,
  module: string,
  ids: number[],
  x: Float32Array,
  y0: Float32Array,
  dy: Float32Array,
  dx0: Float32Array,
) {
  const e = layout.entry(0, module)!,
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
                const want = reference(layout, data, module, ids, x, y0, dy, dx0);
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
