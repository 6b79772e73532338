// The app's "Tune kernels for this GPU": the matmul tuner (src/ops/autotune.ts) at a run's
// products and, on GPUs, the other kernel tuners (src/train/kernel_tuners.ts: the sampler, the
// fused LoRA forward, decode attention's split, the loss heads), kept in the store's picks file
// beside runs/ (src/ops/tuned_picks.ts's format) and registered for the next start or resume. TrainerHost decides when it may run; this decides what it times.

import type { Gpu } from "../../src/gpu/mod.ts";
import type { DirStore } from "../../src/browser/run_store.ts";
import { matmulWorkload, tuneMatmuls } from "../../src/ops/autotune.ts";
import {
  adapterKey,
  describeTunedPicks,
  kernelSetId,
  parseTunedPicks,
  type TunedPicksEntry,
  type TunedPicksFile,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";
import type { RunConfig } from "../../src/rl/config.ts";
import { halfBaseFor } from "../../src/rl/policies.ts";
import { runKernelTuners } from "../../src/train/kernel_tuners.ts";
import { defaultLogitRows } from "../../src/train/trainer.ts";
import type { LoadedBase } from "./model_source.ts";
import type { TuneReport, TuneRequest } from "./protocol.ts";

/** The store's file of tuned kernel picks, beside runs/. */
export const PICKS_FILE = "matmul_picks.json";
/** How the footer's picks line says where tuned picks would come from. */
export const TUNE_HINT = "“Tune kernels” measures this GPU's";

const named = (name: string, message: string) => Object.assign(new Error(message), { name });
const message = (e: unknown) => e instanceof Error ? e : new Error(String(e));

/** The stored picks file; a broken one is reported through `log` and left unused (tune again). */
export async function readStoredPicks(
  store: DirStore,
  log: (line: string) => void,
): Promise<TunedPicksFile | null> {
  const bytes = await store.read(PICKS_FILE);
  if (!bytes) return null;
  try {
    return parseTunedPicks(new TextDecoder().decode(bytes), `${store.name}/${PICKS_FILE}`);
  } catch (e) {
    const err = message(e);
    log(`${err.name}: ${err.message} (the built-in picks run until the kernels are tuned again)`);
    return null;
  }
}

/** Registers the stored picks for this process (a page's start-up). */
export async function useStoredPicks(store: DirStore, log: (line: string) => void) {
  const picks = await readStoredPicks(store, log);
  if (picks) useTunedPicks(picks.entries, `${store.name}/${PICKS_FILE}`);
}

/** What a tuning needs from the host. */
export interface TuneContext {
  gpu: Gpu;
  base: LoadedBase;
  config: RunConfig;
  store: DirStore;
  now: () => number;
  log: (line: string) => void;
  /** Runs GPU work when training is not using the device. */
  gpuJob: <T>(fn: () => Promise<T>) => Promise<T>;
}

/**
 * Tunes at the run's products: its model, its rollout batch (envs per step × K) and single
 * rows, its prompts' prefill (up to the chunk rows) and its update chunk, with the half-float
 * base where the run has one; writes the store's picks file and registers its entry.
 */
export async function tuneForRun(ctx: TuneContext, req: TuneRequest): Promise<TuneReport> {
  const { gpu, base, config: c, log } = ctx;
  let variants: RegExp | undefined;
  try {
    variants = req.variants === undefined ? undefined : new RegExp(req.variants);
  } catch (e) {
    throw named("TuneRequestError", `variants: ${message(e).message}`);
  }
  const full = c.update.mode === "full";
  const half = halfBaseFor(c, c.update.mode, gpu.adapterClass, base.weights);
  const decodeRows = [...new Set([1, c.rollout.envsPerStep * c.rollout.k])];
  // A rollout prefills its tasks' prompts together (candidates share theirs), in chunks.
  const prefill = Math.min(c.update.chunkRows, c.rollout.envsPerStep * c.rollout.maxPromptTokens);
  const vocab = base.weights.config.vocabSize;
  const logitRows = c.update.logitRows ||
    defaultLogitRows(c.update.chunkRows, vocab, gpu.device.limits.maxStorageBufferBindingSize);
  const workload = matmulWorkload(base.weights.config, {
    decodeRows,
    prefillRows: [prefill],
    trainRows: c.update.chunkRows,
    logitRows,
    full,
    halfB: half,
  });
  const tunedFor = `${base.label} (decode at ${
    decodeRows.join(" and ")
  } rows, a ${c.update.chunkRows}-row ${full ? "full" : "LoRA"} update${
    half ? ", half-float base" : ""
  })`;
  ctx.log(`tuning the matmul kernels for ${tunedFor}`);
  const tuneLog = (line: string) => log(`tune ${line}`);
  const r = await ctx.gpuJob(() =>
    tuneMatmuls(gpu, workload, { variants, minMs: req.minMs, log: tuneLog })
  );
  const matmulEntry: TunedPicksEntry = {
    adapter: adapterKey(gpu.ctx.info),
    kernels: kernelSetId(),
    picks: r.picks,
    tunedFor,
    date: new Date(ctx.now()).toISOString(),
    buckets: r.buckets,
  };
  // Kept as soon as measured: a page closed during the kernel tuners keeps the matmul picks.
  await storePicks(ctx, matmulEntry);
  // On GPUs, the sampler's row split at the rollout's batch sizes, the fused LoRA forward's
  // column split at the run's rank, decode attention's split at the rollout's longest context
  // (a prompt and every turn's new tokens) and the loss heads at the update's logit rows.
  const tuned = await runKernelTuners(gpu, {
    config: base.weights.config,
    decodeRows,
    loraRank: full ? null : c.update.lora.rank,
    context: c.rollout.maxPromptTokens + c.rollout.maxTurns * c.rollout.maxNewTokens,
    logitRows,
    modes: req,
    minMs: req.minMs,
    log: tuneLog,
    gpuJob: ctx.gpuJob,
  });
  await storePicks(ctx, {
    ...matmulEntry,
    date: new Date(ctx.now()).toISOString(),
    ...tuned.entry,
  });
  log(`${describeTunedPicks(gpu.ctx.info)}: the next start or resume runs them`);
  return {
    buckets: r.buckets,
    sampler: tuned.entry.samplerTimes?.[0] ?? null,
    lora: tuned.entry.loraFusedTimes ?? null,
    attention: tuned.entry.attentionSplitTimes ?? null,
    loss: tuned.entry.lossTimes?.[0] ?? null,
    refused: r.refused,
    seconds: r.seconds + tuned.seconds,
    tunedFor,
  };
}

/**
 * Writes `entry` into the store's picks file and registers this adapter's entry for the next
 * start or resume. The stored entry keeps the sampler splits of vocabularies tuned before, and
 * the fused LoRA target and attention split where this tuning had none (withEntry).
 */
async function storePicks(ctx: TuneContext, entry: TunedPicksEntry): Promise<void> {
  const file = withEntry(await readStoredPicks(ctx.store, ctx.log), entry);
  useTunedPicks(
    file.entries.filter((e) => e.adapter === entry.adapter && e.kernels === entry.kernels),
    `${ctx.store.name}/${PICKS_FILE}`,
  );
  await ctx.store.write(PICKS_FILE, new TextEncoder().encode(JSON.stringify(file, null, 2) + "\n"));
}
