// The reference policy of the KL term (update.klCoef > 0): each trainer's policy as the run began
// (the base, or the warm start's weights and adapters), frozen in an inference model of its own, so
// the k3 KL pulls the trained policy back toward it. It costs one more copy of each policy's
// weights on the GPU and a forward over every sample's rows per step (log-probs of the targets
// taken on the GPU by the cross-entropy head, 8 floats a row read back). Resume rebuilds it from the
// same start (not from the checkpoint), so a resumed run has the same reference.

import type { Gpu } from "../gpu/mod.ts";
import { GpuModel } from "../model/gpu_model.ts";
import type { ModelRow } from "../model/gpu_model_options.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import { LoraAdapters } from "../model/lora.ts";
import { CrossEntropyLoss } from "../train/losses.ts";
import { ROW_FLOATS } from "../train/loss_rows.ts";
import { defaultLogitRows, type TrainSequence } from "../train/trainer.ts";
import type { RunConfig } from "./config.ts";
import { agentsOf, type PolicyInit, type PolicySet, sampleRows } from "./policies.ts";
import { trainerTemperature } from "./generation.ts";

/** Sequences scored per forward call (KV slots of a reference model). */
const SLOTS = 16;

interface Reference {
  model: GpuModel;
  lora: LoraAdapters | null;
  /** Cross-entropy head: its per-row stats hold log p(target), so only 8 floats a row come back. */
  head: CrossEntropyLoss;
  rowData: GPUBuffer;
}

export class ReferencePolicies {
  private constructor(private readonly gpu: Gpu, private readonly refs: Reference[]) {}

  /** One frozen model per trainer of `policies`, from `init` (the run's start, not a resume point). */
  static async create(
    gpu: Gpu,
    cfg: RunConfig,
    policies: PolicySet,
    init: PolicyInit,
  ): Promise<ReferencePolicies> {
    const refs: Reference[] = [];
    const done = new ReferencePolicies(gpu, refs);
    try {
      for (const [i, trainer] of policies.trainers.entries()) {
        const weights = Array.isArray(init.weights) ? init.weights[i] : init.weights;
        const model = await GpuModel.create(gpu, weights, {
          // The policy's own base: a LoRA trainer's half-float base is the start it moves from
          // (an f32 reference would put the base's rounding into the KL, ~1e-3 a token).
          halfBase: trainer.model.halfBase,
          slots: SLOTS,
          maxLen: sampleRows(cfg),
          chunkRows: cfg.update.chunkRows,
          // The scored rows' logits, as the policy's trainer holds them (maxLogitRows below).
          logitRows: cfg.update.logitRows || defaultLogitRows(
            cfg.update.chunkRows,
            weights.config.vocabSize,
            gpu.device.limits.maxStorageBufferBindingSize,
          ),
        });
        const maxRows = Math.min(model.maxLogitRows, model.chunkRows);
        const ref: Reference = {
          model,
          lora: null,
          // Log-probs at the rollout temperature, as the policy loss reads its logits.
          head: await CrossEntropyLoss.create(gpu, {
            maxRows,
            vocabSize: model.config.vocabSize,
            temperature: trainerTemperature(cfg, agentsOf(policies.map, i)),
          }),
          rowData: gpu.zeros(maxRows * ROW_FLOATS, "reference.rows"),
        };
        refs.push(ref);
        if (trainer.lora) {
          ref.lora = await LoraAdapters.create(
            gpu,
            trainer.lora.layout,
            cfg.update.chunkRows,
            init.loraData?.[i],
          );
          model.attachLora(ref.lora);
        }
      }
    } catch (e) {
      done.destroy();
      throw e;
    }
    return done;
  }

  /** Whether trainer `trainer`'s reference stores its base as half floats (as the policy does). */
  halfBase(trainer: number): boolean {
    return this.refs[trainer].model.halfBase;
  }

  /**
   * The sequences with refLogp set: log p_ref(tokens[t+1] | tokens[..t]) at every position the
   * loss weighs (0 elsewhere), under trainer `trainer`'s reference and each sequence's adapter.
   * Whole sequences are packed into one forward (≤ SLOTS sequences, ≤ chunkRows rows), scored on
   * the GPU, and their log-probs read back once per forward.
   */
  async score(trainer: number, seqs: readonly TrainSequence[]): Promise<TrainSequence[]> {
    const { model, head, rowData } = this.refs[trainer];
    const out: TrainSequence[] = [];
    for (let i = 0; i < seqs.length;) {
      const batch: TrainSequence[] = [],
        rows: ModelRow[] = [],
        sel: number[] = [],
        targets: number[] = [];
      const at: [number, number][] = [];
      while (i < seqs.length && batch.length < SLOTS) {
        const s = seqs[i], slot = batch.length;
        const scored = s.tokens.slice(0, -1).map((_, t) => t).filter((t) => s.weights[t] !== 0);
        if (s.tokens.length > model.chunkRows || scored.length > head.maxRows) {
          throw new KernelArgumentError(
            `reference: a ${s.tokens.length}-token sequence exceeds update.chunkRows=${model.chunkRows}`,
          );
        }
        if (
          rows.length + s.tokens.length > model.chunkRows ||
          sel.length + scored.length > head.maxRows
        ) break;
        const base = rows.length;
        s.tokens.forEach((token, pos) => rows.push({ token, slot, pos, adapter: s.adapter }));
        for (const t of scored) {
          [sel.push(base + t), targets.push(s.tokens[t + 1]), at.push([slot, t])];
        }
        batch.push(s);
        i++;
      }
      const ref = batch.map((s) => new Array<number>(s.tokens.length - 1).fill(0));
      if (sel.length) {
        model.writeRows(rows, sel);
        this.gpu.write(rowData, head.pack({ targets, weights: targets.map(() => 1) }));
        const rec = this.gpu.recorder("reference log-probs");
        model.encodeForward(rec, rows.length, sel.length);
        head.encode(rec, {
          rows: sel.length,
          rowData,
          logits: model.logitsBuffer,
          dlogits: "in-place",
        });
        rec.submit();
        const stats = await this.gpu.readFloat32(head.rowStats, sel.length * ROW_FLOATS);
        at.forEach(([slot, t], k) => (ref[slot][t] = stats[k * ROW_FLOATS + 7]));
      }
      batch.forEach((s, slot) => out.push({ ...s, refLogp: ref[slot] }));
    }
    return out;
  }

  destroy() {
    for (const r of this.refs) {
      r.model.destroy();
      r.lora?.destroy();
      r.head.destroy();
      r.rowData.destroy();
    }
  }
}
