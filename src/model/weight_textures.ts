// Copies of a model's projection weights in textures, for the decode steps of the per-op path on
// adapters whose matmul picks ask for them (llvmpipe: see ops/tuning.ts). There a lane's storage
// load runs as a per-lane loop with a bounds-check branch for every component, while a texel
// load of an rgba32float texture does not branch, and at decode's few rows the weight loads are
// most of a projection's time: 8 rows against the ~30M preset's projections, the texture form
// ran 1.3–1.7× faster than the storage form (gen_matmul_reg.ts's TEX_TILES note).
//
// A weight W [N, K] (HF Linear layout [out, in]) becomes an rgba32float 2D-array texture K/4
// texels wide: row n at texel row n % H of layer n / H, H the adapter's maxTextureDimension2D,
// so the vocabulary-sized LM head of a real model fits as a few layers. The copies follow the
// parameters by version: GpuModel counts parameter changes (paramsChanged, which the trainer
// calls after every optimizer step that updates the model's own weights), and a stale copy is
// not used until refresh brings it up to date (GpuModel.prepareDecode does).

import type { Gpu } from "../gpu/mod.ts";
import type { TextureWeight } from "../ops/matmul.ts";
import type { GpuParams } from "./gpu_params.ts";
import type { ParamLayout, ParamTensor } from "./weights.ts";

/** Most bytes of texture copies a model keeps (they double its projection weights). */
export const WEIGHT_TEXTURES_MAX_BYTES = 512 * 2 ** 20;

const LAYER_ROLES = ["q", "k", "v", "o", "gate", "up", "down"] as const;

interface Entry {
  tensor: ParamTensor;
  texture: GPUTexture;
  weight: TextureWeight;
}

/**
 * Why one weight cannot have a texture copy (a sentence), or null: stored whole in one binding,
 * K a multiple of 64 (a copy's rows are K·4 bytes, which must be a multiple of 256), K/4 texels
 * and its layers within the adapter's texture limits.
 */
export function textureUnfit(t: ParamTensor, params: GpuParams, limits: GPUSupportedLimits): string | null {
  if (t.shape.length !== 2) return `${t.name} is not a matrix`;
  const [N, K] = t.shape;
  if (params.chunks(t).length !== 1) return `${t.name} is split across bindings`;
  if (K % 64) return `${t.name}'s rows (${K} floats) are not a multiple of 64 floats`;
  if (K / 4 > limits.maxTextureDimension2D) return `${t.name}'s rows (${K / 4} texels) exceed the adapter's ${limits.maxTextureDimension2D}`;
  const layers = Math.ceil(N / limits.maxTextureDimension2D);
  if (layers > limits.maxTextureArrayLayers) return `${t.name} would take ${layers} texture layers, over ${limits.maxTextureArrayLayers}`;
  return null;
}

export class WeightTextures {
  /** The parameter version the copies were made from (-1: never). */
  version = -1;

  private constructor(private gpu: Gpu, private entries: Map<ParamTensor, Entry>) {}

  /**
   * Texture copies of every projection weight (q, k, v, o, gate, up, down of each layer, and the
   * LM head) that textureUnfit allows, in layer order until WEIGHT_TEXTURES_MAX_BYTES; the rest
   * keep the storage path. Null when none qualifies. refresh fills them.
   */
  static create(gpu: Gpu, layout: ParamLayout, params: GpuParams, maxBytes = WEIGHT_TEXTURES_MAX_BYTES): WeightTextures | null {
    const limits = gpu.device.limits, H = limits.maxTextureDimension2D;
    const tensors: ParamTensor[] = [];
    for (let l = 0; l < layout.config.numLayers; l++) {
      const v = layout.layerView(l);
      for (const role of LAYER_ROLES) tensors.push(v[role]);
    }
    tensors.push(layout.lmHead);
    const entries = new Map<ParamTensor, Entry>();
    let bytes = 0;
    for (const t of tensors) {
      if (entries.has(t) || textureUnfit(t, params, limits)) continue;
      const [N, K] = t.shape;
      const layers = Math.ceil(N / H), size = layers * Math.min(N, H) * K * 4;
      if (bytes + size > maxBytes) break;
      bytes += size;
      const texture = gpu.device.createTexture({
        label: `weight_texture.${t.name}`,
        size: [K / 4, Math.min(N, H), layers],
        format: "rgba32float",
        usage: GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST,
      });
      const view = texture.createView({ dimension: "2d-array" });
      entries.set(t, { tensor: t, texture, weight: { binding: { view, id: `wt:${t.name}:${nextId++}` }, rows: N, cols: K, rowsPerLayer: H } });
    }
    return entries.size ? new WeightTextures(gpu, entries) : null;
  }

  /** The texture copy of a weight, or null (not a projection, or it did not qualify). */
  get(t: ParamTensor): TextureWeight | null {
    return this.entries.get(t)?.weight ?? null;
  }

  /** Number of weights with a texture copy. */
  get count(): number {
    return this.entries.size;
  }

  /** Bytes the copies take. */
  get bytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.texture.width * 16 * e.texture.height * e.texture.depthOrArrayLayers;
    return n;
  }

  /**
   * Copies the current parameters into the textures (submitted after the work already queued,
   * so after any optimizer step recorded before) and marks them as of `version`.
   */
  refresh(params: GpuParams, version: number) {
    const enc = this.gpu.device.createCommandEncoder({ label: "weight_textures.refresh" });
    for (const { tensor: t, texture, weight } of this.entries.values()) {
      const src = params.chunks(t)[0].ref, K = weight.cols, H = weight.rowsPerLayer;
      for (let layer = 0; layer * H < weight.rows; layer++) {
        const rows = Math.min(H, weight.rows - layer * H);
        enc.copyBufferToTexture(
          { buffer: src.buffer, offset: src.offset + layer * H * K * 4, bytesPerRow: K * 4, rowsPerImage: rows },
          { texture, origin: [0, 0, layer] },
          [K / 4, rows, 1],
        );
      }
    }
    this.gpu.device.queue.submit([enc.finish()]);
    this.version = version;
  }

  destroy() {
    for (const e of this.entries.values()) e.texture.destroy();
    this.entries.clear();
  }
}

let nextId = 0;
