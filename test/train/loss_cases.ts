// The loss heads against float64, as cases that run on any adapter: Deno's (losses_test.ts) and
// the browser's kernel worker, where Chromium's subgroups make the heads run their subgroup twin
// (losses_sg: shaders/loss_reduce_sg.wgsl). Also the data and helpers losses_test.ts shares: a
// policy batch whose rows reach every clip branch, the reference's settings, one encode.

import type { Gpu } from "../../src/gpu/mod.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import { type PolicyBatch, ROW_FLOATS } from "../../src/train/loss_rows.ts";
import {
  CrossEntropyLoss,
  type LossHeadOptions,
  PolicyLoss,
  type PolicyLossConfig,
} from "../../src/train/losses.ts";
import {
  crossEntropyRef,
  policyLossRef,
  type PolicyRefConfig,
  rowSoftmaxRef,
} from "../../src/train/reference.ts";
import { assert } from "../assert.ts";

export const V = 301;
/** Rows per sequence; the last sequence is entirely outside the loss (mask 0). */
export const SEQ_LENGTHS = [5, 1, 8, 3, 6, 4, 2];
const ADVANTAGES = [1.2, -0.7, 0.5, -1.5, 0.9, -0.3, 0.8];
/** Target ratios π/π_old cycled over tokens, far from every kink (0.8, 1.2/1.28, 3). */
const RATIOS_POS = [0.5, 1.05, 1.5, 0.9]; // A > 0: unclipped, inside, clipped, inside
const RATIOS_NEG = [0.5, 1.05, 1.5, 5.0]; // A < 0: clipped, inside, unclipped, dual-clipped

export interface Case {
  logits: Float32Array;
  batch: PolicyBatch & {
    targets: number[];
    seq: number[];
    mask: number[];
    advantages: number[];
    oldLogp: Float32Array;
    refLogp: Float32Array;
  };
  /** The clip branch each row was built for (for the per-branch gradient check). */
  branch: Branch[];
}

export type Branch = "unclipped" | "inside" | "clipped" | "dual";
const BRANCH_POS: Branch[] = ["unclipped", "inside", "clipped", "inside"];
const BRANCH_NEG: Branch[] = ["clipped", "inside", "unclipped", "dual"];

export function policyCase(seed: number): Case {
  const rows = SEQ_LENGTHS.reduce((a, b) => a + b, 0);
  const logits = seededValues(rows * V, seed, -4, 4);
  const u = seededValues(rows * 3, seed + 1, 0, 1);
  const seq: number[] = [], mask: number[] = [], advantages: number[] = [];
  SEQ_LENGTHS.forEach((len, s) => {
    for (let k = 0; k < len; k++) {
      seq.push(10 + s * 7); // ids need not be dense
      // the last sequence is fully masked; a few interior tokens are masked (observations)
      mask.push(s === SEQ_LENGTHS.length - 1 || (s === 2 && k === 3) ? 0 : 1);
      advantages.push(ADVANTAGES[s]);
    }
  });
  const targets = Array.from({ length: rows }, (_, i) => Math.floor(u[i] * V));
  const oldLogp = new Float32Array(rows), refLogp = new Float32Array(rows);
  const branch: Branch[] = [];
  for (let i = 0; i < rows; i++) {
    const lp = logits[i * V + targets[i]] - rowSoftmaxRef(logits, i, V).lse;
    const list = advantages[i] > 0 ? RATIOS_POS : RATIOS_NEG;
    const ratio = list[i % 4];
    oldLogp[i] = lp - Math.log(ratio);
    refLogp[i] = lp + (u[rows + i] - 0.5);
    branch.push((advantages[i] > 0 ? BRANCH_POS : BRANCH_NEG)[i % 4]);
  }
  return { logits, batch: { targets, seq, mask, advantages, oldLogp, refLogp }, branch };
}

export function refConfig(c: PolicyLossConfig): PolicyRefConfig {
  return {
    clipLow: c.clipLow ?? 0.2,
    clipHigh: c.clipHigh ?? 0.2,
    dualClip: c.dualClip === undefined ? 3 : c.dualClip,
    klCoef: c.klCoef ?? 0,
    aggregation: c.aggregation ?? "token-mean",
    normLength: c.normLength,
  };
}

export function maxAbs(x: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]));
  return m;
}

/** |got − want| over tol · max(1, |want|): ≤ 1 passes. */
function metricRatio(got: number, want: number, tol: number): number {
  return Math.abs(got - want) / (tol * Math.max(1, Math.abs(want)));
}

/** |got − want| ≤ tol · max(1, |want|) (tol 0: exactly equal, where metricRatio is 0/0). */
export function near(got: number, want: number, tol: number, what: string): void {
  assert(
    Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)),
    `${what}: ${got}, expected ${want}`,
  );
}

/** Uploads, runs one encode (rows [from, to)), and returns dL/dlogits of those rows. */
export async function encodeRows(
  gpu: Gpu,
  loss: PolicyLoss | CrossEntropyLoss,
  logits: Float32Array,
  packed: Float32Array,
  range: [number, number],
  opts: { inPlace: boolean; accumulate?: boolean },
): Promise<Float32Array> {
  const V = loss.vocabSize, [from, to] = range, rows = to - from;
  const Z = gpu.upload(logits.subarray(from * V, to * V));
  const R = gpu.upload(packed.subarray(from * ROW_FLOATS, to * ROW_FLOATS));
  const G = opts.inPlace ? undefined : gpu.upload(new Float32Array(rows * V).fill(NaN));
  const rec = gpu.recorder("loss test");
  loss.encode(rec, {
    rows,
    rowData: R,
    logits: Z,
    dlogits: G ?? "in-place",
    accumulate: opts.accumulate,
  });
  rec.submit();
  const grad = await gpu.readFloat32(G ?? Z, rows * V);
  [Z, R, G].forEach((b) => b?.destroy());
  return grad;
}

export const HEAD: LossHeadOptions = { maxRows: 64, vocabSize: V };
export const CONFIGS: Array<[string, PolicyLossConfig]> = [
  ["ε 0.2/0.28, dual clip 3, KL β 0.1", { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, klCoef: 0.1 }],
  ["ε 0.2/0.2, dual clip 3, no KL", {}],
  ["ε 0.2/0.2, no dual clip, no KL", { dualClip: null }],
];

/** A case: its worst ratio to its tolerance (≤ 1 passes; Infinity where a check fails). */
export interface LossCase {
  name: string;
  run(gpu: Gpu): Promise<number>;
}

/** Lanes a row the cases run at: the smallest, CPU adapters' 64 and GPUs' 256. */
const LANES = [32, 64, 256];

export function lossCases(): LossCase[] {
  return [
    ...LANES.map((workgroupSize) => ({
      name:
        `policy loss at ${workgroupSize} lanes a row: every clip branch, dual clip and k3 KL; dL/dlogits and metrics against float64, totals over two micro-batches`,
      async run(gpu: Gpu) {
        const c = policyCase(3);
        const cfg = { ...CONFIGS[0][1], aggregation: "seq-mean-token-mean" } as const;
        const loss = await PolicyLoss.create(gpu, { ...HEAD, ...cfg, workgroupSize });
        try {
          if (loss.subgroups !== gpu.subgroups) return Infinity;
          const packed = loss.pack(c.batch);
          const rows = c.batch.targets.length, cut = 11;
          const grad = new Float32Array(rows * V);
          grad.set(await encodeRows(gpu, loss, c.logits, packed, [0, cut], { inPlace: false }));
          grad.set(
            await encodeRows(gpu, loss, c.logits, packed, [cut, rows], {
              inPlace: true,
              accumulate: true,
            }),
            cut * V,
          );
          const m = await loss.readMetrics();
          const ref = policyLossRef(c.logits, V, c.batch, refConfig(cfg));
          if (!(ref.clipFrac > 0.2 && ref.clipFracLower > 0)) return Infinity; // branches not hit
          return Math.max(
            toleranceRatio(grad, ref.grad, 1e-5 * maxAbs(ref.grad), 1e-4),
            metricRatio(m.loss, ref.loss, 1e-5),
            metricRatio(m.klLoss, ref.klLoss, 1e-5),
            metricRatio(m.clipFrac, ref.clipFrac, 1e-6),
            metricRatio(m.clipFracLower, ref.clipFracLower, 1e-6),
            metricRatio(m.approxKl, ref.approxKl, 1e-5),
            metricRatio(m.entropy, ref.entropy, 1e-5),
          );
        } finally {
          loss.destroy();
        }
      },
    })),
    ...LANES.flatMap((workgroupSize) =>
      ([["in place, mean over weights", undefined], ["normalizer 20", 20]] as const).map((
        [label, normalizer],
      ) => ({
        name:
          `cross-entropy at ${workgroupSize} lanes a row, ${label}: 2,000 words (the four-ahead loop and its tail), a −inf logit, against float64`,
        async run(gpu: Gpu) {
          const rows = 13, V2 = 2000;
          const logits = seededValues(rows * V2, 8, -6, 6);
          logits[2 * V2 + 17] = -Infinity; // a masked-out vocabulary slot must not poison its row
          const targets = Array.from(seededValues(rows, 9, 0, V2), Math.floor);
          const weights = Array.from({ length: rows }, (_, i) => [1, 0, 0.5, 1][i % 4]);
          const b = { targets, weights, normalizer };
          const loss = await CrossEntropyLoss.create(gpu, {
            maxRows: rows,
            vocabSize: V2,
            workgroupSize,
          });
          try {
            if (loss.subgroups !== gpu.subgroups) return Infinity;
            const grad = await encodeRows(gpu, loss, logits, loss.pack(b), [0, rows], {
              inPlace: normalizer === undefined,
            });
            const m = await loss.readMetrics();
            const ref = crossEntropyRef(logits, V2, b);
            return Math.max(
              toleranceRatio(grad, ref.grad, 1e-6 * maxAbs(ref.grad), 1e-4),
              metricRatio(m.loss, ref.loss, 1e-5),
              metricRatio(m.entropy, ref.entropy, 1e-5),
              metricRatio(m.meanNll, ref.meanNll, 1e-5),
              metricRatio(m.tokens, weights.filter((w) => w > 0).length, 1e-9),
            );
          } finally {
            loss.destroy();
          }
        },
      }))
    ),
  ];
}
