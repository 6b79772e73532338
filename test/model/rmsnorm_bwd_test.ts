// The RMSNorm backward kernels against a float64 reference, both variants: one invocation per
// row for dx and per column for dw (CPU adapters), and a workgroup per row for dx and per column
// for dw, its lanes splitting the rows (GPUs), with more rows than a workgroup has lanes (a Qwen3
// q/k norm's tokens × heads rows) and dx both written and accumulated.

import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { BackwardKernels } from "../../src/model/backward_kernels.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";

function reference(
  rows: number,
  cols: number,
  dy: Float32Array,
  x: Float32Array,
  w: Float32Array,
  rstd: Float32Array,
  dx0: Float32Array,
  dw0: Float32Array,
  accumulate: boolean,
) {
  const dx = accumulate ? Float64Array.from(dx0) : new Float64Array(rows * cols);
  const dw = Float64Array.from(dw0);
  for (let r = 0; r < rows; r++) {
    const b = r * cols, s = rstd[r];
    let dot = 0;
    for (let c = 0; c < cols; c++) dot += dy[b + c] * w[c] * x[b + c];
    const coef = s * s * s * dot / cols;
    for (let c = 0; c < cols; c++) {
      dx[b + c] += s * w[c] * dy[b + c] - coef * x[b + c];
      dw[c] += dy[b + c] * x[b + c] * s;
    }
  }
  return { dx, dw };
}

Deno.test("RMSNorm backward kernels against float64: dx and dw, both variants", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const normVariant of ["rows", "workgroup"] as const) {
      const bk = await BackwardKernels.create(gpu, 1, 8, 8, "workgroup", 1, normVariant);
      for (const [rows, cols] of [[3, 37], [600, 128], [1031, 24]]) {
        for (const accumulate of [false, true]) {
          await t.step(
            `${normVariant} ${rows}×${cols} ${accumulate ? "dx +=" : "dx ="}`,
            async () => {
              const dy = seededValues(rows * cols, 1), x = seededValues(rows * cols, 2);
              const w = seededValues(cols, 3);
              const rstd = seededValues(rows, 4).map((v) => 0.5 + Math.abs(v));
              const dx0 = seededValues(rows * cols, 5), dw0 = seededValues(cols, 6);
              const bufs = [dy, x, w, rstd, dx0, dw0].map((a) => gpu.upload(a));
              try {
                const rec = gpu.recorder();
                bk.rmsnorm(
                  rec,
                  rows,
                  cols,
                  bufs[0],
                  bufs[1],
                  bufs[2],
                  bufs[3],
                  bufs[4],
                  bufs[5],
                  accumulate,
                );
                rec.submit();
                const want = reference(rows, cols, dy, x, w, rstd, dx0, dw0, accumulate);
                const dx = await gpu.readFloat32(bufs[4], rows * cols);
                const dw = await gpu.readFloat32(bufs[5], cols);
                for (
                  const [name, got, exp] of [["dx", dx, want.dx], ["dw", dw, want.dw]] as const
                ) {
                  const ratio = toleranceRatio(got, exp, 1e-4, 1e-4);
                  assert(ratio <= 1, `${name}: ${ratio.toFixed(2)}× tolerance`);
                }
              } finally {
                bufs.forEach((b) => b.destroy());
              }
            },
          );
        }
      }
    }
  } finally {
    gpu.destroy();
  }
});
