// Kernels for weights stored as row chunks (gpu_params.ts, shaders/split_params.wgsl): the
// embedding gather and its backward per chunk, and the column copies that put a chunk's matmul
// result into its columns of a linear's output (or take a chunk's columns of a gradient).
// Compiled only for models that have a split tensor: the unsplit path never dispatches these.
// Dims: N rows, W the wide side's row length, k the chunk's rows (columns on the wide side).

import type { BufferRef } from "../gpu/buffers.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { KernelArgumentError } from "../gpu/errors.ts";

const EW = 256;

/**
 * shaders/split_params.wgsl's parameters: rows and cols of the output, the chunk's first row id
 * `base` and row `count`, the wide side's row length `stride` and column offset `off`.
 */
export const SplitParams = uniformStruct("split_chunk_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["base", "u32"],
  ["count", "u32"],
  ["stride", "u32"],
  ["off", "u32"],
]);

type Names = "gather" | "copyCols" | "gatherCols" | "embedBwd";

export class SplitKernels {
  private constructor(
    private k: Record<Names, Kernel> & { gatherHalf?: Kernel },
    private maxPerDim: number,
  ) {}

  /** `halfGather`: also the chunk gather of a half-float embedding (GpuModelOptions.halfBase). */
  static async create(gpu: Gpu, halfGather = false): Promise<SplitKernels> {
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const s = (entry: string, bindings: readonly BindingKind[], shader = "split_params") =>
      gpu.kernel({
        shader,
        entry,
        bindings,
        constants: { WG: EW },
      });
    const [gather, copyCols, gatherCols, embedBwd, gatherHalf] = await Promise.all([
      s("gather_rows_range", [u, ro, ro, rw]),
      s("copy_cols", [u, ro, rw]),
      s("gather_cols", [u, ro, rw]),
      s("embedding_bwd_range", [u, ro, ro, ro, ro, rw]),
      halfGather ? s("gather_rows_range", [u, ro, ro, rw], "split_params_hb") : undefined,
    ]);
    return new SplitKernels(
      { gather, copyCols, gatherCols, embedBwd, gatherHalf },
      gpu.device.limits.maxComputeWorkgroupsPerDimension,
    );
  }

  private grid(n: number): [number, number] {
    return grid1d(Math.ceil(n / EW), this.maxPerDim);
  }

  /** out[r] = chunk[idx[r] − base] for the rows whose id lies in [base, base + count). */
  gatherRange(
    rec: Recorder,
    rows: number,
    cols: number,
    base: number,
    count: number,
    chunk: BufferRef,
    idx: BufferRef,
    out: BufferRef,
    half = false,
  ) {
    const k = half ? this.k.gatherHalf : this.k.gather;
    if (!k) {
      throw new KernelArgumentError("gatherRange: no half-float kernel (create with halfGather)");
    }
    rec.dispatch(
      k,
      [null, chunk, idx, out],
      this.grid(rows * cols),
      SplitParams.pack({ rows, cols, base, count, stride: 0, off: 0 }),
    );
  }

  /** wide[r, off + c] = narrow[r, c] for r < N, c < k (wide rows are W long). */
  copyCols(
    rec: Recorder,
    N: number,
    k: number,
    W: number,
    off: number,
    narrow: BufferRef,
    wide: BufferRef,
  ) {
    rec.dispatch(
      this.k.copyCols,
      [null, narrow, wide],
      this.grid(N * k),
      SplitParams.pack({ rows: N, cols: k, base: 0, count: 0, stride: W, off }),
    );
  }

  /** narrow[r, c] = wide[r, off + c] for r < N, c < k (wide rows are W long). */
  gatherCols(
    rec: Recorder,
    N: number,
    k: number,
    W: number,
    off: number,
    wide: BufferRef,
    narrow: BufferRef,
  ) {
    rec.dispatch(
      this.k.gatherCols,
      [null, wide, narrow],
      this.grid(N * k),
      SplitParams.pack({ rows: N, cols: k, base: 0, count: 0, stride: W, off }),
    );
  }

  /** dE_chunk[tokens[u] − base] += Σ rows of dx listed for u, for u in [uStart, uStart + count). */
  embeddingBwd(
    rec: Recorder,
    uStart: number,
    count: number,
    cols: number,
    base: number,
    dx: BufferRef,
    tokens: BufferRef,
    offsets: BufferRef,
    rows: BufferRef,
    dE: BufferRef,
  ) {
    const u = SplitParams.pack({ rows: uStart, cols, base, count, stride: 0, off: 0 });
    rec.dispatch(
      this.k.embedBwd,
      [null, dx, tokens, offsets, rows, dE],
      this.grid(count * cols),
      u,
    );
  }
}
