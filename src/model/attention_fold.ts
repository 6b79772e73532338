// The folded decode attention (shaders/attention4_rope*.wgsl, ModelKernels.attention's `fold`):
// what each fold level reads besides the activations, how those inputs bind as one range each
// (so every level fits the 10 storage buffers a stage Chrome commonly grants), its uniform, and
// the bindings and workgroup memory it needs. Which layers' parameters can bind so
// (foldableParams) is checked once, when a model is made.

import { type BufferRef, type ResolvedRange, resolveRange } from "../gpu/buffers.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import type { GpuParams } from "./gpu_params.ts";
import type { LayerView, ParamLayout, ParamTensor } from "./weights.ts";

/** Storage buffers attention4_rope.wgsl binds: adapters that allow fewer run RoPE on its own. */
export const ROPE_FOLD_STORAGE = 9;
/** Storage buffers attention4_rope_qkn.wgsl binds (Qwen3's q/k norms folded in too). */
export const QK_NORM_FOLD_STORAGE = 10;
/** Storage buffers attention4_rope_bias.wgsl binds (Qwen2's q/k/v biases folded in too). */
export const BIAS_FOLD_STORAGE = 10;

/**
 * What a decode step's attention does itself: nothing; RoPE and the cache write; those and
 * Qwen2's q/k/v biases; or those and Qwen3's q/k norms.
 */
export type AttentionFold = "none" | "rope" | "rope-bias" | "qk-norm";

/**
 * What attention's folded form reads beside q: the new rows' k [N, KV·D] and v, the RoPE tables.
 * Each group of tables or weights binds as one range, so each must lie in one buffer in this
 * order (`foldSpan`): cos then sin, q's norm then k's, q's bias then k's then v's.
 */
export interface FoldedInputs {
  k: BufferRef;
  v: BufferRef;
  cos: BufferRef;
  sin: BufferRef;
  /** Where attentionFold is "qk-norm": the q and k norm weights [D] and epsilon. */
  norms?: { q: BufferRef; k: BufferRef; eps: number };
  /** Where attentionFold is "rope-bias": the q, k and v biases ([NH·D], [KV·D], [KV·D]). */
  biases?: { q: BufferRef; k: BufferRef; v: BufferRef };
}

/**
 * One range of a buffer over `refs` (in order, in one buffer, the range within `maxBytes`) and
 * each one's offset into it in floats, or null where they do not make one.
 */
export function foldSpan(
  refs: readonly BufferRef[],
  maxBytes: number,
): { range: ResolvedRange; at: number[] } | null {
  const rs = refs.map(resolveRange);
  const start = rs[0].offset, end = rs[rs.length - 1].offset + rs[rs.length - 1].size;
  const ordered = rs.every((r, i) =>
    r.buffer === rs[0].buffer && r.offset % 16 === 0 &&
    (i === 0 || r.offset >= rs[i - 1].offset + rs[i - 1].size)
  );
  if (!ordered || end - start > maxBytes) return null;
  return {
    range: { buffer: rs[0].buffer, offset: start, size: end - start },
    at: rs.map((r) => (r.offset - start) / 4),
  };
}

/** The attention kernels' shared uniform fields (AttentionParams, AttentionFoldParams). */
export const ATTENTION_FIELDS = [
  ["N", "u32"],
  ["NH", "u32"],
  ["KV", "u32"],
  ["D", "u32"],
  ["P", "u32"],
  ["scale", "f32"],
] as const;

/**
 * The folded decode attention's parameters (attention4_rope*.wgsl): AttentionParams; where sin
 * starts in the RoPE table; the q/k norms' epsilon and where k's starts in their range; where k's
 * and v's biases start in theirs (floats).
 */
export const AttentionFoldParams = uniformStruct("attention_fold_params", "Params", [
  ...ATTENTION_FIELDS,
  ["sin_at", "u32"],
  ["eps", "f32"],
  ["kn_at", "u32"],
  ["kb_at", "u32"],
  ["vb_at", "u32"],
]);

/**
 * Workgroup bytes the folded decode attention holds beside attention4's: the new key and value
 * (attention4_rope_core.wgsl's tK, tV), and with the q/k norms the normalized heads (nQ, nK).
 */
export const FOLD_WORKGROUP_BYTES: Readonly<Record<AttentionFold, number>> = {
  none: 0,
  rope: 2 * 16 * 64,
  "rope-bias": 2 * 16 * 64,
  "qk-norm": 2 * 16 * 64 + 2 * 4 * 256,
};

/**
 * Whether every layer's tensors `of` names lie in one buffer in order (foldSpan), in f32 and
 * whole: what the folded decode attention binds as one range.
 */
export function foldableParams(
  params: GpuParams,
  layout: ParamLayout,
  maxBindingBytes: number,
  of: (lv: LayerView) => (ParamTensor | null | undefined)[],
): boolean {
  return Array.from({ length: layout.config.numLayers }, (_, l) => of(layout.layerView(l)))
    .every((ts) =>
      ts.every((t) => t && !params.isHalf(t) && !params.isSplit(t)) &&
      foldSpan(ts.map((t) => params.ref(t!)), maxBindingBytes) !== null
    );
}
