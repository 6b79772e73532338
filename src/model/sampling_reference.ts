// Float64 CPU reference of the GPU sampler (shaders/sampling.wgsl): the same warpers in the same
// order, the same Philox draw and the same tie rules, written the obvious way (full sorts,
// BigInt multiplies). It is the oracle the GPU is tested against, in Deno and in the browser.
//
// Semantics shared with the GPU (see src/model/sampling.ts for the parameter meanings):
//   z = penalty(x) / T   over the full vocabulary (T = 1 for greedy rows)
//   top-k keeps every token whose z ≥ the k-th largest z   (ties at the threshold are all kept)
//   top-p keeps every token whose z ≥ τ_p, τ_p the largest value whose inclusive tail mass
//         (in the top-k renormalised distribution) reaches p   (ties at the threshold all kept)
//   the draw u ∈ [0, 1) picks the first kept token, in token-id order, whose cumulative
//   probability exceeds u.

import type { SamplingParams } from "./sampling.ts";

const M0 = 0xd2511f53n, M1 = 0xcd9e8d57n;
const W0 = 0x9e3779b9, W1 = 0xbb67ae85;
const MASK32 = 0xffffffffn;

/**
 * How closely a float32 sampler must match this reference (the sampler's tests, and the tuner's
 * check of each candidate): its draw may lie DRAW_TOL outside the token's CDF interval (float32
 * sums over a 152k-word row differ from float64 by ~1e-6 of the mass); a top-k/top-p cut within
 * CUT_MARGIN of flipping may fall on either side; log-probs within LOGP_ATOL + LOGP_RTOL·|ref|.
 */
export const DRAW_TOL = 2e-5, CUT_MARGIN = 2e-5, LOGP_ATOL = 1e-4, LOGP_RTOL = 1e-5;

/** Domain tag in the second Philox key word, so sampling never reuses another consumer's stream. */
export const SAMPLING_RNG_DOMAIN = 0x53414d50; // "SAMP"

/** Philox-4x32-10 (Salmon et al. 2011, Random123), one block: counter[4], key[2] → 4 words. */
export function philox4x32_10(
  counter: readonly number[],
  key: readonly number[],
): [number, number, number, number] {
  let [c0, c1, c2, c3] = counter.map((v) => v >>> 0);
  let [k0, k1] = key.map((v) => v >>> 0);
  for (let round = 0; round < 10; round++) {
    const p0 = M0 * BigInt(c0), p1 = M1 * BigInt(c2);
    const hi0 = Number(p0 >> 32n), lo0 = Number(p0 & MASK32);
    const hi1 = Number(p1 >> 32n), lo1 = Number(p1 & MASK32);
    [c0, c1, c2, c3] = [(hi1 ^ c1 ^ k0) >>> 0, lo1, (hi0 ^ c3 ^ k1) >>> 0, lo0];
    k0 = (k0 + W0) >>> 0;
    k1 = (k1 + W1) >>> 0;
  }
  return [c0, c1, c2, c3];
}

/**
 * The one uniform draw of (seed, sequence, step): 24 bits of Philox output scaled to [0, 1), so
 * the value is exact in float32 and the GPU and this reference see the same number.
 */
export function samplingUniform(seed: number, sequence: number, step: number): number {
  const [r0] = philox4x32_10([sequence, step, 0, 0], [seed, SAMPLING_RNG_DOMAIN]);
  return (r0 >>> 8) / 16777216;
}

/** HF RepetitionPenaltyLogitsProcessor: each distinct seen id once, x<0 → x·p, else x/p. */
export function applyRepetitionPenalty(
  logits: ArrayLike<number>,
  history: ArrayLike<number>,
  penalty: number,
): Float64Array {
  const out = Float64Array.from(logits);
  if (penalty === 1) return out;
  for (const id of new Set(Array.from(history))) {
    if (id < 0 || id >= out.length) continue;
    const x = logits[id];
    out[id] = x < 0 ? x * penalty : x / penalty;
  }
  return out;
}

/** Penalised, temperature-scaled scores z (temperature 0 = greedy scores at T = 1). */
export function scoresRef(
  logits: ArrayLike<number>,
  p: SamplingParams,
  history: ArrayLike<number> = [],
): Float64Array {
  // The GPU reads its parameters as float32: use the same values.
  const z = applyRepetitionPenalty(logits, history, Math.fround(p.repetitionPenalty ?? 1));
  const t = Math.fround(p.temperature ?? 1);
  if (t > 0) { for (let i = 0; i < z.length; i++) z[i] /= t; }
  return z;
}

function logSumExp(z: ArrayLike<number>, keep?: Uint8Array): number {
  let m = -Infinity;
  for (let i = 0; i < z.length; i++) if (!keep || keep[i]) m = Math.max(m, z[i]);
  if (m === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < z.length; i++) if (!keep || keep[i]) s += Math.exp(z[i] - m);
  return m + Math.log(s);
}

/** Ids sorted by score, highest first, ties by id (the order the thresholds are defined on). */
function byScoreDesc(z: ArrayLike<number>, ids: number[]): number[] {
  return ids.sort((a, b) => (z[b] - z[a]) || (a - b));
}

export interface TruncationRef {
  /** 1 where the token survives top-k and top-p. */
  keep: Uint8Array;
  /** Smallest relative distance of a top-k/top-p decision from flipping (∞ when none). */
  margin: number;
}

/** The support after top-k then top-p, with a margin telling how close the decisions were. */
export function truncationRef(z: ArrayLike<number>, p: SamplingParams): TruncationRef {
  const v = z.length;
  const keep = new Uint8Array(v).fill(1);
  let margin = Infinity;
  const k = p.topK ?? 0, topP = Math.fround(p.topP ?? 1);
  const order = byScoreDesc(z, Array.from({ length: v }, (_, i) => i));
  let kept = order;
  if (k > 0 && k < v) {
    const tau = z[order[k - 1]];
    kept = order.filter((i) => z[i] >= tau);
    const next = z[order[kept.length]];
    if (next !== undefined && next !== tau) {
      margin = Math.min(margin, (tau - next) / Math.max(1, Math.abs(tau)));
    }
  }
  if (topP < 1) {
    const m = z[kept[0]];
    const w = kept.map((i) => Math.exp(z[i] - m));
    const total = w.reduce((a, b) => a + b, 0);
    const target = topP * total;
    let cum = 0, cut = kept.length;
    for (let j = 0; j < kept.length; j++) {
      const before = cum;
      cum += w[j];
      if (cum >= target) {
        // Ties of the threshold value stay; the decision margin is the mass distance to the target.
        const tau = z[kept[j]];
        cut = j + 1;
        while (cut < kept.length && z[kept[cut]] === tau) cut++;
        margin = Math.min(
          margin,
          (cum - target) / total,
          j > 0 ? (target - before) / total : Infinity,
        );
        break;
      }
    }
    kept = kept.slice(0, cut);
  }
  if (kept.length < v) {
    keep.fill(0);
    for (const i of kept) keep[i] = 1;
  }
  return { keep, margin };
}

export interface SampleRef {
  id: number;
  /** log softmax(z)[id] over the full vocabulary: the policy log-prob at the sampling temperature. */
  logprob: number;
  /** log-prob under the truncated, renormalised distribution (0 for greedy). */
  truncatedLogprob: number;
  /** The uniform draw used (NaN for greedy). */
  u: number;
  /** Number of tokens in the support. */
  kept: number;
  /** Distance of u from the nearest boundary of the drawn token's CDF interval (probability). */
  drawMargin: number;
  /** How close a top-k/top-p cut was to flipping (relative value or mass; ∞ when no cut). */
  cutMargin: number;
  /** The scores z (penalised, temperature-scaled). */
  scores: Float64Array;
  /** The truncated, renormalised distribution the draw was made from (one-hot for greedy). */
  probs: Float64Array;
}

function argmaxLowestId(z: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < z.length; i++) if (z[i] > z[best]) best = i;
  return best;
}

/** Samples one row exactly as the GPU does; `u` overrides the Philox draw (for tests). */
export function sampleRef(
  logits: ArrayLike<number>,
  p: SamplingParams,
  history: ArrayLike<number> = [],
  u = samplingUniform(p.seed, p.sequence, p.step),
): SampleRef {
  const z = scoresRef(logits, p, history);
  const lse = logSumExp(z);
  if ((p.temperature ?? 1) === 0) {
    const id = argmaxLowestId(z);
    let second = -Infinity;
    for (let i = 0; i < z.length; i++) {
      if (i !== id && z[i] < z[id]) second = Math.max(second, z[i]);
    }
    // Exact ties are decided by the lowest-id rule; a near tie could flip on float32 rounding.
    const drawMargin = (z[id] - second) / Math.max(1, Math.abs(z[id]));
    const probs = new Float64Array(z.length);
    probs[id] = 1;
    return {
      id,
      logprob: z[id] - lse,
      truncatedLogprob: 0,
      u: NaN,
      kept: 1,
      drawMargin,
      cutMargin: Infinity,
      scores: z,
      probs,
    };
  }
  const { keep, margin: cutMargin } = truncationRef(z, p);
  const lseKept = logSumExp(z, keep);
  const probs = Float64Array.from(z, (v, i) => keep[i] ? Math.exp(v - lseKept) : 0);
  let cum = 0, id = -1, drawMargin = Infinity;
  for (let i = 0; i < probs.length; i++) {
    if (!probs[i]) continue;
    const before = cum;
    cum += probs[i];
    if (id < 0 && cum > u) {
      id = i;
      drawMargin = Math.min(u - before, cum - u);
    }
  }
  if (id < 0) id = probs.findLastIndex((q) => q > 0);
  const kept = keep.reduce((a, b) => a + b, 0);
  return {
    id,
    logprob: z[id] - lse,
    truncatedLogprob: z[id] - lseKept,
    u,
    kept,
    drawMargin,
    cutMargin,
    scores: z,
    probs,
  };
}

/** How far the draw u lies outside token `id`'s interval of the CDF `probs` (0 inside). */
export function cdfIntervalDistance(probs: ArrayLike<number>, id: number, u: number): number {
  let lo = 0;
  for (let i = 0; i < id; i++) lo += probs[i];
  const hi = lo + probs[id];
  return u < lo ? lo - u : u >= hi ? u - hi : 0;
}

/** The truncated distribution itself (0 outside the support), for frequency tests. */
export function truncatedProbsRef(
  logits: ArrayLike<number>,
  p: SamplingParams,
  history: ArrayLike<number> = [],
): Float64Array {
  return sampleRef(logits, p, history, 0).probs;
}
