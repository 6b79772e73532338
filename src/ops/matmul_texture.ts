// The texture form of A·Bᵀ for decode rows (llvmpipe's picks; any adapter where forced): B a
// weight held in an rgba32float texture (model/cpu_adapter/weight_textures.ts), read by the
// TEX_TILES kernels of matmul_gen.ts: plain, grouped (q/k/v, gate/up), gate/up with SwiGLU, and
// q/k/v with RoPE and the cache write. Matmul (matmul.ts) picks and prepares them.

import type { BufferRef } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Kernel, KernelSpec } from "../gpu/pipelines.ts";
import type { Recorder, TextureBinding } from "../gpu/recorder.ts";
import { isRopeTile, isTexTile, MatmulTexGroupParams, MatmulTexParams } from "./matmul_tex_gen.ts";
import type { MatmulVariant, ShapeBucket } from "./matmul_variants.ts";

/**
 * A weight held in an rgba32float 2D texture (model/cpu_adapter/weight_textures.ts) for the texture-form A·Bᵀ
 * kernels: row n of B [N, K] is texel row n % rowsPerBlock, in texel columns
 * (n / rowsPerBlock)·K/4 + [0, K/4): rows past the height limit wrap into blocks of columns.
 */
export interface TextureWeight {
  readonly binding: TextureBinding;
  /** B's rows (N) and columns (K). */
  readonly rows: number;
  readonly cols: number;
  readonly rowsPerBlock: number;
  /**
   * Set when the texture holds W·diag(g) for the RMSNorm (weight g, this eps) that precedes the
   * product: the kernels then take A un-normalized and scale each row by its rsqrt(mean(A²) + eps).
   */
  readonly normEps?: number;
}

/**
 * The texture-form kernel of a variant (a TEX_TILES tile of matmul_gen.ts): the plain entry, the grouped one
 * ("group"), or the gate/up pair with SwiGLU applied ("swiglu", the grouped bindings).
 */
export function textureSpec(
  v: MatmulVariant,
  entry: "plain" | "group" | "swiglu" | "rope" = "plain",
): KernelSpec {
  if (v.kind !== "reg" || !isTexTile(v.r!, v.c!)) {
    throw new KernelArgumentError(`matmul variant ${v.name} has no texture-form entry`);
  }
  const ro = "read-only-storage", rw = "storage", constants = { WGX: v.wgx!, WGY: v.wgy! };
  if (entry === "plain") {
    return {
      shader: "matmul_tex",
      entry: `ntx_r${v.r}c${v.c}`,
      bindings: ["uniform", ro, "texture-read", rw],
      constants,
    };
  }
  if (entry === "rope") {
    if (!isRopeTile(v.r!, v.c!)) {
      throw new KernelArgumentError(`matmul variant ${v.name} has no q/k/v RoPE entry`);
    }
    return {
      shader: "matmul_tex_rope",
      entry: `ntxr_r${v.r}c${v.c}`,
      bindings: [
        "uniform",
        ro,
        "texture-read",
        "texture-read",
        "texture-read",
        rw,
        rw,
        rw,
        ro,
        ro,
        ro,
      ],
      constants,
    };
  }
  const name = entry === "group" ? "ntxg" : "ntxs";
  return {
    shader: "matmul_tex_group",
    entry: `${name}_r${v.r}c${v.c}`,
    bindings: ["uniform", ro, "texture-read", "texture-read", "texture-read", rw, rw, rw],
    constants,
  };
}

/** Records a texture-form A·Bᵀ with a given, compiled kernel (textureSpec(v)). */
export function encodeTextureWith(
  rec: Recorder,
  kernel: Kernel,
  v: MatmulVariant,
  shape: { M: number; beta?: number },
  a: BufferRef,
  b: TextureWeight,
  c: BufferRef,
): void {
  const { M } = shape, N = b.rows, K = b.cols;
  if (M <= 0 || N <= 0 || K <= 0 || K % 4) {
    throw new KernelArgumentError(
      `matmul texture form: M ${M} and N ${N} must be positive and K ${K} a positive multiple of 4`,
    );
  }
  const u = MatmulTexParams.pack({
    M,
    N,
    K,
    H: b.rowsPerBlock,
    alpha: 1,
    beta: shape.beta ?? 0,
    eps: b.normEps ?? 0,
    norm: b.normEps === undefined ? 0 : 1,
  });
  rec.dispatch(kernel, [null, a, b.binding, c], [
    Math.ceil(N / (v.c! * v.wgx!)),
    Math.ceil(M / (v.r! * v.wgy!)),
    1,
  ], u);
}

/**
 * Records a grouped texture-form A·Bᵀ with a compiled kernel (textureSpec(v, true)): 2 or 3
 * parts, every part's K (cols) and rowsPerBlock the same.
 */
export function encodeGroupTextureWith(
  rec: Recorder,
  kernel: Kernel,
  v: MatmulVariant,
  M: number,
  a: BufferRef,
  parts: readonly { b: TextureWeight; c: BufferRef }[],
  scratch: BufferRef,
): void {
  const { cols: K, rowsPerBlock: H, normEps } = parts[0].b;
  if (
    parts.length < 2 || parts.length > 3 ||
    parts.some((q) => q.b.cols !== K || q.b.rowsPerBlock !== H || q.b.normEps !== normEps)
  ) {
    throw new KernelArgumentError(
      "matmul texture group: 2 or 3 parts with the same K, rows per block and folded norm",
    );
  }
  if (M <= 0 || K % 4) {
    throw new KernelArgumentError(
      `matmul texture group: M ${M} must be positive and K ${K} a multiple of 4`,
    );
  }
  const cols = v.c! * v.wgx!;
  const tiles = parts.map((q) => Math.ceil(q.b.rows / cols));
  const filled = [0, 1, 2].map((i) => parts[i] ?? { b: { ...parts[0].b, rows: 0 }, c: scratch });
  const u = texGroupParams(M, K, H, normEps, {
    N0: filled[0].b.rows,
    N1: filled[1].b.rows,
    N2: filled[2].b.rows,
    t0: tiles[0],
    t1: tiles[1] ?? 0,
  });
  const x = tiles.reduce((s, t) => s + t, 0);
  rec.dispatch(kernel, [
    null,
    a,
    filled[0].b.binding,
    filled[1].b.binding,
    filled[2].b.binding,
    filled[0].c,
    filled[1].c,
    filled[2].c,
  ], [
    x,
    Math.ceil(M / (v.r! * v.wgy!)),
    1,
  ], u);
}

/**
 * The grouped texture kernels' parameters (matmul_tex_group, matmul_tex_rope): the parts' shared
 * K, rows per block H and folded norm; unnamed parts, tiles and RoPE fields are 0.
 */
function texGroupParams(
  M: number,
  K: number,
  H: number,
  normEps: number | undefined,
  p: {
    N0: number;
    N1?: number;
    N2?: number;
    t0?: number;
    t1?: number;
    headDim?: number;
    positions?: number;
  },
): ArrayBuffer {
  return MatmulTexGroupParams.pack({
    M,
    K,
    N0: p.N0,
    N1: p.N1 ?? 0,
    N2: p.N2 ?? 0,
    t0: p.t0 ?? 0,
    t1: p.t1 ?? 0,
    H,
    eps: normEps ?? 0,
    norm: normEps === undefined ? 0 : 1,
    headDim: p.headDim ?? 0,
    positions: p.positions ?? 0,
  });
}

/** Records encodeSwigluTexture with a compiled kernel (textureSpec(v, "swiglu")). */
export function encodeSwigluTextureWith(
  rec: Recorder,
  kernel: Kernel,
  v: MatmulVariant,
  M: number,
  a: BufferRef,
  gate: TextureWeight,
  up: TextureWeight,
  h: BufferRef,
  unused: readonly [BufferRef, BufferRef],
): void {
  const { rows: I, cols: K, rowsPerBlock: H, normEps } = gate;
  if (up.rows !== I || up.cols !== K || up.rowsPerBlock !== H || up.normEps !== normEps) {
    throw new KernelArgumentError(
      "matmul texture swiglu: gate and up must have the same shape, rows per block and folded norm",
    );
  }
  if (M <= 0 || K % 4) {
    throw new KernelArgumentError(
      `matmul texture swiglu: M ${M} must be positive and K ${K} a multiple of 4`,
    );
  }
  const u = texGroupParams(M, K, H, normEps, { N0: I });
  rec.dispatch(kernel, [null, a, gate.binding, up.binding, up.binding, h, unused[0], unused[1]], [
    Math.ceil(I / (v.c! / 2 * v.wgx!)),
    Math.ceil(M / (v.r! * v.wgy!)),
    1,
  ], u);
}

/**
 * Where a q/k/v RoPE texture product writes: q [M, NH·D] roped, k roped and v into the layer's
 * caches kc/vc [S, KV, P, D] at each row's (slot, pos) from `meta`; cos/sin the [P, D/2] tables.
 */
export interface QkvRopeOut {
  q: BufferRef;
  kc: BufferRef;
  vc: BufferRef;
  meta: BufferRef;
  cos: BufferRef;
  sin: BufferRef;
  headDim: number;
  positions: number;
}

/** Records encodeQkvRopeTexture with a compiled kernel (textureSpec(v, "rope")). */
export function encodeQkvRopeTextureWith(
  rec: Recorder,
  kernel: Kernel,
  v: MatmulVariant,
  M: number,
  a: BufferRef,
  w: readonly [TextureWeight, TextureWeight, TextureWeight],
  out: QkvRopeOut,
): void {
  const { cols: K, rowsPerBlock: H, normEps } = w[0], D = out.headDim;
  if (
    w.some((t) => t.cols !== K || t.rowsPerBlock !== H || t.normEps !== normEps) ||
    w[1].rows !== w[2].rows
  ) {
    throw new KernelArgumentError(
      "matmul texture q/k/v RoPE: q, k, v with the same K, rows per block and folded norm, k and v of one width",
    );
  }
  if (M <= 0 || K % 4 || D % 2 || (D / 2) % (v.c! / 2) || w[0].rows % D || w[1].rows % D) {
    throw new KernelArgumentError(
      `matmul texture q/k/v RoPE: M ${M}, K ${K} % 4, head_dim ${D} with (D/2) % ${
        v.c! / 2
      } == 0 and whole heads`,
    );
  }
  const cols = v.c! * v.wgx!;
  const tiles = w.map((t) => Math.ceil(t.rows / cols));
  const u = texGroupParams(M, K, H, normEps, {
    N0: w[0].rows,
    N1: w[1].rows,
    N2: w[2].rows,
    t0: tiles[0],
    t1: tiles[1],
    headDim: D,
    positions: out.positions,
  });
  rec.dispatch(kernel, [
    null,
    a,
    w[0].binding,
    w[1].binding,
    w[2].binding,
    out.q,
    out.kc,
    out.vc,
    out.meta,
    out.cos,
    out.sin,
  ], [
    tiles[0] + tiles[1] + tiles[2],
    Math.ceil(M / (v.r! * v.wgy!)),
    1,
  ], u);
}

/** The decode buckets the texture form serves. */
export const TEXTURE_BUCKETS: readonly ShapeBucket[] = ["vector", "skinny", "skinny16", "skinny32"];

/**
 * The texture form's row tiers: its "vector" pick takes 2–4 rows and "skinny" 5–15 (a 4-row
 * tile wastes less than an 8-row one below 5 rows, and a 1-row tile loads every weight once per
 * row), then the shape buckets' 16–24 and 25–32; a single row (null) keeps the storage form,
 * which was as fast or faster there (ops/tuning.ts).
 */
export function textureBucket(M: number): ShapeBucket | null {
  return M <= 1
    ? null
    : M <= 4
    ? "vector"
    : M < 16
    ? "skinny"
    : M <= 24
    ? "skinny16"
    : M <= 32
    ? "skinny32"
    : "small";
}

/** The texture tiers that M = 1..maxRows rows reach. */
export function textureBuckets(maxRows: number): ShapeBucket[] {
  const out = new Set<ShapeBucket>();
  for (let m = 2; m <= Math.min(maxRows, 33); m++) out.add(textureBucket(m)!);
  return TEXTURE_BUCKETS.filter((b) => out.has(b));
}

/** Texture-form variants for adapters whose tuning has none (llvmpipe's picks, ops/tuning.ts). */
export const TEXTURE_DEFAULT_PICKS: Partial<Record<ShapeBucket, string>> = {
  vector: "r4c16_wg8x1",
  skinny: "r8c32_wg8x1",
  skinny16: "r8c32_wg8x1",
  skinny32: "r8c32_wg8x1",
};
