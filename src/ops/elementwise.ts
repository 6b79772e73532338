// Unary and binary elementwise ops with row/column/scalar broadcasting of the second operand.
// Kernels are compiled once per op in `create` (every op, or the ones asked for); `encode*` only
// records dispatches.

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

/** shaders/bias_group.wgsl's parameters: rows, and each part's columns (0: unused). */
export const BiasGroupParams = uniformStruct("bias_group_params", "Params", [
  ["rows", "u32"],
  ["n0", "u32"],
  ["n1", "u32"],
  ["n2", "u32"],
]);

/** One part of addBiases: y [rows, cols] += bias [cols]. */
export interface BiasPart {
  y: BufferRef;
  bias: BufferRef;
  cols: number;
}

/** The ops an Elementwise compiles (default: every one). */
export interface ElementwiseOps {
  unary?: readonly UnaryOp[];
  /** Both the out-of-place and the in-place kernel of each. */
  binary?: readonly BinaryOp[];
}

/** The kernel of `op`, or a named error where create was not asked for it. */
function compiled<O extends string>(kernels: Map<O, Kernel>, op: O, kind: string): Kernel {
  const k = kernels.get(op);
  if (!k) {
    throw new KernelArgumentError(
      `${kind} op "${op}" was not compiled: list it in Elementwise.create's ops (createOps compiles every op)`,
    );
  }
  return k;
}

export class Elementwise {
  private constructor(
    private unaryK: Map<UnaryOp, Kernel>,
    private binaryK: Map<BinaryOp, Kernel>,
    private inplaceK: Map<BinaryOp, Kernel>,
    private biasGroupK: Kernel,
    private maxPerDim: number,
  ) {}

  /**
   * Compiles the kernels of `ops` (a model needs only "add": every pipeline is start-up time, and
   * Chrome's SwiftShader compiles them one at a time); asking for another op then is a
   * KernelArgumentError.
   */
  static async create(
    gpu: Gpu,
    ops: ElementwiseOps = {},
  ): Promise<Elementwise> {
    const unaryOps = ops.unary ?? UNARY_OPS, binaryOps = ops.binary ?? BINARY_OPS;
    const u = new Map<UnaryOp, Kernel>(),
      b = new Map<BinaryOp, Kernel>(),
      ip = new Map<BinaryOp, Kernel>();
    const rw = "storage", ro = "read-only-storage";
    const biasGroup = gpu.kernel({
      shader: "bias_group",
      entry: "bias_group",
      bindings: ["uniform", rw, rw, rw, ro, ro, ro],
      constants: { WG },
    });
    await Promise.all([
      ...unaryOps.map(async (op) => {
        const OP = UNARY_OPS.indexOf(op);
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
      ...binaryOps.map(async (op) => {
        const OP = BINARY_OPS.indexOf(op);
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
    return new Elementwise(
      u,
      b,
      ip,
      await biasGroup,
      gpu.device.limits.maxComputeWorkgroupsPerDimension,
    );
  }

  /** out = f(a·x + b) elementwise over n values. */
  unary(rec: Recorder, op: UnaryOp, n: number, x: BufferRef, out: BufferRef, a = 1, b = 0): void {
    if (n <= 0) throw new KernelArgumentError(`unary ${op}: n must be positive, got ${n}`);
    const u = ElementwiseParams.pack({ n, cols: n, yRowStride: 0, yColStride: 0, a, b });
    rec.dispatch(
      compiled(this.unaryK, op, "unary"),
      [null, x, out],
      grid1d(Math.ceil(n / WG), this.maxPerDim),
      u,
    );
  }

  /** out = g(a·x, b·y) with y broadcast per `args.broadcast`. */
  binary(rec: Recorder, args: BinaryArgs, x: BufferRef, y: BufferRef, out: BufferRef): void {
    rec.dispatch(
      compiled(this.binaryK, args.op, "binary"),
      [null, x, y, out],
      this.grid(args),
      this.uniform(args),
    );
  }

  /**
   * Each part's y [rows, cols] += bias (broadcast over rows), up to three parts in one dispatch
   * (q/k/v's biases): the values binaryInPlace's row-broadcast "add" writes. The parts' y are
   * distinct buffers; `scratch` (≥ 4 bytes, none of them) fills an unused slot.
   */
  addBiases(rec: Recorder, rows: number, parts: readonly BiasPart[], scratch: BufferRef): void {
    if (parts.length === 0 || parts.length > 3 || rows <= 0 || parts.some((q) => q.cols <= 0)) {
      throw new KernelArgumentError(
        `addBiases: 1 to 3 parts of positive columns and rows, got ${parts.length} parts, ${rows} rows`,
      );
    }
    if (parts.length === 1) {
      const q = parts[0];
      const args = { op: "add", n: rows * q.cols, cols: q.cols, broadcast: "row" } as const;
      this.binaryInPlace(rec, args, q.y, q.bias);
      return;
    }
    // An unused slot writes nothing: scratch as its y (one at most), the first bias as its bias.
    const filled = [0, 1, 2].map((i) => parts[i] ?? { y: scratch, bias: parts[0].bias, cols: 0 });
    const n = rows * parts.reduce((s, q) => s + q.cols, 0);
    rec.dispatch(
      this.biasGroupK,
      [null, ...filled.map((q) => q.y), ...filled.map((q) => q.bias)],
      grid1d(Math.ceil(n / WG), this.maxPerDim),
      BiasGroupParams.pack({ rows, n0: filled[0].cols, n1: filled[1].cols, n2: filled[2].cols }),
    );
  }

  /** x = g(a·x, b·y) in place (e.g. accumulate: op "add"). */
  binaryInPlace(rec: Recorder, args: BinaryArgs, x: BufferRef, y: BufferRef): void {
    rec.dispatch(
      compiled(this.inplaceK, args.op, "binary"),
      [null, x, y],
      this.grid(args),
      this.uniform(args),
    );
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
