// The tests' full-model backward step: rows written, gradients zeroed (the base's and an attached
// LoRA's), the forward and the backward from a given dL/dlogits encoded and submitted in one
// recorder. (ModelTrainer runs the
// same sequence with its losses in between; the gradient tests drive ModelBackward directly.)

import type { BufferRef } from "../../src/gpu/buffers.ts";
import type { Gpu } from "../../src/gpu/mod.ts";
import type { ModelBackward } from "../../src/model/backward.ts";
import type { GpuModel } from "../../src/model/gpu_model.ts";
import type { ModelRow } from "../../src/model/gpu_model_options.ts";

/** Gradients of L = Σ dlogits ⊙ logits over `rows` (dlogits [rows, V]) into bwd.grads and the LoRA's. */
export function backwardStep(
  gpu: Gpu,
  model: GpuModel,
  bwd: ModelBackward,
  rows: readonly ModelRow[],
  dlogits: BufferRef,
): void {
  const N = rows.length;
  model.writeRows(rows, []);
  bwd.prepare(rows);
  const rec = gpu.recorder("train step");
  bwd.encodeZeroGrads(rec);
  model.lora?.encodeZeroGrads(rec);
  model.encodeForward(rec, N, N);
  bwd.encode(rec, N, dlogits);
  rec.submit();
}
