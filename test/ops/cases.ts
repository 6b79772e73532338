// The kernel test set, shared by Deno (test/ops/kernels_test.ts) and the browser worker
// (web/test/kernel_worker.ts): every case runs real kernels and compares with the float64
// CPU reference in src/ops/reference.ts. Shapes are chosen to be awkward: size 1, not
// multiples of any tile, batched, broadcast, accumulating, and large.

import type { Gpu } from "../../src/gpu/mod.ts";
import { grid1d } from "../../src/ops/grid.ts";
import {
  BINARY_OPS,
  type BinaryArgs,
  type Broadcast,
  encodeGroupTextureWith,
  encodeMatmulWith,
  encodeSwigluTextureWith,
  encodeTextureWith,
  findTextureVariant,
  hasSubgroupTwin,
  kernelSpec,
  Matmul,
  MATMUL_FORMS,
  MATMUL_VARIANTS,
  type MatmulShape,
  type MatmulVariant,
  type Ops,
  Reduce,
  REDUCE_OPS,
  SHAPE_BUCKETS,
  TEX_VARIANTS,
  TEXTURE_DEFAULT_PICKS,
  textureSpec,
  type TextureWeight,
  UNARY_OPS,
  variantSupports,
} from "../../src/ops/mod.ts";
import {
  binaryRef,
  globalReduceRef,
  matmulRef,
  rowReduceRef,
  seededValues,
  softmaxRef,
  toleranceRatio,
  unaryRef,
} from "../../src/ops/reference.ts";
import { packHalves, roundToHalf } from "../../src/ops/matmul_half.ts";
import { foldsMatchReference, groupedEqualsSingle } from "./group_cases.ts";

export interface CaseResult {
  name: string;
  /** Worst error relative to tolerance; the case passes when ratio ≤ 1. */
  ratio: number;
  ok: boolean;
  error?: string;
  /** Wall time of the case, ms (cases in flight side by side share the adapter). */
  ms?: number;
}

export interface KernelCase {
  name: string;
  run(gpu: Gpu, ops: Ops): Promise<number>;
}

const MATMUL_SHAPES: ReadonlyArray<Omit<MatmulShape, "form">> = [
  { M: 1, N: 1, K: 1 },
  { M: 3, N: 5, K: 7 },
  { M: 1, N: 64, K: 128 },
  { M: 4, N: 36, K: 8 },
  { M: 17, N: 33, K: 20 },
  { M: 37, N: 52, K: 36 },
  { M: 65, N: 132, K: 68 },
  { M: 200, N: 260, K: 256 },
  { M: 5, N: 12, K: 16, batch: 3 },
  { M: 6, N: 8, K: 12, batch: 4, strideB: 0 },
  { M: 9, N: 20, K: 24, alpha: 0.5, beta: 1 },
  { M: 3, N: 10, K: 1032 }, // K/4 = 258 vec4s: several per lane of a split-K workgroup
  // several workgroup-memory blocks each way, a ragged K slice, batched and accumulating (tn too)
  { M: 132, N: 136, K: 44, batch: 2, alpha: 0.5, beta: 1 },
];

function shapeName(s: MatmulShape): string {
  const extra = [
    s.batch ? `b${s.batch}` : "",
    s.strideB === 0 ? "bcastB" : "",
    s.beta ? `acc(α=${s.alpha},β=${s.beta})` : "",
  ].filter(Boolean).join(",");
  return `${s.form} ${s.M}x${s.N}x${s.K}${extra ? ` ${extra}` : ""}`;
}

function operandSizes(s: MatmulShape): [number, number, number] {
  const batch = s.batch ?? 1;
  const sizeA = (s.strideA ?? s.M * s.K) * (batch - 1) + s.M * s.K;
  const sizeB = (s.strideB ?? s.K * s.N) * (batch - 1) + s.K * s.N;
  const sizeC = (s.strideC ?? s.M * s.N) * (batch - 1) + s.M * s.N;
  return [sizeA, sizeB, sizeC];
}

/** A Matmul with the half-B twins, per device (the shared Ops' has none). */
const halfMatmuls = new WeakMap<Gpu, Promise<Matmul>>();
function halfMatmul(gpu: Gpu): Promise<Matmul> {
  let m = halfMatmuls.get(gpu);
  if (!m) halfMatmuls.set(gpu, m = Matmul.create(gpu, {}, SHAPE_BUCKETS, true));
  return m;
}

async function runMatmul(
  gpu: Gpu,
  ops: Ops,
  s: MatmulShape,
  variant?: MatmulVariant,
  subgroups = false,
): Promise<number> {
  const [na, nb, nc] = operandSizes(s);
  const a = seededValues(na, 1), b = seededValues(nb, 2), c0 = seededValues(nc, 3);
  // Half B: the kernel reads B rounded to half floats, and so does the reference.
  const A = gpu.upload(a), B = gpu.upload(s.halfB ? packHalves(b) : b), C = gpu.upload(c0);
  const rec = gpu.recorder("matmul case");
  if (variant) {
    const k = await gpu.kernel(kernelSpec(variant, s.form, s.halfB, subgroups));
    encodeMatmulWith(rec, k, variant, s, A, B, C);
  } else (s.halfB ? await halfMatmul(gpu) : ops.matmul).encode(rec, s, A, B, C);
  rec.submit();
  const got = await gpu.readFloat32(C, nc);
  [A, B, C].forEach((x) => x.destroy());
  const want = matmulRef(s, a, s.halfB ? roundToHalf(b) : b, c0);
  return toleranceRatio(got, want, 1e-5 * Math.sqrt(s.K) + 1e-6, 1e-4);
}

/**
 * Shapes for B as half floats (A·Bᵀ and A·B): every shape through the picks, and these through
 * every variant (decode rows, a split-K K, workgroup-memory blocks with a ragged K slice,
 * batched and accumulating).
 */
const HALF_B_VARIANT_SHAPES: ReadonlyArray<Omit<MatmulShape, "form">> = [
  { M: 3, N: 10, K: 1032 },
  { M: 132, N: 136, K: 44, batch: 2, alpha: 0.5, beta: 1 },
];

function halfBCases(thorough: boolean): KernelCase[] {
  const out: KernelCase[] = [];
  for (const form of ["nt", "nn"] as const) {
    for (const base of MATMUL_SHAPES) {
      const s = { ...base, form, halfB: true };
      out.push({
        name: `matmul ${shapeName(s)} half B [selected]`,
        run: (gpu, ops) => runMatmul(gpu, ops, s),
      });
    }
    if (!thorough) continue;
    for (const base of HALF_B_VARIANT_SHAPES) {
      const s = { ...base, form, halfB: true };
      for (const v of MATMUL_VARIANTS) {
        if (!variantSupports(v, s)) continue;
        out.push({
          name: `matmul ${shapeName(s)} half B [${v.name}]`,
          run: (gpu, ops) => runMatmul(gpu, ops, s, v),
        });
      }
    }
  }
  return out;
}

/**
 * The split-K kernels' subgroup twins (devices with Gpu.subgroups: Chrome's): every split-K
 * variant on every A·Bᵀ shape it takes, with B in f32 and in half floats, and grouped products
 * through the GPU class's picks (split-K at decode rows), bit for bit one matmul per part.
 */
function subgroupCases(): KernelCase[] {
  const out: KernelCase[] = [];
  // Also 4-lane workgroups: one subgroup each where subgroups hold ≥ 4 lanes (SwiftShader's
  // hold 4), the path most GPUs take at 32 lanes.
  const oneSubgroup: MatmulVariant[] = [1, 4].map((r) => ({
    name: `sk_r${r}_wg4`,
    kind: "splitk",
    r,
    c: 4,
    wgx: 4,
    wgy: 1,
  }));
  // The A·Bᵀ shapes that differ for split-K: one row, 4 and 17 rows (row groups of 1, 4 and 8),
  // K of 2 to 258 vec4s a row (several a lane), batched, broadcast and accumulating.
  const shapes = MATMUL_SHAPES.filter((x) =>
    x.K % 4 === 0 && (x.M <= 17 || x.batch !== undefined) && x.M * x.N < 2 ** 14
  );
  for (const halfB of [false, true]) {
    for (const base of shapes) {
      const s: MatmulShape = { ...base, form: "nt", halfB };
      for (const v of [...MATMUL_VARIANTS, ...oneSubgroup]) {
        if (!hasSubgroupTwin(v) || !variantSupports(v, s)) continue;
        out.push({
          name: `matmul ${shapeName(s)}${halfB ? " half B" : ""} [${v.name}, subgroups]`,
          run: (gpu, ops) => runMatmul(gpu, ops, s, v, true),
        });
      }
    }
    out.push({
      name: `matmul group, GPU-class picks${halfB ? ", half B" : ""} [split-K, subgroups]`,
      run: async (gpu) => {
        await groupedEqualsSingle(gpu, "gpu", halfB);
        return 0;
      },
    });
    // The folds' half-B twins are the same text transform as every other's (tested in Deno).
    if (halfB) continue;
    out.push({
      name: "split-K folds (RMSNorm, SwiGLU), GPU-class picks [subgroups]",
      run: async (gpu) => {
        await foldsMatchReference(gpu, false);
        return 0;
      },
    });
  }
  return out;
}

function matmulCases(thorough: boolean): KernelCase[] {
  const out: KernelCase[] = [];
  for (const form of MATMUL_FORMS) {
    for (const base of MATMUL_SHAPES) {
      const s = { ...base, form };
      out.push({
        name: `matmul ${shapeName(s)} [selected]`,
        run: (gpu, ops) => runMatmul(gpu, ops, s),
      });
      if (!thorough) continue;
      for (const v of MATMUL_VARIANTS) {
        if (!variantSupports(v, s)) continue;
        out.push({
          name: `matmul ${shapeName(s)} [${v.name}]`,
          run: (gpu, ops) => runMatmul(gpu, ops, s, v),
        });
      }
    }
  }
  return out;
}

/** A·Bᵀ shapes for the texture form: H is B's rows per block of texel columns (small ones wrap B's rows). */
const TEX_SHAPES: ReadonlyArray<
  { M: number; N: number; K: number; H: number; beta?: number; normEps?: number }
> = [
  { M: 1, N: 5, K: 12, H: 7 },
  { M: 3, N: 37, K: 36, H: 9, normEps: 1e-5 },
  { M: 8, N: 70, K: 20, H: 8192 },
  { M: 13, N: 100, K: 36, H: 7, beta: 1 },
  { M: 32, N: 33, K: 20, H: 10, normEps: 0.5 },
  { M: 29, N: 300, K: 44, H: 60, beta: 1, normEps: 1e-6 },
];

/** A's rows RMS-normalized (weight 1): what a texture with normEps set multiplies by. */
function rmsRows(a: Float32Array, M: number, K: number, eps?: number): Float32Array {
  if (eps === undefined) return a;
  const out = new Float32Array(a.length);
  for (let r = 0; r < M; r++) {
    let ss = 0;
    for (let k = 0; k < K; k++) ss += a[r * K + k] ** 2;
    const rs = 1 / Math.sqrt(ss / K + eps);
    for (let k = 0; k < K; k++) out[r * K + k] = a[r * K + k] * rs;
  }
  return out;
}
// Every texture here has a width and height that are not powers of two: llvmpipe compiles a
// kernel again for each such class of its textures (seconds for the bigger tiles), and the
// arithmetic under test does not depend on it.

/** B [N, K] as an rgba32float 2D texture, row n at texel row n % H in the n / H-th block of K/4 columns. */
function textureWeight(
  gpu: Gpu,
  b: Float32Array,
  N: number,
  K: number,
  H: number,
  normEps?: number,
): { weight: TextureWeight; texture: GPUTexture } {
  const blocks = Math.ceil(N / H);
  const texture = gpu.device.createTexture({
    size: [blocks * K / 4, Math.min(N, H)],
    format: "rgba32float",
    usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.COPY_DST,
  });
  for (let l = 0; l < blocks; l++) {
    const rows = Math.min(H, N - l * H);
    gpu.device.queue.writeTexture({ texture, origin: [l * K / 4, 0, 0] }, b, {
      offset: l * H * K * 4,
      bytesPerRow: K * 4,
      rowsPerImage: rows,
    }, [K / 4, rows, 1]);
  }
  const view = texture.createView();
  return {
    weight: {
      binding: { view, id: `case:${nextTexture++}` },
      rows: N,
      cols: K,
      rowsPerBlock: H,
      normEps,
    },
    texture,
  };
}
let nextTexture = 0;

async function runTextureMatmul(
  gpu: Gpu,
  s: (typeof TEX_SHAPES)[number],
  v: MatmulVariant,
): Promise<number> {
  const shape: MatmulShape = { form: "nt", M: s.M, N: s.N, K: s.K, alpha: 1, beta: s.beta ?? 0 };
  const a = seededValues(s.M * s.K, 1),
    b = seededValues(s.N * s.K, 2),
    c0 = seededValues(s.M * s.N, 3);
  const A = gpu.upload(a),
    C = gpu.upload(c0),
    { weight, texture } = textureWeight(gpu, b, s.N, s.K, s.H, s.normEps);
  const rec = gpu.recorder("texture matmul case");
  encodeTextureWith(
    rec,
    await gpu.kernel(textureSpec(v)),
    v,
    { M: s.M, beta: s.beta },
    A,
    weight,
    C,
  );
  rec.submit();
  const got = await gpu.readFloat32(C, s.M * s.N);
  [A, C].forEach((x) => x.destroy());
  texture.destroy();
  return toleranceRatio(
    got,
    matmulRef(shape, rmsRows(a, s.M, s.K, s.normEps), b, c0),
    1e-5 * Math.sqrt(s.K) + 1e-6,
    1e-4,
  );
}

/** Three products sharing A, B's rows wrapping into blocks of columns, through the grouped entry. */
async function runTextureGroup(
  gpu: Gpu,
  v: MatmulVariant,
  M: number,
  normEps?: number,
): Promise<number> {
  const K = 44, H = 13, Ns = [37, 12, 70];
  const a = seededValues(M * K, 1),
    A = gpu.upload(a),
    scratch = gpu.zeros(4),
    an = rmsRows(a, M, K, normEps);
  const parts = Ns.map((N, i) => {
    const b = seededValues(N * K, 10 + i);
    return { N, b, ...textureWeight(gpu, b, N, K, H, normEps), C: gpu.zeros(M * N) };
  });
  const rec = gpu.recorder("texture group case");
  encodeGroupTextureWith(
    rec,
    await gpu.kernel(textureSpec(v, "group")),
    v,
    M,
    A,
    parts.map((p) => ({ b: p.weight, c: p.C })),
    scratch,
  );
  rec.submit();
  let worst = 0;
  for (const p of parts) {
    const got = await gpu.readFloat32(p.C, M * p.N);
    const ref = matmulRef({ form: "nt", M, N: p.N, K }, an, p.b, new Float32Array(M * p.N));
    worst = Math.max(worst, toleranceRatio(got, ref, 1e-5 * Math.sqrt(K) + 1e-6, 1e-4));
    p.C.destroy();
    p.texture.destroy();
  }
  [A, scratch].forEach((x) => x.destroy());
  return worst;
}

/** The gate/up pair with SwiGLU applied (rows wrapping, an odd width): silu(A·Gᵀ) · (A·Uᵀ). */
async function runTextureSwiglu(
  gpu: Gpu,
  v: MatmulVariant,
  M: number,
  normEps?: number,
): Promise<number> {
  const K = 36, H = 9, I = 45;
  const a = seededValues(M * K, 1),
    gw = seededValues(I * K, 5),
    uw = seededValues(I * K, 6),
    an = rmsRows(a, M, K, normEps);
  const A = gpu.upload(a), h = gpu.zeros(M * I), scratch = [gpu.zeros(4), gpu.zeros(4)] as const;
  const g = textureWeight(gpu, gw, I, K, H, normEps), u = textureWeight(gpu, uw, I, K, H, normEps);
  const rec = gpu.recorder("texture swiglu case");
  encodeSwigluTextureWith(
    rec,
    await gpu.kernel(textureSpec(v, "swiglu")),
    v,
    M,
    A,
    g.weight,
    u.weight,
    h,
    scratch,
  );
  rec.submit();
  const got = await gpu.readFloat32(h, M * I);
  const zeros = new Float32Array(M * I);
  const gr = matmulRef({ form: "nt", M, N: I, K }, an, gw, zeros),
    ur = matmulRef({ form: "nt", M, N: I, K }, an, uw, zeros);
  const ref = gr.map((x, i) => x / (1 + Math.exp(-x)) * ur[i]);
  [A, h, ...scratch].forEach((x) => x.destroy());
  [g, u].forEach((x) => x.texture.destroy());
  return toleranceRatio(got, ref, 1e-5 * Math.sqrt(K) + 1e-6, 1e-4);
}

/**
 * A·Bᵀ with B in a texture (the decode path's weight textures): every texture-form variant on
 * every shape where `thorough`, else the default pick for each shape's rows; grouped entries too.
 */
function textureMatmulCases(thorough: boolean): KernelCase[] {
  const out: KernelCase[] = [];
  const pick = (M: number) =>
    findTextureVariant(
      TEXTURE_DEFAULT_PICKS[
        M < 8 ? "vector" : M < 16 ? "skinny" : M <= 24 ? "skinny16" : "skinny32"
      ]!,
    );
  for (const s of TEX_SHAPES) {
    const name = `matmul texture nt ${s.M}x${s.N}x${s.K} H${s.H}${s.beta ? " acc" : ""}`;
    for (const v of thorough ? TEX_VARIANTS : [pick(s.M)]) {
      out.push({
        name: `${name} [${v.name}]`,
        run: (gpu) => runTextureMatmul(gpu, s, v),
      });
    }
  }
  for (const v of thorough ? TEX_VARIANTS : [pick(8)]) {
    for (const [M, eps] of [[1, undefined], [8, 1e-5], [11, undefined]] as const) {
      const norm = eps === undefined ? "" : " norm";
      out.push({
        name: `matmul texture group M${M}${norm} [${v.name}]`,
        run: (gpu) => runTextureGroup(gpu, v, M, eps),
      });
      out.push({
        name: `matmul texture swiglu M${M}${norm} [${v.name}]`,
        run: (gpu) => runTextureSwiglu(gpu, v, M, eps),
      });
    }
  }
  return out;
}

function elementwiseCases(): KernelCase[] {
  const out: KernelCase[] = [];
  for (const op of UNARY_OPS) {
    for (const n of [1, 1000, 70001]) {
      out.push({
        name: `unary ${op} n=${n}`,
        async run(gpu, ops) {
          const positive = op === "log" || op === "sqrt";
          const x = seededValues(n, 7, positive ? 0.01 : -4, 4);
          const X = gpu.upload(x), Y = gpu.zeros(n);
          const [a, b] = op === "affine" ? [1.5, -0.25] : [1, 0];
          const rec = gpu.recorder();
          ops.elementwise.unary(rec, op, n, X, Y, a, b);
          rec.submit();
          const got = await gpu.readFloat32(Y, n);
          X.destroy();
          Y.destroy();
          return toleranceRatio(got, unaryRef(op, x, a, b), 1e-6, 2e-6);
        },
      });
    }
  }
  const shapes: Array<[number, number, Broadcast]> = [
    [1, 1, "same"],
    [3, 5, "same"],
    [130, 77, "row"],
    [130, 77, "col"],
    [4, 9, "scalar"],
    [300, 301, "same"],
  ];
  for (const op of BINARY_OPS) {
    for (const [rows, cols, bc] of shapes) {
      for (const inPlace of [false, true]) {
        out.push({
          name: `binary${inPlace ? " in-place" : ""} ${op} ${rows}x${cols} ${bc}`,
          async run(gpu, ops) {
            const n = rows * cols;
            const ny = { same: n, row: cols, col: rows, scalar: 1 }[bc];
            const x = seededValues(n, 11), y = seededValues(ny, 12, 0.5, 2);
            const args: BinaryArgs = { op, n, cols, broadcast: bc, a: 1.25, b: 0.75 };
            const X = gpu.upload(x), Y = gpu.upload(y), O = gpu.zeros(n);
            const rec = gpu.recorder();
            if (inPlace) ops.elementwise.binaryInPlace(rec, args, X, Y);
            else ops.elementwise.binary(rec, args, X, Y, O);
            rec.submit();
            const got = await gpu.readFloat32(inPlace ? X : O, n);
            [X, Y, O].forEach((b) => b.destroy());
            return toleranceRatio(got, binaryRef(args, x, y), 1e-6, 2e-6);
          },
        });
      }
    }
  }
  // Grouped bias adds (q/k/v's): each part as binaryInPlace's row broadcast writes it, bit for
  // bit; 2 and 3 parts, rows and widths that do not fill a workgroup.
  for (const [rows, widths] of [[3, [64, 16, 16]], [37, [13, 7]]] as const) {
    out.push({
      name: `bias group ${rows} rows × [${widths.join(", ")}]`,
      async run(gpu, ops) {
        const ys = widths.map((w, i) => seededValues(rows * w, 20 + i));
        const bs = widths.map((w, i) => seededValues(w, 30 + i));
        const grouped = ys.map((y) => gpu.upload(y)), single = ys.map((y) => gpu.upload(y));
        const B = bs.map((b) => gpu.upload(b)), scratch = gpu.zeros(4);
        const rec = gpu.recorder();
        ops.elementwise.addBiases(
          rec,
          rows,
          widths.map((cols, i) => ({ y: grouped[i], bias: B[i], cols })),
          scratch,
        );
        const plan = rec.finish();
        const dispatches = plan.dispatchCount;
        plan.run();
        plan.destroy();
        widths.forEach((cols, i) =>
          ops.elementwise.binaryInPlace(
            rec,
            { op: "add", n: rows * cols, cols, broadcast: "row" },
            single[i],
            B[i],
          )
        );
        rec.submit();
        let worst = dispatches === 1 ? 0 : Infinity;
        for (let i = 0; i < widths.length; i++) {
          const n = rows * widths[i];
          const [g, s1] = [
            await gpu.readFloat32(grouped[i], n),
            await gpu.readFloat32(single[i], n),
          ];
          if (g.some((v, j) => v !== s1[j])) worst = Infinity;
          const args = { op: "add", n, cols: widths[i], broadcast: "row" } as const;
          worst = Math.max(worst, toleranceRatio(g, binaryRef(args, ys[i], bs[i]), 1e-6, 2e-6));
        }
        [...grouped, ...single, ...B, scratch].forEach((b) => b.destroy());
        return worst;
      },
    });
  }
  return out;
}

function softmaxCases(): KernelCase[] {
  const out: KernelCase[] = [];
  const shapes: Array<[number, number, number]> = [[1, 1, 1], [3, 7, 1], [5, 1000, 50], [
    1,
    50000,
    10,
  ], [70, 33, 5]];
  for (const log of [false, true]) {
    for (const [rows, cols, scale] of shapes) {
      out.push({
        name: `${log ? "log_softmax" : "softmax"} ${rows}x${cols} (|x| ≤ ${scale})`,
        async run(gpu, ops) {
          const x = seededValues(rows * cols, 21, -scale, scale);
          const X = gpu.upload(x), Y = gpu.zeros(rows * cols);
          const rec = gpu.recorder();
          ops.softmax.encode(rec, rows, cols, X, Y, log);
          rec.submit();
          const got = await gpu.readFloat32(Y, rows * cols);
          X.destroy();
          Y.destroy();
          return toleranceRatio(got, softmaxRef(rows, cols, x, log), 1e-6, log ? 1e-5 : 1e-4);
        },
      });
    }
  }
  return out;
}

function reduceCases(): KernelCase[] {
  const out: KernelCase[] = [];
  for (const op of REDUCE_OPS) {
    for (const [rows, cols] of [[1, 1], [4, 1000], [33, 65], [1, 20000]]) {
      out.push({
        name: `reduce rows ${op} ${rows}x${cols}`,
        async run(gpu, ops) {
          const x = seededValues(rows * cols, 31);
          const X = gpu.upload(x), Y = gpu.zeros(rows);
          const rec = gpu.recorder();
          ops.reduce.rows(rec, op, rows, cols, X, Y);
          rec.submit();
          const got = await gpu.readFloat32(Y, rows);
          X.destroy();
          Y.destroy();
          return toleranceRatio(got, rowReduceRef(op, rows, cols, x), 1e-5 * Math.sqrt(cols), 1e-5);
        },
      });
    }
    for (const n of [1, 4097, 100003, 1_000_000]) {
      out.push({
        name: `reduce global ${op} n=${n}`,
        async run(gpu, ops) {
          const x = seededValues(n, 41);
          const X = gpu.upload(x), S = gpu.zeros(Reduce.scratchFloats(n)), Y = gpu.zeros(1);
          const rec = gpu.recorder();
          ops.reduce.global(rec, op, n, X, S, Y);
          rec.submit();
          const got = await gpu.readFloat32(Y, 1);
          [X, S, Y].forEach((b) => b.destroy());
          return toleranceRatio(got, [globalReduceRef(op, x)], 1e-6 * Math.sqrt(n), 1e-5);
        },
      });
    }
  }
  return out;
}

function gridCases(): KernelCase[] {
  return [{
    name: "grid1d spreads counts over 2-D grids within the limit",
    run() {
      const bad = [1, 65535, 65536, 1e6, 4.3e6].filter((n) => {
        const [x, y] = grid1d(n);
        return x > 65535 || y > 65535 || x * y < n;
      });
      return Promise.resolve(bad.length ? Infinity : 0);
    },
  }];
}

/**
 * All cases; `thorough` adds every matmul variant on every shape (Deno runs it); `subgroups`
 * the subgroup twins (for a device with Gpu.subgroups).
 */
/**
 * `textures`: include the texture-form matmuls, which run only where an adapter's picks ask for
 * them (llvmpipe's, so Deno's suite); the browser's worker leaves them out, as SwiftShader's picks
 * never take them.
 */
export function kernelCases(thorough = true, subgroups = false, textures = true): KernelCase[] {
  return [
    ...gridCases(),
    ...matmulCases(thorough),
    ...(subgroups ? subgroupCases() : []),
    ...halfBCases(thorough),
    ...(textures ? textureMatmulCases(thorough) : []),
    ...elementwiseCases(),
    ...softmaxCases(),
    ...reduceCases(),
  ];
}

/** Each case's ratio to its tolerance (an exception is a failed case), `concurrency` at a time. */
export async function runCases<C extends { name: string }>(
  cases: C[],
  run: (c: C) => Promise<number>,
  concurrency = 1,
  prefix = "",
): Promise<CaseResult[]> {
  const results: CaseResult[] = new Array(cases.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < cases.length; i = next++) {
      const name = prefix + cases[i].name;
      const t0 = performance.now();
      try {
        const ratio = await run(cases[i]);
        results[i] = { name, ratio, ok: ratio <= 1, ms: performance.now() - t0 };
      } catch (e) {
        results[i] = {
          name,
          ratio: Infinity,
          ok: false,
          error: `${(e as Error).name}: ${(e as Error).message}`,
          ms: performance.now() - t0,
        };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
  return results;
}
