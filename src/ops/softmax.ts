// Row softmax / log-softmax over [rows, cols], one workgroup per row.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "./grid.ts";

/** shaders/softmax.wgsl's parameters. */
export const SoftmaxParams = uniformStruct("softmax_params", "Params", [
  ["rows", "u32"],
  ["cols", "u32"],
]);

export class Softmax {
  private constructor(private soft: Kernel, private logSoft: Kernel, private maxPerDim: number) {}

  static async create(gpu: Gpu, workgroupSize = 64): Promise<Softmax> {
    const spec = (entry: string) => ({
      shader: "softmax",
      entry,
      bindings: ["uniform", "read-only-storage", "storage"] as const,
      constants: { WG: workgroupSize },
    });
    const [s, l] = await Promise.all([
      gpu.kernel(spec("softmax")),
      gpu.kernel(spec("log_softmax")),
    ]);
    return new Softmax(s, l, gpu.device.limits.maxComputeWorkgroupsPerDimension);
  }

  encode(
    rec: Recorder,
    rows: number,
    cols: number,
    x: BufferRef,
    out: BufferRef,
    log = false,
  ): void {
    if (rows <= 0 || cols <= 0) {
      throw new KernelArgumentError(`softmax: rows=${rows}, cols=${cols} must be positive`);
    }
    const u = SoftmaxParams.pack({ rows, cols });
    rec.dispatch(log ? this.logSoft : this.soft, [null, x, out], grid1d(rows, this.maxPerDim), u);
  }
}
