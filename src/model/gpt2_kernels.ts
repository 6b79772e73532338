// GPT-2's kernels (shaders/gpt2.wgsl): LayerNorm with bias and its backward, gelu_new and its
// backward, and the learned position embedding added to the token embedding. Compiled once per
// model; encode* only records dispatches. The float64 references are layerNorm,
// layerNormBackward, geluNew and geluNewGrad in reference.ts.
// Dims: N rows, C hidden.

import type { BufferRef } from "../gpu/buffers.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BindingKind, Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";

const WG = 64;

/** shaders/gpt2.wgsl's LayerNorm parameters (forward and both backward entries). */
export const Gpt2NormParams = uniformStruct("gpt2_norm_params", "NormParams", [
  ["rows", "u32"],
  ["cols", "u32"],
  ["eps", "f32"],
]);

/** shaders/gpt2.wgsl's elementwise parameters (gelu_new and its backward): n values. */
export const Gpt2EwParams = uniformStruct("gpt2_ew_params", "EwParams", [["n", "u32"]]);

/** shaders/gpt2.wgsl's position embedding parameters. */
export const Gpt2PosParams = uniformStruct("gpt2_pos_params", "PosParams", [
  ["rows", "u32"],
  ["cols", "u32"],
]);

type Names = "norm" | "normBwdX" | "normBwdXAcc" | "normBwdWB" | "gelu" | "geluBwd" | "pos";

export class Gpt2Kernels {
  private constructor(private k: Record<Names, Kernel>, private maxPerDim: number) {}

  static async create(gpu: Gpu): Promise<Gpt2Kernels> {
    const ro = "read-only-storage", rw = "storage", u = "uniform";
    const s = (
      entry: string,
      bindings: readonly BindingKind[],
      constants: Record<string, number> = {},
    ) =>
      gpu.kernel({
        shader: "gpt2",
        entry,
        bindings,
        constants: { WG, ...constants },
      });
    const [norm, normBwdX, normBwdXAcc, normBwdWB, gelu, geluBwd, pos] = await Promise.all([
      s("layernorm", [u, ro, ro, ro, rw, rw, rw]),
      s("layernorm_bwd_x", [u, ro, ro, ro, ro, ro, rw], { ACCUM: 0 }),
      s("layernorm_bwd_x", [u, ro, ro, ro, ro, ro, rw], { ACCUM: 1 }),
      s("layernorm_bwd_wb", [u, ro, ro, ro, ro, rw, rw]),
      s("gelu_new", [u, ro, rw]),
      s("gelu_new_bwd", [u, ro, ro, rw]),
      s("add_pos_embed", [u, ro, ro, rw]),
    ]);
    return new Gpt2Kernels(
      { norm, normBwdX, normBwdXAcc, normBwdWB, gelu, geluBwd, pos },
      gpu.device.limits.maxComputeWorkgroupsPerDimension,
    );
  }

  private grid(n: number): [number, number] {
    return grid1d(Math.ceil(n / WG), this.maxPerDim);
  }

  /** out = LayerNorm(x)·w + b per row of [rows, cols]; mean and rstd [rows] saved. */
  layernorm(
    rec: Recorder,
    rows: number,
    cols: number,
    eps: number,
    x: BufferRef,
    w: BufferRef,
    b: BufferRef,
    out: BufferRef,
    mean: BufferRef,
    rstd: BufferRef,
  ) {
    rec.dispatch(
      this.k.norm,
      [null, x, w, b, out, mean, rstd],
      this.grid(rows),
      Gpt2NormParams.pack({ rows, cols, eps }),
    );
  }

  /** dx (=, or += when accumulate) of the LayerNorm; dw, db += its weight and bias gradients when given. */
  layernormBwd(
    rec: Recorder,
    rows: number,
    cols: number,
    dy: BufferRef,
    x: BufferRef,
    w: BufferRef,
    mean: BufferRef,
    rstd: BufferRef,
    dx: BufferRef,
    accumulate: boolean,
    wb: { dw: BufferRef; db: BufferRef } | null,
  ) {
    const u = Gpt2NormParams.pack({ rows, cols, eps: 0 });
    rec.dispatch(
      accumulate ? this.k.normBwdXAcc : this.k.normBwdX,
      [null, dy, x, w, mean, rstd, dx],
      this.grid(rows),
      u,
    );
    if (wb) {
      rec.dispatch(this.k.normBwdWB, [null, dy, x, mean, rstd, wb.dw, wb.db], [
        Math.ceil(cols / WG),
      ], u);
    }
  }

  /** out = gelu_new(x) over n values. */
  gelu(rec: Recorder, n: number, x: BufferRef, out: BufferRef) {
    rec.dispatch(this.k.gelu, [null, x, out], this.grid(n), Gpt2EwParams.pack({ n }));
  }

  /** dx = dout · gelu_new'(x) over n values. */
  geluBwd(rec: Recorder, n: number, dout: BufferRef, x: BufferRef, dx: BufferRef) {
    rec.dispatch(this.k.geluBwd, [null, dout, x, dx], this.grid(n), Gpt2EwParams.pack({ n }));
  }

  /** x [rows, cols] += wpe[pos of row] (positions from the (slot, pos) pairs in meta). */
  addPosEmbed(
    rec: Recorder,
    rows: number,
    cols: number,
    meta: BufferRef,
    wpe: BufferRef,
    x: BufferRef,
  ) {
    rec.dispatch(
      this.k.pos,
      [null, meta, wpe, x],
      this.grid(rows * cols),
      Gpt2PosParams.pack({ rows, cols }),
    );
  }
}
