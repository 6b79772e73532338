// Float64 CPU references of the training kernels: AdamW with clipping, masked cross-entropy and the
// GRPO policy loss (verl's compute_policy_loss_vanilla + agg_loss + k3 KL). Slow and obvious:
// the oracle the WGSL kernels are tested against. The losses here work on a padded
// [sequences, tokens] matrix exactly as verl does, independently of the per-row coefficient table
// the GPU path uses, so the two aggregation paths check each other.

import type { AdamWHyper } from "./adamw.ts";

type Num = ArrayLike<number>;

// ---- AdamW ------------------------------------------------------------------------------------

export interface AdamWRefState {
  p: Float64Array;
  m: Float64Array;
  v: Float64Array;
}

/**
 * One AdamW step in place (torch.optim.AdamW after clip_grad_norm_), over all elements at once:
 * the norm is global. `decay[i]` multiplies weight decay per element (0 excludes it).
 */
export function adamwRef(
  s: AdamWRefState,
  grads: Num,
  decay: Num,
  args: { lr: number; step: number; gradScale?: number; hyper: AdamWHyper },
): { gradNorm: number; clipCoef: number } {
  const h = args.hyper, scale = args.gradScale ?? 1;
  let sq = 0;
  for (let i = 0; i < grads.length; i++) sq += (grads[i] * scale) ** 2;
  const gradNorm = Math.sqrt(sq);
  const clipCoef = h.maxGradNorm > 0 ? Math.min(1, h.maxGradNorm / (gradNorm + 1e-6)) : 1;
  const bc1 = 1 - h.beta1 ** args.step, bc2 = 1 - h.beta2 ** args.step;
  for (let i = 0; i < grads.length; i++) {
    const g = grads[i] * scale * clipCoef;
    s.m[i] = h.beta1 * s.m[i] + (1 - h.beta1) * g;
    s.v[i] = h.beta2 * s.v[i] + (1 - h.beta2) * g * g;
    s.p[i] *= 1 - args.lr * h.weightDecay * decay[i];
    s.p[i] -= (args.lr / bc1) * s.m[i] / (Math.sqrt(s.v[i]) / Math.sqrt(bc2) + h.eps);
  }
  return { gradNorm, clipCoef };
}

// ---- loss heads -------------------------------------------------------------------------------

/** log-softmax facts of one row of logits, in float64. */
export interface RowSoftmax {
  lse: number;
  probs: Float64Array;
  entropy: number;
}

export function rowSoftmaxRef(logits: Num, row: number, V: number): RowSoftmax {
  let m = -Infinity;
  for (let j = 0; j < V; j++) m = Math.max(m, logits[row * V + j]);
  let s = 0;
  for (let j = 0; j < V; j++) s += Math.exp(logits[row * V + j] - m);
  const lse = m + Math.log(s);
  const probs = new Float64Array(V);
  let entropy = 0;
  for (let j = 0; j < V; j++) {
    const lp = logits[row * V + j] - lse;
    probs[j] = Math.exp(lp);
    if (probs[j] > 0) entropy -= probs[j] * lp;
  }
  return { lse, probs, entropy };
}

/** Sequences in order of first appearance, each a list of row indices: verl's padded matrix. */
function padded(seq: Num): number[][] {
  const order = new Map<number, number[]>();
  for (let i = 0; i < seq.length; i++) {
    if (!order.has(seq[i])) order.set(seq[i], []);
    order.get(seq[i])!.push(i);
  }
  return [...order.values()];
}

/** verl agg_loss over the padded [sequences, T] matrix of per-row values `l`. */
export function aggLossRef(mode: string, l: Num, mask: Num, seq: Num, normLength?: number): number {
  const seqs = padded(seq);
  const sum = (rows: number[], f: (i: number) => number) => rows.reduce((a, i) => a + f(i), 0);
  const all = seqs.flat();
  const T = Math.max(0, ...seqs.map((s) => s.length));
  const seqSums = seqs.map((rows) => sum(rows, (i) => l[i] * mask[i]));
  const seqMasks = seqs.map((rows) => sum(rows, (i) => mask[i]));
  switch (mode) {
    case "token-mean": {
      const m = sum(all, (i) => mask[i]);
      return m > 0 ? sum(all, (i) => l[i] * mask[i]) / m : 0;
    }
    case "seq-mean-token-sum":
      return seqSums.reduce((a, b) => a + b, 0) / seqs.length;
    case "seq-mean-token-mean": {
      const live = seqs.map((_, k) => k).filter((k) => seqMasks[k] > 0);
      return live.length ? live.reduce((a, k) => a + seqSums[k] / seqMasks[k], 0) / live.length : 0;
    }
    case "seq-mean-token-sum-norm":
      return seqSums.reduce((a, b) => a + b, 0) / (normLength ?? T);
  }
  throw new Error(`aggLossRef: unknown mode ${mode}`);
}

/** ∂L/∂ℓ_t of a linear aggregation: L evaluated on the unit vector of row t. */
function aggCoefficients(mode: string, mask: Num, seq: Num, normLength?: number): Float64Array {
  const unit = new Float64Array(mask.length);
  return Float64Array.from({ length: mask.length }, (_, t) => {
    unit.fill(0);
    unit[t] = 1;
    return aggLossRef(mode, unit, mask, seq, normLength);
  });
}

export interface PolicyRefConfig {
  clipLow: number;
  clipHigh: number;
  dualClip: number | null;
  klCoef: number;
  aggregation: string;
  normLength?: number;
  /** Softmax temperature T (default 1): the loss is of logits/T; the gradient is w.r.t. the logits. */
  temperature?: number;
}

export interface PolicyRefBatch {
  targets: Num;
  seq: Num;
  mask: Num;
  advantages: Num;
  oldLogp: Num;
  refLogp?: Num;
}

/** One token's surrogate, k3 and their derivatives w.r.t. logp (verl's formulas in float64). */
export function policyTokenRef(
  logp: number,
  old: number,
  adv: number,
  ref: number | undefined,
  c: PolicyRefConfig,
) {
  const raw = logp - old;
  const lr = Math.min(20, Math.max(-20, raw));
  const ratio = Math.exp(lr);
  const dratio = raw > -20 && raw < 20 ? ratio : 0;
  const l1 = -adv * ratio;
  const l2 = -adv * Math.min(1 + c.clipHigh, Math.max(1 - c.clipLow, ratio));
  const clip1 = Math.max(l1, l2);
  let pg = clip1, dpg = l2 > l1 ? 0 : -adv * dratio, lower = 0;
  const l3 = -adv * (c.dualClip ?? Infinity);
  if (adv < 0 && clip1 > l3) [pg, dpg, lower] = [l3, 0, 1];
  let k3 = 0, dk = 0;
  if (ref !== undefined) {
    const kraw = ref - logp, kl = Math.min(20, Math.max(-20, kraw));
    const kd = Math.exp(kl) - kl - 1;
    k3 = Math.min(10, Math.max(-10, kd));
    dk = kraw > -20 && kraw < 20 && kd < 10 ? 1 - Math.exp(kl) : 0;
  }
  return { pg, k3, dl: dpg + c.klCoef * dk, clipped: l2 > l1 ? 1 : 0, lower, negLogRatio: -lr };
}

export interface PolicyRefResult {
  loss: number;
  pgLoss: number;
  klLoss: number;
  clipFrac: number;
  clipFracLower: number;
  approxKl: number;
  entropy: number;
  logp: Float64Array;
  /** dL/dlogits [rows, V] */
  grad: Float64Array;
}

/**
 * The GRPO policy loss of logits [rows, V], its metrics and (unless `withGrad` is false, as in
 * finite-difference loops) its analytic gradient.
 */
export function policyLossRef(
  logits: Num,
  V: number,
  b: PolicyRefBatch,
  c: PolicyRefConfig,
  withGrad = true,
): PolicyRefResult {
  const T = c.temperature ?? 1;
  if (T !== 1) {
    // L(z) = L₁(z/T), so dL/dz = (dL₁/dz')/T at z' = z/T.
    const r = policyLossRef(
      Float64Array.from(logits, (x) => x / T),
      V,
      b,
      { ...c, temperature: 1 },
      withGrad,
    );
    return { ...r, grad: r.grad.map((g) => g / T) };
  }
  const n = b.targets.length;
  const sm = Array.from({ length: n }, (_, i) => rowSoftmaxRef(logits, i, V));
  const logp = Float64Array.from(sm, (s, i) => logits[i * V + b.targets[i]] - s.lse);
  const terms = Array.from(
    logp,
    (lp, i) => policyTokenRef(lp, b.oldLogp[i], b.advantages[i], b.refLogp?.[i], c),
  );
  const agg = (f: (i: number) => number) =>
    aggLossRef(
      c.aggregation,
      Array.from({ length: n }, (_, i) => f(i)),
      b.mask,
      b.seq,
      c.normLength,
    );
  const tokenMean = (f: (i: number) => number) =>
    aggLossRef("token-mean", Array.from({ length: n }, (_, i) => f(i)), b.mask, b.seq);
  const pgLoss = agg((i) => terms[i].pg), klLoss = b.refLogp ? agg((i) => terms[i].k3) : 0;
  const grad = new Float64Array(withGrad ? n * V : 0);
  const coef = withGrad
    ? aggCoefficients(c.aggregation, b.mask, b.seq, c.normLength)
    : new Float64Array(0);
  for (let i = 0; i < coef.length; i++) {
    const scale = coef[i] * terms[i].dl;
    for (let j = 0; j < V; j++) {
      grad[i * V + j] = scale * ((j === b.targets[i] ? 1 : 0) - sm[i].probs[j]);
    }
  }
  return {
    loss: pgLoss + c.klCoef * klLoss,
    pgLoss,
    klLoss,
    clipFrac: tokenMean((i) => terms[i].clipped),
    clipFracLower: tokenMean((i) => terms[i].lower),
    approxKl: tokenMean((i) => terms[i].negLogRatio),
    entropy: tokenMean((i) => sm[i].entropy),
    logp,
    grad,
  };
}

/** Masked (weighted) cross-entropy of logits [rows, V]: loss, mean entropy and the gradient. */
export function crossEntropyRef(
  logits: Num,
  V: number,
  b: { targets: Num; weights: Num; normalizer?: number },
): { loss: number; entropy: number; meanNll: number; grad: Float64Array } {
  const n = b.targets.length;
  let wsum = 0, loss = 0, ent = 0, nll = 0, tokens = 0;
  for (let i = 0; i < n; i++) wsum += b.weights[i];
  const norm = b.normalizer ?? wsum;
  const grad = new Float64Array(n * V);
  for (let i = 0; i < n; i++) {
    const s = rowSoftmaxRef(logits, i, V);
    const lp = logits[i * V + b.targets[i]] - s.lse;
    const c = norm > 0 ? b.weights[i] / norm : 0;
    loss -= c * lp;
    if (b.weights[i] > 0) [tokens, ent, nll] = [tokens + 1, ent + s.entropy, nll - lp];
    for (let j = 0; j < V; j++) grad[i * V + j] = c * (s.probs[j] - (j === b.targets[i] ? 1 : 0));
  }
  return { loss, entropy: tokens ? ent / tokens : 0, meanNll: tokens ? nll / tokens : 0, grad };
}
