// The value loss's gradient through the whole trunk: a ModelTrainer with a value head and every
// token advantage 0 (so the policy loss adds no gradient) computes the gradient of the clipped
// value loss alone; entries of the final norm's weight (the head's input goes through it) and of
// a first-layer projection match central finite differences of that loss, evaluated from the
// trainer's own value pass (lr 0: the step leaves every parameter where it was).

import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { readParamTensor } from "../../src/model/gpu_params.ts";
import { initModel } from "../../src/model/init.ts";
import { resolveRange } from "../../src/gpu/buffers.ts";
import { seededValues } from "../../src/ops/reference.ts";
import { ModelTrainer, type TrainSequence } from "../../src/train/trainer.ts";
import { valueLossRef } from "../../src/train/value_reference.ts";
import { packValueRows } from "../../src/train/value_head.ts";

const COEF = 0.5, CLIP = 0.3;

Deno.test("the value loss's gradient reaches the trunk (finite differences through the model)", async () => {
  const gpu = await Gpu.create();
  const cfg = parseModelConfig(
    JSON.parse(await Deno.readTextFile("configs/models/tiny-llama.json")),
  );
  const weights = initModel(cfg, { seed: 3 });
  const C = cfg.hiddenSize;
  const trainer = await ModelTrainer.create(gpu, weights, {
    mode: "full",
    optimizer: { weightDecay: 0 },
    schedule: { kind: "constant", lr: 0 },
    loss: { kind: "policy" },
    chunkRows: 64,
    slots: 4,
    maxLen: 16,
    valueHead: { coef: COEF, clip: CLIP, init: seededValues(C + 1, 4, -0.5, 0.5) },
  });
  try {
    const lens = [9, 12, 7];
    const base: TrainSequence[] = lens.map((n, i) => ({
      tokens: Array.from({ length: n }, (_, t) => (i * 37 + t * 11) % 250),
      weights: Array.from({ length: n - 1 }, (_, t) => (t >= 3 ? 1 : 0)),
      oldLogp: new Array(n - 1).fill(-5),
      tokenAdvantages: new Array(n - 1).fill(0),
    }));
    const v0 = await trainer.values(base);
    // Old values near the current ones (some rows outside ±ε: both branches), returns 1 away.
    const seqs = base.map((s, i) => ({
      ...s,
      oldValues: v0[i].map((v, t) => v + [0.05, 0.6, -0.05][t % 3]),
      returns: v0[i].map((v, t) => v + (t % 2 ? 1 : -1)),
    }));
    const rows = (f: (s: typeof seqs[number], t: number) => number) =>
      seqs.flatMap((s) => [...s.weights.map((_, t) => f(s, t)), 0]);
    const packed = packValueRows({
      mask: rows((s, t) => s.weights[t]),
      oldValues: rows((s, t) => s.oldValues[t]),
      returns: rows((s, t) => s.returns[t]),
    }, COEF);
    const refRows = Array.from(
      { length: packed.length / 4 },
      (_, r) => ({
        oldValue: packed[4 * r],
        ret: packed[4 * r + 1],
        coef: packed[4 * r + 2],
        mask: packed[4 * r + 3],
      }),
    );
    const loss = async () =>
      valueLossRef((await trainer.values(seqs)).flatMap((v) => [...v, 0]), refRows, CLIP).loss;

    const m = await trainer.step(seqs);
    assert(
      Math.abs(m.value!.valueLoss - (await loss())) < 1e-5,
      `GPU value loss ${m.value!.valueLoss} vs ${await loss()}`,
    );
    assert(
      m.value!.valueClipFrac > 0 && m.value!.valueClipFrac < 1,
      `clip fraction ${m.value!.valueClipFrac}: both branches should occur`,
    );
    const lay = trainer.model.weights.layout;
    for (const t of [lay.finalNorm, lay.layerView(0).down]) {
      const grad = await readParamTensor(gpu, trainer.backward.grads, t);
      const param = await readParamTensor(gpu, trainer.model.params, t);
      const ref = resolveRange(trainer.model.params.ref(t));
      // The two entries with the largest gradient: far above f32 noise.
      const top = [...grad.keys()].sort((a, b) => Math.abs(grad[b]) - Math.abs(grad[a])).slice(
        0,
        2,
      );
      for (const i of top) {
        const eps = 1e-2 * Math.max(1, Math.abs(param[i]));
        const at = async (d: number) => {
          gpu.write(ref.buffer, new Float32Array([param[i] + d]), ref.offset + 4 * i);
          return await loss();
        };
        const fd = ((await at(eps)) - (await at(-eps))) / (2 * eps);
        await at(0);
        assert(
          Math.abs(fd - grad[i]) <= 1e-5 + 3e-2 * Math.abs(fd),
          `${t.name}[${i}]: gradient ${grad[i]} vs finite difference ${fd}`,
        );
        assert(
          Math.abs(fd) > 1e-4,
          `${t.name}[${i}]: finite difference ${fd} is ~0, the check says nothing`,
        );
      }
    }
  } finally {
    trainer.destroy();
    gpu.destroy();
  }
});
