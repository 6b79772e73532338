// Row reductions (sum, max, sum of squares) and a two-pass global reduction (gradient norms),
// recorded without any readback in between.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "./grid.ts";

export const REDUCE_OPS = ["sum", "max", "sumsq"] as const;
export type ReduceOp = typeof REDUCE_OPS[number];

const WG = 64;
/** Elements each workgroup folds in the first pass of a global reduction. */
export const GLOBAL_CHUNK = 4096;

/** shaders/reduce.wgsl's parameters: rows/cols for `rows`, n/chunk for the global passes. */
export const ReduceParams = uniformStruct("reduce_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["n", "u32"],
  ["chunk", "u32"],
]);

export class Reduce {
  private constructor(private k: Map<string, Kernel>, private maxPerDim: number) {}

  static async create(gpu: Gpu): Promise<Reduce> {
    const k = new Map<string, Kernel>();
    await Promise.all(
      REDUCE_OPS.flatMap((op, OP) =>
        ["rows", "partial", "combine_partials"].map(async (entry) => {
          k.set(
            `${entry}:${op}`,
            await gpu.kernel({
              shader: "reduce",
              entry,
              bindings: ["uniform", "read-only-storage", "storage"],
              constants: { OP, WG },
            }),
          );
        })
      ),
    );
    return new Reduce(k, gpu.device.limits.maxComputeWorkgroupsPerDimension);
  }

  /** out[r] = reduce over columns of row r. */
  rows(
    rec: Recorder,
    op: ReduceOp,
    rows: number,
    cols: number,
    x: BufferRef,
    out: BufferRef,
  ): void {
    if (rows <= 0 || cols <= 0) {
      throw new KernelArgumentError(`reduce rows: rows=${rows}, cols=${cols} must be positive`);
    }
    const u = ReduceParams.pack({ rows, cols, n: 0, chunk: 0 });
    rec.dispatch(this.k.get(`rows:${op}`)!, [null, x, out], grid1d(rows, this.maxPerDim), u);
  }

  /** Floats of scratch space `global` needs for n elements. */
  static scratchFloats(n: number): number {
    return Math.ceil(n / GLOBAL_CHUNK);
  }

  /** out[0] = reduce over all n elements of x, using `scratch` (scratchFloats(n) floats). */
  global(
    rec: Recorder,
    op: ReduceOp,
    n: number,
    x: BufferRef,
    scratch: BufferRef,
    out: BufferRef,
  ): void {
    if (n <= 0) throw new KernelArgumentError(`reduce global: n=${n} must be positive`);
    const parts = Reduce.scratchFloats(n);
    rec.dispatch(
      this.k.get(`partial:${op}`)!,
      [null, x, scratch],
      grid1d(parts, this.maxPerDim),
      ReduceParams.pack({ rows: 0, cols: 0, n, chunk: GLOBAL_CHUNK }),
    );
    // The second pass only combines: partials of sumsq are already squared.
    const combineOp: ReduceOp = op === "sumsq" ? "sum" : op;
    rec.dispatch(
      this.k.get(`combine_partials:${combineOp}`)!,
      [null, scratch, out],
      [1],
      ReduceParams.pack({ rows: 0, cols: 0, n: parts, chunk: 0 }),
    );
  }
}
