// What a GpuModel is made with: its rows (token, slot, position, adapter) and its options, and
// the checks that refuse a model/options pair before anything is uploaded or compiled.

import { KernelArgumentError } from "../gpu/errors.ts";
import type { AttentionFold } from "./attention_fold.ts";
import type { ModelConfig } from "./config.ts";
import type { DecodeForwardOptions } from "./cpu_adapter/decode_forward.ts";
import type { AttentionVariant } from "./model_kernels.ts";
import type { ParamTensor } from "./weights.ts";

export interface ModelRow {
  token: number;
  /** LoRA adapter id of the row's sequence (omitted or out of range: the base model). */
  adapter?: number;
  /** Which sequence (cache slot) the row belongs to, 0 ≤ slot < slots. */
  slot: number;
  /** Position in that sequence, 0 ≤ pos < maxLen. */
  pos: number;
}

export interface GpuModelOptions {
  /** Concurrent sequences (KV cache slots). */
  slots: number;
  /** Cache positions per slot: the longest prompt + completion. */
  maxLen: number;
  /** Rows per forward chunk (bounds activation memory); default 256. */
  chunkRows?: number;
  /** Keep every layer's activations for the backward pass (default false). */
  training?: boolean;
  /**
   * Rows of logits one call computes: the logits buffer is [logitRows, V] (default chunkRows, at
   * most chunkRows). A training forward of more rows runs the LM head in row chunks
   * (encodeTrunk, then encodeHeadRows per chunk), so a 151936-word vocabulary need not hold
   * [chunkRows, V]. Below chunkRows it must be a multiple of 64 (row offsets stay aligned).
   */
  logitRows?: number;
  /** RMSNorm kernel variant (default by adapter class; tests pin both). */
  normVariant?: "rows" | "workgroup";
  /** Forward attention kernel; default "lane" on CPU adapters, "workgroup" on GPUs (tests pin either). */
  attentionVariant?: AttentionVariant;
  /**
   * Decode attention split over positions where a call has few rows × heads and the cache is
   * long (flash-decoding; ModelKernels' attention4_part). Default on where the workgroup or flash
   * kernels run; false keeps one workgroup per (head, row).
   */
  attentionSplit?: boolean;
  /**
   * Inference forwards fold the RMSNorm before q/k/v and gate/up into their grouped product and
   * SwiGLU into the down projection where the products run split-K (GPU adapters at decode rows;
   * Matmul.encodeNormGroup, encodeSwigluNt): 3 dispatches a layer fewer. Default true; false runs
   * them as their own dispatches (tests and the scale bench compare the two).
   */
  splitKFolds?: boolean;
  /**
   * What decode steps fold into attention (ModelKernels.attention's `fold`) where the workgroup
   * attention kernels run (GPU adapters) and the adapter binds enough storage buffers: "rope",
   * RoPE and the K/V cache write (shaders/attention4_rope.wgsl), a dispatch a layer fewer;
   * "rope-bias", on Qwen2 also its q/k/v biases (attention4_rope_bias.wgsl), two fewer;
   * "qk-norm" (the default), the most: on Qwen3 also its q/k norms (attention4_rope_qkn.wgsl),
   * two fewer, on Qwen2 its biases; "none" records them as their own dispatches (tests and the
   * scale bench compare them).
   */
  attentionFold?: AttentionFold;
  /**
   * Decode steps' forward: "fused" (the whole forward in one dispatch,
   * cpu_adapter/decode_forward.ts; the default on llvmpipe where the model fits it, with rows'
   * LoRA adapters of rank 4k: FUSED_DEFAULT_DRIVERS) or "ops" (the per-op path every other forward takes). Tests
   * pin either; `decodeForward` tunes it. Both pick the decode backend (decode_backend.ts).
   */
  decodeVariant?: "fused" | "ops";
  decodeForward?: DecodeForwardOptions;
  /**
   * Whether decode steps read the projection weights from texture copies: per-op steps from
   * cpu_adapter/weight_textures.ts's, the fused step from the parameter atlas
   * (cpu_adapter/param_atlas.ts; unless decodeForward.atlas says otherwise). Default: where the
   * adapter's matmul picks ask for it (llvmpipe). Either needs WGSL to read storage textures
   * (Gpu.readOnlyStorageTextures).
   */
  weightTextures?: boolean;
  /**
   * Store the frozen base's matrices (embedding, projections, LM head) as half floats and read
   * them with the half-B matmul twins (src/ops/matmul_half.ts), f32 arithmetic: half the weight
   * memory and half the bytes a decode step reads. Only for a base nothing trains (inference,
   * LoRA); norms and biases stay f32. Llama family only; decode takes the per-op storage path
   * (no CPU-adapter fused step or weight textures). Default false.
   */
  halfBase?: boolean;
}

/** The tensors a half-float base stores as halves: every matrix but GPT-2's (see halfBase). */
export function isBaseMatrix(t: ParamTensor): boolean {
  return t.shape.length === 2 &&
    ["q", "k", "v", "o", "gate", "up", "down", "embed", "lm_head"].includes(t.role);
}

/**
 * The options a model of config `c` runs with, or a KernelArgumentError naming what does not fit
 * (RoPE's even head_dim, grouped heads, GPT-2's learned positions, a half-float base's limits).
 */
export function checkModelOptions(c: ModelConfig, opts: GpuModelOptions): GpuModelOptions {
  if (c.headDim % 2 !== 0) {
    throw new KernelArgumentError(`head_dim ${c.headDim} must be even for RoPE`);
  }
  if (c.numHeads % c.numKvHeads !== 0) {
    throw new KernelArgumentError(
      `num_attention_heads ${c.numHeads} must be a multiple of num_key_value_heads ${c.numKvHeads}`,
    );
  }
  if (c.modelType === "gpt2" && opts.maxLen > c.maxPositionEmbeddings) {
    throw new KernelArgumentError(
      `maxLen ${opts.maxLen} exceeds this gpt2 model's ${c.maxPositionEmbeddings} learned positions (n_positions); ` +
        "ask for fewer prompt + new tokens",
    );
  }
  if (opts.halfBase) {
    if (c.modelType === "gpt2") {
      throw new KernelArgumentError(
        "halfBase: a half-float base is for the Llama family, not gpt2",
      );
    }
    if (opts.decodeVariant === "fused" || opts.weightTextures === true) {
      throw new KernelArgumentError(
        "halfBase: the CPU-adapter fused decode step and weight textures read f32 weights; " +
          "leave decodeVariant and weightTextures unset",
      );
    }
    opts = { ...opts, decodeVariant: "ops", weightTextures: false };
  }
  return opts;
}
