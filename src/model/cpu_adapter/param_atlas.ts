// The parameter atlas: a model's parameter buffer copied into an rgba32float texture, vec4 i of
// the parameters at texel (i mod width, i / width) with width = 2^shift texels, so that the fused
// decode forward (shaders/decode_forward_atlas.wgsl) reads its projection weights as storage
// texture loads rather than storage buffer loads.
//
// Why: on llvmpipe a storage-buffer load runs a loop over the lanes with a bounds-check branch per
// component, while a read-only storage-texture load is a few vector instructions
// (gpu/pipelines.ts). Removing the projections' weight loads altogether made the tiny model's
// fused step 1.18 → 0.83 ms at 32 rows and 0.64 → 0.35 ms at 8 (an upper bound, measured on a
// 2-core EPYC); the atlas keeps most of that.
//
// The copy follows the parameters by version, like the per-op path's weight textures: the decode
// backend (decode.ts) counts parameter changes (GpuModel.paramsChanged) and a stale atlas is brought up to date before a
// decode step is recorded, by a copy submitted at once (queue order puts it before the step).

import type { Gpu } from "../../gpu/mod.ts";
import type { TextureBinding } from "../../gpu/recorder.ts";
import type { GpuParams } from "../gpu_params.ts";
import { npot } from "./weight_textures.ts";

/** log2 of the atlas width in texels (4096: 64 KiB rows, a multiple of copies' 256-byte rows). */
const SHIFT = 12;

let nextId = 1;

export class ParamAtlas {
  /** The parameter version the texture holds (-1: never filled). */
  version = -1;

  private constructor(
    private gpu: Gpu,
    private texture: GPUTexture,
    readonly binding: TextureBinding,
    /** log2 of the width in texels (the shader's ATLAS_SHIFT). */
    readonly shift: number,
    /** Texels the parameters fill. */
    private texels: number,
  ) {}

  /**
   * An atlas for a model whose parameters are one buffer (a whole number of vec4s), or null
   * where they are split or do not fit the adapter's texture size limit.
   */
  static create(gpu: Gpu, params: GpuParams): ParamAtlas | null {
    if (params.anySplit || params.buffers.length !== 1) return null;
    const bytes = params.buffers[0].size;
    const max = gpu.device.limits.maxTextureDimension2D;
    const shift = Math.min(SHIFT, Math.floor(Math.log2(max)));
    // An npot height, like the weight textures' sides (weight_textures.ts: one compile per kernel).
    const texels = Math.ceil(bytes / 16),
      width = 2 ** shift,
      height = npot(Math.ceil(texels / width));
    if (bytes % 16 || height > max) return null;
    const texture = gpu.device.createTexture({
      label: "param_atlas",
      size: [width, height],
      format: "rgba32float",
      usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.COPY_DST,
    });
    return new ParamAtlas(
      gpu,
      texture,
      { view: texture.createView(), id: `atlas:${nextId++}` },
      shift,
      texels,
    );
  }

  /**
   * Copies the parameters in when the atlas is older than `version`, submitted at once: it runs
   * before anything submitted later (a recorded step that reads the atlas).
   */
  ensure(params: GpuParams, version: number): void {
    if (this.version === version) return;
    const width = 2 ** this.shift,
      full = Math.floor(this.texels / width),
      rest = this.texels - full * width;
    const enc = this.gpu.device.createCommandEncoder({ label: "param_atlas.fill" });
    const src = params.buffers[0];
    if (full) {
      enc.copyBufferToTexture({ buffer: src, bytesPerRow: width * 16 }, { texture: this.texture }, [
        width,
        full,
      ]);
    }
    if (rest) {
      enc.copyBufferToTexture({ buffer: src, offset: full * width * 16 }, {
        texture: this.texture,
        origin: [0, full],
      }, [rest, 1]);
    }
    this.gpu.device.queue.submit([enc.finish()]);
    this.version = version;
  }

  destroy(): void {
    this.texture.destroy();
  }
}
