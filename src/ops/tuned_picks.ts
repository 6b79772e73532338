// Kernel picks the tuner measured on this device, kept per adapter: the matmul variant of each
// form and shape bucket (src/ops/autotune.ts), how many workgroups sample a row of each
// vocabulary (src/model/sampler_tune.ts), the fused LoRA forward's column-split target
// (src/model/lora_tune.ts), when decode attention splits over positions
// (src/model/attention_tune.ts) and the loss heads' lanes a row per vocabulary
// (src/train/loss_tune.ts). A JSON file in Deno (`npx deno task tune` writes it; every Matmul,
// Sampler, LoraAdapters, AttentionKernels and loss head created on that adapter afterwards reads
// it), or registered in memory
// where there is no file (a browser page that tuned itself). An entry names the adapter (class and
// adapter text) and the kernel set it was measured with; another adapter's entry, or one from an
// older kernel set, is not used.

import { type AdapterDescription, adapterText } from "../gpu/device.ts";
import { GpuError } from "../gpu/errors.ts";
import { envVar, isDeno, readLocalTextSync, userCacheDir } from "../runtime.ts";
import type { TunedBucket } from "./autotune.ts";
import { MATMUL_VARIANTS } from "./matmul_variants.ts";

/** The environment variable naming the picks file ("off": none is read). */
export const TUNED_PICKS_ENV = "PETTINGLLMS_TUNED_PICKS";
const FORMAT = "pettingllms-webgpu matmul picks";

/** A picks file that cannot be used; the message names it and what to do. */
export class TunedPicksError extends GpuError {}

export interface TunedPicksEntry {
  /** adapterKey(): the adapter class and its adapter text. */
  adapter: string;
  /** kernelSetId() when measured: picks of another kernel set are not used. */
  kernels: string;
  /** "form:bucket" → variant name. */
  picks: Record<string, string>;
  /** What the picks were tuned on (a model folder, a workload). */
  tunedFor: string;
  /** ISO date of the measurement. */
  date: string;
  /** The measurement: each bucket's score before and after (ms a step). */
  buckets?: TunedBucket[];
  /**
   * How the sampler samples a row of each vocabulary (vocabulary → pick): Sampler's "auto"
   * rowChunks and default workgroup size use it over the built-in rules (src/model/sampling.ts).
   */
  samplerPicks?: Record<string, SamplerPick>;
  /** The sampler's measurement per vocabulary (ms a step at the tuned batch sizes). */
  samplerTimes?: TunedSampler[];
  /**
   * Workgroups the fused LoRA forward fills before it splits a group's output columns over more
   * (src/model/lora.ts fusedColumnChunks), over the built-in FUSED_TARGET_WORKGROUPS.
   */
  loraFusedTarget?: number;
  /** Its measurement (src/model/lora_tune.ts). */
  loraFusedTimes?: TunedLoraFused;
  /**
   * When decode attention splits over positions (src/model/attention_kernels.ts): calls of at
   * most `rowHeads` rows × heads, over splits of at least `minSpan` positions; over the built-in
   * SPLIT_ROW_HEADS and SPLIT_MIN_SPAN.
   */
  attentionSplit?: AttentionSplitPick;
  /** Its measurement (src/model/attention_tune.ts). */
  attentionSplitTimes?: TunedAttentionSplit;
  /**
   * The loss heads' lanes a row per vocabulary (vocabulary → a power of two in [32, 256]): loss
   * heads of that width use it over the built-in LOSS_WG (src/train/losses.ts).
   */
  lossPicks?: Record<string, number>;
  /** Its measurement per vocabulary (src/train/loss_tune.ts). */
  lossTimes?: TunedLoss[];
}

/** One vocabulary's loss-head tuning: lanes a row, built-in and tuned, ms a call each. */
export interface TunedLoss {
  vocab: number;
  /** Rows of logits a call. */
  rows: number;
  current: number;
  currentMs: number;
  best: number;
  bestMs: number;
}

/** When decode attention splits over positions. */
export interface AttentionSplitPick {
  /** The most rows × heads a call may have to be split (0: never split). */
  rowHeads: number;
  /** Positions per split at least (a multiple of 64). */
  minSpan: number;
}

/** The attention split's tuning: each timed call with and without the split, and the pick. */
export interface TunedAttentionSplit {
  /** Heads and head size timed ("14 heads over 2 kv heads of 64"). */
  shape: string;
  /** Cache positions every row attends to. */
  context: number;
  current: AttentionSplitPick;
  /** One call at each batch size, split where the pick says so (ms). */
  currentMs: number;
  best: AttentionSplitPick;
  bestMs: number;
  /** Per decode batch size: ms a call unsplit, and split at the picked span. */
  calls: { rows: number; rowHeads: number; unsplitMs: number; splitMs: number }[];
}

/** The fused LoRA forward's tuning: the built-in target and the tuned one, with their times. */
export interface TunedLoraFused {
  /** The model's products it was timed at ("hidden 896, q 896, kv 128, intermediate 4864"). */
  shape: string;
  rank: number;
  /** Decode rows (batch sizes) it was timed at. */
  rows: number[];
  current: number;
  currentMs: number;
  best: number;
  bestMs: number;
}

/** Largest attention split threshold a picks file may hold (rows × heads). */
export const MAX_SPLIT_ROW_HEADS = 4096;

/** Largest fused LoRA target a picks file may hold (workgroups a dispatch). */
export const MAX_LORA_FUSED_TARGET = 1 << 16;

/** How the sampler's workgroup kernel samples a row of one vocabulary. */
export interface SamplerPick {
  /** Workgroups a row is split over (1: one workgroup, no merge). */
  rowChunks: number;
  /** Threads of each workgroup (a power of two in [32, 256]). */
  workgroupSize: number;
}

/**
 * Whether n is a power of two in [32, 256]: the workgroup sizes of the sampler's and the loss
 * heads' row reductions.
 */
export function isPow2In32To256(n: unknown): n is number {
  return Number.isInteger(n) && (n as number) >= 32 && (n as number) <= 256 &&
    ((n as number) & ((n as number) - 1)) === 0;
}

/** One vocabulary's sampler tuning: the built-in pick and the tuned one, with their times. */
export interface TunedSampler {
  vocab: number;
  /** Decode rows (batch sizes) it was timed at. */
  rows: number[];
  current: SamplerPick;
  currentMs: number;
  best: SamplerPick;
  bestMs: number;
}

/** "16 workgroups of 128 threads a row". */
export function describeSamplerPick(p: SamplerPick): string {
  return `${p.rowChunks} workgroup${
    p.rowChunks > 1 ? "s" : ""
  } of ${p.workgroupSize} threads a row`;
}

export interface TunedPicksFile {
  format: typeof FORMAT;
  version: 1;
  entries: TunedPicksEntry[];
}

/** How an adapter is told apart in the file: its class (forced or not) and adapter text. */
export function adapterKey(info: AdapterDescription): string {
  return `${info.adapterClass}: ${adapterText(info)}`;
}

/** An id of the matmul variants this build has (FNV-1a of their names, hex). */
export function kernelSetId(): string {
  let h = 2166136261;
  for (const ch of MATMUL_VARIANTS.map((v) => v.name).join(",")) {
    h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/** The picks file Deno reads and `tune` writes: $PETTINGLLMS_TUNED_PICKS, else the user cache. */
export function tunedPicksPath(): string | null {
  const v = envVar(TUNED_PICKS_ENV);
  if (v === "off") return null;
  if (v) return v;
  if (!isDeno()) return null;
  const dir = userCacheDir();
  return dir ? `${dir}/pettingllms-webgpu/matmul_picks.json` : null;
}

const KEY = /^(nn|nt|tn|ntx):(vector|skinny|skinny16|skinny32|small|square)$/;

/** Parses a picks file's text; throws TunedPicksError naming `path` and the fix. */
export function parseTunedPicks(text: string, path: string): TunedPicksFile {
  const bad = (why: string) =>
    new TunedPicksError(
      `${path}: ${why}. Delete it (matmuls then use the built-in picks) or run \`npx deno task tune\` again; ${TUNED_PICKS_ENV}=off skips it`,
    );
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw bad(`not JSON (${(e as Error).message})`);
  }
  const f = raw as Partial<TunedPicksFile>;
  if (typeof f !== "object" || f === null || f.format !== FORMAT) {
    throw bad(`not a matmul picks file (no "format": "${FORMAT}")`);
  }
  if (f.version !== 1) throw bad(`version ${String(f.version)}, this build reads version 1`);
  if (!Array.isArray(f.entries)) throw bad(`"entries" is not a list`);
  for (const [i, e] of f.entries.entries()) {
    const ok = typeof e === "object" && e !== null && typeof e.adapter === "string" &&
      typeof e.kernels === "string" && typeof e.picks === "object" && e.picks !== null &&
      Object.entries(e.picks).every(([k, v]) => KEY.test(k) && typeof v === "string");
    if (!ok) throw bad(`entry ${i} lacks adapter, kernels or "form:bucket" picks`);
    const sp = e.samplerPicks;
    if (
      sp !== undefined && (typeof sp !== "object" || sp === null || Array.isArray(sp) ||
        !Object.entries(sp).every(([k, v]) =>
          /^[1-9][0-9]*$/.test(k) && typeof v === "object" && v !== null &&
          Number.isInteger(v.rowChunks) && v.rowChunks >= 1 &&
          isPow2In32To256(v.workgroupSize)
        ))
    ) {
      throw bad(
        `entry ${i}'s "samplerPicks" is not vocabulary → { rowChunks ≥ 1, workgroupSize a power of two in [32, 256] }`,
      );
    }
    const lp = e.lossPicks;
    if (
      lp !== undefined && (typeof lp !== "object" || lp === null || Array.isArray(lp) ||
        !Object.entries(lp).every(([k, v]) => /^[1-9][0-9]*$/.test(k) && isPow2In32To256(v)))
    ) {
      throw bad(
        `entry ${i}'s "lossPicks" is not vocabulary → lanes a row (a power of two in [32, 256])`,
      );
    }
    const as = e.attentionSplit;
    if (
      as !== undefined &&
      !(typeof as === "object" && as !== null && Number.isInteger(as.rowHeads) &&
        as.rowHeads >= 0 && as.rowHeads <= MAX_SPLIT_ROW_HEADS && Number.isInteger(as.minSpan) &&
        as.minSpan >= 64 && as.minSpan % 64 === 0)
    ) {
      throw bad(
        `entry ${i}'s "attentionSplit" ${
          JSON.stringify(as)
        } is not { rowHeads in [0, ${MAX_SPLIT_ROW_HEADS}], minSpan a multiple of 64 }`,
      );
    }
    const lt = e.loraFusedTarget;
    if (lt !== undefined && !(Number.isInteger(lt) && lt >= 1 && lt <= MAX_LORA_FUSED_TARGET)) {
      throw bad(
        `entry ${i}'s "loraFusedTarget" ${
          JSON.stringify(lt)
        } is not a whole number of workgroups in [1, ${MAX_LORA_FUSED_TARGET}]`,
      );
    }
  }
  return f as TunedPicksFile;
}

/**
 * `file` with `entry` in place of any entry of the same adapter and kernel set. The sampler's and
 * the loss heads' picks of vocabularies `entry` did not tune are kept from the entry it replaces
 * (tuning one model leaves another model's as they were), and so are the fused LoRA target and
 * the attention split where `entry` has none; its matmul picks are replaced.
 */
export function withEntry(file: TunedPicksFile | null, entry: TunedPicksEntry): TunedPicksFile {
  const same = (e: TunedPicksEntry) => e.adapter === entry.adapter && e.kernels === entry.kernels;
  const old = (file?.entries ?? []).find(same);
  const rest = (file?.entries ?? []).filter((e) => !same(e));
  // Per-vocabulary picks and times: the new vocabularies' over the old.
  const byVocab = (pk: "samplerPicks" | "lossPicks", tk: "samplerTimes" | "lossTimes") => {
    const picks = { ...old?.[pk], ...entry[pk] };
    const oldTimes: { vocab: number }[] = old?.[tk] ?? [], newTimes = entry[tk] ?? [];
    const tuned = new Set(newTimes.map((t) => t.vocab));
    const times = [...oldTimes.filter((t) => !tuned.has(t.vocab)), ...newTimes];
    return {
      ...(Object.keys(picks).length ? { [pk]: picks } : {}),
      ...(times.length ? { [tk]: times } : {}),
    };
  };
  const merged: TunedPicksEntry = {
    ...entry,
    ...byVocab("samplerPicks", "samplerTimes"),
    ...byVocab("lossPicks", "lossTimes"),
    ...(entry.loraFusedTarget === undefined && old?.loraFusedTarget !== undefined
      ? { loraFusedTarget: old.loraFusedTarget, loraFusedTimes: old.loraFusedTimes }
      : {}),
    ...(entry.attentionSplit === undefined && old?.attentionSplit !== undefined
      ? { attentionSplit: old.attentionSplit, attentionSplitTimes: old.attentionSplitTimes }
      : {}),
  };
  return { format: FORMAT, version: 1, entries: [...rest, merged] };
}

// In memory: entries registered here (useTunedPicks) and the file's, read once.
let registered: { entry: TunedPicksEntry; source: string }[] = [];
let fromFile: { path: string; entries: TunedPicksEntry[] } | null | undefined;

/**
 * Entries to use in this process before the file's (a page that tuned itself, or read its
 * stored picks); `source` says where they came from in log lines.
 */
export function useTunedPicks(
  entries: readonly TunedPicksEntry[],
  source = "registered in this process",
): void {
  registered = [...entries.map((entry) => ({ entry, source })), ...registered];
}

/** Forgets registered entries and reads the file again on next use (tests, after `tune`). */
export function resetTunedPicks(): void {
  registered = [];
  fromFile = undefined;
}

function fileEntries(): { path: string; entries: TunedPicksEntry[] } | null {
  if (fromFile === undefined) {
    const path = tunedPicksPath();
    const text = path === null ? null : readLocalTextSync(path);
    fromFile = path === null || text === null
      ? null
      : { path, entries: parseTunedPicks(text, path).entries };
  }
  return fromFile;
}

/**
 * The tuned picks for this adapter and this build's kernels (registered first, then the file's),
 * with where they came from; null when there are none. Picks naming a variant this build lacks
 * are left out.
 */
export function tunedPicksFor(
  info: AdapterDescription,
): { picks: Record<string, string>; entry: TunedPicksEntry; source: string } | null {
  const key = adapterKey(info), kernels = kernelSetId();
  const match = (e: TunedPicksEntry) => e.adapter === key && e.kernels === kernels;
  const mine = registered.find((r) => match(r.entry));
  const file = mine ? null : fileEntries();
  const entry = mine?.entry ?? file?.entries.find(match);
  if (!entry) return null;
  const names = new Set(MATMUL_VARIANTS.map((v) => v.name));
  const picks = Object.fromEntries(Object.entries(entry.picks).filter(([, v]) => names.has(v)));
  return { picks, entry, source: mine?.source ?? file!.path };
}

/**
 * The tuner's sampler picks for this adapter, by vocabulary ({} where the sampler was not tuned
 * here).
 */
export function tunedSamplerPicks(info: AdapterDescription): Readonly<Record<string, SamplerPick>> {
  return tunedPicksFor(info)?.entry.samplerPicks ?? {};
}

/** The fused LoRA target the tuner measured on this adapter; undefined where it was not tuned. */
export function tunedLoraFusedTarget(info: AdapterDescription): number | undefined {
  return tunedPicksFor(info)?.entry.loraFusedTarget;
}

/** The loss heads' lanes a row the tuner measured here at this vocabulary; else undefined. */
export function tunedLossWorkgroupSize(
  info: AdapterDescription,
  vocab: number,
): number | undefined {
  return tunedPicksFor(info)?.entry.lossPicks?.[String(vocab)];
}

/** The attention split the tuner measured on this adapter; undefined where it was not tuned. */
export function tunedAttentionSplit(info: AdapterDescription): AttentionSplitPick | undefined {
  return tunedPicksFor(info)?.entry.attentionSplit;
}

/** "split at up to 32 rows × heads, 256 positions a split at least" (0: "never split"). */
export function describeAttentionSplit(p: AttentionSplitPick): string {
  return p.rowHeads === 0
    ? "never split"
    : `split at up to ${p.rowHeads} rows × heads, ${p.minSpan} positions a split at least`;
}

/**
 * One line for logs: where this adapter's matmul picks come from; `howToTune` says how to
 * measure them where they are the built-in ones.
 */
export function describeTunedPicks(
  info: AdapterDescription,
  howToTune = "npx deno task tune measures this device's",
): string {
  const t = tunedPicksFor(info);
  if (!t) return `matmul picks: built-in (${howToTune})`;
  const sampler = Object.entries(t.entry.samplerPicks ?? {});
  return `matmul picks: tuned on this adapter ${
    t.entry.date.slice(0, 10)
  } for ${t.entry.tunedFor} (${t.source})${
    sampler.length
      ? `; sampler tuned: ${
        sampler.map(([v, p]) => `${describeSamplerPick(p)} at vocabulary ${v}`).join(", ")
      }`
      : ""
  }${
    t.entry.loraFusedTarget === undefined
      ? ""
      : `; fused LoRA tuned: ${t.entry.loraFusedTarget} workgroups a dispatch`
  }${
    t.entry.attentionSplit === undefined
      ? ""
      : `; decode attention tuned: ${describeAttentionSplit(t.entry.attentionSplit)}`
  }${
    Object.keys(t.entry.lossPicks ?? {}).length
      ? `; loss heads tuned: ${
        Object.entries(t.entry.lossPicks!).map(([v, wg]) => `${wg} lanes a row at vocabulary ${v}`)
          .join(", ")
      }`
      : ""
  }`;
}
