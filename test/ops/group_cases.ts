// Grouped A·Bᵀ (q/k/v, gate/up in one dispatch) against one matmul per part: shared by Deno
// (test/ops/matmul_picks_test.ts) and the browser kernel suite (test/ops/cases.ts), whose
// adapters differ (subgroups: Chrome's).

import { assert, assertEquals } from "../assert.ts";
import type { Gpu } from "../../src/gpu/mod.ts";
import { Matmul, SHAPE_BUCKETS } from "../../src/ops/matmul.ts";
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
