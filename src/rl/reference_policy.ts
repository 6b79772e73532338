// The reference policy of the KL term (update.klCoef > 0): each trainer's policy as the run began
// (the base, or the warm start's weights and adapters), frozen in an inference model of its own, so
// the k3 KL pulls the trained policy back toward it. It costs one more copy of each policy's
// weights on the GPU and a forward over every sample's rows per step. Resume rebuilds it from the
// same start (not from the checkpoint), so a resumed run has the same reference.

import type { Gpu } from "../gpu/mod.ts";
import { GpuModel, type ModelRow } from "../model/gpu_model.ts";
import { LoraAdapters } from "../model/lora.ts";
import type { TrainSequence } from "../train/trainer.ts";
import type { RunConfig } from "./config.ts";
import { type PolicyInit, type PolicySet, sampleRows } from "./policies.ts";

/** Sequences scored per forward call (KV slots of a reference model). */
const SLOTS = 16;

export class ReferencePolicies {
  private constructor(private readonly models: GpuModel[], private readonly loras: (LoraAdapters | null)[]) {}

  /** One frozen model per trainer of `policies`, from `init` (the run's start, not a resume point). */
  static async create(gpu: Gpu, cfg: RunConfig, policies: PolicySet, init: PolicyInit): Promise<ReferencePolicies> {
    const models: GpuModel[] = [], loras: (LoraAdapters | null)[] = [];
    try {
      for (const [i, trainer] of policies.trainers.entries()) {
        const weights = Array.isArray(init.weights) ? init.weights[i] : init.weights;
        const model = await GpuModel.create(gpu, weights, { slots: SLOTS, maxLen: sampleRows(cfg), chunkRows: cfg.update.chunkRows });
        models.push(model);
        let lora: LoraAdapters | null = null;
        if (trainer.lora) {
          lora = await LoraAdapters.create(gpu, trainer.lora.layout, cfg.update.chunkRows, init.loraData?.[i]);
          model.attachLora(lora);
        }
        loras.push(lora);
      }
    } catch (e) {
      models.forEach((m) => m.destroy());
      loras.forEach((l) => l?.destroy());
      throw e;
    }
    return new ReferencePolicies(models, loras);
  }

  /**
   * The sequences with refLogp set: log p_ref(tokens[t+1] | tokens[..t]) at every position the
   * loss weighs (0 elsewhere), under trainer `trainer`'s reference and each sequence's adapter.
   */
  async score(trainer: number, seqs: readonly TrainSequence[]): Promise<TrainSequence[]> {
    const model = this.models[trainer], V = model.config.vocabSize;
    const out: TrainSequence[] = [];
    for (let start = 0; start < seqs.length; start += SLOTS) {
      const batch = seqs.slice(start, start + SLOTS);
      const rows: ModelRow[] = [], want: number[] = [], at: [number, number][] = [];
      batch.forEach((s, slot) => {
        const base = rows.length;
        s.tokens.forEach((token, pos) => rows.push({ token, slot, pos, adapter: s.adapter }));
        for (let t = 0; t + 1 < s.tokens.length; t++) {
          if ((s.weights?.[t] ?? 1) === 0) continue;
          want.push(base + t);
          at.push([slot, t]);
        }
      });
      const logits = want.length ? await model.forward(rows, want) : new Float32Array(0);
      const ref = batch.map((s) => new Array<number>(s.tokens.length - 1).fill(0));
      at.forEach(([slot, t], i) => {
        ref[slot][t] = logSoftmaxAt(logits.subarray(i * V, (i + 1) * V), batch[slot].tokens[t + 1]);
      });
      batch.forEach((s, slot) => out.push({ ...s, refLogp: ref[slot] }));
    }
    return out;
  }

  destroy() {
    this.models.forEach((m) => m.destroy());
    this.loras.forEach((l) => l?.destroy());
  }
}

function logSoftmaxAt(row: Float32Array, target: number): number {
  let mx = -Infinity;
  for (const v of row) mx = Math.max(mx, v);
  let s = 0;
  for (const v of row) s += Math.exp(v - mx);
  return row[target] - mx - Math.log(s);
}
