// Matrix multiply in the three forms training needs (A·B, A·Bᵀ, Aᵀ·B), batched, with
// optional accumulate (C = alpha·op(A)op(B) + beta·C). Several named kernel variants exist
// (matmul_variants.ts; the texture form, matmul_texture.ts); which one runs is chosen per adapter
// class and shape bucket from the kernel lab's table (tuning.ts).
//
// Dims: M rows of C, N columns of C, K the contracted dimension.

import type { AdapterClass } from "../gpu/device.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import { type BufferRef, resolveRange } from "../gpu/buffers.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { registerShaderGenerators, registerShaderTransforms } from "../gpu/shaders.ts";
import { MATMUL_SHADERS, MatmulGroupParams, MatmulParams } from "./matmul_gen.ts";
import { isRopeTile } from "./matmul_tex_gen.ts";
import { HALF_B, HALF_B_SHADERS } from "./matmul_half.ts";
import {
  encodeGroupTextureWith,
  encodeQkvRopeTextureWith,
  encodeSwigluTextureWith,
  encodeTextureWith,
  type QkvRopeOut,
  TEXTURE_BUCKETS,
  TEXTURE_DEFAULT_PICKS,
  textureBucket,
  textureSpec,
  type TextureWeight,
} from "./matmul_texture.ts";
import {
  BUCKET_STANDIN,
  dense,
  findTextureVariant,
  findVariant,
  FUSED_SPLITK_STORAGE,
  groupSpec,
  hasGroupEntry,
  kernelSpec,
  MATMUL_FORMS,
  type MatmulForm,
  type MatmulShape,
  type MatmulVariant,
  normGroupSpec,
  SHAPE_BUCKETS,
  type ShapeBucket,
  shapeBucket,
  swigluSpec,
  variantSupports,
  workgroups,
} from "./matmul_variants.ts";
import { matmulPicks } from "./tuning.ts";

// The register-tiled and workgroup-memory shaders are generated from their tile lists when
// first used.
registerShaderGenerators(MATMUL_SHADERS);
registerShaderTransforms(HALF_B_SHADERS);

export * from "./matmul_variants.ts";
export * from "./matmul_texture.ts";

/** One product of a grouped A·Bᵀ: C [M, N] = A · Bᵀ for B [N, K]. */
export interface MatmulGroupPart {
  b: BufferRef;
  c: BufferRef;
  N: number;
}

/**
 * A grouped A·Bᵀ dispatch's bindings (matmul_group_bindings.wgsl: unused parts' B is part 0's, C
 * a range of `scratch`), workgroups and uniform (matmul_group_params, `eps` for the folded norm)
 * for variant v, a register tile's or split-K's. With one part, the two unused C slots take
 * scratch's bytes 0–3 and 256–259 (Chrome refuses overlapping writable bindings in a dispatch,
 * even ones never written; Deno's wgpu does not check): scratch must then hold 260 bytes.
 */
function groupDispatch(
  v: MatmulVariant,
  M: number,
  K: number,
  a: BufferRef,
  parts: readonly MatmulGroupPart[],
  scratch: BufferRef,
  eps: number,
) {
  // Columns per workgroup: a register tile's C × WGX, a split-K workgroup's 4.
  const cols = v.kind === "splitk" ? 4 : v.c! * v.wgx!;
  const rows = v.kind === "splitk" ? v.r! : v.r! * v.wgy!;
  const tiles = parts.map((q) => Math.ceil(q.N / cols));
  const spare = resolveRange(scratch);
  if (parts.length === 1 && spare.size < 260) {
    throw new KernelArgumentError(
      `grouped matmul of one part: its scratch must hold 260 bytes (two unused outputs 256 bytes apart), got ${spare.size}`,
    );
  }
  const unused = (i: number) => ({
    buffer: spare.buffer,
    offset: spare.offset + (i - 1) * 256,
    size: 4,
  });
  const filled = [0, 1, 2].map((i) =>
    parts[i] ?? { b: parts[0].b, c: parts.length === 1 ? unused(i) : scratch, N: 0 }
  );
  const [t0, t1 = 0] = tiles;
  return {
    bindings: [null, a, ...filled.map((q) => q.b), ...filled.map((q) => q.c)],
    workgroups: [tiles.reduce((s, t) => s + t, 0), Math.ceil(M / rows), 1] as const,
    uniform: MatmulGroupParams.pack({
      M,
      K,
      N0: filled[0].N,
      N1: filled[1].N,
      N2: filled[2].N,
      t0,
      t1,
      eps,
    }),
  };
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
  /**
   * The split-K picks' fused twins, keyed as groupKernels: an RMSNorm folded into the grouped
   * product (encodeNormGroup), SwiGLU folded into a product (encodeSwigluNt). Compiled with the
   * group kernels where the adapter binds FUSED_SPLITK_STORAGE storage buffers a stage.
   */
  private normGroupKernels = new Map<string, Kernel>();
  private swigluKernels = new Map<string, Kernel>();

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
    const fused = gpu.device.limits.maxStorageBuffersPerShaderStage >= FUSED_SPLITK_STORAGE;
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
        const key = Matmul.groupKey(v, half);
        m.groupKernels.set(key, await gpu.kernel(groupSpec(v, half, sg)));
        if (v.kind === "splitk" && fused) {
          const [norm, swiglu] = await Promise.all([
            gpu.kernel(normGroupSpec(v, half, sg)),
            gpu.kernel(swigluSpec(v, half, sg)),
          ]);
          m.normGroupKernels.set(key, norm);
          m.swigluKernels.set(key, swiglu);
        }
      }
    }));
    m.picks.fallback = fallback;
    return m;
  }

  /** The key of a variant's grouped (and fused) kernels: its name, ":hb" for the half-B twin. */
  private static groupKey(v: MatmulVariant, halfB: boolean): string {
    return halfB ? `${v.name}:${HALF_B.slice(1)}` : v.name;
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
    const k = this.groupKernels.get(Matmul.groupKey(v, halfB));
    if (!k || parts.length === 1) {
      for (const q of parts) this.encode(rec, { form: "nt", M, N: q.N, K, halfB }, a, q.b, q.c);
      return;
    }
    const g = groupDispatch(v, M, K, a, parts, scratch, 0);
    rec.dispatch(k, g.bindings, g.workgroups, g.uniform);
  }

  /**
   * An RMSNorm of A folded into the grouped A·Bᵀ (shaders/matmul_splitk_group_norm.wgsl): each
   * part's C = RMSNorm(A; g, eps) · Bᵀ, and `xn` ([M, K]) = RMSNorm(A), in one dispatch instead of
   * a norm and a grouped product. Where the variant picked for the widest part is split-K (GPU
   * adapters at decode rows) and the fused kernels were compiled; otherwise it records nothing
   * and returns false, and the caller runs the norm and encodeGroup. The same product up to
   * rounding (the sums are scaled by 1/rms instead of the inputs).
   */
  encodeNormGroup(
    rec: Recorder,
    M: number,
    K: number,
    a: BufferRef,
    norm: { g: BufferRef; eps: number; xn: BufferRef },
    parts: readonly MatmulGroupPart[],
    scratch: BufferRef,
    halfB = false,
  ): boolean {
    if (parts.length === 0 || parts.length > 3) return false;
    const widest = Math.max(...parts.map((q) => q.N));
    // Only split-K variants have the fused kernels (and split-K only supports K % 4 == 0).
    const v = this.variantFor({ form: "nt", M, N: widest, K, halfB });
    const k = this.normGroupKernels.get(Matmul.groupKey(v, halfB));
    if (!k) return false;
    const g = groupDispatch(v, M, K, a, parts, scratch, norm.eps);
    rec.dispatch(k, [...g.bindings, norm.g, norm.xn], g.workgroups, g.uniform);
    return true;
  }

  /**
   * SwiGLU folded into an A·Bᵀ (shaders/matmul_splitk_swiglu.wgsl): c = alpha · h · bᵀ + beta · c
   * for h = silu(gate) · up ([M, K] each), and `h` written, in one dispatch instead of SwiGLU's and
   * the product's: the MLP's down projection at decode rows. Where the variant for the shape is
   * split-K and the fused kernels were compiled; otherwise it records nothing and returns false.
   * The same values as swiglu then encode.
   */
  encodeSwigluNt(
    rec: Recorder,
    shape: { M: number; N: number; K: number; alpha?: number; beta?: number; halfB?: boolean },
    gate: BufferRef,
    up: BufferRef,
    b: BufferRef,
    c: BufferRef,
    h: BufferRef,
  ): boolean {
    const { M, N, K } = shape, halfB = shape.halfB ?? false;
    const v = this.variantFor({ form: "nt", M, N, K, halfB });
    const k = this.swigluKernels.get(Matmul.groupKey(v, halfB));
    if (!k) return false;
    const u = MatmulParams.pack({
      M,
      N,
      K,
      batch: 1,
      strideA: 0,
      strideB: 0,
      strideC: 0,
      alpha: shape.alpha ?? 1,
      beta: shape.beta ?? 0,
    });
    rec.dispatch(k, [null, gate, up, b, c, h], [Math.ceil(N / 4), Math.ceil(M / v.r!), 1], u);
    return true;
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
    out: QkvRopeOut,
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
