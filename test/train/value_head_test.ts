// The value head's kernels against their float64 references (forward, clipped value loss through
// both branches, backward into h, w and b, accumulation onto the LM head's dh), the references'
// gradient against finite differences of their loss, the GPU's own gradient against finite
// differences of the GPU loss, the parameter layout round trip and named errors for bad input.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import { biasOffset, packValueRows, ValueHead } from "../../src/train/value_head.ts";
import {
  valueBackwardRef,
  valueForwardRef,
  valueLossRef,
  type ValueRowRef,
} from "../../src/train/value_reference.ts";

const N = 37, C = 72, CLIP = 0.2, COEF = 0.5;
const h = seededValues(N * C, 11);
const w = seededValues(C, 12, -0.3, 0.3);
const b = 0.25;
const mask: number[] = Array.from({ length: N }, (_, i) => (i % 9 === 4 ? 0 : 1));
const v64 = valueForwardRef(h, w, b, N, C);
// Old values inside the clip range (|d| < ε) or well outside it, returns a whole unit away: every
// row is far from the max's tie, and both branches occur (checked below).
const D = [0.05, -0.6, 0.6, -0.05], Q = [1, -1, -1, 1, 1];
const oldValues = Array.from(v64, (v, i) => v + D[i % D.length]);
const returns = Array.from(v64, (v, i) => v + Q[i % Q.length]);
const packed = packValueRows({ mask, oldValues, returns }, COEF);
const rowsRef: ValueRowRef[] = Array.from({ length: N }, (_, i) => ({
  oldValue: packed[i * 4],
  ret: packed[i * 4 + 1],
  coef: packed[i * 4 + 2],
  mask: packed[i * 4 + 3],
}));

const init = new Float32Array([...w, b]);

async function run(gpu: Gpu, head: ValueHead, hBuf: GPUBuffer, dh: GPUBuffer | null) {
  gpu.write(head.rowData, packed);
  const rec = gpu.recorder("value head");
  head.encodeZeroGrads(rec);
  head.encodeForward(rec, N, hBuf);
  head.encodeLoss(rec, N, false);
  if (dh) head.encodeBackward(rec, N, hBuf, dh);
  rec.submit();
  return {
    v: await head.readValues(N),
    m: await head.readMetrics(),
    g: await gpu.readFloat32(head.grads, head.numel),
  };
}

Deno.test("value head", async (t) => {
  const gpu = await Gpu.create();
  const head = await ValueHead.create(gpu, { hidden: C, maxRows: 64, clip: CLIP, init });
  const hBuf = gpu.upload(h, "h");
  try {
    const ref = valueLossRef(v64, rowsRef, CLIP);
    const back = valueBackwardRef(h, w, ref.dv, N, C);

    await t.step("forward, loss and backward match the float64 references", async () => {
      assert(
        ref.clipped.some((c, i) => c && mask[i]) && ref.clipped.some((c, i) => !c && mask[i]),
        "both branches of the max occur",
      );
      const prior = seededValues(N * C, 13);
      const dh = gpu.upload(prior, "dh");
      const { v, m, g } = await run(gpu, head, hBuf, dh);
      assert(
        toleranceRatio(v, v64, 1e-5, 1e-5) <= 1,
        `values off by ${toleranceRatio(v, v64, 1e-5, 1e-5)}`,
      );
      assert(
        Math.abs(m.valueLoss - ref.loss) <= 1e-5 * (1 + ref.loss),
        `loss ${m.valueLoss} vs ${ref.loss}`,
      );
      const tokens = mask.reduce((a, x) => a + x, 0);
      assertEquals(m.valueClipFrac, ref.clipped.filter((c, i) => c && mask[i]).length / tokens);
      const mse = Array.from(v64).reduce((s, x, i) => s + mask[i] * (x - returns[i]) ** 2, 0) /
        tokens;
      assert(Math.abs(m.valueMse - mse) <= 1e-5 * (1 + mse), `mse ${m.valueMse} vs ${mse}`);
      const gotDh = await gpu.readFloat32(dh, N * C);
      const wantDh = back.dh.map((x, i) => x + prior[i]);
      assert(toleranceRatio(gotDh, wantDh, 1e-6, 1e-5) <= 1, "dh is not the LM head's dh + dv·wᵀ");
      assert(toleranceRatio(g.subarray(0, C), back.dw, 1e-6, 1e-4) <= 1, "dw off");
      assert(
        Math.abs(g[biasOffset(C)] - back.db) <= 1e-6 + 1e-4 * Math.abs(back.db),
        `db ${g[biasOffset(C)]} vs ${back.db}`,
      );
      assert(
        g.subarray(C, biasOffset(C)).every((x) => x === 0),
        "padding between w and b got a gradient",
      );
      dh.destroy();
    });

    await t.step("the reference gradient matches finite differences of the reference loss", () => {
      const eps = 1e-6;
      const lossAt = (hh: ArrayLike<number>, ww: ArrayLike<number>, bb: number) =>
        valueLossRef(valueForwardRef(hh, ww, bb, N, C), rowsRef, CLIP).loss;
      const bump = (x: ArrayLike<number>, i: number, d: number) =>
        Float64Array.from(x, (y, j) => (j === i ? y + d : y));
      for (const c of [0, 17, C - 1]) {
        const fd = (lossAt(h, bump(w, c, eps), b) - lossAt(h, bump(w, c, -eps), b)) / (2 * eps);
        assert(
          Math.abs(fd - back.dw[c]) <= 1e-7 + 1e-6 * Math.abs(fd),
          `dw[${c}] ${back.dw[c]} vs fd ${fd}`,
        );
      }
      const fdB = (lossAt(h, w, b + eps) - lossAt(h, w, b - eps)) / (2 * eps);
      assert(Math.abs(fdB - back.db) <= 1e-7 + 1e-6 * Math.abs(fdB), `db ${back.db} vs fd ${fdB}`);
      for (const i of [0, 5 * C + 3, (N - 1) * C + 70]) {
        const fd = (lossAt(bump(h, i, eps), w, b) - lossAt(bump(h, i, -eps), w, b)) / (2 * eps);
        assert(
          Math.abs(fd - back.dh[i]) <= 1e-7 + 1e-6 * Math.abs(fd),
          `dh[${i}] ${back.dh[i]} vs fd ${fd}`,
        );
      }
    });

    await t.step("the GPU gradient matches finite differences of the GPU loss", async () => {
      const dh = gpu.zeros(N * C, "dh");
      const { g } = await run(gpu, head, hBuf, dh);
      const gotDh = await gpu.readFloat32(dh, N * C);
      // The loss is quadratic between kinks, so a central difference is exact up to f32 rounding.
      const eps = 1e-2;
      const lossWith = async (p: Float32Array, hh: Float32Array) => {
        head.write(p);
        gpu.write(hBuf, hh);
        return (await run(gpu, head, hBuf, null)).m.valueLoss;
      };
      const check = async (
        what: string,
        analytic: number,
        plus: [Float32Array, Float32Array],
        minus: [Float32Array, Float32Array],
        zero = false,
      ) => {
        const fd = ((await lossWith(...plus)) - (await lossWith(...minus))) / (2 * eps);
        assert(
          Math.abs(fd - analytic) <= 2e-5 + 2e-3 * Math.abs(fd),
          `${what}: gradient ${analytic} vs finite difference ${fd}`,
        );
        if (!zero) {
          assert(
            Math.abs(fd) > 1e-4,
            `${what}: the finite difference ${fd} is ~0, so the check says nothing`,
          );
        }
      };
      const at = (x: Float32Array, i: number, d: number) =>
        Float32Array.from(x, (y, j) => (j === i ? y + d : y));
      for (const c of [0, 17, C - 1]) {
        await check(`w[${c}]`, g[c], [at(init, c, eps), h], [at(init, c, -eps), h]);
      }
      await check("b", g[biasOffset(C)], [at(init, C, eps), h], [at(init, C, -eps), h]);
      for (const i of [0, 3 * C + 3, (N - 1) * C + 70]) {
        await check(`h[${i}]`, gotDh[i], [init, at(h, i, eps)], [init, at(h, i, -eps)]);
      }
      // Row 5's clipped term is the larger: its value gets no gradient, and the loss does not move.
      assert(ref.clipped[5] && mask[5] === 1, "row 5 is a clipped row");
      await check("h[5·C + 3] (clipped row)", gotDh[5 * C + 3], [init, at(h, 5 * C + 3, eps)], [
        init,
        at(h, 5 * C + 3, -eps),
      ], true);
      head.write(init);
      gpu.write(hBuf, h);
      dh.destroy();
    });

    await t.step("parameters round-trip through read/write in the [w, b] layout", async () => {
      assertEquals(Array.from(await head.read()), Array.from(init));
      const other = seededValues(C + 1, 14);
      head.write(other);
      assertEquals(Array.from(await head.read()), Array.from(other));
      head.write(init);
      assertThrows(() => head.write(new Float32Array(C)), "CheckpointMismatchError", "hidden + 1");
    });

    await t.step("bad input gets named errors", async () => {
      assertThrows(
        () => packValueRows({ mask: [1, 1], oldValues: [0], returns: [0, 1] }, 1),
        "LossInputError",
        "one of each per token",
      );
      assertThrows(
        () => packValueRows({ mask: [1], oldValues: [NaN], returns: [0] }, 1),
        "LossInputError",
        "finite",
      );
      assertThrows(
        () => packValueRows({ mask: [1], oldValues: [0], returns: [0] }, -1),
        "TrainConfigError",
        "value.coef",
      );
      let err = "";
      await ValueHead.create(gpu, { hidden: C, maxRows: 4, clip: 0 }).catch((
        e,
      ) => (err = e.name + e.message));
      assert(err.includes("TrainConfigError") && err.includes("value.clip"), err);
      const rec = gpu.recorder("x");
      assertThrows(() => head.encodeForward(rec, 65, hBuf), "KernelArgumentError", "maxRows");
    });
  } finally {
    hBuf.destroy();
    head.destroy();
    gpu.destroy();
  }
});
