// The kernel lab's picks per adapter class: which matmul variant runs for each form and shape
// bucket (vector: M < 8, skinny: 8 ≤ M < 16, skinny16: 16 ≤ M ≤ 24, skinny32: 24 < M ≤ 32,
// small: M·N < 2^17, square: larger; the two row tiers were split from skinny on 2026-11-25 and
// take its picks where no lab has measured them). Regenerate with
// `deno task bench --lab` and copy its "picks" here. CPU picks: llvmpipe, 2-core Xeon, a
// quiet-machine lab run on 2026-11-22, except the small bucket, which takes the square picks here
// and its own picks per measured driver. Drivers measured on their own override these in
// MATMUL_DRIVER_TUNING.

import { type AdapterClass, type AdapterDescription, adapterText } from "../gpu/device.ts";
import { envVar } from "../runtime.ts";
import { tunedPicksFor } from "./tuned_picks.ts";

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
  // 580.159.04), 2026-11-22; the figures are in docs/benchmarks.md, "Measured on a GPU". The tn picks are
  // read off the per-shape bests (the run was cut off before the comparison that shows the bucket
  // picks); the others are the lab's own picks, except the decode rows of A·Bᵀ (nt:vector to
  // nt:skinny32): the split-K kernels. The 2026-11-27 lab (same machine) timed sk_r1_wg32 at 227
  // GFLOPS on 1×1024×1024 against 30 for r4c4_wg16x1, whose decode matmuls took 76–90% of the
  // scale bench's decode GPU time; 8–32 rows take sk_r8_wg64 (one weight read for 8 rows), not
  // yet lab-timed at those rows (the run was cut off): the next GPU lab (gpu_session.sh labhalf,
  // sk_* beside r4c4 at 1, 8 and 32 rows) confirms or replaces it. 16–32 rows ran r4c4_wg16x1
  // on 2026-11-27 (76–91% of a batch-32 generate): 32 rows × N = 896 outputs are 112 workgroups
  // of 16 lanes, ~0.4 warp per SM of an H100 to hide each load's latency over all of K; split-K
  // runs 896 workgroups of 64 lanes reading K/64 vec4s each, B from L2 once per 8 rows.
  gpu: {
    "nn:vector": "r1c4_wg64x1",
    "nn:skinny": "r1c4_wg64x1",
    "nn:skinny16": "r1c4_wg64x1",
    "nn:skinny32": "r1c4_wg64x1",
    "nn:small": "r1c4_wg64x1",
    "nn:square": "r8c8_wg8x4",
    "nt:vector": "sk_r1_wg32",
    "nt:skinny": "sk_r8_wg64",
    "nt:skinny16": "sk_r8_wg64",
    "nt:skinny32": "sk_r8_wg64",
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
 * Picks for one driver, over its class's: llvmpipe's, and SwiftShader's (Chrome's CPU adapter,
 * the browser tests' and GPU-less Chrome's), the tuner's picks (src/ops/autotune.ts) at the app's
 * test setting. The measurements behind each pick (dates, machines, figures) are in
 * docs/benchmarks.md, "Why llvmpipe's matmul picks are what they are".
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
  {
    adapterClass: "cpu",
    driver: /swiftshader/i,
    picks: {
      "nt:vector": "r8c8_wg8x1",
      "nt:skinny": "r16c8_wg8x1",
      "nt:small": "r16c8_wg8x1",
      "nn:small": "r16c8_wg8x1",
    },
  },
];

/** The environment variable whose JSON picks go over every adapter's (Deno; see envMatmulPicks). */
export const MATMUL_PICKS_ENV = "PETTINGLLMS_MATMUL_PICKS";

/**
 * `PETTINGLLMS_MATMUL_PICKS='{"nt:square":"sm128x64_k16_t8x4",...}'` in Deno: picks laid over
 * the tables below for every Matmul, so a GPU session can measure a model with the lab's fresh
 * picks before they are written into this file (gpu_session.sh's scalepicks). Keys are
 * "form:bucket"; the variant names are checked when a Matmul compiles them. Unset (or in a
 * browser, or without --allow-env): none.
 */
export function envMatmulPicks(): Record<string, string> {
  const v = envVar(MATMUL_PICKS_ENV);
  if (v === undefined || v === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch (e) {
    throw new RangeError(`${MATMUL_PICKS_ENV}: not JSON (${(e as Error).message})`);
  }
  const key = /^(nn|nt|tn|ntx):(vector|skinny|skinny16|skinny32|small|square)$/;
  if (
    typeof parsed !== "object" || parsed === null || Array.isArray(parsed) ||
    !Object.entries(parsed).every(([k, x]) => key.test(k) && typeof x === "string")
  ) {
    throw new RangeError(
      `${MATMUL_PICKS_ENV}: must be a JSON object of "form:bucket" keys (forms nn, nt, tn, ntx; buckets vector, skinny, skinny16, skinny32, small, square) to variant names`,
    );
  }
  return parsed as Record<string, string>;
}

/**
 * The picks for an adapter: its class's, with its driver's on top, then the tuner's for this
 * adapter (src/ops/tuned_picks.ts: `npx deno task tune`), then PETTINGLLMS_MATMUL_PICKS.
 */
export function matmulPicks(info: AdapterDescription): Record<string, string> {
  const picks = { ...MATMUL_TUNING[info.adapterClass] };
  for (const d of MATMUL_DRIVER_TUNING) {
    if (d.adapterClass === info.adapterClass && d.driver.test(adapterText(info))) {
      Object.assign(picks, d.picks);
    }
  }
  Object.assign(picks, tunedPicksFor(info)?.picks ?? {});
  return Object.assign(picks, envMatmulPicks());
}
