// The kernel lab's picks per adapter class: which matmul variant runs for each form and shape
// bucket. Regenerate with `deno task bench -- --lab` and copy its "picks" here.

import type { AdapterClass } from "../gpu/device.ts";

export const MATMUL_TUNING: Record<AdapterClass, Record<string, string>> = {
  cpu: {
    "nn:skinny": "r1c8_wg32x1",
    "nn:square": "r8c8_wg16x1",
    "nt:skinny": "r1c8_wg32x1",
    "nt:square": "r8c8_wg16x1",
    "tn:skinny": "r4c8_wg16x1",
    "tn:square": "r8c8_wg16x1",
  },
  gpu: {
    "nn:skinny": "tiled64",
    "nn:square": "tiled64",
    "nt:skinny": "tiled64",
    "nt:square": "tiled64",
    "tn:skinny": "tiled64",
    "tn:square": "tiled64",
  },
};
