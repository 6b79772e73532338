// PPO's critic side of an RL step (update.advantage "gae"): the value head scores every generated
// token of the step's samples (one forward pass per policy), GAE turns each agent's chained turns
// into per-token advantages and value targets (gae.ts), the advantages are whitened over the
// policy's tokens, and each sample becomes a training sequence carrying them, its old values and
// its returns for the clipped value loss. What it keeps of PPO (TRL, verl): per-token GAE, the
// reward at the end of each action, advantage whitening, the value clip; what it drops: the
// per-token KL penalty in the reward (update.klCoef puts the k3 KL into the loss instead).

import type { ModelTrainer, TrainSequence } from "../train/trainer.ts";
import { chainsOf, explainedVariance, gaeChain, type GaeOptions, whiten } from "./gae.ts";

/** One sample of a policy, in time order within its chain. */
export interface CriticItem {
  /** Prompt + completion with weight 1 on the generated tokens; null when nothing can be trained (empty or too long). */
  readonly seq: TrainSequence | null;
  /** Which chain it belongs to: one agent's turns in one trajectory. */
  readonly chain: string;
  /** The turn's reward, α·team + local, placed on its last generated token. */
  readonly reward: number;
}

export interface CriticStats {
  /** 1 − Var(R − V_old) / Var(R) over the step's generated tokens; null when the returns are constant. */
  readonly explainedVariance: number | null;
  readonly valueMean: number;
  readonly returnMean: number;
  /** Generated tokens scored. */
  readonly tokens: number;
}

/** Positions t of a sequence whose next token was generated (weight > 0). */
const generated = (s: TrainSequence) => s.weights.flatMap((w, t) => (w > 0 ? [t] : []));

/**
 * The training sequences of a policy's samples with per-token advantages (whitened when asked),
 * old values and returns; items without a sequence only pass their reward on (gaeChain).
 */
export async function gaeSequences(
  trainer: ModelTrainer,
  items: readonly CriticItem[],
  o: GaeOptions & { readonly whiten: boolean },
): Promise<{ seqs: TrainSequence[]; stats: CriticStats }> {
  const withSeq = items.flatMap((x, i) => (x.seq ? [i] : []));
  const scored = withSeq.length ? await trainer.values(withSeq.map((i) => items[i].seq!)) : [];
  const values: number[][] = items.map(() => []);
  withSeq.forEach((i, k) => (values[i] = scored[k]));
  const positions = items.map((x) => (x.seq ? generated(x.seq) : []));
  const adv: number[][] = items.map(() => []), ret: number[][] = items.map(() => []);
  for (const chain of chainsOf(items, (x) => x.chain)) {
    const turns = chain.map((i) => ({
      values: positions[i].map((t) => values[i][t]),
      reward: items[i].reward,
    }));
    const r = gaeChain(turns, o);
    chain.forEach((i, k) => [adv[i] = r.advantages[k], ret[i] = r.returns[k]]);
  }
  const advantages = o.whiten ? whiten(withSeq.map((i) => adv[i])) : withSeq.map((i) => adv[i]);
  const seqs = withSeq.map((i, k) => {
    const s = items[i].seq!, n = s.tokens.length;
    const tokenAdvantages = new Array<number>(n - 1).fill(0),
      returns = new Array<number>(n - 1).fill(0);
    positions[i].forEach((t, j) => [tokenAdvantages[t] = advantages[k][j], returns[t] = ret[i][j]]);
    return { ...s, advantage: undefined, tokenAdvantages, oldValues: values[i], returns };
  });
  const allR = withSeq.flatMap((i) => ret[i]),
    allV = withSeq.flatMap((i) => positions[i].map((t) => values[i][t]));
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const ev = allR.length ? explainedVariance(allR, allV) : NaN;
  return {
    seqs,
    stats: {
      explainedVariance: Number.isNaN(ev) ? null : ev,
      valueMean: mean(allV),
      returnMean: mean(allR),
      tokens: allR.length,
    },
  };
}
