// Loss heads against the float64 references: values, metrics and dL/dlogits of masked cross-entropy
// and of the GRPO policy loss through each clip branch (unclipped, clipped, dual-clipped, ±KL) and
// each aggregation mode; the references' gradients against finite differences of their losses;
// in-place gradients, micro-batch accumulation, and named errors for bad inputs.

import { assert, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import {
  aggregationWeights,
  LOSS_AGG_MODES,
  type LossAggMode,
  type PolicyBatch,
  ROW_FLOATS,
} from "../../src/train/loss_rows.ts";
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

const V = 301;
/** Rows per sequence; the last sequence is entirely outside the loss (mask 0). */
const SEQ_LENGTHS = [5, 1, 8, 3, 6, 4, 2];
const ADVANTAGES = [1.2, -0.7, 0.5, -1.5, 0.9, -0.3, 0.8];
/** Target ratios π/π_old cycled over tokens, far from every kink (0.8, 1.2/1.28, 3). */
const RATIOS_POS = [0.5, 1.05, 1.5, 0.9]; // A > 0: unclipped, inside, clipped, inside
const RATIOS_NEG = [0.5, 1.05, 1.5, 5.0]; // A < 0: clipped, inside, unclipped, dual-clipped

interface Case {
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

type Branch = "unclipped" | "inside" | "clipped" | "dual";
const BRANCH_POS: Branch[] = ["unclipped", "inside", "clipped", "inside"];
const BRANCH_NEG: Branch[] = ["clipped", "inside", "unclipped", "dual"];

function policyCase(seed: number): Case {
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

function refConfig(c: PolicyLossConfig): PolicyRefConfig {
  return {
    clipLow: c.clipLow ?? 0.2,
    clipHigh: c.clipHigh ?? 0.2,
    dualClip: c.dualClip === undefined ? 3 : c.dualClip,
    klCoef: c.klCoef ?? 0,
    aggregation: c.aggregation ?? "token-mean",
    normLength: c.normLength,
  };
}

function maxAbs(x: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]));
  return m;
}

function near(got: number, want: number, tol: number, what: string): void {
  assert(
    Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)),
    `${what}: ${got}, expected ${want}`,
  );
}

/** Uploads, runs one encode (rows [from, to)), and returns dL/dlogits of those rows. */
async function encodeRows(
  gpu: Gpu,
  loss: PolicyLoss | CrossEntropyLoss,
  logits: Float32Array,
  packed: Float32Array,
  range: [number, number],
  opts: { inPlace: boolean; accumulate?: boolean },
): Promise<Float32Array> {
  const [from, to] = range, rows = to - from;
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

const HEAD: LossHeadOptions = { maxRows: 64, vocabSize: V };
const CONFIGS: Array<[string, PolicyLossConfig]> = [
  ["ε 0.2/0.28, dual clip 3, KL β 0.1", { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, klCoef: 0.1 }],
  ["ε 0.2/0.2, dual clip 3, no KL", {}],
  ["ε 0.2/0.2, no dual clip, no KL", { dualClip: null }],
];

/** Without KL, a row's gradient is exactly zero iff it is masked or its surrogate is flat. */
function expectFlat(c: Case, i: number, cfg: PolicyLossConfig): boolean {
  const b = c.branch[i];
  return c.batch.mask[i] === 0 || b === "clipped" || (b === "dual" && cfg.dualClip !== null);
}

/** One configuration on the GPU vs the reference: gradient, metrics, and per-branch zero rows. */
async function checkPolicyCase(
  gpu: Gpu,
  c: Case,
  cfg: PolicyLossConfig,
  temperature = 1,
): Promise<void> {
  const loss = await PolicyLoss.create(gpu, { ...HEAD, ...cfg, temperature });
  const batch = cfg.klCoef ? c.batch : { ...c.batch, refLogp: undefined };
  // At temperature T the head reads logits/T: scaling the case's logits by T keeps its designed
  // log-probs (and so every clip branch) while the gradient shrinks by 1/T.
  const logits = temperature === 1 ? c.logits : c.logits.map((x) => x * temperature);
  const ref = policyLossRef(logits, V, batch, { ...refConfig(cfg), temperature });
  const rows = c.batch.targets.length;
  const grad = await encodeRows(gpu, loss, logits, loss.pack(batch), [0, rows], {
    inPlace: false,
  });
  const m = await loss.readMetrics();
  loss.destroy();
  const ratio = toleranceRatio(grad, ref.grad, 1e-5 * maxAbs(ref.grad), 1e-4);
  assert(ratio <= 1, `dL/dlogits error ${ratio.toFixed(2)}× tolerance`);
  near(m.loss, ref.loss, 1e-5, "loss");
  near(m.pgLoss, ref.pgLoss, 1e-5, "pg loss");
  near(m.klLoss, ref.klLoss, 1e-5, "kl loss");
  near(m.clipFrac, ref.clipFrac, 1e-6, "clip fraction");
  near(m.clipFracLower, ref.clipFracLower, 1e-6, "dual-clip fraction");
  near(m.approxKl, ref.approxKl, 1e-5, "approx KL");
  near(m.entropy, ref.entropy, 1e-5, "entropy");
  // The designed data must exercise every branch, or this test proves little.
  assert(
    ref.clipFrac > 0.2 && (cfg.dualClip === null || ref.clipFracLower > 0),
    "branches not all hit",
  );
  for (let i = 0; i < rows; i++) {
    const zero = grad.subarray(i * V, (i + 1) * V).every((x) => x === 0);
    if (!cfg.klCoef) {
      assert(
        zero === expectFlat(c, i, cfg),
        `row ${i} (${c.branch[i]}): gradient ${zero ? "zero" : "non-zero"}`,
      );
    }
    if (c.batch.mask[i] === 0) assert(zero, `masked row ${i} has a gradient`);
  }
}

Deno.test("GRPO policy loss matches the float64 reference", async (t) => {
  const gpu = await Gpu.create();
  try {
    const c = policyCase(3);
    for (const mode of LOSS_AGG_MODES) {
      for (const [label, cfg0] of CONFIGS) {
        const cfg: PolicyLossConfig = {
          ...cfg0,
          aggregation: mode,
          normLength: mode.endsWith("norm") ? 12 : undefined,
        };
        await t.step(`${mode}, ${label}`, () => checkPolicyCase(gpu, c, cfg));
      }
    }
    for (const T of [0.7, 1.3]) {
      await t.step(
        `temperature ${T}: log-probs, entropy and gradient of logits/T`,
        () => checkPolicyCase(gpu, c, { ...CONFIGS[0][1] }, T),
      );
    }
    await t.step("in place equals a separate dlogits buffer, bit for bit", async () => {
      const loss = await PolicyLoss.create(gpu, { ...HEAD, klCoef: 0.05 });
      const packed = loss.pack(c.batch);
      const rows = c.batch.targets.length;
      const a = await encodeRows(gpu, loss, c.logits, packed, [0, rows], { inPlace: false });
      const b = await encodeRows(gpu, loss, c.logits, packed, [0, rows], { inPlace: true });
      loss.destroy();
      assert(a.every((x, i) => Object.is(x, b[i])), "in-place gradient differs");
    });
    await t.step(
      "micro-batches: coefficients over the mini-batch, totals accumulated",
      async () => {
        const cfg: PolicyLossConfig = { aggregation: "seq-mean-token-mean", klCoef: 0.1 };
        const loss = await PolicyLoss.create(gpu, { ...HEAD, ...cfg });
        const packed = loss.pack(c.batch);
        const rows = c.batch.targets.length, cut = 11;
        const g1 = await encodeRows(gpu, loss, c.logits, packed, [0, cut], { inPlace: true });
        const g2 = await encodeRows(gpu, loss, c.logits, packed, [cut, rows], {
          inPlace: true,
          accumulate: true,
        });
        const m = await loss.readMetrics();
        loss.destroy();
        const ref = policyLossRef(c.logits, V, c.batch, refConfig(cfg));
        const grad = new Float32Array(rows * V);
        grad.set(g1);
        grad.set(g2, cut * V);
        assert(
          toleranceRatio(grad, ref.grad, 1e-5 * maxAbs(ref.grad), 1e-4) <= 1,
          "micro-batch gradients differ",
        );
        near(m.loss, ref.loss, 1e-5, "accumulated loss");
        near(m.clipFrac, ref.clipFrac, 1e-6, "accumulated clip fraction");
        near(m.tokens, c.batch.mask.length - 3, 0, "tokens");
      },
    );
  } finally {
    gpu.destroy();
  }
});

/** Central differences of a float64 loss w.r.t. chosen logits vs the analytic gradient. */
function fdRatio(
  f: (z: Float64Array) => number,
  z: Float64Array,
  grad: Float64Array,
  idx: number[],
): number {
  const h = 1e-5;
  let worst = 0;
  for (const i of idx) {
    const x = z[i];
    z[i] = x + h;
    const up = f(z);
    z[i] = x - h;
    const down = f(z);
    z[i] = x;
    const fd = (up - down) / (2 * h);
    worst = Math.max(worst, Math.abs(fd - grad[i]) / (1e-8 + 1e-5 * Math.abs(grad[i])));
  }
  return worst;
}

/** Each row's target logit plus three others. */
function probeIndices(rows: number, targets: ArrayLike<number>): number[] {
  const idx: number[] = [];
  for (let i = 0; i < rows; i++) {
    idx.push(i * V + targets[i], i * V + 7, i * V + 150, i * V + V - 1);
  }
  return idx;
}

Deno.test("reference gradients match finite differences of the float64 losses", async (t) => {
  const c = policyCase(5);
  const rows = c.batch.targets.length;
  const z = Float64Array.from(c.logits);
  for (const mode of LOSS_AGG_MODES) {
    for (const [label, cfg0] of CONFIGS) {
      await t.step(`policy loss, ${mode}, ${label}`, () => {
        const cfg = refConfig({ ...cfg0, aggregation: mode as LossAggMode });
        const batch = cfg.klCoef ? c.batch : { ...c.batch, refLogp: undefined };
        const grad = policyLossRef(z, V, batch, cfg).grad;
        assert(maxAbs(grad) > 1e-3, "gradient vanished: the check would be empty");
        const ratio = fdRatio(
          (x) => policyLossRef(x, V, batch, cfg, false).loss,
          z,
          grad,
          probeIndices(rows, c.batch.targets),
        );
        assert(ratio <= 1, `finite-difference error ${ratio.toFixed(2)}× tolerance`);
      });
    }
  }
  await t.step("policy loss at temperature 0.7", () => {
    const cfg = { ...refConfig(CONFIGS[0][1]), temperature: 0.7 };
    const grad = policyLossRef(z, V, c.batch, cfg).grad;
    assert(maxAbs(grad) > 1e-3, "gradient vanished: the check would be empty");
    const ratio = fdRatio(
      (x) => policyLossRef(x, V, c.batch, cfg, false).loss,
      z,
      grad,
      probeIndices(rows, c.batch.targets),
    );
    assert(ratio <= 1, `finite-difference error ${ratio.toFixed(2)}× tolerance`);
  });
  await t.step("masked cross-entropy", () => {
    const weights = Array.from({ length: rows }, (_, i) => [1, 0, 0.5, 1, 2][i % 5]);
    const b = { targets: c.batch.targets, weights };
    const grad = crossEntropyRef(z, V, b).grad;
    const ratio = fdRatio(
      (x) => crossEntropyRef(x, V, b).loss,
      z,
      grad,
      probeIndices(rows, c.batch.targets),
    );
    assert(ratio <= 1, `finite-difference error ${ratio.toFixed(2)}× tolerance`);
  });
});

Deno.test("masked cross-entropy matches the float64 reference", async (t) => {
  const gpu = await Gpu.create();
  try {
    // 2000 columns: at 64 lanes (CPU adapters' default) and at 256 (GPUs') a lane takes both the
    // four-ahead loop and the tail.
    const rows = 13, V2 = 2000;
    const logits = seededValues(rows * V2, 8, -6, 6);
    // a masked-out vocabulary slot (−inf) must not poison the row
    logits[2 * V2 + 17] = -Infinity;
    const targets = Array.from(seededValues(rows, 9, 0, V2), Math.floor);
    const weights = Array.from({ length: rows }, (_, i) => [1, 0, 0.5, 1][i % 4]);
    const cases = [["mean over weights, in place", undefined, true], [
      "normalizer 20",
      20,
      false,
    ]] as const;
    for (const [label0, normalizer, inPlace] of cases) {
      for (const workgroupSize of [64, 256]) {
        const label = `${label0}, ${workgroupSize} lanes a row`;
        await t.step(label, async () => {
          const loss = await CrossEntropyLoss.create(gpu, {
            maxRows: rows,
            vocabSize: V2,
            workgroupSize,
          });
          const b = { targets, weights, normalizer };
          const Z = gpu.upload(logits),
            R = gpu.upload(loss.pack(b)),
            G = inPlace ? undefined : gpu.zeros(rows * V2);
          const rec = gpu.recorder();
          loss.encode(rec, { rows, rowData: R, logits: Z, dlogits: G ?? "in-place" });
          rec.submit();
          const grad = await gpu.readFloat32(G ?? Z, rows * V2);
          const m = await loss.readMetrics();
          [Z, R, G].forEach((x) => x?.destroy());
          loss.destroy();
          const ref = crossEntropyRef(logits, V2, b);
          assert(
            toleranceRatio(grad, ref.grad, 1e-6 * maxAbs(ref.grad), 1e-4) <= 1,
            "dL/dlogits differs",
          );
          near(m.loss, ref.loss, 1e-5, "loss");
          near(m.entropy, ref.entropy, 1e-5, "entropy");
          near(m.meanNll, ref.meanNll, 1e-5, "mean nll");
          near(m.tokens, weights.filter((w) => w > 0).length, 0, "tokens");
        });
      }
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("aggregation coefficients by hand (verl agg_loss)", () => {
  // sequence 0: two loss tokens and one masked; sequence 1: one token; sequence 2: none
  const a = { seq: [0, 0, 0, 1, 2, 2], mask: [1, 1, 0, 1, 0, 0] };
  const want: Record<LossAggMode, number[]> = {
    "token-mean": [1 / 3, 1 / 3, 0, 1 / 3, 0, 0],
    "seq-mean-token-mean": [1 / 4, 1 / 4, 0, 1 / 2, 0, 0], // the empty sequence does not count
    "seq-mean-token-sum": [1 / 3, 1 / 3, 0, 1 / 3, 0, 0], // it does here (torch.mean over the batch)
    "seq-mean-token-sum-norm": [1 / 3, 1 / 3, 0, 1 / 3, 0, 0], // ÷ the longest sequence (3 rows)
  };
  for (const mode of LOSS_AGG_MODES) {
    const got = Array.from(aggregationWeights(mode, a));
    assert(got.every((x, i) => Math.abs(x - want[mode][i]) < 1e-15), `${mode}: ${got}`);
  }
  const norm = aggregationWeights("seq-mean-token-sum-norm", { ...a, normLength: 10 });
  assert(norm[0] === 0.1 && norm[2] === 0, `normLength: ${norm}`);
});

Deno.test("loss inputs and settings are checked with named errors", async () => {
  const gpu = await Gpu.create();
  try {
    const c = policyCase(1);
    const loss = await PolicyLoss.create(gpu, { ...HEAD, klCoef: 0.1 });
    assertThrows(() => loss.pack({ ...c.batch, refLogp: undefined }), "LossInputError", "refLogp");
    assertThrows(
      () => loss.pack({ ...c.batch, targets: c.batch.targets.map((x, i) => (i === 2 ? V : x)) }),
      "LossInputError",
      "target[2]",
    );
    assertThrows(
      () => loss.pack({ ...c.batch, mask: c.batch.mask.slice(1) }),
      "LossInputError",
      "rows",
    );
    const rec = gpu.recorder();
    const Z = gpu.zeros(4);
    assertThrows(
      () => loss.encode(rec, { rows: 65, rowData: Z, logits: Z, dlogits: "in-place" }),
      "KernelArgumentError",
      "maxRows",
    );
    assertThrows(
      () => loss.encode(rec, { rows: 2, rowData: Z, logits: Z, dlogits: "in-place" }),
      "KernelArgumentError",
      "rowData",
    );
    Z.destroy();
    loss.destroy();
    for (
      const [cfg, field] of [
        [{ dualClip: 0.5 }, "dualClip"],
        [{ clipLow: 1.2 }, "clipLow"],
        [{ aggregation: "seq-sum" as LossAggMode }, "aggregation"],
        [{ klCoef: -1 }, "klCoef"],
        [{ temperature: 0 }, "temperature"],
        [{ workgroupSize: 96 }, "workgroupSize"],
        [{ workgroupSize: 512 }, "workgroupSize"],
      ] as const
    ) {
      const err = await PolicyLoss.create(gpu, { ...HEAD, ...cfg }).then(
        () => null,
        (e: Error) => e,
      );
      assert(
        err?.name === "TrainConfigError" && err.message.includes(field),
        `${field}: ${err?.name} ${err?.message}`,
      );
    }
  } finally {
    gpu.destroy();
  }
});
