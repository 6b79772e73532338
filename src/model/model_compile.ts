// What a GpuModel compiles at creation: the matmul ops for the shape buckets its products reach,
// the model kernels (norms, attention and its folds, gathers, the cache copy), the kernels for
// weights split over bindings, and GPT-2's own. They compile side by side (Chromium compiles
// pipelines on its worker threads).

import type { Gpu } from "../gpu/mod.ts";
import { bucketsForShapes, createModelOps, type ModelOps } from "../ops/mod.ts";
import { foldableParams } from "./attention_fold.ts";
import { Gpt2Kernels } from "./gpt2_kernels.ts";
import type { GpuModelOptions } from "./gpu_model_options.ts";
import type { GpuParams } from "./gpu_params.ts";
import { ModelKernels } from "./model_kernels.ts";
import { SplitKernels } from "./split_kernels.ts";
import type { ModelWeights } from "./weights.ts";

export interface ModelKernelSet {
  ops: ModelOps;
  kernels: ModelKernels;
  /** Kernels for split weights (null when no tensor is split and the model is not gpt2). */
  split: SplitKernels | null;
  /** GPT-2's LayerNorm, gelu_new and position-embedding kernels (null for other models). */
  gpt2: Gpt2Kernels | null;
}

/** Compiles a model's kernels for options already checked (checkModelOptions). */
export async function compileModelKernels(
  gpu: Gpu,
  weights: ModelWeights,
  params: GpuParams,
  opts: GpuModelOptions,
): Promise<ModelKernelSet> {
  const c = weights.config, gpt2 = c.modelType === "gpt2";
  // The attention folds bind each layer's norms, and its biases, as one range of the parameters.
  const foldable = (pick: Parameters<typeof foldableParams>[3]) =>
    foldableParams(params, weights.layout, gpu.maxBindingBytes, pick);
  const [ops, kernels, split, gpt2Kernels] = await Promise.all([
    createModelOps(gpu, {
      matmulBuckets: bucketsForShapes(
        Math.max(opts.chunkRows ?? 256, opts.slots),
        weights.layout.tensors.map((t) => t.shape),
      ),
      halfB: opts.halfBase,
    }),
    ModelKernels.create(gpu, opts.maxLen, {
      normVariant: opts.normVariant,
      headDim: c.headDim,
      attentionVariant: opts.attentionVariant,
      attentionSplit: opts.attentionSplit,
      queryGroup: c.numHeads / c.numKvHeads,
      halfGather: opts.halfBase,
      normPair: c.qkNorm,
      attentionFold: gpt2 ? "none" : opts.attentionFold ?? "qk-norm",
      qkNorm: c.qkNorm && foldable((lv) => [lv.qNorm, lv.kNorm]),
      qkvBias: c.qkvBias && foldable((lv) => [lv.qBias, lv.kBias, lv.vBias]),
    }),
    params.anySplit || gpt2 ? SplitKernels.create(gpu, opts.halfBase) : null,
    gpt2 ? Gpt2Kernels.create(gpu) : null,
  ]);
  return { ops, kernels, split, gpt2: gpt2Kernels };
}
