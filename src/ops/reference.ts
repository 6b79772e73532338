// Float64 CPU references for every kernel in src/ops: slow, obvious, and the oracle the
// GPU kernels are tested against (in Deno and in the browser).

import type { MatmulShape } from "./matmul.ts";
import type { BinaryArgs, UnaryOp } from "./elementwise.ts";
import type { ReduceOp } from "./reduce.ts";

type Num = ArrayLike<number>;

/** C = alpha·op(A)·op(B) + beta·C0 per batch, in float64. */
export function matmulRef(s: MatmulShape, a: Num, b: Num, c0?: Num): Float64Array {
  const { form, M, N, K } = s;
  const batch = s.batch ?? 1;
  const sA = s.strideA ?? M * K, sB = s.strideB ?? K * N, sC = s.strideC ?? M * N;
  const alpha = s.alpha ?? 1, beta = s.beta ?? 0;
  const out = new Float64Array(sC * (batch - 1) + M * N);
  for (let z = 0; z < batch; z++) {
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let acc = 0;
        for (let k = 0; k < K; k++) {
          const av = form === "tn" ? a[z * sA + k * M + m] : a[z * sA + m * K + k];
          const bv = form === "nt" ? b[z * sB + n * K + k] : b[z * sB + k * N + n];
          acc += av * bv;
        }
        const i = z * sC + m * N + n;
        out[i] = alpha * acc + (beta !== 0 && c0 ? beta * c0[i] : 0);
      }
    }
  }
  return out;
}

export function unaryRef(op: UnaryOp, x: Num, a = 1, b = 0): Float64Array {
  const f: Record<UnaryOp, (v: number) => number> = {
    affine: (v) => v,
    exp: Math.exp,
    log: Math.log,
    silu: (v) => v / (1 + Math.exp(-v)),
    square: (v) => v * v,
    sqrt: Math.sqrt,
    tanh: Math.tanh,
    relu: (v) => Math.max(v, 0),
  };
  return Float64Array.from({ length: x.length }, (_, i) => f[op](a * x[i] + b));
}

export function binaryRef(args: BinaryArgs, x: Num, y: Num): Float64Array {
  const cols = args.cols ?? args.n;
  const a = args.a ?? 1, b = args.b ?? 1;
  const g = {
    add: (p: number, q: number) => p + q,
    sub: (p: number, q: number) => p - q,
    mul: (p: number, q: number) => p * q,
    div: (p: number, q: number) => p / q,
    max: Math.max,
    min: Math.min,
  }[args.op];
  return Float64Array.from({ length: args.n }, (_, i) => {
    const r = Math.floor(i / cols), c = i % cols;
    const j = { same: i, row: c, col: r, scalar: 0 }[args.broadcast ?? "same"];
    return g(a * x[i], b * y[j]);
  });
}

export function softmaxRef(rows: number, cols: number, x: Num, log = false): Float64Array {
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let c = 0; c < cols; c++) m = Math.max(m, x[r * cols + c]);
    let s = 0;
    for (let c = 0; c < cols; c++) s += Math.exp(x[r * cols + c] - m);
    const lse = m + Math.log(s);
    for (let c = 0; c < cols; c++) {
      const v = x[r * cols + c] - lse;
      out[r * cols + c] = log ? v : Math.exp(v);
    }
  }
  return out;
}

function fold(op: ReduceOp, values: Iterable<number>): number {
  let acc = op === "max" ? -Infinity : 0;
  for (const v of values) {
    acc = op === "max" ? Math.max(acc, v) : acc + (op === "sumsq" ? v * v : v);
  }
  return acc;
}

export function rowReduceRef(op: ReduceOp, rows: number, cols: number, x: Num): Float64Array {
  return Float64Array.from(
    { length: rows },
    (_, r) => fold(op, Array.from({ length: cols }, (_, c) => x[r * cols + c])),
  );
}

export function globalReduceRef(op: ReduceOp, x: Num): number {
  return fold(op, Array.from(x));
}

/** Largest |got − want| / (atol + rtol·|want|); ≤ 1 means within tolerance. */
export function toleranceRatio(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  atol: number,
  rtol: number,
): number {
  if (got.length < want.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(g) !== Number.isNaN(w)) return Infinity;
    if (Number.isNaN(w) || g === w) continue;
    worst = Math.max(worst, Math.abs(g - w) / (atol + rtol * Math.abs(w)));
  }
  return worst;
}

/** Deterministic uniform values in [lo, hi) for tests and the lab (mulberry32). */
export function seededValues(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  let t = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r ^= r + Math.imul(r ^ (r >>> 7), 61 | r);
    out[i] = lo + (hi - lo) * (((r ^ (r >>> 14)) >>> 0) / 4294967296);
  }
  return out;
}
