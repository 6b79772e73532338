// The sampler's tuner: how many workgroups, of how many threads, should sample one row of a
// vocabulary on this device. On GPUs the sampler splits a large vocabulary's row over several
// workgroups and merges them (src/model/sampling.ts, SPLIT_MIN_VOCAB), 64 threads each; both
// rules are estimates from one H100 profile. This times splits and workgroup sizes on the user's
// own GPU, at the batch sizes and sampling settings generation runs, and `npx deno task tune`
// keeps the fastest beside the matmul picks (src/ops/tuned_picks.ts), where every later Sampler
// on that adapter reads it.
//
// Each candidate is first checked against the float64 reference (sampling_reference.ts) on rows
// of this vocabulary, so a split that samples wrongly on this device is never picked. Then, as
// the matmul tuner does: every candidate screened with short timings, the best few and the
// built-in split timed again at length; a candidate's score is Σ over batch sizes and settings
// of ms a call.

import type { Gpu } from "../gpu/mod.ts";
import { readUint32 } from "../gpu/buffers.ts";
import { msPerEncode, screenThenTime } from "../gpu/timing.ts";
import { seededValues } from "../ops/reference.ts";
import {
  describeSamplerPick,
  type SamplerPick,
  type TunedPicksEntry,
  type TunedSampler,
} from "../ops/tuned_picks.ts";
import { GpuLimitError } from "../gpu/errors.ts";
import { ModelError } from "./errors.ts";
import {
  cdfIntervalDistance,
  CUT_MARGIN,
  DRAW_TOL,
  LOGP_ATOL,
  LOGP_RTOL,
  sampleRef,
} from "./sampling_reference.ts";
import {
  builtInRowChunks,
  packSamplingParams,
  type SampleArgs,
  Sampler,
  type SamplerOptions,
  type SamplingParams,
} from "./sampling.ts";

/** The tuner cannot run here (every candidate wrong, bad options); the message says why. */
export class SamplerTuneError extends ModelError {}

/**
 * What generation samples with, each timed at every batch size: greedy (evaluation), plain
 * temperature (RL rollouts) and HF chat models' generation config (top-k 20, top-p 0.9, T 0.7).
 */
export const SAMPLER_TUNE_SETTINGS: readonly Omit<SamplingParams, "sequence">[] = [
  { temperature: 0, seed: 1, step: 0 },
  { temperature: 1, seed: 2, step: 0 },
  { temperature: 0.7, topK: 20, topP: 0.9, seed: 3, step: 0 },
];

export interface SamplerTuneOptions {
  vocab: number;
  /** Rows a decode step samples: the batch sizes generation runs at (default 1, 8, 32). */
  rows?: readonly number[];
  /** Settings each batch size is timed with (default SAMPLER_TUNE_SETTINGS). */
  settings?: readonly Omit<SamplingParams, "sequence">[];
  /**
   * Workgroups a row to try (default 1, the powers of two up to the sampler's limit, and the
   * built-in split); the built-in pick is always timed.
   */
  candidates?: readonly number[];
  /**
   * Threads a workgroup to try, each with every split (default: the sampler option's, else 32 on
   * CPU adapters and 64, 128 and 256 on GPUs, those the device's workgroup memory allows).
   */
  workgroupSizes?: readonly number[];
  /** Wall time of a final timing per batch size and setting (ms); a screening takes a fifth. */
  minMs?: number;
  /** Candidates kept from screening for the final timing (the built-in pick too). */
  keep?: number;
  log?: (line: string) => void;
  /** The sampler's own options (capacity, variant) as generation creates it. */
  sampler?: Omit<SamplerOptions, "rowChunks" | "lazy" | "vocab">;
  /**
   * What samples for a candidate (default: a Sampler with that split and workgroup size). Tests
   * plant a wrong sampler here: the reference check must refuse it.
   */
  samplerFor?: (gpu: Gpu, pick: SamplerPick) => Promise<SamplerLike>;
}

/** The part of a Sampler the tuner drives. */
export interface SamplerLike {
  prepare(vocab: number): Promise<void>;
  encode: Sampler["encode"];
  chunksFor(vocab: number): number;
  destroy(): void;
}

export interface SamplerTuneResult extends TunedSampler {
  /** ms a step of every candidate at its final (or, if not a finalist, screening) timing. */
  times: (SamplerPick & { ms: number; final: boolean })[];
  /** Candidates that sampled wrongly on this device, with the first wrong row: never picked. */
  refused: (SamplerPick & { why: string })[];
  seconds: number;
}

/** Seeded logits like a language model's: normal, sd 3 (Box–Muller on seeded uniforms). */
function normalLogits(n: number, seed: number): Float32Array {
  const a = seededValues(n, seed, 0, 1), b = seededValues(n, seed + 1, 0, 1);
  return a.map((v, i) => 3 * Math.sqrt(-2 * Math.log(1 - v)) * Math.cos(2 * Math.PI * b[i]));
}

/**
 * Why the sampled row is wrong against the float64 reference, or null where it is right: greedy
 * rows the argmax (up to a float32 near tie), sampled rows a token of the support whose CDF
 * interval holds the draw (up to DRAW_TOL), and the token's log-prob.
 */
export function rowError(
  logits: ArrayLike<number>,
  p: SamplingParams,
  id: number,
  logprob: number,
): string | null {
  const ref = sampleRef(logits, p);
  const { scores: z, probs } = ref;
  if (!(id < z.length)) return `sampled ${id}, not a token id`;
  if ((p.temperature ?? 1) === 0) {
    if (id !== ref.id && z[id] < z[ref.id] - 1e-6 * Math.max(1, Math.abs(z[ref.id]))) {
      return `sampled ${id}, not the argmax ${ref.id}`;
    }
  } else {
    if (probs[id] === 0 && ref.cutMargin >= CUT_MARGIN) {
      return `sampled ${id}, outside the top-k/top-p support (reference ${ref.id})`;
    }
    const d = cdfIntervalDistance(probs, id, ref.u);
    if (d > DRAW_TOL) {
      return `sampled ${id}: the draw ${ref.u} is ${
        d.toExponential(2)
      } outside its CDF interval (reference ${ref.id})`;
    }
  }
  const want = z[id] - (z[ref.id] - ref.logprob); // log-softmax over the full row
  if (!(Math.abs(logprob - want) <= LOGP_ATOL + LOGP_RTOL * Math.abs(want))) {
    return `log-prob ${logprob} of token ${id}, reference ${want}`;
  }
  return null;
}

/** Rows of the check: each setting twice (two draws), the last ones with a masked tail. */
async function checkSampler(
  gpu: Gpu,
  s: SamplerLike,
  vocab: number,
  settings: readonly Omit<SamplingParams, "sequence">[],
): Promise<string | null> {
  const params = [...settings, ...settings].map((p, r) => ({ ...p, sequence: r }));
  const rows = params.length;
  const x = normalLogits(rows * vocab, 11);
  // The last row's highest tenth of ids masked (−inf), as constrained decoding leaves a row.
  x.fill(-Infinity, rows * vocab - Math.ceil(vocab / 10));
  const bufs = {
    logits: gpu.upload(x),
    params: gpu.upload(packSamplingParams(params)),
    ids: gpu.zeros(rows),
    logprobs: gpu.zeros(rows),
  };
  try {
    const rec = gpu.recorder("sampler tune check");
    s.encode(rec, { rows, vocab, ...bufs });
    rec.submit();
    const ids = await readUint32(gpu.device, bufs.ids, rows);
    const lp = await gpu.readFloat32(bufs.logprobs, rows);
    for (let r = 0; r < rows; r++) {
      const why = rowError(x.subarray(r * vocab, (r + 1) * vocab), params[r], ids[r], lp[r]);
      if (why) return `row ${r} ${JSON.stringify(params[r])}: ${why}`;
    }
    return null;
  } finally {
    Object.values(bufs).forEach((b) => b.destroy());
  }
}

/**
 * Times the sampler's row splits and workgroup sizes at this vocabulary and returns the fastest,
 * beside the built-in pick. Seconds on a GPU (three kernels a workgroup size to compile, a few
 * hundred timings); run it once per device and vocabulary (`npx deno task tune`), not per run.
 */
export async function tuneSampler(gpu: Gpu, o: SamplerTuneOptions): Promise<SamplerTuneResult> {
  return await tuneSplits(gpu, o, await maxRowChunks(gpu, o));
}

/** The sampler's default threads a workgroup here (the sampler option's, else by adapter class). */
function defaultWorkgroupSize(gpu: Gpu, o: Pick<SamplerTuneOptions, "sampler">): number {
  return o.sampler?.workgroupSize ?? (gpu.adapterClass === "cpu" ? 32 : 64);
}

function samplerMaker(o: Pick<SamplerTuneOptions, "sampler" | "samplerFor">) {
  return o.samplerFor ??
    ((g: Gpu, p: SamplerPick) => Sampler.create(g, { ...o.sampler, ...p, lazy: true }));
}

/**
 * The most workgroups a row of this vocabulary can be split over on this adapter (its capacity,
 * the row's vec4s); 1 where rows are never split (the lane kernel samples them, or a row is one
 * vec4): there is nothing to tune.
 */
export async function maxRowChunks(
  gpu: Gpu,
  o: Pick<SamplerTuneOptions, "vocab" | "sampler" | "samplerFor">,
): Promise<number> {
  if (!(Number.isInteger(o.vocab) && o.vocab > 0)) {
    throw new SamplerTuneError(`tuneSampler: vocab ${o.vocab} must be a positive integer`);
  }
  const probe = await samplerMaker(o)(gpu, {
    rowChunks: 1 << 30,
    workgroupSize: defaultWorkgroupSize(gpu, o),
  });
  try {
    return probe.chunksFor(o.vocab);
  } finally {
    probe.destroy();
  }
}

/** tuneSampler, given the most workgroups a row may be split over (maxRowChunks). */
async function tuneSplits(
  gpu: Gpu,
  o: SamplerTuneOptions,
  most: number,
): Promise<SamplerTuneResult> {
  const t0 = performance.now();
  const { vocab } = o;
  const rows = [...new Set(o.rows ?? [1, 8, 32])];
  const settings = o.settings ?? SAMPLER_TUNE_SETTINGS;
  const minMs = o.minMs ?? 60, keep = o.keep ?? 3;
  const log = o.log ?? (() => {});
  if (!rows.length || rows.some((r) => !(Number.isInteger(r) && r > 0))) {
    throw new SamplerTuneError(`tuneSampler: rows ${rows} must be positive integers`);
  }
  const defaultWg = defaultWorkgroupSize(gpu, o);
  const make = samplerMaker(o);
  if (most < 2) {
    throw new SamplerTuneError(
      `rows of vocabulary ${vocab} are not split on this adapter (the lane kernel samples them, or a row is one vec4): nothing to tune`,
    );
  }
  // What "auto" runs without tuned picks, clamped as the sampler clamps it.
  const builtIn: SamplerPick = {
    rowChunks: Math.max(1, Math.min(builtInRowChunks(gpu.adapterClass, vocab), most)),
    workgroupSize: defaultWg,
  };
  const wanted = o.candidates ??
    [1, ...Array.from({ length: 6 }, (_, i) => 2 ** (i + 1)).filter((c) => c <= most)];
  const sizes = o.workgroupSizes ??
    (o.sampler?.workgroupSize !== undefined || gpu.adapterClass === "cpu"
      ? [defaultWg]
      : [64, 128, 256]);
  for (const c of [...wanted, ...sizes]) {
    if (!(Number.isInteger(c) && c >= 1)) {
      throw new SamplerTuneError(`tuneSampler: candidate ${c} must be an integer ≥ 1`);
    }
  }
  const key = (p: SamplerPick) => `${p.rowChunks}x${p.workgroupSize}`;
  const candidates = new Map<string, SamplerPick>([[key(builtIn), builtIn]]);
  for (const workgroupSize of sizes) {
    for (const c of wanted) {
      const p = { rowChunks: Math.min(c, most), workgroupSize };
      candidates.set(key(p), p);
    }
  }
  const samplers = new Map<string, { pick: SamplerPick; s: SamplerLike }>();
  const refused: SamplerTuneResult["refused"] = [];
  const maxRows = Math.max(...rows);
  const logits = gpu.upload(normalLogits(maxRows * vocab, 7));
  const ids = gpu.zeros(maxRows), logprobs = gpu.zeros(maxRows);
  const paramsOf = new Map<string, GPUBuffer>();
  const params = (r: number, i: number) => {
    const k = `${r}|${i}`;
    if (!paramsOf.has(k)) {
      const rowsOf = Array.from({ length: r }, (_, q) => ({ ...settings[i], sequence: q }));
      paramsOf.set(k, gpu.upload(packSamplingParams(rowsOf)));
    }
    return paramsOf.get(k)!;
  };
  const score = async (k: string, ms: number, rounds: number) => {
    const { s } = samplers.get(k)!;
    let total = 0;
    for (const r of rows) {
      for (let i = 0; i < settings.length; i++) {
        const args: SampleArgs = { rows: r, vocab, logits, params: params(r, i), ids, logprobs };
        total += await msPerEncode(gpu, "sampler tune", (rec) => s.encode(rec, args), ms, rounds);
      }
    }
    return total;
  };
  const skipped = new Set<number>();
  try {
    for (const [k, pick] of candidates) {
      if (skipped.has(pick.workgroupSize)) continue;
      let s: SamplerLike;
      try {
        s = await make(gpu, pick);
      } catch (e) {
        // A workgroup size whose workgroup memory this device does not have: not a candidate.
        if (!(e instanceof GpuLimitError)) throw e;
        skipped.add(pick.workgroupSize);
        log(`sampler: ${pick.workgroupSize} threads a workgroup skipped: ${e.message}`);
        continue;
      }
      await s.prepare(vocab);
      const why = await checkSampler(gpu, s, vocab, settings);
      if (why) {
        refused.push({ ...pick, why });
        log(
          `sampler ${
            describeSamplerPick(pick)
          }: refused, wrong against the float64 reference: ${why}`,
        );
        s.destroy();
      } else samplers.set(k, { pick, s });
    }
    if (!samplers.size) {
      throw new SamplerTuneError(
        `every sampler split was wrong against the float64 reference at vocabulary ${vocab}: ${
          refused.map((r) => `${describeSamplerPick(r)}: ${r.why}`).join("; ")
        }`,
      );
    }
    const base = key(builtIn);
    const { best, bestMs, times } = await screenThenTime(
      [...samplers.keys()],
      samplers.has(base) ? base : undefined,
      score,
      { minMs, keep },
    );
    const currentMs = times.get(base)?.ms ?? NaN;
    const bestPick = samplers.get(best)!.pick;
    log(
      `sampler at vocabulary ${vocab}: ${describeSamplerPick(bestPick)} ${
        bestMs.toFixed(3)
      } ms a step against the built-in ${describeSamplerPick(builtIn)} ${
        currentMs.toFixed(3)
      } ms (rows ${rows.join(",")}, ${settings.length} settings, ${samplers.size} candidates)`,
    );
    return {
      vocab,
      rows,
      current: builtIn,
      currentMs,
      best: bestPick,
      bestMs,
      times: [...times].map(([k, t]) => ({ ...samplers.get(k)!.pick, ...t })).sort((a, b) =>
        a.workgroupSize - b.workgroupSize || a.rowChunks - b.rowChunks
      ),
      refused,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    samplers.forEach(({ s }) => s.destroy());
    [logits, ids, logprobs, ...paramsOf.values()].forEach((b) => b.destroy());
  }
}

/** When to tune the sampler: "auto" on GPU-class adapters (CPU adapters never split by default). */
export type SamplerTuneMode = "auto" | "on" | "off";

/**
 * tuneSampler where `mode` asks for it and this vocabulary's rows can be split here; else null,
 * with a log line saying why where it was asked for.
 */
export async function tuneSamplerIf(
  gpu: Gpu,
  mode: SamplerTuneMode,
  o: SamplerTuneOptions,
): Promise<SamplerTuneResult | null> {
  if (mode === "off" || (mode === "auto" && gpu.adapterClass !== "gpu")) return null;
  const most = await maxRowChunks(gpu, o);
  if (most < 2) {
    o.log?.(
      `sampler: the lane kernel samples a ${o.vocab}-word row on this adapter, which is never split: nothing to tune`,
    );
    return null;
  }
  o.log?.(`timing the sampler's row split at vocabulary ${o.vocab}`);
  return await tuneSplits(gpu, o, most);
}

/** The picks-file fields of a tuning: the pick to use at its vocabulary, and its times. */
export function samplerEntry(
  r: SamplerTuneResult,
): Required<Pick<TunedPicksEntry, "samplerPicks" | "samplerTimes">> {
  const { vocab, rows, current, currentMs, best, bestMs } = r;
  return {
    samplerPicks: { [String(vocab)]: best },
    samplerTimes: [{ vocab, rows, current, currentMs, best, bestMs }],
  };
}
