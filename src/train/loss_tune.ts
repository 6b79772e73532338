// Tunes the loss heads' lanes a row (shaders/losses.wgsl, src/train/losses.ts) at a model's
// vocabulary on this device. Each row of logits is one workgroup: a lane's share of a 151,936-word
// row is a chain of V / WG dependent steps, which more lanes shorten and a CPU adapter's single
// core only lengthens with reduction work. The built-in LOSS_WG (256 on GPUs, 64 on CPU adapters)
// is an estimate from one H100 profile. This times the GRPO policy loss (the RL update's head)
// at 32, 64, 128 and 256 lanes at the trainer's logit rows and keeps the fastest per vocabulary
// (`npx deno task tune --loss`).
//
// Each candidate's loss and dL/dlogits are first checked against the float64 reference
// (src/train/reference.ts); a wrong one is refused and never picked.

import type { Gpu } from "../gpu/mod.ts";
import { msPerEncode, screenThenTime } from "../gpu/timing.ts";
import { seededValues, toleranceRatio } from "../ops/reference.ts";
import type { TunedLoss } from "../ops/tuned_picks.ts";
import { TrainError } from "./errors.ts";
import { LOSS_WG, type LossEncodeArgs, PolicyLoss } from "./losses.ts";
import { policyLossRef, rowSoftmaxRef } from "./reference.ts";

/** The tuner cannot run here (every candidate wrong, bad options); the message says why. */
export class LossTuneError extends TrainError {}

/**
 * Rows the tuner times at most: a row is one workgroup, so the lanes that run one fastest run 64
 * fastest too, and the float64 reference of a 151,936-word row costs a few ms of JS.
 */
export const LOSS_TUNE_ROWS = 64;

/** The part of a loss head the tuner drives. */
export type LossHeadLike = Pick<PolicyLoss, "encode" | "pack" | "readMetrics" | "destroy">;

export interface LossTuneOptions {
  vocab: number;
  /** Rows of logits a call (default 64; the trainer's logit rows). */
  rows?: number;
  /** Lanes a row to try (default 32, 64, 128, 256). */
  candidates?: readonly number[];
  /** Wall time of a final timing (ms); a screening takes a fifth. */
  minMs?: number;
  /** Candidates kept from screening for the final timing (the built-in too). */
  keep?: number;
  log?: (line: string) => void;
  /** What computes the loss (default: a PolicyLoss at that size). Tests plant a wrong one here. */
  headFor?: (gpu: Gpu, workgroupSize: number, rows: number, vocab: number) => Promise<LossHeadLike>;
}

export interface LossTuneResult extends TunedLoss {
  times: { workgroupSize: number; ms: number; final: boolean }[];
  refused: { workgroupSize: number; why: string }[];
  seconds: number;
}

/** A policy-loss batch over `rows` rows of `logits`: 4 sequences, ratios on every clip branch. */
function batchOf(logits: Float32Array, rows: number, V: number) {
  const targets = Array.from({ length: rows }, (_, i) => (i * 7919 + 13) % V);
  const seq = Array.from({ length: rows }, (_, i) => Math.floor((4 * i) / rows));
  const mask = Array.from({ length: rows }, (_, i) => (i % 9 === 4 ? 0 : 1));
  const advantages = seq.map((s) => [1.2, -0.7, 0.5, -1.5][s]);
  const ratios = [0.5, 1.05, 1.5, 5];
  const oldLogp = Float32Array.from(targets, (t, i) => {
    const lp = logits[i * V + t] - rowSoftmaxRef(logits, i, V).lse;
    return lp - Math.log(ratios[i % 4]);
  });
  return { targets, seq, mask, advantages, oldLogp };
}

/**
 * Times the policy loss at each lanes-a-row candidate at this vocabulary and returns the fastest,
 * beside the built-in. Seconds on a GPU; run once per device and vocabulary, not per run.
 */
export async function tuneLossHead(gpu: Gpu, o: LossTuneOptions): Promise<LossTuneResult> {
  const t0 = performance.now();
  const V = o.vocab, rows = o.rows ?? 64;
  const minMs = o.minMs ?? 60, keep = o.keep ?? 3;
  const log = o.log ?? (() => {});
  if (!(Number.isInteger(V) && V > 0) || !(Number.isInteger(rows) && rows > 0)) {
    throw new LossTuneError(`vocab ${V} and rows ${rows} must be positive integers`);
  }
  const builtIn = LOSS_WG[gpu.adapterClass];
  const candidates = [...new Set([...(o.candidates ?? [32, 64, 128, 256]), builtIn])].sort((
    a,
    b,
  ) => a - b);
  const make = o.headFor ??
    ((g: Gpu, wg: number, n: number, v: number) =>
      PolicyLoss.create(g, { maxRows: n, vocabSize: v, workgroupSize: wg }));
  const logits = seededValues(rows * V, 41, -4, 4);
  const batch = batchOf(logits, rows, V);
  const want = policyLossRef(logits, V, batch, {
    clipLow: 0.2,
    clipHigh: 0.2,
    dualClip: 3,
    klCoef: 0,
    aggregation: "token-mean",
  });
  let maxGrad = 0;
  for (const g of want.grad) maxGrad = Math.max(maxGrad, Math.abs(g));
  const z = gpu.upload(logits), dz = gpu.zeros(rows * V);
  const heads = new Map<number, { head: LossHeadLike; args: LossEncodeArgs }>();
  const refused: LossTuneResult["refused"] = [];
  try {
    for (const wg of candidates) {
      const head = await make(gpu, wg, rows, V);
      const args = { rows, rowData: gpu.upload(head.pack(batch)), logits: z, dlogits: dz };
      // Cleared first: a head that writes no gradient must not pass on the last one's.
      const rec = gpu.recorder("loss tune check").clear(dz);
      head.encode(rec, args);
      rec.submit();
      const loss = (await head.readMetrics()).loss;
      const grad = await gpu.readFloat32(dz, rows * V);
      const rg = toleranceRatio(grad, want.grad, 1e-5 * maxGrad, 1e-4);
      const rl = toleranceRatio([loss], [want.loss], 1e-5, 1e-4);
      if (rg <= 1 && rl <= 1) {
        heads.set(wg, { head, args });
        continue;
      }
      const why = `loss ${rl.toFixed(1)}×, dL/dlogits ${rg.toFixed(1)}× the tolerance off`;
      refused.push({ workgroupSize: wg, why });
      log(`loss head at ${wg} lanes a row: refused, wrong against float64: ${why}`);
      head.destroy();
      (args.rowData as GPUBuffer).destroy();
    }
    if (!heads.size) {
      throw new LossTuneError(
        `every lanes-a-row candidate was wrong against the float64 reference at vocabulary ${V}: ${
          refused.map((r) => `${r.workgroupSize}: ${r.why}`).join("; ")
        }`,
      );
    }
    const score = async (wg: number, ms: number, rounds: number) => {
      const { head, args } = heads.get(wg)!;
      return await msPerEncode(gpu, "loss tune", (rec) => head.encode(rec, args), ms, rounds);
    };
    const { best, bestMs, times } = await screenThenTime(
      [...heads.keys()],
      heads.has(builtIn) ? builtIn : undefined,
      score,
      { minMs, keep },
    );
    const currentMs = times.get(builtIn)?.ms ?? NaN;
    log(
      `loss head at vocabulary ${V}: ${best} lanes a row ${
        bestMs.toFixed(3)
      } ms a call against the built-in ${builtIn}'s ${
        currentMs.toFixed(3)
      } ms (${rows} rows, ${heads.size} candidates)`,
    );
    return {
      vocab: V,
      rows,
      current: builtIn,
      currentMs,
      best,
      bestMs,
      times: [...times].map(([workgroupSize, t]) => ({ workgroupSize, ...t })).sort((a, b) =>
        a.workgroupSize - b.workgroupSize
      ),
      refused,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    for (const { head, args } of heads.values()) {
      head.destroy();
      (args.rowData as GPUBuffer).destroy();
    }
    z.destroy();
    dz.destroy();
  }
}

/** When to tune the loss heads: "auto" on GPU-class adapters. */
export type LossTuneMode = "auto" | "on" | "off";

/** tuneLossHead where `mode` asks for it; else null. */
export async function tuneLossHeadIf(
  gpu: Gpu,
  mode: LossTuneMode,
  o: LossTuneOptions,
): Promise<LossTuneResult | null> {
  if (mode === "off" || (mode === "auto" && gpu.adapterClass !== "gpu")) return null;
  o.log?.(`timing the loss heads' lanes a row at vocabulary ${o.vocab}`);
  return await tuneLossHead(gpu, o);
}

/** The picks-file fields of a tuning: the lanes a row at its vocabulary, and its times. */
export function lossEntry(
  r: LossTuneResult,
): { lossPicks: Record<string, number>; lossTimes: TunedLoss[] } {
  const { vocab, rows, current, currentMs, best, bestMs } = r;
  return {
    lossPicks: { [String(vocab)]: best },
    lossTimes: [{ vocab, rows, current, currentMs, best, bestMs }],
  };
}
