// Unary and binary elementwise ops with row/column/scalar broadcasting of the second operand.
// Kernels are compiled once per op in `create`; `encode*` only records dispatches.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "./grid.ts";

export const UNARY_OPS = [
  "affine",
  "exp",
  "log",
  "silu",
  "square",
  "sqrt",
  "tanh",
  "relu",
] as const;
export type UnaryOp = typeof UNARY_OPS[number];
export const BINARY_OPS = ["add", "sub", "mul", "div", "max", "min"] as const;
export type BinaryOp = typeof BINARY_OPS[number];

/** How y is broadcast against x viewed as [rows, cols]. */
export type Broadcast = "same" | "row" | "col" | "scalar";

const WG = 256;

export interface BinaryArgs {
  op: BinaryOp;
  /** Elements of x and of the output. */
  n: number;
  /** Columns of x viewed as a matrix (needed for row/col broadcasts; default n). */
  cols?: number;
  broadcast?: Broadcast;
  /** out = g(a·x, b·y); defaults 1, 1. */
  a?: number;
  b?: number;
}

function broadcastStrides(bc: Broadcast, cols: number): [number, number] {
  switch (bc) {
    case "same":
      return [cols, 1];
    case "row":
      return [0, 1];
    case "col":
      return [1, 0];
    case "scalar":
      return [0, 0];
  }
}

/** The parameters of shaders/elementwise.wgsl, binary.wgsl and binary_inplace.wgsl. */
export const ElementwiseParams = uniformStruct("elementwise_params", "Params", [
  ["n", "u32"],
  ["cols", "u32"],
  ["yRowStride", "u32"],
  ["yColStride", "u32"],
  ["a", "f32"],
  ["b", "f32"],
]);

export class Elementwise {
  private constructor(
    private unaryK: Map<UnaryOp, Kernel>,
    private binaryK: Map<BinaryOp, Kernel>,
    private inplaceK: Map<BinaryOp, Kernel>,
    private maxPerDim: number,
  ) {}

  static async create(gpu: Gpu): Promise<Elementwise> {
    const u = new Map<UnaryOp, Kernel>(),
      b = new Map<BinaryOp, Kernel>(),
      ip = new Map<BinaryOp, Kernel>();
    await Promise.all([
      ...UNARY_OPS.map(async (op, OP) => {
        u.set(
          op,
          await gpu.kernel({
            shader: "elementwise",
            entry: "unary",
            bindings: ["uniform", "read-only-storage", "storage"],
            constants: { OP, WG },
          }),
        );
      }),
      ...BINARY_OPS.map(async (op, OP) => {
        b.set(
          op,
          await gpu.kernel({
            shader: "binary",
            entry: "binary",
            bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
            constants: { OP, WG },
          }),
        );
        ip.set(
          op,
          await gpu.kernel({
            shader: "binary_inplace",
            entry: "binary_inplace",
            bindings: ["uniform", "storage", "read-only-storage"],
            constants: { OP, WG },
          }),
        );
      }),
    ]);
    return new Elementwise(u, b, ip, gpu.device.limits.maxComputeWorkgroupsPerDimension);
  }

  /** out = f(a·x + b) elementwise over n values. */
  unary(rec: Recorder, op: UnaryOp, n: number, x: BufferRef, out: BufferRef, a = 1, b = 0): void {
    if (n <= 0) throw new KernelArgumentError(`unary ${op}: n must be positive, got ${n}`);
    const u = ElementwiseParams.pack({ n, cols: n, yRowStride: 0, yColStride: 0, a, b });
    rec.dispatch(
      this.unaryK.get(op)!,
      [null, x, out],
      grid1d(Math.ceil(n / WG), this.maxPerDim),
      u,
    );
  }

  /** out = g(a·x, b·y) with y broadcast per `args.broadcast`. */
  binary(rec: Recorder, args: BinaryArgs, x: BufferRef, y: BufferRef, out: BufferRef): void {
    rec.dispatch(
      this.binaryK.get(args.op)!,
      [null, x, y, out],
      this.grid(args),
      this.uniform(args),
    );
  }

  /** x = g(a·x, b·y) in place (e.g. accumulate: op "add"). */
  binaryInPlace(rec: Recorder, args: BinaryArgs, x: BufferRef, y: BufferRef): void {
    rec.dispatch(this.inplaceK.get(args.op)!, [null, x, y], this.grid(args), this.uniform(args));
  }

  private grid(args: BinaryArgs): [number, number] {
    return grid1d(Math.ceil(args.n / WG), this.maxPerDim);
  }

  private uniform(args: BinaryArgs): ArrayBuffer {
    const cols = args.cols ?? args.n;
    if (args.n <= 0 || cols <= 0 || args.n % cols !== 0) {
      throw new KernelArgumentError(
        `binary ${args.op}: n=${args.n} must be a positive multiple of cols=${cols}`,
      );
    }
    const [rs, cs] = broadcastStrides(args.broadcast ?? "same", cols);
    return ElementwiseParams.pack({
      n: args.n,
      cols,
      yRowStride: rs,
      yColStride: cs,
      a: args.a ?? 1,
      b: args.b ?? 1,
    });
  }
}
