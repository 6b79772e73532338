// The kernel set of one device, compiled up front so recording never creates a pipeline.

import type { Gpu } from "../gpu/mod.ts";
import { Elementwise } from "./elementwise.ts";
import { Matmul, type ShapeBucket } from "./matmul.ts";
import { Reduce } from "./reduce.ts";
import { Softmax } from "./softmax.ts";

export * from "./elementwise.ts";
export * from "./matmul.ts";
export * from "./reduce.ts";
export * from "./softmax.ts";

export interface Ops {
  matmul: Matmul;
  elementwise: Elementwise;
  softmax: Softmax;
  reduce: Reduce;
}

/**
 * `matmulBuckets`: the matmul shape buckets to compile kernels for (default all; see
 * Matmul.create); `halfB`: the half-B twins too (a half-float frozen base).
 */
export async function createOps(
  gpu: Gpu,
  opts: { matmulBuckets?: readonly ShapeBucket[]; halfB?: boolean } = {},
): Promise<Ops> {
  const [matmul, elementwise, softmax, reduce] = await Promise.all([
    Matmul.create(gpu, {}, opts.matmulBuckets, opts.halfB),
    Elementwise.create(gpu),
    Softmax.create(gpu),
    Reduce.create(gpu),
  ]);
  return { matmul, elementwise, softmax, reduce };
}
