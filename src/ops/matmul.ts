// Matrix multiply in the three forms training needs (A·B, A·Bᵀ, Aᵀ·B), batched, with
// optional accumulate (C = alpha·op(A)op(B) + beta·C). Several named kernel variants exist;
// which one runs is chosen per adapter class and shape bucket from the kernel lab's table.
//
// Dims: M rows of C, N columns of C, K the contracted dimension.

import type { AdapterClass } from "../gpu/device.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { BufferRef } from "../gpu/buffers.ts";
import type { Kernel, KernelSpec } from "../gpu/pipelines.ts";
import type { Recorder, TextureBinding } from "../gpu/recorder.ts";
import { registerShaderGenerators, registerShaderTransforms } from "../gpu/shaders.ts";
import {
  isBigRegTile,
  isGroupTile,
  isRegTile,
  isRopeTile,
  isTexTile,
  MATMUL_SHADERS,
  MatmulGroupParams,
  MatmulParams,
  MatmulTexGroupParams,
  MatmulTexParams,
} from "./matmul_gen.ts";
import { SMEM_TILES, type SmemTile, smemTileName, smemWorkgroup } from "./matmul_smem_gen.ts";
import { HALF_B, HALF_B_SHADERS } from "./matmul_half.ts";
import { matmulPicks } from "./tuning.ts";

// The register-tiled and workgroup-memory shaders are generated from their tile lists when
// first used.
registerShaderGenerators(MATMUL_SHADERS);
registerShaderTransforms(HALF_B_SHADERS);

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

function hasGroupEntry(v: MatmulVariant): boolean {
  return (v.kind === "reg" && isGroupTile(v.r!, v.c!)) || v.kind === "splitk";
}

/** Whether a variant has a twin whose workgroup sum runs on subgroup operations (split-K). */
export function hasSubgroupTwin(v: MatmulVariant): boolean {
  return v.kind === "splitk";
}

/** The suffix of a split-K shader's subgroup twin (shaders/matmul_splitk_sum_sg.wgsl). */
export const SUBGROUP = "_sg";

function groupSpec(v: MatmulVariant, half = false, subgroups = false): KernelSpec {
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

/** One product of a grouped A·Bᵀ: C [M, N] = A · Bᵀ for B [N, K]. */
export interface MatmulGroupPart {
  b: BufferRef;
  c: BufferRef;
  N: number;
}

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

function dense(s: MatmulShape) {
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

function workgroups(v: MatmulVariant, s: ReturnType<typeof dense>): [number, number, number] {
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
const BUCKET_STANDIN: Record<ShapeBucket, ShapeBucket[]> = {
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

/** Records a matmul dispatch with a given, already compiled kernel (the lab's entry point). */
export function encodeMatmulWith(
  rec: Recorder,
  kernel: Kernel,
  v: MatmulVariant,
  shape: MatmulShape,
  a: BufferRef,
  b: BufferRef,
  c: BufferRef,
): void {
  const s = dense(shape);
  if (s.M <= 0 || s.N <= 0 || s.K <= 0 || s.batch <= 0) {
    throw new KernelArgumentError(
      `matmul ${s.form}: dims must be positive, got M=${s.M} N=${s.N} K=${s.K} batch=${s.batch}`,
    );
  }
  if (!variantSupports(v, s)) {
    throw new KernelArgumentError(
      `matmul variant ${v.name} cannot run ${s.form} M=${s.M} N=${s.N} K=${s.K}`,
    );
  }
  const u = MatmulParams.pack(s);
  rec.dispatch(kernel, [null, a, b, c], workgroups(v, s), u);
}

/**
 * Matmul for one device: compiles the variants its adapter class uses (once, up front) and
 * picks one per call by form and shape; unaligned shapes fall back to a shape-agnostic kernel.
 */
export class Matmul {
  /** Kernels by "variant:form", and "variant:form:hb" for the half-B twins. */
  private kernels = new Map<string, Kernel>();
  /** Grouped A·Bᵀ kernels by variant name (register tiles, split-K), and "name:hb". */
  private groupKernels = new Map<string, Kernel>();

  /** Texture-form defaults forced (prepareTextures force) for buckets the adapter picks none for. */
  private texForced = new Map<ShapeBucket, string>();
  /** Texture-form kernels (plain and grouped) by variant name, compiled by prepareTextures. */
  private texKernels = new Map<string, Kernel>();
  private texGroupKernels = new Map<string, Kernel>();
  private texSwigluKernels = new Map<string, Kernel>();
  private texRopeKernels = new Map<string, Kernel>();

  private constructor(
    private gpu: Gpu,
    private adapterClass: AdapterClass,
    private picks: Record<string, string>,
    /** Whether the split-K picks run their subgroup twins (Gpu.subgroups at creation). */
    readonly subgroups: boolean,
  ) {}

  /**
   * Compiles the picks for `buckets` (default: all) and the fallback. A shape whose bucket was not
   * prepared runs its nearest prepared bucket's pick (BUCKET_STANDIN), so models that never see a
   * bucket (a tiny model has no square matmuls) do not pay for compiling its kernels. `halfB`:
   * the half-B twins of the nt and nn kernels too (a model whose frozen weights are half floats).
   * Split-K picks run their subgroup twins where the device has subgroups (Gpu.subgroups).
   */
  static async create(
    gpu: Gpu,
    overrides: Partial<Record<`${MatmulForm}:${ShapeBucket}`, string>> = {},
    buckets: readonly ShapeBucket[] = SHAPE_BUCKETS,
    halfB = false,
  ): Promise<Matmul> {
    const picks: Record<string, string> = { ...matmulPicks(gpu.ctx.info), ...overrides };
    const sg = gpu.subgroups;
    const m = new Matmul(gpu, gpu.adapterClass, picks, sg);
    const fallback = gpu.adapterClass === "cpu" ? "generic" : "tiled64";
    const needed = new Set<string>();
    for (const form of MATMUL_FORMS) {
      const tails = halfB && form !== "tn" ? ["", `:${HALF_B.slice(1)}`] : [""];
      for (const t of tails) {
        needed.add(`${fallback}:${form}${t}`);
        for (const bucket of buckets) {
          needed.add(`${picks[`${form}:${bucket}`] ?? fallback}:${form}${t}`);
        }
      }
    }
    await Promise.all([...needed].map(async (key) => {
      const [name, form, tail] = key.split(":") as [string, MatmulForm, string?];
      const v = findVariant(name), half = tail !== undefined;
      m.kernels.set(key, await gpu.kernel(kernelSpec(v, form, half, sg)));
      if (form === "nt" && hasGroupEntry(v)) {
        m.groupKernels.set(
          half ? `${name}:${tail}` : name,
          await gpu.kernel(groupSpec(v, half, sg)),
        );
      }
    }));
    m.picks.fallback = fallback;
    return m;
  }

  private static key(name: string, shape: MatmulShape): string {
    return shape.halfB ? `${name}:${shape.form}:${HALF_B.slice(1)}` : `${name}:${shape.form}`;
  }

  /** The variant that will run for this shape. */
  variantFor(shape: MatmulShape): MatmulVariant {
    const bucket = shapeBucket(shape);
    for (const b of [bucket, ...BUCKET_STANDIN[bucket]]) {
      const name = this.picks[`${shape.form}:${b}`] ?? this.picks.fallback;
      const v = findVariant(name);
      if (this.kernels.has(Matmul.key(name, shape)) && variantSupports(v, shape)) return v;
    }
    return findVariant(this.picks.fallback);
  }

  encode(rec: Recorder, shape: MatmulShape, a: BufferRef, b: BufferRef, c: BufferRef): void {
    const v = this.variantFor(shape);
    const k = this.kernels.get(Matmul.key(v.name, shape));
    if (!k) {
      throw new KernelArgumentError(
        `matmul: no ${shape.halfB ? "half-B " : ""}${shape.form} kernel compiled` +
          (shape.halfB ? " (create the Matmul with halfB, for A·Bᵀ and A·B)" : ""),
      );
    }
    encodeMatmulWith(rec, k, v, shape, a, b, c);
  }

  /**
   * Up to three A·Bᵀ products sharing A [M, K]: one dispatch where the variant picked for the
   * widest part has a grouped entry (CPU register tiles, split-K), otherwise one matmul per
   * part. Same values either way. `scratch` (≥ 4 bytes, no part's B or C) is the output of
   * unused slots.
   */
  encodeGroup(
    rec: Recorder,
    M: number,
    K: number,
    a: BufferRef,
    parts: readonly MatmulGroupPart[],
    scratch: BufferRef,
    halfB = false,
  ): void {
    if (parts.length === 0 || parts.length > 3) {
      throw new KernelArgumentError(`matmul group: 1 to 3 parts, got ${parts.length}`);
    }
    const widest = Math.max(...parts.map((q) => q.N));
    const v = this.variantFor({ form: "nt", M, N: widest, K, halfB });
    // A·Bᵀ support depends on K only, so the widest part's variant fits every part.
    const k = this.groupKernels.get(halfB ? `${v.name}:${HALF_B.slice(1)}` : v.name);
    if (!k || parts.length === 1) {
      for (const q of parts) this.encode(rec, { form: "nt", M, N: q.N, K, halfB }, a, q.b, q.c);
      return;
    }
    // Columns per workgroup: a register tile's C × WGX, a split-K workgroup's 4.
    const cols = v.kind === "splitk" ? 4 : v.c! * v.wgx!;
    const rows = v.kind === "splitk" ? v.r! : v.r! * v.wgy!;
    const tiles = parts.map((q) => Math.ceil(q.N / cols));
    const filled = [0, 1, 2].map((i) => parts[i] ?? { b: parts[0].b, c: scratch, N: 0 });
    const u = MatmulGroupParams.pack({
      M,
      K,
      N0: filled[0].N,
      N1: filled[1].N,
      N2: filled[2].N,
      t0: tiles[0],
      t1: tiles[1] ?? 0,
    });
    const x = tiles.reduce((s, t) => s + t, 0);
    rec.dispatch(
      k,
      [null, a, filled[0].b, filled[1].b, filled[2].b, filled[0].c, filled[1].c, filled[2].c],
      [x, Math.ceil(M / rows), 1],
      u,
    );
  }

  /** The texture-form variant named for a bucket: the adapter's pick, else a forced default. */
  private texturePick(b: ShapeBucket): string | undefined {
    return this.picks[`ntx:${b}`] ?? this.texForced.get(b);
  }

  /**
   * Whether this adapter's own picks run decode A·Bᵀ products against weight textures (picks
   * "ntx:<bucket>"; llvmpipe's, see tuning.ts): the caller then keeps TextureWeights. Defaults
   * forced by prepareTextures do not count.
   */

  get prefersTextures(): boolean {
    return this.gpu.readOnlyStorageTextures && TEXTURE_BUCKETS.some((b) => this.picks[`ntx:${b}`]);
  }

  /**
   * Compiles the texture-form picks (and their grouped entries) for these buckets; once each.
   * `force`: buckets this adapter has no pick for take TEXTURE_DEFAULT_PICKS (tests, and
   * GpuModelOptions.weightTextures: true on any adapter). Nothing where WGSL cannot read storage
   * textures (Gpu.readOnlyStorageTextures): the storage form then runs every product.
   */
  async prepareTextures(
    buckets: readonly ShapeBucket[] = TEXTURE_BUCKETS,
    force = false,
  ): Promise<void> {
    if (!this.gpu.readOnlyStorageTextures) return; // the kernels read storage textures: storage form only
    for (const b of buckets) {
      const dflt = TEXTURE_DEFAULT_PICKS[b];
      if (force && dflt && !this.picks[`ntx:${b}`]) this.texForced.set(b, dflt);
    }
    const names = new Set(
      buckets.map((b) => this.texturePick(b)).filter((n): n is string => !!n),
    );
    await Promise.all([...names].map(async (name) => {
      const v = findTextureVariant(name);
      if (!this.texKernels.has(name)) {
        this.texKernels.set(name, await this.gpu.kernel(textureSpec(v)));
      }
      if (!this.texGroupKernels.has(name)) {
        this.texGroupKernels.set(name, await this.gpu.kernel(textureSpec(v, "group")));
      }
      if (!this.texSwigluKernels.has(name)) {
        this.texSwigluKernels.set(name, await this.gpu.kernel(textureSpec(v, "swiglu")));
      }
      if (isRopeTile(v.r!, v.c!) && !this.texRopeKernels.has(name)) {
        this.texRopeKernels.set(name, await this.gpu.kernel(textureSpec(v, "rope")));
      }
    }));
  }

  /**
   * The texture-form variant for M rows, or null where none is picked and compiled. Only the
   * rows' own bucket counts (no stand-ins): a bucket without a pick keeps the storage form.
   */
  textureVariantFor(M: number): MatmulVariant | null {
    const bucket = textureBucket(M), name = bucket && this.texturePick(bucket);
    return name && this.texKernels.has(name) ? findTextureVariant(name) : null;
  }

  /** Whether encodeTexture can run M rows (a texture-form kernel is compiled for them). */
  canUseTextures(M: number): boolean {
    return this.textureVariantFor(M) !== null;
  }

  /** C [M, N] = A [M, K] · Bᵀ (+ beta · C) with B a texture weight [N, K]; K % 4 == 0. */
  encodeTexture(
    rec: Recorder,
    shape: { M: number; beta?: number },
    a: BufferRef,
    b: TextureWeight,
    c: BufferRef,
  ): void {
    const v = this.textureVariantFor(shape.M);
    if (!v) {
      throw new KernelArgumentError(
        `matmul: no texture-form kernel prepared for ${shape.M} rows (call prepareTextures)`,
      );
    }
    encodeTextureWith(rec, this.texKernels.get(v.name)!, v, shape, a, b, c);
  }

  /**
   * encodeGroup with texture weights: up to three products sharing A [M, K] in one dispatch, or
   * one encodeTexture per part where the variant has no grouped entry or the parts' K or
   * rowsPerBlock differ. `scratch` (≥ 4 bytes, no part's C) is the output of unused slots.
   */
  encodeGroupTexture(
    rec: Recorder,
    M: number,
    a: BufferRef,
    parts: readonly { b: TextureWeight; c: BufferRef }[],
    scratch: BufferRef,
  ): void {
    if (parts.length === 0 || parts.length > 3) {
      throw new KernelArgumentError(`matmul group: 1 to 3 parts, got ${parts.length}`);
    }
    const v = this.textureVariantFor(M);
    if (!v) {
      throw new KernelArgumentError(
        `matmul: no texture-form kernel prepared for ${M} rows (call prepareTextures)`,
      );
    }
    const k = this.texGroupKernels.get(v.name);
    const { cols: K, rowsPerBlock: H, normEps } = parts[0].b;
    if (
      !k || parts.length === 1 ||
      parts.some((q) => q.b.cols !== K || q.b.rowsPerBlock !== H || q.b.normEps !== normEps)
    ) {
      for (const q of parts) this.encodeTexture(rec, { M }, a, q.b, q.c);
      return;
    }
    encodeGroupTextureWith(rec, k, v, M, a, parts, scratch);
  }

  /**
   * Whether encodeQkvRopeTexture can run M rows of heads of `headDim` (a RoPE entry for the
   * rows' tile, whose C/2 rotation pairs per lane divide head_dim/2).
   */
  canRopeTexture(M: number, headDim: number): boolean {
    const v = this.textureVariantFor(M);
    return !!v && this.texRopeKernels.has(v.name) && (headDim / 2) % (v.c! / 2) === 0;
  }

  /**
   * q/k/v products from texture weights (the same K, rows per block and folded norm) with RoPE
   * and the cache write: q [M, NH·D] roped into `q`, k roped and v into the layer's caches
   * kc/vc [S, KV, P, D] at each row's (slot, pos) from `meta`; cos/sin the [P, D/2] tables.
   * rope.wgsl's rope_store after encodeGroupTexture, in one dispatch (canRopeTexture must hold).
   */
  encodeQkvRopeTexture(
    rec: Recorder,
    M: number,
    a: BufferRef,
    w: readonly [TextureWeight, TextureWeight, TextureWeight],
    out: {
      q: BufferRef;
      kc: BufferRef;
      vc: BufferRef;
      meta: BufferRef;
      cos: BufferRef;
      sin: BufferRef;
      headDim: number;
      positions: number;
    },
  ): void {
    const v = this.textureVariantFor(M);
    if (!v || !this.canRopeTexture(M, out.headDim)) {
      throw new KernelArgumentError(
        `matmul: no q/k/v RoPE texture kernel for ${M} rows of head_dim ${out.headDim}`,
      );
    }
    encodeQkvRopeTextureWith(rec, this.texRopeKernels.get(v.name)!, v, M, a, w, out);
  }

  /**
   * h [M, I] = silu(A · gateᵀ) · (A · upᵀ) for texture weights gate and up [I, K] (the same K,
   * rows per block and folded norm): the gate/up products and SwiGLU in one dispatch.
   */
  encodeSwigluTexture(
    rec: Recorder,
    M: number,
    a: BufferRef,
    gate: TextureWeight,
    up: TextureWeight,
    h: BufferRef,
  ): void {
    const v = this.textureVariantFor(M);
    if (!v) {
      throw new KernelArgumentError(
        `matmul: no texture-form kernel prepared for ${M} rows (call prepareTextures)`,
      );
    }
    this.unusedOut ??= [this.gpu.zeros(4, "matmul.unused0"), this.gpu.zeros(4, "matmul.unused1")];
    encodeSwigluTextureWith(
      rec,
      this.texSwigluKernels.get(v.name)!,
      v,
      M,
      a,
      gate,
      up,
      h,
      this.unusedOut,
    );
  }

  /**
   * Two distinct 4-byte buffers for the unused output slots of the SwiGLU entry: a dispatch may
   * not bind one buffer to two writable slots (Dawn rejects it; wgpu does not check).
   */
  private unusedOut: [GPUBuffer, GPUBuffer] | null = null;

  get adapter(): AdapterClass {
    return this.adapterClass;
  }
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

/** Records encodeQkvRopeTexture with a compiled kernel (textureSpec(v, "rope")). */
export function encodeQkvRopeTextureWith(
  rec: Recorder,
  kernel: Kernel,
  v: MatmulVariant,
  M: number,
  a: BufferRef,
  w: readonly [TextureWeight, TextureWeight, TextureWeight],
  out: {
    q: BufferRef;
    kc: BufferRef;
    vc: BufferRef;
    meta: BufferRef;
    cos: BufferRef;
    sin: BufferRef;
    headDim: number;
    positions: number;
  },
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
