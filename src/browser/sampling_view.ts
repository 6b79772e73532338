// The sampling explorer's math: from one row of real logits to the distribution the GPU sampler
// draws from (temperature, then top-k, then top-p: the same order and tie rules as
// shaders/sampling.wgsl, through its float64 reference), with what each cut removes. Host-neutral.

import { scoresRef, truncationRef } from "../model/sampling_reference.ts";

export interface TokenProb {
  id: number;
  /** Softmax of logits / T over the whole vocabulary. */
  p: number;
  /** Probability after the cuts, renormalised (0 for a cut token). */
  pKept: number;
  /** Why the token is out: "greedy" (T = 0 keeps the argmax), "top-k", "top-p"; null when kept. */
  cut: "greedy" | "top-k" | "top-p" | null;
}

export interface SamplingView {
  /** Tokens sorted by probability, highest first (all of the vocabulary). */
  tokens: TokenProb[];
  kept: number;
  /** Probability mass (at temperature T) that the cuts remove. */
  cutMass: number;
  /** Entropy in nats of the distribution sampled from (after the cuts). */
  entropy: number;
  greedy: boolean;
}

function softmax(z: ArrayLike<number>, keep?: Uint8Array): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < z.length; i++) if (!keep || keep[i]) m = Math.max(m, z[i]);
  const p = new Float64Array(z.length);
  let s = 0;
  for (let i = 0; i < z.length; i++) {
    if (keep && !keep[i]) continue;
    p[i] = Math.exp(z[i] - m);
    s += p[i];
  }
  for (let i = 0; i < z.length; i++) p[i] /= s;
  return p;
}

/** The distribution of one logits row under (temperature, topK, topP); temperature 0 is greedy. */
export function samplingView(
  logits: ArrayLike<number>,
  o: { temperature: number; topK: number; topP: number },
): SamplingView {
  const greedy = o.temperature <= 0;
  const z = scoresRef(logits, {
    temperature: greedy ? 1 : o.temperature,
    seed: 0,
    sequence: 0,
    step: 0,
  });
  const full = softmax(z);
  let keepK: Uint8Array, keepAll: Uint8Array;
  if (greedy) {
    let best = 0;
    for (let i = 1; i < z.length; i++) if (z[i] > z[best]) best = i;
    keepK = new Uint8Array(z.length).fill(1);
    keepAll = new Uint8Array(z.length);
    keepAll[best] = 1;
  } else {
    keepK = truncationRef(z, { topK: o.topK, topP: 1, seed: 0, sequence: 0, step: 0 }).keep;
    keepAll = truncationRef(z, { topK: o.topK, topP: o.topP, seed: 0, sequence: 0, step: 0 }).keep;
  }
  const kept = softmax(z, keepAll);
  let cutMass = 0, entropy = 0, nKept = 0;
  const tokens: TokenProb[] = [];
  for (let i = 0; i < z.length; i++) {
    const cut = keepAll[i] ? null : greedy ? "greedy" : !keepK[i] ? "top-k" : "top-p";
    if (cut) cutMass += full[i];
    else {
      nKept++;
      if (kept[i] > 0) entropy -= kept[i] * Math.log(kept[i]);
    }
    tokens.push({ id: i, p: full[i], pKept: keepAll[i] ? kept[i] : 0, cut });
  }
  tokens.sort((a, b) => b.p - a.p || a.id - b.id);
  return { tokens, kept: nKept, cutMass, entropy, greedy };
}
