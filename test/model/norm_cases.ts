// RMSNorm's kernels against float64, as cases that run on any adapter: Deno's (norm_cases_test.ts)
// and the browser's kernel worker, where Chromium's subgroups make the workgroup forms run their
// subgroup twins (shaders/workgroup_reduce_sg.wgsl). Both forms: one invocation per row for the
// forward and dx, per column for dw (CPU adapters), and a workgroup per row or per column, its
// lanes splitting the sum (GPUs); rows wider than a workgroup, and more rows than it has lanes
// (a Qwen3 q/k norm's tokens × heads rows).

import type { Gpu } from "../../src/gpu/mod.ts";
import { BackwardKernels } from "../../src/model/backward_kernels.ts";
import { ModelKernels } from "../../src/model/model_kernels.ts";
import { rmsNorm } from "../../src/model/reference.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";

/** A case: its worst ratio to its tolerance (≤ 1 passes; Infinity where a check fails). */
export interface NormCase {
  name: string;
  run(gpu: Gpu): Promise<number>;
}

const FORMS = ["rows", "workgroup"] as const;

function backwardReference(
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

export function normCases(): NormCase[] {
  return [
    ...FORMS.map((normVariant) => ({
      name:
        `RMSNorm ${normVariant} form and Qwen3's q/k pair in one dispatch: float64, the pair equal to two norms bit for bit`,
      async run(gpu: Gpu) {
        const D = 72, eps = 1e-6, rows = [13, 5] as const; // D: more than a 64-lane workgroup
        const xs = rows.map((r, i) => seededValues(r * D, 40 + i, -3, 3));
        const ws = rows.map((_, i) => seededValues(D, 50 + i, 0.5, 1.5));
        const k = await ModelKernels.create(gpu, 16, { normVariant, normPair: true });
        if (k.normSubgroups !== (normVariant === "workgroup" && gpu.subgroups)) return Infinity;
        const X = xs.map((x) => gpu.upload(x)), W = ws.map((w) => gpu.upload(w));
        const out = (n: number) => rows.map((r) => gpu.zeros(r * n));
        const [pairOut, pairRstd, oneOut, oneRstd] = [out(D), out(1), out(D), out(1)];
        try {
          const rec = gpu.recorder();
          const part = (i: number, o: GPUBuffer[], s: GPUBuffer[]) => ({
            rows: rows[i],
            x: X[i],
            w: W[i],
            out: o[i],
            rstd: s[i],
          });
          k.rmsnormPair(rec, D, eps, part(0, pairOut, pairRstd), part(1, pairOut, pairRstd));
          rows.forEach((r, i) => k.rmsnorm(rec, r, D, eps, X[i], W[i], oneOut[i], oneRstd[i]));
          rec.submit();
          let worst = 0;
          for (let i = 0; i < 2; i++) {
            for (const [a, b, n] of [[pairOut, oneOut, D], [pairRstd, oneRstd, 1]] as const) {
              const g = await gpu.readFloat32(a[i], rows[i] * n);
              const s1 = await gpu.readFloat32(b[i], rows[i] * n);
              if (!g.every((v, j) => Object.is(v, s1[j]))) return Infinity;
            }
            const got = await gpu.readFloat32(pairOut[i], rows[i] * D);
            const want = Array.from({ length: rows[i] }, (_, r) => [
              ...rmsNorm(xs[i].subarray(r * D, (r + 1) * D), ws[i], eps),
            ]).flat();
            worst = Math.max(worst, toleranceRatio(got, want, 1e-6, 1e-5));
          }
          return worst;
        } finally {
          [...X, ...W, ...pairOut, ...pairRstd, ...oneOut, ...oneRstd].forEach((b) => b.destroy());
        }
      },
    })),
    ...FORMS.map((normVariant) => ({
      name:
        `RMSNorm backward, ${normVariant} form: dx (written and accumulated) and dw against float64, 3×37, 600×128, 1031×24`,
      async run(gpu: Gpu) {
        const bk = await BackwardKernels.create(gpu, 1, 8, 8, "workgroup", 1, normVariant);
        if (bk.normSubgroups !== (normVariant === "workgroup" && gpu.subgroups)) return Infinity;
        let worst = 0;
        for (const [rows, cols] of [[3, 37], [600, 128], [1031, 24]]) {
          for (const accumulate of [false, true]) {
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
              const want = backwardReference(rows, cols, dy, x, w, rstd, dx0, dw0, accumulate);
              const dx = await gpu.readFloat32(bufs[4], rows * cols);
              const dw = await gpu.readFloat32(bufs[5], cols);
              worst = Math.max(
                worst,
                toleranceRatio(dx, want.dx, 1e-4, 1e-4),
                toleranceRatio(dw, want.dw, 1e-4, 1e-4),
              );
            } finally {
              bufs.forEach((b) => b.destroy());
            }
          }
        }
        return worst;
      },
    })),
  ];
}
