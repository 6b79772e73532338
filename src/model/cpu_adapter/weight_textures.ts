// Copies of a model's projection weights in textures, for the decode steps of the per-op path on
// adapters whose matmul picks ask for them (llvmpipe: see ops/tuning.ts). There a lane's storage
// load runs as a per-lane loop with a bounds-check branch for every component, while a texel
// load of an rgba32float texture does not branch, and at decode's few rows the weight loads are
// most of a projection's time: 8 rows against the ~30M preset's projections, the texture form
// ran 1.3–1.7× faster than the storage form (docs/benchmarks.md), read as storage
// textures faster still (gpu/pipelines.ts "texture-read").
//
// A weight W [N, K] (HF Linear layout [out, in]) becomes an rgba32float 2D texture: row n at texel
// row n % H, texel columns (n / H)·K/4 + [0, K/4), H the largest height under the adapter's
// maxTextureDimension2D that is not a power of two, so the vocabulary-sized LM head of a real model
// fits as a few blocks of columns. Every texture's width and height are kept off powers of two
// (npot): llvmpipe compiles a kernel again for each class of its textures' shapes, and whether a
// side is a power of two is what the class records, so with all sides npot each kernel compiles
// once (measured: r8c32's plain entry compiles once for the ~30M preset's o, down and LM head
// textures; the preset's first decode step on a cold Mesa shader cache still takes ~37 s, ~25 s
// of it for the q/k/v + RoPE entry, against 5 s on the storage path). (2D, not 2D-array:
// wgpu's OpenGL backend binds a one-layer texture as a plain 2D one, and an array view of it
// reads wrong values there.) A weight that follows an
// RMSNorm (q/k/v after the input norm, gate/up after the post-attention norm, the LM head after
// the final norm) is stored as W·diag(g), g the norm's weight, and marked with the norm's eps:
// its texture kernels then normalize A's rows themselves (ops/matmul_texture.ts TextureWeight.normEps),
// so a decode step needs no RMSNorm dispatch and no normalized copy of the activations. The
// copies follow the parameters by version: the decode backend (decode.ts) counts parameter changes
// (GpuModel.paramsChanged, which the trainer calls after every optimizer step that updates the model's own weights), and
// a stale copy is refreshed when the next decode step is recorded (CpuAdapterDecode.projections).

import type { Gpu } from "../../gpu/mod.ts";
import type { Kernel } from "../../gpu/pipelines.ts";
import { uniformStruct } from "../../gpu/uniforms.ts";
import { grid1d } from "../../ops/grid.ts";
import type { TextureWeight } from "../../ops/matmul.ts";
import type { GpuParams } from "../gpu_params.ts";
import type { ParamLayout, ParamTensor } from "../weights.ts";

/** Most bytes of texture copies a model keeps (they double its projection weights). */
export const WEIGHT_TEXTURES_MAX_BYTES = 512 * 2 ** 20;

const LAYER_ROLES = ["q", "k", "v", "o", "gate", "up", "down"] as const;

/**
 * shaders/weight_texture.wgsl's parameters: W [N, 4·K4] into a texture of H rows per block,
 * scaled by the RMSNorm weight G when scaled is 1.
 */
export const WeightTextureParams = uniformStruct("weight_texture_params", "P", [
  ["N", "u32"],
  ["K4", "u32"],
  ["H", "u32"],
  ["scaled", "u32"],
]);

interface Entry {
  tensor: ParamTensor;
  /** The RMSNorm weight folded in, or null. */
  norm: ParamTensor | null;
  texture: GPUTexture;
  weight: TextureWeight;
  /** The same texture bound for writing (the fill kernel). */
  target: { view: GPUTextureView; id: string };
}

/**
 * Why one weight cannot have a texture copy (a sentence), or null: stored whole in one binding,
 * K a multiple of 4, its blocks of K/4 texel columns within the adapter's texture width.
 */
export function textureUnfit(
  t: ParamTensor,
  params: GpuParams,
  limits: GPUSupportedLimits,
): string | null {
  if (t.shape.length !== 2) return `${t.name} is not a matrix`;
  const [N, K] = t.shape;
  if (params.chunks(t).length !== 1) return `${t.name} is split across bindings`;
  if (K % 4) return `${t.name}'s rows (${K} floats) are not a multiple of 4`;
  const width = textureSize(N, K, limits.maxTextureDimension2D)[0];
  if (width > limits.maxTextureDimension2D) {
    return `${t.name} would take ${width} texels of width, over the adapter's ${limits.maxTextureDimension2D}`;
  }
  return null;
}

/** n, or the next integer above it that is not a power of two (n ≥ 1). */
export function npot(n: number): number {
  while ((n & (n - 1)) === 0) n++;
  return n;
}

/** Rows per block of a weight texture: the largest npot height within the adapter's limit. */
export function textureRowsPerBlock(maxDim: number): number {
  return (maxDim & (maxDim - 1)) === 0 ? maxDim - 1 : maxDim;
}

/** [width, height] in texels of W [N, K]'s texture: blocks of K/4 columns, both sides npot. */
export function textureSize(N: number, K: number, maxDim: number): [number, number] {
  const H = textureRowsPerBlock(maxDim);
  return [npot(Math.ceil(N / H) * K / 4), npot(Math.min(N, H))];
}

export class WeightTextures {
  /** The parameter version the copies were made from (-1: never). */
  version = -1;

  private constructor(
    private gpu: Gpu,
    private fill: Kernel,
    private entries: Map<ParamTensor, Entry>,
  ) {}

  /**
   * Texture copies of every projection weight (q, k, v, o, gate, up, down of each layer, and the
   * LM head) that textureUnfit allows, in layer order until `maxBytes`; the rest keep the storage
   * path. Norms are folded into the weights that follow them when `foldNorms`. Null when none
   * qualifies. refresh fills them.
   */
  static async create(
    gpu: Gpu,
    layout: ParamLayout,
    params: GpuParams,
    opts: { foldNorms?: boolean; maxBytes?: number } = {},
  ): Promise<WeightTextures | null> {
    const limits = gpu.device.limits,
      H = textureRowsPerBlock(limits.maxTextureDimension2D),
      eps = layout.config.rmsNormEps;
    const fold = opts.foldNorms ?? true, maxBytes = opts.maxBytes ?? WEIGHT_TEXTURES_MAX_BYTES;
    const tensors: [ParamTensor, ParamTensor | null][] = [];
    // GPT-2 decodes on the per-op storage path (its LayerNorm cannot be folded like RMSNorm).
    if (layout.config.modelType === "gpt2") return null;
    for (let l = 0; l < layout.config.numLayers; l++) {
      const v = layout.layerView(l);
      for (const role of LAYER_ROLES) {
        const norm = role === "q" || role === "k" || role === "v"
          ? v.inputNorm
          : role === "gate" || role === "up"
          ? v.postNorm
          : null;
        tensors.push([v[role]!, norm]);
      }
    }
    tensors.push([layout.lmHead, layout.finalNorm]);
    const entries = new Map<ParamTensor, Entry>();
    let bytes = 0;
    for (const [t, n] of tensors) {
      if (entries.has(t) || textureUnfit(t, params, limits)) continue;
      const norm = fold ? n : null;
      if (norm && params.chunks(norm).length !== 1) continue;
      const [N, K] = t.shape;
      const [width, height] = textureSize(N, K, limits.maxTextureDimension2D),
        size = width * height * 16;
      if (bytes + size > maxBytes) break;
      bytes += size;
      const texture = gpu.device.createTexture({
        label: `weight_texture.${t.name}`,
        size: [width, height],
        format: "rgba32float",
        usage: GPUTextureUsage.STORAGE_BINDING,
      });
      const view = texture.createView(), id = `wt:${t.name}:${nextId++}`;
      entries.set(t, {
        tensor: t,
        norm,
        texture,
        target: { view, id: `${id}:w` },
        weight: {
          binding: { view, id },
          rows: N,
          cols: K,
          rowsPerBlock: H,
          ...(norm ? { normEps: eps } : {}),
        },
      });
    }
    if (!entries.size) return null;
    const fill = await gpu.kernel({
      shader: "weight_texture",
      entry: "fill",
      bindings: ["uniform", "read-only-storage", "read-only-storage", "texture-write"],
    });
    return new WeightTextures(gpu, fill, entries);
  }

  /** The texture copy of a weight, or null (not a projection, or it did not qualify). */
  get(t: ParamTensor): TextureWeight | null {
    return this.entries.get(t)?.weight ?? null;
  }

  /**
   * Fills the textures from the current parameters (submitted after the work already queued, so
   * after any optimizer step recorded before) and marks them as of `version`.
   */
  refresh(params: GpuParams, version: number) {
    const rec = this.gpu.recorder("weight_textures.refresh");
    const maxDim = this.gpu.device.limits.maxComputeWorkgroupsPerDimension;
    for (const { tensor: t, norm, weight, target } of this.entries.values()) {
      const w = params.chunks(t)[0].ref, K4 = weight.cols / 4;
      const u = WeightTextureParams.pack({
        N: weight.rows,
        K4,
        H: weight.rowsPerBlock,
        scaled: norm ? 1 : 0,
      });
      rec.dispatch(
        this.fill,
        [null, w, norm ? params.chunks(norm)[0].ref : w, target],
        grid1d(Math.ceil(weight.rows * K4 / 64), maxDim),
        u,
      );
    }
    rec.submit();
    this.version = version;
  }

  destroy() {
    for (const e of this.entries.values()) e.texture.destroy();
    this.entries.clear();
  }
}

let nextId = 0;
