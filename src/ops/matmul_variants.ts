// The matmul kernel variants: the forms and shapes a product takes, every named variant (register
// tiles, split-K, workgroup-memory blocks, the texture tiles), which shapes each supports, its
// kernel (and the half-B and subgroup twins), its workgroup grid, and the shape buckets the
// tuning tables pick per. Matmul (matmul.ts) compiles and runs them.
//
// Dims: M rows of C, N columns of C, K the contracted dimension.

import { KernelArgumentError } from "../gpu/errors.ts";
import type { KernelSpec } from "../gpu/pipelines.ts";
import { isBigRegTile, isGroupTile, isRegTile } from "./matmul_gen.ts";
import { isTexTile } from "./matmul_tex_gen.ts";
import { SMEM_TILES, type SmemTile, smemTileName, smemWorkgroup } from "./matmul_smem_gen.ts";
import { HALF_B } from "./matmul_half.ts";

export type MatmulForm = "nn" | "nt" | "tn";
export const MATMUL_FORMS: readonly MatmulForm[] = ["nn", "nt", "tn"];

export interface MatmulShape {
  form: MatmulForm;
  M: number;
  N: number;
  K: number;
  /** Number of independent products (default 1); operands advance by their strides. */
  batch?: number;
  /** Batch strides in elements (defaults: dense; 0 broadcasts that operand). */
  strideA?: number;
  strideB?: number;
  strideC?: number;
  alpha?: number;
  /** 0 (default) overwrites C; 1 accumulates into it. */
  beta?: number;
  /**
   * B is stored as half floats (packed two to a u32, src/ops/matmul_half.ts): a frozen weight.
   * A·Bᵀ and A·B only; the Matmul must have been created with half-B kernels.
   */
  halfB?: boolean;
}

export interface MatmulVariant {
  name: string;
  kind: "reg" | "tiled" | "generic" | "splitk" | "smem";
  /**
   * reg: an R×C tile of C per invocation; workgroup WGX × WGY. splitk (A·Bᵀ only): R rows × 4
   * columns per workgroup of WGX lanes splitting K (shaders/matmul_splitk.wgsl). smem: a
   * workgroup-memory block tile (matmul_smem_gen.ts), `tile`.
   */
  r?: number;
  c?: number;
  wgx?: number;
  wgy?: number;
  tile?: SmemTile;
}

export function hasGroupEntry(v: MatmulVariant): boolean {
  return (v.kind === "reg" && isGroupTile(v.r!, v.c!)) || v.kind === "splitk";
}

/** Whether a variant has a twin whose workgroup sum runs on subgroup operations (split-K). */
export function hasSubgroupTwin(v: MatmulVariant): boolean {
  return v.kind === "splitk";
}

/** The suffix of a split-K shader's subgroup twin (shaders/matmul_splitk_sum_sg.wgsl). */
export const SUBGROUP = "_sg";

export function groupSpec(v: MatmulVariant, half = false, subgroups = false): KernelSpec {
  const ro = "read-only-storage", rw = "storage", h = half ? HALF_B : "";
  if (v.kind === "splitk") {
    return {
      shader: `matmul_splitk_group${subgroups ? SUBGROUP : ""}${h}`,
      entry: "ntg_splitk",
      bindings: ["uniform", ro, ro, ro, ro, rw, rw, rw],
      constants: { WG: v.wgx!, R: v.r! },
    };
  }
  return {
    shader: `matmul_group${h}`,
    entry: `ntg_r${v.r}c${v.c}`,
    bindings: ["uniform", ro, ro, ro, ro, rw, rw, rw],
    constants: { WGX: v.wgx!, WGY: v.wgy! },
  };
}

/**
 * Storage buffers the fused split-K kernels bind (normGroupSpec's: A, three B, three C, the norm
 * weight and the normalized output): adapters that allow fewer per stage run them unfused.
 */
export const FUSED_SPLITK_STORAGE = 9;

/** The grouped split-K A·Bᵀ with an RMSNorm of A folded in (shaders/matmul_splitk_group_norm.wgsl). */
export function normGroupSpec(v: MatmulVariant, half = false, subgroups = false): KernelSpec {
  const ro = "read-only-storage", rw = "storage", h = half ? HALF_B : "";
  return {
    shader: `matmul_splitk_group_norm${subgroups ? SUBGROUP : ""}${h}`,
    entry: "ntg_splitk_norm",
    bindings: ["uniform", ro, ro, ro, ro, rw, rw, rw, ro, rw],
    constants: { WG: v.wgx!, R: v.r! },
  };
}

/** The split-K A·Bᵀ of SwiGLU's output (shaders/matmul_splitk_swiglu.wgsl). */
export function swigluSpec(v: MatmulVariant, half = false, subgroups = false): KernelSpec {
  const ro = "read-only-storage", rw = "storage", h = half ? HALF_B : "";
  return {
    shader: `matmul_splitk_swiglu${subgroups ? SUBGROUP : ""}${h}`,
    entry: "nt_splitk_swiglu",
    bindings: ["uniform", ro, ro, ro, rw, rw],
    constants: { WG: v.wgx!, R: v.r! },
  };
}

/** A register-tile variant; its tile must be one matmul_gen.ts generates (`texture`: TEX_TILES). */
function reg(r: number, c: number, wgx: number, wgy = 1, texture = false): MatmulVariant {
  if (!(texture ? isTexTile(r, c) : isRegTile(r, c))) {
    throw new Error(
      `matmul tile r${r}c${c} is not generated: add it to ${
        texture ? "TEX_TILES" : "REG_TILES or BIG_TILES"
      } in src/ops/matmul_gen.ts`,
    );
  }
  return { name: `r${r}c${c}_wg${wgx}x${wgy}`, kind: "reg", r, c, wgx, wgy };
}

/** Split-K variants; shaders/matmul_splitk.wgsl holds up to 8 rows and 64 lanes (a power of 2). */
function splitk(r: number, wg: number): MatmulVariant {
  if (r < 1 || r > 8 || wg > 64 || (wg & (wg - 1)) !== 0) {
    throw new Error(`split-K variant r${r} wg${wg} outside the shader's limits`);
  }
  return { name: `sk_r${r}_wg${wg}`, kind: "splitk", r, c: 4, wgx: wg, wgy: 1 };
}

/** A workgroup-memory block-tile variant (GPU class), one per SMEM_TILES entry. */
function smem(t: SmemTile): MatmulVariant {
  const [wgx, wgy] = smemWorkgroup(t);
  return { name: smemTileName(t), kind: "smem", wgx, wgy, tile: t };
}

/** Every variant the lab knows; the lab validates each before timing it. */
export const MATMUL_VARIANTS: readonly MatmulVariant[] = [
  { name: "generic", kind: "generic", wgx: 8, wgy: 8 },
  { name: "tiled64", kind: "tiled" },
  reg(1, 4, 64),
  reg(1, 8, 32),
  reg(1, 8, 64),
  reg(2, 8, 32),
  reg(4, 4, 16),
  reg(4, 8, 16),
  reg(4, 8, 32),
  reg(8, 4, 16),
  reg(8, 8, 8),
  reg(8, 8, 16),
  reg(8, 8, 32),
  reg(8, 8, 8, 4),
  reg(8, 16, 8),
  reg(8, 16, 16),
  reg(16, 8, 8),
  reg(16, 8, 16),
  reg(16, 16, 8),
  reg(32, 16, 8),
  splitk(1, 64),
  splitk(4, 64),
  splitk(8, 64),
  splitk(1, 32),
  ...SMEM_TILES.map(smem),
];

/** Texture-form variants (textureSpec): TEX_TILES tiles with their workgroup widths. */
export const TEX_VARIANTS: readonly MatmulVariant[] = [
  reg(1, 8, 32, 1, true),
  reg(1, 16, 32, 1, true),
  reg(4, 16, 8, 1, true),
  reg(8, 16, 8, 1, true),
  reg(8, 32, 8, 1, true),
];

export function findTextureVariant(name: string): MatmulVariant {
  const v = TEX_VARIANTS.find((x) => x.name === name);
  if (!v) {
    throw new KernelArgumentError(
      `unknown texture-form matmul variant "${name}"; known: ${
        TEX_VARIANTS.map((x) => x.name).join(", ")
      }`,
    );
  }
  return v;
}

export function findVariant(name: string): MatmulVariant {
  const v = MATMUL_VARIANTS.find((x) => x.name === name);
  if (!v) {
    throw new KernelArgumentError(
      `unknown matmul variant "${name}"; known: ${MATMUL_VARIANTS.map((x) => x.name).join(", ")}`,
    );
  }
  return v;
}

export function dense(s: MatmulShape) {
  const batch = s.batch ?? 1;
  return {
    ...s,
    batch,
    strideA: s.strideA ?? s.M * s.K,
    strideB: s.strideB ?? s.K * s.N,
    strideC: s.strideC ?? s.M * s.N,
    alpha: s.alpha ?? 1,
    beta: s.beta ?? 0,
  };
}

/** Whether a variant can compute this shape (vec4 kernels need aligned dims and strides). */
export function variantSupports(v: MatmulVariant, shape: MatmulShape): boolean {
  if (v.kind !== "reg" && v.kind !== "splitk" && v.kind !== "smem") return true;
  const s = dense(shape);
  const a4 = (n: number) => n % 4 === 0;
  // Split-K: N/4 workgroups along x, within WebGPU's default 65535 per dimension (a 262144-word
  // LM head would not be).
  if (v.kind === "splitk") {
    return s.form === "nt" && a4(s.K) && a4(s.strideA) && a4(s.strideB) && s.N <= 4 * 65535;
  }
  if (!a4(s.strideA) || !a4(s.strideB)) return false;
  if (v.kind === "smem") {
    if (s.form === "nn") return a4(s.K) && a4(s.N);
    if (s.form === "nt") return a4(s.K);
    return a4(s.M) && a4(s.N);
  }
  const r = v.r!, c = v.c!;
  if (s.form === "nn") return a4(s.K) && a4(s.N) && c % 4 === 0;
  if (s.form === "nt") return a4(s.K);
  return a4(s.M) && a4(s.N) && r % 4 === 0 && c % 4 === 0;
}

/**
 * The kernel of a variant in a form; `half`: its twin reading B as half floats (A·Bᵀ and A·B);
 * `subgroups`: a split-K variant's twin summing through subgroup operations (the device must
 * have them: Gpu.subgroups); other variants have none and ignore it.
 */
export function kernelSpec(
  v: MatmulVariant,
  form: MatmulForm,
  half = false,
  subgroups = false,
): KernelSpec {
  if (half && form === "tn") {
    throw new KernelArgumentError("matmul: half-float B is for weights, in A·Bᵀ (nt) and A·B (nn)");
  }
  const spec = f32KernelSpec(v, form);
  const sg = subgroups && hasSubgroupTwin(v) ? SUBGROUP : "";
  return { ...spec, shader: spec.shader + sg + (half ? HALF_B : "") };
}

function f32KernelSpec(v: MatmulVariant, form: MatmulForm): KernelSpec {
  const bindings = ["uniform", "read-only-storage", "read-only-storage", "storage"] as const;
  if (v.kind === "reg") {
    const shader = isBigRegTile(v.r!, v.c!) ? "matmul_reg_big" : "matmul_reg";
    return {
      shader,
      entry: `${form}_r${v.r}c${v.c}`,
      bindings,
      constants: { WGX: v.wgx!, WGY: v.wgy! },
    };
  }
  if (v.kind === "smem") {
    return { shader: "matmul_smem", entry: `${form}_${v.name}`, bindings };
  }
  if (v.kind === "splitk") {
    if (form !== "nt") {
      throw new KernelArgumentError(
        `matmul variant ${v.name} computes A·Bᵀ (nt) only, not ${form}`,
      );
    }
    return {
      shader: "matmul_splitk",
      entry: "nt_splitk",
      bindings,
      constants: { WG: v.wgx!, R: v.r! },
    };
  }
  const FORM = MATMUL_FORMS.indexOf(form);
  if (v.kind === "tiled") {
    return { shader: "matmul_tiled", entry: "tiled", bindings, constants: { FORM } };
  }
  return {
    shader: "matmul_tiled",
    entry: "generic",
    bindings,
    constants: { FORM, WGX: v.wgx!, WGY: v.wgy! },
  };
}

export function workgroups(
  v: MatmulVariant,
  s: ReturnType<typeof dense>,
): [number, number, number] {
  const c = Math.ceil;
  if (v.kind === "reg") return [c(s.N / (v.c! * v.wgx!)), c(s.M / (v.r! * v.wgy!)), s.batch];
  if (v.kind === "splitk") return [c(s.N / 4), c(s.M / v.r!), s.batch];
  if (v.kind === "smem") return [c(s.N / v.tile!.bn), c(s.M / v.tile!.bm), s.batch];
  if (v.kind === "tiled") return [c(s.N / 64), c(s.M / 64), s.batch];
  return [c(s.N / v.wgx!), c(s.M / v.wgy!), s.batch];
}

/**
 * Shape buckets the tuning table distinguishes: decode rows (M < 8), small batches in three row
 * tiers (8–15, 16–24, 25–32: a register tile's cost barely depends on how many of its rows are
 * used, so each tier wants the row tile that fits it), small outputs (M·N < 2^17: a tiny model's
 * training chunks and weight gradients, where the big-tile picks leave cores idle) and the rest.
 */
export type ShapeBucket = "vector" | "skinny" | "skinny16" | "skinny32" | "small" | "square";
export const SHAPE_BUCKETS: readonly ShapeBucket[] = [
  "vector",
  "skinny",
  "skinny16",
  "skinny32",
  "small",
  "square",
];
export function shapeBucket(s: MatmulShape): ShapeBucket {
  if (s.M < 8) return "vector";
  if (s.M < 16) return "skinny";
  if (s.M <= 24) return "skinny16";
  if (s.M <= 32) return "skinny32";
  return s.M * s.N < 2 ** 17 ? "small" : "square";
}

/** Which prepared bucket's pick a shape runs when its own bucket was not prepared (Matmul.create). */
export const BUCKET_STANDIN: Record<ShapeBucket, ShapeBucket[]> = {
  vector: ["skinny", "small"],
  skinny: ["small", "vector"],
  skinny16: ["skinny", "small", "vector"],
  skinny32: ["skinny16", "skinny", "small", "vector"],
  small: ["square", "skinny"],
  square: ["small", "skinny"],
};

/**
 * The buckets a model's matmuls can fall in: its row counts (1..maxRows) against every weight
 * dimension in the forward and the input gradients, and the weight shapes in the weight gradients.
 * The 16- and 32-row tiers are prepared only for models with a weight dimension of 512 or more: on
 * a tiny model's 8–32-row products (N ≤ 264) every tile takes tens of microseconds, and their
 * big-tile picks would cost CPU adapters seconds of shader compilation; there the skinny pick
 * stands in.
 */
export function bucketsForShapes(
  maxRows: number,
  weightShapes: ReadonlyArray<readonly number[]>,
): ShapeBucket[] {
  const dims = weightShapes.flat();
  const maxDim = Math.max(1, ...dims);
  const out = new Set<ShapeBucket>(["vector"]);
  if (maxRows >= 8) out.add("skinny");
  if (maxDim >= 512 && maxRows >= 16) out.add("skinny16");
  if (maxDim >= 512 && maxRows > 24) out.add("skinny32");
  if (maxRows > 32) {
    out.add("small");
    if (maxRows * maxDim >= 2 ** 17) out.add("square");
  }
  for (const s of weightShapes) {
    if (s.length !== 2) continue;
    for (const [m, n] of [[s[0], s[1]], [s[1], s[0]]]) {
      const b = shapeBucket({ form: "tn", M: m, N: n, K: maxRows });
      out.add(b === "skinny16" || b === "skinny32" ? (maxDim >= 512 ? b : "skinny") : b);
    }
  }
  return SHAPE_BUCKETS.filter((b) => out.has(b));
}
