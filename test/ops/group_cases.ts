// Grouped A·Bᵀ (q/k/v, gate/up in one dispatch) against one matmul per part: shared by Deno
// (test/ops/matmul_picks_test.ts) and the browser kernel suite (test/ops/cases.ts), whose
// adapters differ (subgroups: Chrome's).

import { assert, assertEquals } from "../assert.ts";
import type { Gpu } from "../../src/gpu/mod.ts";
import { FUSED_SPLITK_STORAGE, Matmul, SHAPE_BUCKETS } from "../../src/ops/matmul.ts";
import { ModelKernels } from "../../src/model/model_kernels.ts";
import { rmsNorm, silu } from "../../src/model/reference.ts";
import { isGroupTile } from "../../src/ops/matmul_gen.ts";
import { MATMUL_TUNING } from "../../src/ops/tuning.ts";
import { matmulRef, seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import { packHalves, roundToHalf } from "../../src/ops/matmul_half.ts";

/**
 * Grouped A·Bᵀ through a Matmul's picks (this adapter's, or the GPU class's: split-K at decode
 * rows, with their subgroup twins where the device has subgroups) equals one matmul per part bit
 * for bit, within tolerance of the float64 reference; one dispatch where the pick groups. Throws
 * (AssertionError) otherwise.
 */
export async function groupedEqualsSingle(gpu: Gpu, classPicks: "gpu" | null, half: boolean) {
  const picks = classPicks ? MATMUL_TUNING[classPicks] as never : {};
  const mm = await Matmul.create(gpu, picks, SHAPE_BUCKETS, half);
  const splitk = (classPicks ?? gpu.adapterClass) === "gpu";
  const scratch = gpu.zeros(4);
  try {
    // Rows 1 (vector bucket: r1c8; GPU class: split-K), 8 (llvmpipe: r8c16 tiles, dot form; GPU
    // class: split-K), 24 (llvmpipe: r16c16; GPU class: split-K) and 37 (r8c8 tiles), parts not
    // multiples of the tile; K longer than a split-K workgroup's 64 lanes of vec4s (520, 300).
    for (
      const [M, K, Ns] of [
        [1, 64, [64, 32, 32]],
        [8, 36, [13, 7, 20]],
        [37, 20, [40, 9]],
        [8, 64, [
          192,
        ]],
        [1, 520, [24, 8, 8]],
        [9, 300, [13, 7]],
        [24, 36, [13, 7, 20]],
      ] as const
    ) {
      const a = seededValues(M * K, 1);
      const A = gpu.upload(a);
      const bs = Ns.map((n, i) => seededValues(n * K, 10 + i));
      const Bs = bs.map((b) => gpu.upload(half ? packHalves(b) : b));
      const grouped = Ns.map((n) => gpu.zeros(M * n)), single = Ns.map((n) => gpu.zeros(M * n));
      const rec = gpu.recorder();
      const parts = Ns.map((n, i) => ({ b: Bs[i], c: grouped[i], N: n }));
      mm.encodeGroup(rec, M, K, A, parts, scratch, half);
      const groupedDispatches = rec.finish();
      const one = groupedDispatches.dispatchCount;
      groupedDispatches.run();
      groupedDispatches.destroy();
      const rec2 = gpu.recorder();
      Ns.forEach((n, i) =>
        mm.encode(rec2, { form: "nt", M, N: n, K, halfB: half }, A, Bs[i], single[i])
      );
      rec2.submit();
      // One dispatch where the pick has a grouped entry: CPU register tiles of GROUP_TILES, and
      // split-K, which the GPU class picks at decode rows (M ≤ 32).
      const v = mm.variantFor({ form: "nt", M, N: Math.max(...Ns), K, halfB: half });
      if (splitk && M <= 32) assertEquals(v.kind, "splitk", `M=${M}: the GPU class's pick`);
      const grouped1 = v.kind === "splitk" || (v.kind === "reg" && isGroupTile(v.r!, v.c!));
      if (Ns.length > 1 && grouped1) {
        assertEquals(one, 1, `M=${M}: one dispatch for ${Ns.length} parts (${v.name})`);
      }
      for (let i = 0; i < Ns.length; i++) {
        const g = await gpu.readFloat32(grouped[i], M * Ns[i]),
          s1 = await gpu.readFloat32(single[i], M * Ns[i]);
        assertEquals(
          [...g].join(","),
          [...s1].join(","),
          `M=${M} part ${i}: grouped differs from the single matmul`,
        );
        const b = half ? roundToHalf(bs[i]) : bs[i];
        const ratio = toleranceRatio(
          g,
          matmulRef({ form: "nt", M, N: Ns[i], K }, a, b),
          1e-5 * Math.sqrt(K) + 1e-6,
          1e-4,
        );
        assert(ratio <= 1, `M=${M} part ${i}: error ${ratio.toFixed(2)}× tolerance`);
      }
      [A, ...Bs, ...grouped, ...single].forEach((x) => x.destroy());
    }
  } finally {
    scratch.destroy();
  }
}

/**
 * The split-K folds of a decode step through the GPU class's picks (Matmul.encodeNormGroup,
 * encodeSwigluNt; their subgroup twins where the device has subgroups): the RMSNorm folded into
 * the grouped product and SwiGLU folded into the down projection each take one dispatch, are
 * within tolerance of float64 (products and the normalized rows / activations they also write),
 * and the SwiGLU fold equals SwiGLU then the product bit for bit. Where the adapter binds fewer
 * storage buffers than the fused kernels need, both must decline (return false, record nothing).
 * Throws (AssertionError) otherwise.
 */
export async function foldsMatchReference(gpu: Gpu, half: boolean) {
  // The decode rows' buckets only (compiling every bucket's half-B twins costs llvmpipe ~50 s).
  const decodeBuckets = ["vector", "skinny", "skinny16", "skinny32"] as const;
  const mm = await Matmul.create(gpu, MATMUL_TUNING.gpu as never, decodeBuckets, half);
  const kernels = await ModelKernels.create(gpu, 16);
  const fits = gpu.device.limits.maxStorageBuffersPerShaderStage >= FUSED_SPLITK_STORAGE;
  const scratch = gpu.zeros(65), eps = 1e-6; // 260 bytes: one part leaves two outputs unused
  const ok = (got: Float32Array, want: Float64Array, K: number, what: string) => {
    const ratio = toleranceRatio(got, want, 1e-5 * Math.sqrt(K) + 1e-6, 1e-4);
    assert(ratio <= 1, `${what}: error ${ratio.toFixed(2)}× tolerance`);
  };
  try {
    // Rows 1 (split-K r1), 9 (two 8-row blocks, the second of one row), 24, 3; parts not
    // multiples of 4 columns; K longer than 64 lanes of vec4s (520, 300). Half B: the 8-row kernels only
    // (each split-K kernel costs llvmpipe 5–11 s to compile).
    const shapes = [
      [9, 300, [13, 7]],
      [1, 520, [24, 8, 8]],
      [24, 36, [13, 7, 20]],
      [3, 64, [40]], // one part (the LM head): its two unused outputs must not alias
    ] as const;
    for (const [M, K, Ns] of half ? shapes.slice(0, 1) : shapes) {
      const a = seededValues(M * K, 1, -2, 2), g = seededValues(K, 2, 0.5, 1.5);
      const bs = Ns.map((n, i) => seededValues(n * K, 10 + i));
      const [A, G] = [gpu.upload(a), gpu.upload(g)];
      const Bs = bs.map((b) => gpu.upload(half ? packHalves(b) : b));
      const Cs = Ns.map((n) => gpu.zeros(M * n)), XN = gpu.zeros(M * K);
      const rec = gpu.recorder();
      const parts = Ns.map((n, i) => ({ b: Bs[i], c: Cs[i], N: n }));
      const took = mm.encodeNormGroup(rec, M, K, A, { g: G, eps, xn: XN }, parts, scratch, half);
      const plan = rec.finish();
      assertEquals(took, fits, `M=${M}: the norm fold applies where the adapter binds 9 buffers`);
      assertEquals(plan.dispatchCount, fits ? 1 : 0, `M=${M}: the norm fold's dispatches`);
      plan.run();
      plan.destroy();
      if (fits) {
        const xn = Array.from(
          { length: M },
          (_, r) => rmsNorm(a.subarray(r * K, (r + 1) * K), g, eps),
        );
        ok(
          await gpu.readFloat32(XN, M * K),
          Float64Array.from(xn.flatMap((x) => [...x])),
          1,
          `M=${M} xn`,
        );
        for (let i = 0; i < Ns.length; i++) {
          const b = half ? roundToHalf(bs[i]) : bs[i];
          const want = matmulRef({ form: "nt", M, N: Ns[i], K }, xn.flatMap((x) => [...x]), b);
          ok(await gpu.readFloat32(Cs[i], M * Ns[i]), want, K, `M=${M} part ${i} (norm fold)`);
        }
      }
      // SwiGLU folded into a product accumulating into C (the down projection's residual), against
      // SwiGLU then the product; the first part's width as the output.
      const N = Ns[0];
      const gate = seededValues(M * K, 3, -4, 4), up = seededValues(M * K, 4);
      const c0 = seededValues(M * N, 5);
      const [Gt, Up] = [gpu.upload(gate), gpu.upload(up)];
      const [C1, C2] = [gpu.upload(c0), gpu.upload(c0)];
      const [H1, H2] = [gpu.zeros(M * K), gpu.zeros(M * K)];
      const shape = { M, N, K, beta: 1, halfB: half };
      const rec2 = gpu.recorder();
      assertEquals(mm.encodeSwigluNt(rec2, shape, Gt, Up, Bs[0], C1, H1), fits);
      const fused = rec2.finish();
      assertEquals(fused.dispatchCount, fits ? 1 : 0, `M=${M}: the SwiGLU fold's dispatches`);
      fused.run();
      fused.destroy();
      const rec3 = gpu.recorder();
      kernels.swiglu(rec3, M * K, Gt, Up, H2);
      mm.encode(rec3, { form: "nt", ...shape }, H2, Bs[0], C2);
      rec3.submit();
      if (fits) {
        const [h1, h2] = [await gpu.readFloat32(H1, M * K), await gpu.readFloat32(H2, M * K)];
        const [o1, o2] = [await gpu.readFloat32(C1, M * N), await gpu.readFloat32(C2, M * N)];
        assertEquals([...h1].join(","), [...h2].join(","), `M=${M}: h differs from swiglu's`);
        assertEquals(
          [...o1].join(","),
          [...o2].join(","),
          `M=${M}: the fold differs from SwiGLU then the product`,
        );
        const h = Float64Array.from(gate, (x, i) => silu(x) * up[i]);
        ok(h1, h, 1, `M=${M} h`);
        const b = half ? roundToHalf(bs[0]) : bs[0];
        ok(o1, matmulRef({ form: "nt", M, N, K, beta: 1 }, h, b, c0), K, `M=${M} SwiGLU fold`);
      }
      [A, G, ...Bs, ...Cs, XN, Gt, Up, C1, C2, H1, H2].forEach((x) => x.destroy());
    }
  } finally {
    scratch.destroy();
  }
}
