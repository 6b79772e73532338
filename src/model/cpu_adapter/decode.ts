// Decode steps on CPU adapters (llvmpipe, SwiftShader), where a step costs dispatches and
// per-lane storage loads rather than arithmetic (docs/llvmpipe.md). Two tricks, each where it
// applies: the fused forward (decode_forward.ts), a small model's whole step in one dispatch
// reading its weights from the parameter atlas (param_atlas.ts), optionally sampling inside it;
// and, for steps it does not take, per-op projections reading weight textures
// (weight_textures.ts, texture_projections.ts). Both copies of the weights follow the parameters
// by version (paramsChanged).

import { adapterText } from "../../gpu/device.ts";
import { KernelArgumentError } from "../../gpu/errors.ts";
import type { Gpu } from "../../gpu/mod.ts";
import type { Recorder } from "../../gpu/recorder.ts";
import { textureBuckets } from "../../ops/mod.ts";
import type { ModelConfig } from "../config.ts";
import type { DecodeBackend, DecodeSampleStep } from "../decode_backend.ts";
import type { GpuModel } from "../gpu_model.ts";
import type { GpuModelOptions } from "../gpu_model_options.ts";
import type { GpuParams } from "../gpu_params.ts";
import type { Projections } from "../projections.ts";
import {
  DecodeForwardKernel,
  type DecodeForwardOptions,
  decodeForwardUnfit,
  decodeLoraUnfit,
} from "./decode_forward.ts";
import { TextureProjections } from "./texture_projections.ts";
import { WeightTextures } from "./weight_textures.ts";

/**
 * Above this vocabulary the fused step is not the default: its LM head is a per-row loop, while
 * the per-op path's is the register-tiled matmul. A reduced Qwen2.5 (151936 words, hidden 64, 2
 * layers) on llvmpipe (2-core EPYC, 2026-11-26), ms per decode step fused / per-op: greedy 50 / 24
 * at 8 rows, 406 / 306 at 64, 786 / 612 at 128; top-k 20, top-p 0.9: 70 / 43, 547 / 456,
 * 1080 / 876. The byte-level presets (264 words) are where the fused step wins.
 */
export const FUSED_DEFAULT_MAX_VOCAB = 4096;

/**
 * The CPU adapters whose decode steps take the fused step by default: llvmpipe's (Mesa), where
 * it was measured (above). Chrome's SwiftShader runs the per-op path faster: the app's test
 * setting (Plan-Path warm start, L2 LoRA, 4 envs × 4 candidates, headless Chromium 156, 2-core
 * EPYC, 2026-11-28) took 4.5 / 3.1 / 9.3 s for steps 2–4 per-op against 5.3 / 4.0 / 11.7 fused,
 * and the fused kernel was 6.2 s of the 29 s a LoRA trainer's pipelines took to compile there,
 * paid again at every page load.
 */
export const FUSED_DEFAULT_DRIVERS = /llvmpipe|lavapipe/i;

/**
 * The fused step's options where this model takes it (GpuModelOptions.decodeVariant, default
 * "fused" on FUSED_DEFAULT_DRIVERS' CPU adapters for vocabularies up to FUSED_DEFAULT_MAX_VOCAB;
 * where the model fits
 * the kernel), else null. Throws where "fused" is
 * pinned and does not fit. Training models decode too (RL rollouts sample from the model they
 * update): a decode step saves nothing for the backward, so it may take the fused path as well.
 */
export function fusedDecodeOptions(
  gpu: Gpu,
  c: ModelConfig,
  params: GpuParams,
  opts: GpuModelOptions,
): DecodeForwardOptions | null {
  const variant = opts.decodeVariant ??
    (gpu.adapterClass === "cpu" && FUSED_DEFAULT_DRIVERS.test(adapterText(gpu.ctx.info)) &&
        c.vocabSize <= FUSED_DEFAULT_MAX_VOCAB
      ? "fused"
      : "ops");
  if (variant !== "fused") return null;
  const unfit = decodeForwardUnfit(c, opts.maxLen, params, {
    maxWorkgroupBytes: gpu.device.limits.maxComputeWorkgroupStorageSize,
    maxBindingBytes: gpu.maxBindingBytes,
    maxStorageBuffers: gpu.device.limits.maxStorageBuffersPerShaderStage,
  }, opts.decodeForward);
  if (unfit && opts.decodeVariant === "fused") {
    throw new KernelArgumentError(`decodeVariant "fused": ${unfit}`);
  }
  return unfit ? null : { ...opts.decodeForward };
}

export class CpuAdapterDecode implements DecodeBackend {
  /** The fused step binds every layer's cache at once. */
  readonly sharedCache: boolean;
  private kernel: DecodeForwardKernel | null = null;
  /** The texture copies of the projection weights, made by prepare where used. */
  private textures: WeightTextures | null = null;
  private texturesTried = false;
  private textureProjections: TextureProjections | null = null;
  /** Counts changes of the parameters (paramsChanged): the copies are refreshed by it. */
  private paramsVersion = 0;

  constructor(
    /** The fused step's options (compiled by prepare), or null where the model does not take it. */
    private readonly fused: DecodeForwardOptions | null,
    /** Whether per-op decode steps may read weight textures. */
    private readonly useTextures: boolean,
    /** Whether they were asked for on any adapter (GpuModelOptions.weightTextures: true). */
    private readonly forceTextures: boolean,
  ) {
    this.sharedCache = fused !== null;
  }

  /**
   * Compiles the fused step, for the LoRA adapters attached now (once per variant); until then
   * decode steps take the per-op path: the kernel is large (llvmpipe compiles it at its first
   * dispatch: tens of seconds with a cold shader cache), so models that never decode never pay
   * for it. `sample`: the variant that samples inside the step, where the lane sampler's loops fit
   * beside the forward's; then only that one, since a generation whose steps sample inside never
   * runs the plain forward (Generator asks for it, with `sample` false, when a generation does not
   * sample inside). Steps the fused kernel does not take read weight textures where the adapter
   * wants them.
   */
  async prepare(m: GpuModel, opts: { sample?: boolean }): Promise<void> {
    const fused = await this.prepareFused(m, opts);
    if (this.useTextures && !this.texturesTried && !fused) {
      this.texturesTried = true;
      const rows = Math.min(m.slots, m.chunkRows);
      const mm = m.ops.matmul;
      await mm.prepareTextures(textureBuckets(rows), this.forceTextures);
      if (Array.from({ length: rows }, (_, i) => i + 1).some((r) => mm.canUseTextures(r))) {
        this.textures = await WeightTextures.create(m.gpu, m.weights.layout, m.params);
      }
    }
  }

  /** Compiles the variant the request will run; false where the fused step does not apply. */
  private async prepareFused(m: GpuModel, opts: { sample?: boolean }): Promise<boolean> {
    if (!this.fused) return false;
    const k = this.kernel ??= DecodeForwardKernel.create(
      m.gpu,
      m.config,
      m.weights.layout,
      m.params,
      m.maxLen,
      m.slots,
      this.fused,
    );
    const lora = m.lora && !decodeLoraUnfit(m.lora.layout) && k.loraFits(m.lora.layout)
      ? m.lora.layout
      : null;
    // Adapters the fused step does not take decode per op: no variant of it would run.
    if (m.lora && !lora) return false;
    await k.prepare(lora, Boolean(opts.sample) && k.stepsPerDispatch(lora) > 0);
    return true;
  }

  encodeStep(m: GpuModel, rec: Recorder, N: number): boolean {
    if (!this.kernel?.readyFor(m.lora)) return false;
    this.encodeFused(m, rec, N, null);
    return true;
  }

  /**
   * The weight textures' projections for a step of N rows, the copies brought up to date with
   * the parameters first (a fill submitted now, so before the step); storage where there are none.
   */
  projections(m: GpuModel, N: number): Projections {
    const t = this.textures;
    if (!t || !m.ops.matmul.canUseTextures(N)) return m.projections;
    if (t.version !== this.paramsVersion) t.refresh(m.params, this.paramsVersion);
    return this.textureProjections ??= new TextureProjections(m, t);
  }

  canSampleInStep(m: GpuModel): boolean {
    return this.kernel?.readyFor(m.lora, true) ?? false;
  }

  sampleStepsPerDispatch(m: GpuModel): number {
    return this.canSampleInStep(m) ? this.kernel!.stepsPerDispatch(m.lora?.layout ?? null) : 0;
  }

  encodeSampleStep(m: GpuModel, rec: Recorder, N: number, sample: DecodeSampleStep) {
    this.encodeFused(m, rec, N, sample);
  }

  private encodeFused(m: GpuModel, rec: Recorder, N: number, sample: DecodeSampleStep | null) {
    const s = m.scratch;
    this.kernel!.encode(
      rec,
      N,
      m.params,
      s.ids,
      s.meta,
      m.kCache[0].buffer,
      m.vCache[0].buffer,
      m.cacheStride,
      m.logitRange(N),
      m.lora,
      sample,
      this.paramsVersion,
    );
  }

  /** The fused step's variants compiled so far (DecodeForwardKernel.variants; for tests). */
  get fusedVariants(): string[] {
    return this.kernel?.variants ?? [];
  }

  /** Whether the fused step (once prepared) reads its weights from the parameter atlas. */
  get usesAtlas(): boolean {
    return this.kernel?.usesAtlas ?? false;
  }

  /** Whether weight textures exist and are as current as the parameters (decode steps use them). */
  get weightTexturesCurrent(): boolean {
    return this.textures !== null && this.textures.version === this.paramsVersion;
  }

  paramsChanged() {
    this.paramsVersion++;
  }

  destroy() {
    this.kernel?.destroy();
    this.textures?.destroy();
  }
}
