// How a model runs its decode steps (one row per sequence, logits for every row), chosen once
// when the model is created. A decode step's layers take their projections from the backend; a
// backend may also record a whole step itself. GPU-class adapters take StorageDecode: a decode
// step is a forward like any other. CPU adapters, where a step costs dispatches and per-lane
// storage loads rather than arithmetic, take cpu_adapter/decode.ts (the fused one-dispatch step,
// the parameter atlas, weight textures).

import { KernelArgumentError } from "../gpu/errors.ts";
import type { Recorder } from "../gpu/recorder.ts";
import type { ModelOps } from "../ops/mod.ts";
import { CpuAdapterDecode } from "./cpu_adapter/decode.ts";
import type { DecodeForwardOptions } from "./cpu_adapter/decode_forward.ts";
import type { GpuModel } from "./gpu_model.ts";
import type { GpuModelOptions } from "./gpu_model_options.ts";
import type { Projections } from "./projections.ts";
import type { ModelWeights } from "./weights.ts";

export { fusedDecodeOptions } from "./cpu_adapter/decode.ts";

/** A generation step that samples inside the decode step (GpuModel.encodeSampleStep). */
export interface DecodeSampleStep {
  /** Each row's sampling parameters, [N, PARAM_WORDS] (sampling.ts); their step counters advance. */
  params: GPUBuffer;
  /** [steps, N] sampled ids, then [steps, N] log-prob bits (generate.ts). */
  out: GPUBuffer;
  /** This step's place in out, and how many out holds. */
  step: number;
  steps: number;
  /** Steps this dispatch runs, step .. step + count − 1 (default 1; at most stepsPerDispatch). */
  count?: number;
}

/** What GpuModel asks of the path its decode steps take; `m` is the model it serves. */
export interface DecodeBackend {
  /** Whether every layer's KV cache lives in one buffer, GpuModel.cacheStride floats apart. */
  readonly sharedCache: boolean;
  /** Makes what decode steps use, for the LoRA adapters attached now (GpuModel.prepareDecode). */
  prepare(m: GpuModel, opts: { sample?: boolean }): Promise<void>;
  /**
   * Records the whole decode step of the N rows in m's ids/meta, logits included, where this
   * backend can now; false: the model records the step layer by layer.
   */
  encodeStep(m: GpuModel, rec: Recorder, N: number): boolean;
  /** The projections of a decode step of N rows recorded layer by layer. */
  projections(m: GpuModel, N: number): Projections;
  /** Whether encodeSampleStep can record a generation step now. */
  canSampleInStep(m: GpuModel): boolean;
  /** Generation steps one encodeSampleStep may chain (0 where it cannot run). */
  sampleStepsPerDispatch(m: GpuModel): number;
  /** A decode step with each row sampled and advanced inside it (GpuModel.encodeSampleStep). */
  encodeSampleStep(m: GpuModel, rec: Recorder, N: number, sample: DecodeSampleStep): void;
  /** The parameters changed on the GPU: copies of them are refreshed before the next step. */
  paramsChanged(): void;
  destroy(): void;
}

/** Decode steps as forwards like any other, on the storage-buffer projections. */
export class StorageDecode implements DecodeBackend {
  readonly sharedCache = false;
  prepare(): Promise<void> {
    return Promise.resolve();
  }
  encodeStep(): boolean {
    return false;
  }
  projections(m: GpuModel): Projections {
    return m.projections;
  }
  canSampleInStep(): boolean {
    return false;
  }
  sampleStepsPerDispatch(): number {
    return 0;
  }
  encodeSampleStep() {
    throw new KernelArgumentError("encodeSampleStep: this model samples in a separate dispatch");
  }
  paramsChanged() {}
  destroy() {}
}

/**
 * A model's decode backend (GpuModel.create, once): the CPU-adapter one where the fused step
 * applies (`fused`: fusedDecodeOptions's answer, taken before the model's kernels compile) or
 * where the matmul picks ask for weight textures (GpuModelOptions.weightTextures overrides
 * them), else StorageDecode. GPT-2 decodes on storage (its LayerNorm does not fold into weights).
 */
export function chooseDecodeBackend(
  weights: ModelWeights,
  ops: ModelOps,
  fused: DecodeForwardOptions | null,
  opts: GpuModelOptions,
): DecodeBackend {
  const prefers = ops.matmul.prefersTextures;
  const textures = weights.config.modelType !== "gpt2" && (opts.weightTextures ?? prefers);
  if (!fused && !textures) return new StorageDecode();
  // The fused step reads its weights from the parameter atlas where decode reads textures.
  return new CpuAdapterDecode(
    fused && { atlas: opts.weightTextures ?? prefers, ...fused },
    textures,
    opts.weightTextures === true,
  );
}
