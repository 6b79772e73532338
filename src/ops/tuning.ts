// The kernel lab's picks per adapter class: which matmul variant runs for each form and shape
// bucket (vector: M < 8, skinny: 8 ≤ M < 16, skinny16: 16 ≤ M ≤ 24, skinny32: 24 < M ≤ 32,
// small: M·N < 2^17, square: larger; the two row tiers were split from skinny on 2026-11-25 and
// take its picks where no lab has measured them). Regenerate with
// `deno task bench --lab` and copy its "picks" here. CPU picks: llvmpipe, 2-core Xeon, a
// quiet-machine lab run on 2026-11-22, except the small bucket, which takes the square picks here
// and its own picks per measured driver. Drivers measured on their own override these in
// MATMUL_DRIVER_TUNING.

import { type AdapterClass, type AdapterDescription, adapterText } from "../gpu/device.ts";

export const MATMUL_TUNING: Record<AdapterClass, Record<string, string>> = {
  cpu: {
    "nn:vector": "r1c8_wg32x1",
    "nn:skinny": "r8c16_wg8x1",
    "nn:skinny16": "r8c16_wg8x1",
    "nn:skinny32": "r8c16_wg8x1",
    "nn:small": "r8c16_wg16x1",
    "nn:square": "r8c16_wg16x1",
    "nt:vector": "r1c8_wg64x1",
    "nt:skinny": "r8c8_wg16x1",
    "nt:skinny16": "r8c8_wg16x1",
    "nt:skinny32": "r8c8_wg16x1",
    "nt:small": "r8c8_wg8x1",
    "nt:square": "r8c8_wg8x1",
    "tn:vector": "generic",
    "tn:skinny": "r8c16_wg8x1",
    "tn:skinny16": "r8c16_wg8x1",
    "tn:skinny32": "r8c16_wg8x1",
    "tn:small": "r8c16_wg8x1",
    "tn:square": "r8c16_wg8x1",
  },
  // GPU picks: the kernel lab on an NVIDIA H100 80GB HBM3 (Deno 2.9.6 WebGPU over Vulkan, driver
  // 580.159.04), 2026-11-22; the figures are in README.md, "Measured on a GPU". The tn picks are
  // read off the per-shape bests (the run was cut off before the comparison that shows the bucket
  // picks); the others are the lab's own picks.
  gpu: {
    "nn:vector": "r1c4_wg64x1",
    "nn:skinny": "r1c4_wg64x1",
    "nn:skinny16": "r1c4_wg64x1",
    "nn:skinny32": "r1c4_wg64x1",
    "nn:small": "r1c4_wg64x1",
    "nn:square": "r8c8_wg8x4",
    "nt:vector": "r4c4_wg16x1",
    "nt:skinny": "r4c4_wg16x1",
    "nt:skinny16": "r4c4_wg16x1",
    "nt:skinny32": "r4c4_wg16x1",
    "nt:small": "r4c4_wg16x1",
    "nt:square": "r8c4_wg16x1",
    "tn:vector": "generic",
    "tn:skinny": "generic",
    "tn:skinny16": "generic",
    "tn:skinny32": "generic",
    "tn:small": "generic",
    "tn:square": "r8c8_wg8x4",
  },
};

/**
 * Picks for one driver, over its class's. llvmpipe (measured 2026-11-22, alternating runs on the
 * shared machine; SwiftShader, also "cpu", keeps the class picks):
 * - square: the 32×16 tiles of shaders/matmul_reg_big.wgsl (1024³ A·B 6.8 → 9.9, A·Bᵀ 5.8 → 11.6,
 *   Aᵀ·B 6.1 → 8.6 GFLOPS; 17 s of LLVM compile per form with a cold Mesa shader cache);
 * - small A·B and Aᵀ·B: r16c8_wg8x1 (a tiny model's 320-row training chunks: 8.4 vs 19.1 ms and
 *   4.3 vs 8.7 ms over the lab's small shapes; RL update phase 2.8–4.4 s vs 3.7–8.2 s); small
 *   A·Bᵀ keeps r8c8_wg8x1 (8.6 vs 8.2 ms, a tie);
 * - decode A·Bᵀ: narrower workgroups (measured with the r8c8 tiles picked then), a tie on
 *   1024-wide shapes and faster on a tiny model's (8 rows against 32–264 outputs: r8c8_wg8x1
 *   542 µs vs r8c8_wg16x1 868 over five shapes;
 *   1 row: r1c8_wg32x1 549 vs r1c8_wg64x1 837);
 * - decode A·Bᵀ at 8 rows: r8c16 in the dot form (one float per output, gen_matmul_reg.ts's
 *   ntDotForm), also grouped (q/k/v, gate/up): 8 rows against the ~30M preset's projections
 *   (2-core EPYC, 2026-11-25, one interleaved run) 14.9–20.0 GFLOPS against 12.2–15.7 for r8c8;
 * - decode A·Bᵀ at 16–32 rows (the ~30M preset's projections, 2-core EPYC, idle, 2026-11-25):
 *   row tiles that fit the rows, 16×16 at 16 rows (21–23 GFLOPS against 14–15 for r8c8/r8c16 on
 *   512–2816 outputs) and 32×16 at 32 (27–28 against 15; 24 rows: 19–21 against 14–17 for 16×16).
 * - decode A·Bᵀ against weight textures (ntx: model/weight_textures.ts, row tiers of
 *   matmul.ts's textureBucket), the ~30M preset's per-op decode step, interleaved in one process,
 *   2-core EPYC, 2026-11-25, ms min / median (GL backend unless marked):
 *   - 8 rows, r8c32: Vulkan 27.3–27.7 / 30.4–31.9 against 32.0–34.1 / 36.6–37.6 from storage
 *     (r8c16 28.3 / 31.9), before the folded norms and SwiGLU (ntxs) that come with the texture
 *     path; with them, GL 27.0–27.8 / 30.2–32.3 against 34.0–34.5 / 37.0–41.5;
 *   - 1–7 rows ("vector"): storage's r1c8 loads every weight once per row: 2 rows 32.3 / 34.8,
 *     4 rows 58.1 / 80.5, 6 rows 103 / 133 ms; r4c16 from textures 21.6 / 22.8, 22.4 / 23.3,
 *     39.6 / 50.4 and r8c32 23.6 / 24.6, 24.1 / 25.8, 28.0 / 34.2; at 1 row a tie (storage
 *     18.0–19.7 / 27–31, r4c16 21.6 / 23.5; again 18.2–18.4 / 22–24 against 20.1–20.6 / 22–23,
 *     r1c16 23.2–23.4 / 26–27). So storage for 1 row, r4c16 for 2–4, r8c32 for 5–15;
 *   - 16 rows, r8c32 in two row tiles: 46.0–46.5 / 49–56 against 52.7–53.3 / 53–62;
 *   - 32 rows: a tie (r8c32 88–89 / 95–97, storage r32c16 87–95 / 99–105), so storage then.
 *   Those figures are from sampled textures. Read-only storage textures (pipelines.ts's
 *   "texture-read": llvmpipe loads them inline, not through its generic texel function) made
 *   the 8-row step 24.1 → 19.7 ms (profiled kernel sums) and 32 rows 59.1 / 59.9 against
 *   storage's 80.3 / 82.6 (GL), so r8c32 runs 25–32 rows as well. In a micro A/B at 32 rows
 *   r8c32 stayed ahead of r16c16, r16c8 and r32c8 (41 against 38, 28, 27 GFLOPS on 512×2816).
 *   Texture kernels compile again per class of texture shape on llvmpipe; inline storage-texture
 *   loads take longer to compile than the texel-function calls did (r8c32's grouped entry ~13 s
 *   cold against ~3 s).
 */
export const MATMUL_DRIVER_TUNING: ReadonlyArray<
  { adapterClass: AdapterClass; driver: RegExp; picks: Record<string, string> }
> = [
  {
    adapterClass: "cpu",
    driver: /llvmpipe|lavapipe/i,
    picks: {
      "nn:square": "r32c16_wg8x1",
      "nt:square": "r32c16_wg8x1",
      "tn:square": "r32c16_wg8x1",
      "nn:small": "r16c8_wg8x1",
      "tn:small": "r16c8_wg8x1",
      "nt:skinny": "r8c16_wg8x1",
      "nt:skinny16": "r16c16_wg8x1",
      "nt:skinny32": "r32c16_wg8x1",
      "nt:vector": "r1c8_wg32x1",
      "ntx:vector": "r4c16_wg8x1",
      "ntx:skinny": "r8c32_wg8x1",
      "ntx:skinny16": "r8c32_wg8x1",
      "ntx:skinny32": "r8c32_wg8x1",
    },
  },
];

/** The picks for an adapter: its class's, with its driver's on top. */
export function matmulPicks(info: AdapterDescription): Record<string, string> {
  const picks = { ...MATMUL_TUNING[info.adapterClass] };
  for (const d of MATMUL_DRIVER_TUNING) {
    if (d.adapterClass === info.adapterClass && d.driver.test(adapterText(info))) {
      Object.assign(picks, d.picks);
    }
  }
  return picks;
}
