// PPO's per-token advantages by generalized advantage estimation (Schulman et al. 2016) as pure
// functions: one agent's turns in one episode form a chain of generated tokens; each turn's reward
// sits on its last generated token, and the last token of a turn bootstraps from the value of the
// first token of the agent's next turn (so credit flows back across turns); the chain's end is
// terminal (value 0: an episode cut by rollout.maxTurns is treated as ended). Then advantages are
// whitened over the batch, and the critic's fit is summarised by the explained variance.
//
//   δ_t = r_t + γ·V_{t+1} − V_t,   A_t = δ_t + γλ·A_{t+1},   R_t = A_t + V_t (the value target)
//
// Dims: T tokens of a chain (all its turns' generated tokens, in order).

/** One turn of a chain: the critic's value before each generated token, and the turn's reward. */
export interface GaeTurn {
  readonly values: readonly number[];
  readonly reward: number;
}

export interface GaeOptions {
  /** Discount per token, in [0, 1]. */
  readonly gamma: number;
  /** GAE λ in [0, 1]: 0 is the one-step TD error, 1 the Monte-Carlo return minus V. */
  readonly lambda: number;
}

export interface GaeResult {
  /** Per turn, per token. */
  readonly advantages: number[][];
  readonly returns: number[][];
}

/** Bad input to the GAE functions; the message says which. */
export class GaeInputError extends Error {
  override name = "GaeInputError";
}

function checkOptions(o: GaeOptions) {
  for (const [k, x] of [["gamma", o.gamma], ["lambda", o.lambda]] as const) {
    if (!(x >= 0 && x <= 1)) throw new GaeInputError(`${k} ${x} must lie in [0, 1]`);
  }
}

/**
 * GAE over one chain of turns. A turn without generated tokens (an empty completion) has no token
 * to hold its reward: the reward goes to the last token of the turn before it (dropped when none).
 */
export function gaeChain(turns: readonly GaeTurn[], o: GaeOptions): GaeResult {
  checkOptions(o);
  const values: number[] = [], rewards: number[] = [];
  turns.forEach((t, i) => {
    if (!Number.isFinite(t.reward)) {
      throw new GaeInputError(`turn ${i}: reward ${t.reward} must be finite`);
    }
    t.values.forEach((v, j) => {
      if (!Number.isFinite(v)) {
        throw new GaeInputError(`turn ${i}, token ${j}: value ${v} must be finite`);
      }
    });
    values.push(...t.values);
    rewards.push(...t.values.map(() => 0));
    if (rewards.length) rewards[rewards.length - 1] += t.reward;
  });
  const T = values.length;
  const adv = new Array<number>(T).fill(0);
  let next = 0, nextValue = 0;
  for (let t = T - 1; t >= 0; t--) {
    const delta = rewards[t] + o.gamma * nextValue - values[t];
    next = delta + o.gamma * o.lambda * next;
    adv[t] = next;
    nextValue = values[t];
  }
  const advantages: number[][] = [], returns: number[][] = [];
  let k = 0;
  for (const t of turns) {
    advantages.push(adv.slice(k, k + t.values.length));
    returns.push(adv.slice(k, k + t.values.length).map((a, j) => a + t.values[j]));
    k += t.values.length;
  }
  return { advantages, returns };
}

/** (x − mean) / (std + 1e-8) over every token of every sequence (TRL's masked_whiten, unbiased std). */
export function whiten(xs: readonly (readonly number[])[]): number[][] {
  const all = xs.flat();
  if (all.length < 2) return xs.map((x) => x.map(() => 0));
  const mean = all.reduce((a, b) => a + b, 0) / all.length;
  const std = Math.sqrt(all.reduce((a, b) => a + (b - mean) ** 2, 0) / (all.length - 1));
  return xs.map((x) => x.map((v) => (v - mean) / (std + 1e-8)));
}

/** 1 − Var(R − V) / Var(R): 1 is a perfect critic, 0 no better than the mean, < 0 worse (NaN if Var(R) = 0). */
export function explainedVariance(returns: readonly number[], values: readonly number[]): number {
  if (returns.length !== values.length) {
    throw new GaeInputError(`${returns.length} returns but ${values.length} values`);
  }
  const variance = (xs: readonly number[]) => {
    const m = xs.reduce((a, b) => a + b, 0) / xs.length;
    return xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length;
  };
  const vr = variance(returns);
  return vr > 0 ? 1 - variance(returns.map((r, i) => r - values[i])) / vr : NaN;
}

/**
 * Chains of an episode's turns per agent: items grouped by `key` (env, trajectory and agent), each
 * chain in the items' order (their order in time). Returns item indices per chain.
 */
export function chainsOf<T>(items: readonly T[], key: (x: T) => string): number[][] {
  const by = new Map<string, number[]>();
  items.forEach((x, i) => {
    const k = key(x);
    (by.get(k) ?? by.set(k, []).get(k)!).push(i);
  });
  return [...by.values()];
}
