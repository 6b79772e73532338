// The CPU half of the loss heads: turns a batch of tokens (target ids, masks, sequence ids,
// advantages, old and reference log-probs) into the packed per-row records the WGSL kernels read,
// with each token's aggregation coefficient computed here from a table of functions (TRL style).
//
// Aggregation modes (verl core_algos.agg_loss; L = Σ_t c_t·ℓ_t over tokens t with mask m_t):
//   token-mean              c_t = m_t / Σ_u m_u                       (DAPO; the paper's setting)
//   seq-mean-token-mean     c_t = m_t / (n_s · S⁺)   n_s = Σ mask of t's sequence s, S⁺ = sequences
//                           with n_s > 0 (verl's torch.mean would give NaN for an empty sequence)
//   seq-mean-token-sum      c_t = m_t / S            S = all sequences present in the batch
//   seq-mean-token-sum-norm c_t = m_t / N            N = normLength, verl's loss_mask.shape[-1]
//                           (Dr. GRPO); no division by S despite the name. Default N: the longest
//                           sequence's row count; pass a constant (the max response length) so
//                           the scale does not change from batch to batch.
// Coefficients are computed over the whole mini-batch; slice the packed rows per micro-batch and
// sum the gradients (no extra 1/accum: each micro-batch already carries its share of L).

import { LossInputError, TrainConfigError } from "./errors.ts";

export const LOSS_AGG_MODES = [
  "token-mean",
  "seq-mean-token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-sum-norm",
] as const;
export type LossAggMode = typeof LOSS_AGG_MODES[number];

/** f32 slots per packed row: target (u32 bits), coef, adv, old_logp, ref_logp, mask, 0, 0. */
export const ROW_FLOATS = 8;

type Num = ArrayLike<number>;

/** The sequence structure aggregation needs. */
export interface AggInput {
  /** Sequence id of every row (any integers; equal ids = same response). */
  readonly seq: Num;
  /** Loss mask (or weight) per row, ≥ 0. */
  readonly mask: Num;
  /** seq-mean-token-sum-norm's divisor (default: the longest sequence's row count). */
  readonly normLength?: number;
}

interface SeqCounts {
  /** Σ mask per sequence id. */
  masked: Map<number, number>;
  /** Rows per sequence id. */
  rows: Map<number, number>;
}

function seqCounts(a: AggInput): SeqCounts {
  const masked = new Map<number, number>(), rows = new Map<number, number>();
  for (let i = 0; i < a.seq.length; i++) {
    masked.set(a.seq[i], (masked.get(a.seq[i]) ?? 0) + a.mask[i]);
    rows.set(a.seq[i], (rows.get(a.seq[i]) ?? 0) + 1);
  }
  return { masked, rows };
}

/** 0 for an empty denominator: no loss tokens means no loss (verl's masked_mean gives 0 too). */
const over = (x: number, d: number) => (d > 0 ? x / d : 0);

/** Per-token coefficient functions, keyed by mode: pick one, never branch on the mode. */
export const AGGREGATIONS: { readonly [M in LossAggMode]: (a: AggInput) => Float64Array } = {
  "token-mean": (a) => {
    let total = 0;
    for (let i = 0; i < a.mask.length; i++) total += a.mask[i];
    return Float64Array.from(a.mask, (m) => over(m, total));
  },
  "seq-mean-token-mean": (a) => {
    const { masked } = seqCounts(a);
    const nonEmpty = [...masked.values()].filter((n) => n > 0).length;
    return Float64Array.from(a.mask, (m, i) => over(m, masked.get(a.seq[i])! * nonEmpty));
  },
  "seq-mean-token-sum": (a) => {
    const { rows } = seqCounts(a);
    return Float64Array.from(a.mask, (m) => over(m, rows.size));
  },
  "seq-mean-token-sum-norm": (a) => {
    const n = a.normLength ?? Math.max(0, ...seqCounts(a).rows.values());
    return Float64Array.from(a.mask, (m) => over(m, n));
  },
};

/** The aggregation coefficient of every row (validated). */
export function aggregationWeights(mode: LossAggMode, a: AggInput): Float64Array {
  const fn = AGGREGATIONS[mode];
  if (fn === undefined) {
    throw new TrainConfigError(
      "loss_agg_mode",
      `unknown mode "${mode}"; use one of ${LOSS_AGG_MODES.join(", ")}`,
    );
  }
  if (a.seq.length !== a.mask.length) {
    throw new LossInputError(
      `seq has ${a.seq.length} rows but mask has ${a.mask.length}; give one of each per token`,
    );
  }
  for (let i = 0; i < a.seq.length; i++) {
    if (!Number.isInteger(a.seq[i])) {
      throw new LossInputError(`seq[${i}] = ${a.seq[i]} is not an integer sequence id`);
    }
  }
  if (a.normLength !== undefined && !(a.normLength > 0)) {
    throw new TrainConfigError(
      "normLength",
      `${a.normLength} must be positive (the padded response length)`,
    );
  }
  return fn(a);
}

/** One GRPO training batch, one entry per token row of the logits. */
export interface PolicyBatch extends AggInput {
  /** Token id taken at each row (the next token), in [0, V). */
  readonly targets: Num;
  /** Advantage per row (GRPO: the sequence's advantage repeated over its tokens). */
  readonly advantages: Num;
  /** log π_old(target) from the rollout. */
  readonly oldLogp: Num;
  /** log π_ref(target) for the KL term; required when klCoef > 0. */
  readonly refLogp?: Num;
}

/** A masked cross-entropy batch: loss = Σ w·nll / normalizer (default Σ w: the masked mean). */
export interface CrossEntropyBatch {
  readonly targets: Num;
  /** Weight per row: 1 in the loss, 0 out (prompt, padding); other values weight the token. */
  readonly weights: Num;
  /** Denominator of the mean (default Σ weights); pass the mini-batch's total when micro-batching. */
  readonly normalizer?: number;
}

function checkRows(
  what: string,
  n: number,
  cols: Record<string, Num | undefined>,
  vocabSize: number,
): void {
  for (const [name, col] of Object.entries(cols)) {
    if (col !== undefined && col.length !== n) {
      throw new LossInputError(
        `${what}: ${name} has ${col.length} rows but targets has ${n}; give one per token`,
      );
    }
  }
  const targets = cols.targets!;
  for (let i = 0; i < n; i++) {
    const t = targets[i];
    if (!Number.isInteger(t) || t < 0 || t >= vocabSize) {
      throw new LossInputError(
        `${what}: target[${i}] = ${t} is not a token id in [0, ${vocabSize}); check the tokenizer/vocab_size`,
      );
    }
  }
  for (const name of ["mask", "weights"]) {
    const col = cols[name];
    if (col && Array.prototype.some.call(col, (x: number) => !(x >= 0) || !Number.isFinite(x))) {
      throw new LossInputError(`${what}: ${name} must be finite and ≥ 0`);
    }
  }
}

function pack(n: number, fill: (i: number, u: Uint32Array, f: Float32Array) => void): Float32Array {
  const f = new Float32Array(n * ROW_FLOATS);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < n; i++) fill(i, u, f);
  return f;
}

/** Packed rows of a GRPO batch: coefficients by `mode`, times `scale` (default 1). */
export function packPolicyRows(
  b: PolicyBatch,
  opts: { mode: LossAggMode; vocabSize: number; needRef: boolean; scale?: number },
): Float32Array {
  const n = b.targets.length;
  const cols = {
    targets: b.targets,
    seq: b.seq,
    mask: b.mask,
    advantages: b.advantages,
    oldLogp: b.oldLogp,
    refLogp: b.refLogp,
  };
  checkRows("policy loss", n, cols, opts.vocabSize);
  if (opts.needRef && b.refLogp === undefined) {
    throw new LossInputError(
      "policy loss: klCoef > 0 needs refLogp (log-probs of the reference policy) for every row",
    );
  }
  const coef = aggregationWeights(opts.mode, b);
  const scale = opts.scale ?? 1;
  return pack(n, (i, u, f) => {
    const o = i * ROW_FLOATS;
    u[o] = b.targets[i];
    f[o + 1] = coef[i] * scale;
    f[o + 2] = b.advantages[i];
    f[o + 3] = b.oldLogp[i];
    f[o + 4] = b.refLogp?.[i] ?? 0;
    f[o + 5] = b.mask[i];
  });
}

/** Packed rows of a masked cross-entropy batch (coef = w·scale / normalizer). */
export function packCrossEntropyRows(
  b: CrossEntropyBatch,
  opts: { vocabSize: number; scale?: number },
): Float32Array {
  const n = b.targets.length;
  checkRows("cross-entropy", n, { targets: b.targets, weights: b.weights }, opts.vocabSize);
  let total = 0;
  for (let i = 0; i < n; i++) total += b.weights[i];
  const norm = b.normalizer ?? total;
  if (!(norm >= 0) || !Number.isFinite(norm)) {
    throw new LossInputError(`cross-entropy: normalizer ${norm} must be finite and ≥ 0`);
  }
  const scale = opts.scale ?? 1;
  return pack(n, (i, u, f) => {
    const o = i * ROW_FLOATS;
    u[o] = b.targets[i];
    f[o + 1] = over(b.weights[i], norm) * scale;
    f[o + 5] = b.weights[i] > 0 ? 1 : 0;
  });
}
