// Loss heads against the float64 references: values, metrics and dL/dlogits of masked cross-entropy
// and of the GRPO policy loss through each clip branch (unclipped, clipped, dual-clipped, ±KL) and
// each aggregation mode; the references' gradients against finite differences of their losses;
// in-place gradients, micro-batch accumulation, and named errors for bad inputs.

import { assert, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { toleranceRatio } from "../../src/ops/reference.ts";
import { aggregationWeights, LOSS_AGG_MODES, type LossAggMode } from "../../src/train/loss_rows.ts";
import { PolicyLoss, type PolicyLossConfig } from "../../src/train/losses.ts";
import { crossEntropyRef, policyLossRef } from "../../src/train/reference.ts";
import {
  type Case,
  CONFIGS,
  encodeRows,
  HEAD,
  lossCases,
  maxAbs,
  near,
  policyCase,
  refConfig,
  V,
} from "./loss_cases.ts";

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

Deno.test("loss heads against float64 at 32, 64 and 256 lanes a row (the browser's kernel worker runs these too)", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const c of lossCases()) {
      await t.step(c.name, async () => {
        const ratio = await c.run(gpu);
        assert(ratio <= 1, `${ratio}× the tolerance`);
      });
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
        // Deno's adapters have no subgroup operations (the browser's kernel worker runs the twin)
        [{ subgroups: true }, "subgroups"],
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
