// The kernel set of one device, compiled up front so recording never creates a pipeline: every op's
// (createOps), or a model's (createModelOps).

import type { Gpu } from "../gpu/mod.ts";
import { Elementwise } from "./elementwise.ts";
import { Matmul, type ShapeBucket } from "./matmul.ts";
import { Reduce } from "./reduce.ts";
import { Softmax } from "./softmax.ts";

export * from "./elementwise.ts";
export * from "./matmul.ts";
export * from "./reduce.ts";
export * from "./softmax.ts";

/** What a model records with: the matmuls, and the elementwise "add" (residuals, biases). */
export interface ModelOps {
  matmul: Matmul;
  elementwise: Elementwise;
}

export interface Ops extends ModelOps {
  softmax: Softmax;
  reduce: Reduce;
}

/** Options of createOps and createModelOps. */
export interface OpsOptions {
  /** The matmul shape buckets to compile kernels for (default all; see Matmul.create). */
  matmulBuckets?: readonly ShapeBucket[];
  /** The half-B twins too (a half-float frozen base). */
  halfB?: boolean;
}

/** Every op's kernels. */
export async function createOps(gpu: Gpu, opts: OpsOptions = {}): Promise<Ops> {
  const [matmul, elementwise, softmax, reduce] = await Promise.all([
    Matmul.create(gpu, {}, opts.matmulBuckets, opts.halfB),
    Elementwise.create(gpu),
    Softmax.create(gpu),
    Reduce.create(gpu),
  ]);
  return { matmul, elementwise, softmax, reduce };
}

/**
 * A model's: the matmuls and only the elementwise "add". Each pipeline compiled is start-up time
 * (Chrome's SwiftShader compiles them one at a time): the unary, other binary, softmax and reduce
 * kernels a model never records were 29 of a LoRA trainer's 85 pipelines.
 */
export async function createModelOps(gpu: Gpu, opts: OpsOptions = {}): Promise<ModelOps> {
  const [matmul, elementwise] = await Promise.all([
    Matmul.create(gpu, {}, opts.matmulBuckets, opts.halfB),
    Elementwise.create(gpu, { unary: [], binary: ["add"] }),
  ]);
  return { matmul, elementwise };
}
