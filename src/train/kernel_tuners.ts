// The kernel tuners besides the matmuls', run in one order by `npx deno task tune` and the web
// app's "Tune kernels": the sampler's row split (src/model/sampler_tune.ts), the fused LoRA
// forward's column split (src/model/lora_tune.ts), decode attention's split over positions
// (src/model/attention_tune.ts) and the loss heads' lanes a row (src/train/loss_tune.ts). Each
// runs where its mode asks ("auto": on GPU-class adapters) and the run has what it tunes.

import type { Gpu } from "../gpu/mod.ts";
import type { TunedPicksEntry } from "../ops/tuned_picks.ts";
import {
  attentionSplitEntry,
  type AttentionTuneMode,
  type AttentionTuneResult,
  tuneAttentionSplitIf,
} from "../model/attention_tune.ts";
import type { ModelConfig } from "../model/config.ts";
import {
  loraFusedEntry,
  type LoraTuneMode,
  type LoraTuneResult,
  tuneLoraFusedIf,
} from "../model/lora_tune.ts";
import {
  samplerEntry,
  type SamplerTuneMode,
  type SamplerTuneResult,
  tuneSamplerIf,
} from "../model/sampler_tune.ts";
import {
  LOSS_TUNE_ROWS,
  lossEntry,
  type LossTuneMode,
  type LossTuneResult,
  tuneLossHeadIf,
} from "./loss_tune.ts";

/** Each tuner's mode (default "auto": GPU-class adapters only). */
export interface KernelTunerModes {
  sampler?: SamplerTuneMode;
  lora?: LoraTuneMode;
  attention?: AttentionTuneMode;
  loss?: LossTuneMode;
}

export interface KernelTunersOptions {
  config: ModelConfig;
  /** Batch sizes generation runs at. */
  decodeRows: readonly number[];
  /** The LoRA rank of the runs tuned for; null where they train full models (no fused LoRA). */
  loraRank: number | null;
  /** Cache positions a decode row attends to at most. */
  context: number;
  /** Rows of logits a loss call takes; 0 where the runs do not train (no loss heads). */
  logitRows: number;
  modes: KernelTunerModes;
  minMs?: number;
  log: (line: string) => void;
  /** Runs each tuner's GPU work (the web app's worker waits until training leaves the device). */
  gpuJob?: <T>(fn: () => Promise<T>) => Promise<T>;
}

export interface KernelTunersResult {
  sampler: SamplerTuneResult | null;
  lora: LoraTuneResult | null;
  attention: AttentionTuneResult | null;
  loss: LossTuneResult | null;
  /** The picks-file fields of whatever was tuned. */
  entry: Partial<TunedPicksEntry>;
  seconds: number;
}

/** Runs the tuners `o.modes` asks for, one after another. */
export async function runKernelTuners(
  gpu: Gpu,
  o: KernelTunersOptions,
): Promise<KernelTunersResult> {
  const job = o.gpuJob ?? (<T>(fn: () => Promise<T>) => fn());
  const { config, decodeRows: rows, minMs, log } = o;
  const sampler = await job(() =>
    tuneSamplerIf(gpu, o.modes.sampler ?? "auto", { vocab: config.vocabSize, rows, minMs, log })
  );
  const lora = o.loraRank === null
    ? null
    : await job(() =>
      tuneLoraFusedIf(gpu, o.modes.lora ?? "auto", { config, rank: o.loraRank!, rows, minMs, log })
    );
  const attention = await job(() =>
    tuneAttentionSplitIf(gpu, o.modes.attention ?? "auto", {
      config,
      context: o.context,
      rows,
      minMs,
      log,
    })
  );
  const loss = o.logitRows > 0
    ? await job(() =>
      tuneLossHeadIf(gpu, o.modes.loss ?? "auto", {
        vocab: config.vocabSize,
        rows: Math.min(o.logitRows, LOSS_TUNE_ROWS),
        minMs,
        log,
      })
    )
    : null;
  return {
    sampler,
    lora,
    attention,
    loss,
    entry: {
      ...(sampler ? samplerEntry(sampler) : {}),
      ...(lora ? loraFusedEntry(lora) : {}),
      ...(attention ? attentionSplitEntry(attention) : {}),
      ...(loss ? lossEntry(loss) : {}),
    },
    seconds: [sampler, lora, attention, loss].reduce((s, r) => s + (r?.seconds ?? 0), 0),
  };
}
