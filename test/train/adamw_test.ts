// AdamW on the GPU against the float64 reference: one and several steps, weight-decay masks, bias
// correction, clipping on and off, gradient accumulation, several ranges (one split at a small
// chunk size), both lane layouts, tails that must not touch a neighbour, and non-finite grads.

import { assert, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import {
  AdamW,
  type AdamWHyper,
  type AdamWOptions,
  type AdamWRange,
  decayMask,
  type DecaySpan,
  hfDecays,
} from "../../src/train/adamw.ts";
import { adamwRef, type AdamWRefState } from "../../src/train/reference.ts";
import { lrAt } from "../../src/train/schedule.ts";

/** Floats after each range's end, inside the same buffer, that the optimizer must not touch. */
const SENTINELS = 68;
const SENTINEL = 12345.5;

interface HostRange {
  numel: number;
  p: Float32Array;
  spans: DecaySpan[] | null;
}

interface DeviceRange {
  range: AdamWRange;
  bufs: GPUBuffer[];
}

/** Spans alternating decay / no decay, 64-float aligned like a ParamLayout; null = no mask. */
function spansFor(numel: number, withMask: boolean): DecaySpan[] | null {
  if (!withMask) return null;
  const out: DecaySpan[] = [];
  for (let off = 0, i = 0; off < numel; i++) {
    const size = Math.min(numel - off, [130, 64, 700, 10, 300][i % 5]);
    out.push({ name: `t${i}`, offset: off, size, decay: i % 2 === 0 });
    off += Math.ceil(size / 64) * 64;
  }
  return out;
}

function withSentinels(values: Float32Array): Float32Array {
  const out = new Float32Array(values.length + SENTINELS).fill(SENTINEL);
  out.set(values);
  return out;
}

function uploadRange(gpu: Gpu, h: HostRange, m: Float32Array, v: Float32Array): DeviceRange {
  const n = h.numel;
  const P = gpu.upload(withSentinels(h.p)), G = gpu.zeros(n + SENTINELS);
  const M = gpu.upload(withSentinels(m)), V = gpu.upload(withSentinels(v));
  const ref = (b: GPUBuffer) => ({ buffer: b, offset: 0, size: n * 4 });
  const bufs = [P, G, M, V];
  let mask: GPUBuffer | undefined;
  if (h.spans) {
    mask = gpu.upload(decayMask(h.spans, 0, n));
    bufs.push(mask);
  }
  return {
    range: { params: ref(P), grads: ref(G), m: ref(M), v: ref(V), numel: n, decayMask: mask },
    bufs,
  };
}

/** Decay per element as the mask defines it: padding floats share their block's value. */
function perElementDecay(h: HostRange): Float64Array {
  if (!h.spans) return new Float64Array(h.numel).fill(1);
  const mask = decayMask(h.spans, 0, h.numel);
  return Float64Array.from({ length: h.numel }, (_, i) => mask[Math.floor(i / 64)]);
}

interface Scenario {
  sizes: number[];
  masks: boolean[];
  steps: number;
  hyper: AdamWHyper;
  gradScale: number;
  gradRange: number;
  opts?: Partial<AdamWOptions>;
}

/** Runs `steps` optimizer steps on the GPU and in float64; returns the worst tolerance ratio. */
async function runScenario(gpu: Gpu, sc: Scenario): Promise<{ ratio: number; norms: number[][] }> {
  const hosts: HostRange[] = sc.sizes.map((n, i) => ({
    numel: n,
    p: seededValues(n, 100 + i),
    spans: spansFor(n, sc.masks[i]),
  }));
  const total = sc.sizes.reduce((a, b) => a + b, 0);
  const opt = await AdamW.create(gpu, { numel: total, ...sc.hyper, ...sc.opts });
  const dev = hosts.map((h) =>
    uploadRange(gpu, h, new Float32Array(h.numel), new Float32Array(h.numel))
  );
  const ref: AdamWRefState = {
    p: Float64Array.from(hosts.flatMap((h) => Array.from(h.p))),
    m: new Float64Array(total),
    v: new Float64Array(total),
  };
  const decay = Float64Array.from(hosts.flatMap((h) => Array.from(perElementDecay(h))));
  const schedule = {
    kind: "cosine",
    lr: 0.02,
    warmupSteps: 1,
    totalSteps: sc.steps + 2,
    minRatio: 0.3,
  } as const;
  const norms: number[][] = [];
  try {
    for (let k = 0; k < sc.steps; k++) {
      // Odd steps get 10× smaller grads, so a multi-step run has clipped and unclipped steps.
      const range = sc.gradRange * (k % 2 === 0 ? 1 : 0.1);
      const grads = hosts.map((h, i) => seededValues(h.numel, 1000 * k + i, -range, range));
      grads.forEach((g, i) => gpu.write(dev[i].bufs[1], g));
      // k + 1 so warmup's lr 0 at k = 0 does not hide the first update
      const lr = lrAt(schedule, k + 1);
      const rec = gpu.recorder("adamw test");
      opt.encodeStep(rec, {
        ranges: dev.map((d) => d.range),
        lr,
        step: k + 1,
        gradScale: sc.gradScale,
      });
      rec.submit();
      const st = await opt.readStats();
      const want = adamwRef(ref, Float64Array.from(grads.flatMap((g) => Array.from(g))), decay, {
        lr,
        step: k + 1,
        gradScale: sc.gradScale,
        hyper: sc.hyper,
      });
      norms.push([st.gradNorm, want.gradNorm, st.clipCoef, want.clipCoef]);
    }
    let ratio = 0, at = 0;
    for (let i = 0; i < hosts.length; i++) {
      const n = hosts[i].numel;
      const [P, , M, V] = dev[i].bufs;
      const p = await gpu.readFloat32(P, n + SENTINELS),
        m = await gpu.readFloat32(M, n),
        v = await gpu.readFloat32(V, n);
      const delta = p.subarray(0, n).map((x, j) => x - hosts[i].p[j]);
      const refDelta = ref.p.subarray(at, at + n).map((x, j) => x - hosts[i].p[j]);
      ratio = Math.max(
        ratio,
        toleranceRatio(delta, refDelta, 2e-7 * sc.steps, 2e-4),
        toleranceRatio(m, ref.m.subarray(at, at + n), 1e-8, 1e-4),
        toleranceRatio(v, ref.v.subarray(at, at + n), 1e-10, 1e-4),
      );
      if (p.subarray(n).some((x) => x !== SENTINEL)) ratio = Infinity;
      at += n;
    }
    return { ratio, norms };
  } finally {
    opt.destroy();
    dev.forEach((d) => d.bufs.forEach((b) => b.destroy()));
  }
}

const BASE: AdamWHyper = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1 };

Deno.test("AdamW matches the float64 reference", async (t) => {
  const gpu = await Gpu.create();
  try {
    await t.step("one step, mask, clipping active", async () => {
      const { ratio, norms } = await runScenario(gpu, {
        sizes: [9001],
        masks: [true],
        steps: 1,
        hyper: BASE,
        gradScale: 1,
        gradRange: 1,
      });
      const [norm, refNorm, clip, refClip] = norms[0];
      assert(refNorm > 10 && refClip < 0.1, `scenario must clip: norm ${refNorm}`);
      assert(Math.abs(norm - refNorm) <= 1e-5 * refNorm, `grad norm ${norm} vs ${refNorm}`);
      assert(Math.abs(clip - refClip) <= 1e-5 * refClip, `clip ${clip} vs ${refClip}`);
      assert(ratio <= 1, `error ${ratio.toFixed(2)}× tolerance`);
    });
    await t.step("one step, clipping inactive (coefficient exactly 1)", async () => {
      const { ratio, norms } = await runScenario(gpu, {
        sizes: [777],
        masks: [false],
        steps: 1,
        hyper: { ...BASE, maxGradNorm: 1e4 },
        gradScale: 1,
        gradRange: 0.1,
      });
      assert(norms[0][2] === 1 && norms[0][3] === 1, `clip coefficients ${norms[0]}`);
      assert(ratio <= 1, `error ${ratio.toFixed(2)}× tolerance`);
    });
    await t.step("clipping off (maxGradNorm 0) still reports the norm", async () => {
      const { ratio, norms } = await runScenario(gpu, {
        sizes: [4096],
        masks: [false],
        steps: 1,
        hyper: { ...BASE, maxGradNorm: 0 },
        gradScale: 1,
        gradRange: 3,
      });
      assert(norms[0][2] === 1 && norms[0][0] > 50, `stats ${norms[0]}`);
      assert(ratio <= 1, `error ${ratio.toFixed(2)}× tolerance`);
    });
    for (const laneLayout of ["contiguous", "interleaved"] as const) {
      await t.step(
        `5 steps, 3 ranges (one split in chunks), accumulation ½, ${laneLayout}`,
        async () => {
          const { ratio, norms } = await runScenario(gpu, {
            sizes: [10001, 3, 4160],
            masks: [true, false, true],
            steps: 5,
            hyper: { ...BASE, beta2: 0.95 },
            gradScale: 0.5,
            gradRange: 0.05,
            opts: { laneLayout, chunkFloats: 4096 },
          });
          for (const [g, w] of norms) assert(Math.abs(g - w) <= 1e-5 * w, `grad norm ${g} vs ${w}`);
          assert(
            norms.some((n) => n[3] < 1) && norms.some((n) => n[3] === 1),
            "want steps with and without clipping",
          );
          assert(ratio <= 1, `error ${ratio.toFixed(2)}× tolerance`);
        },
      );
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("AdamW edge cases: non-finite grads, zeroing grads", async (t) => {
  const gpu = await Gpu.create();
  try {
    await t.step("non-finite gradient skips the update and says so", async () => {
      const opt = await AdamW.create(gpu, { numel: 100 });
      const p = seededValues(100, 5), g = seededValues(100, 6);
      g[37] = NaN;
      const d = uploadRange(
        gpu,
        { numel: 100, p, spans: null },
        new Float32Array(100),
        new Float32Array(100),
      );
      gpu.write(d.bufs[1], g);
      const rec = gpu.recorder();
      opt.encodeStep(rec, { ranges: [d.range], lr: 0.1, step: 1 });
      rec.submit();
      const st = await opt.readStats();
      const after = await gpu.readFloat32(d.bufs[0], 100);
      assert(!st.finite && Number.isNaN(st.gradNorm), `stats ${JSON.stringify(st)}`);
      assert(after.every((x, i) => x === p[i]), "params changed despite a NaN gradient");
      opt.destroy();
      d.bufs.forEach((b) => b.destroy());
    });
    await t.step("zero_grads clears the range and nothing past it", async () => {
      const opt = await AdamW.create(gpu, { numel: 5000 });
      const d = uploadRange(
        gpu,
        { numel: 4099, p: new Float32Array(4099), spans: null },
        new Float32Array(4099),
        new Float32Array(4099),
      );
      gpu.write(d.bufs[1], withSentinels(seededValues(4099, 9)));
      const rec = gpu.recorder();
      opt.encodeZeroGrads(rec, [d.range]);
      rec.submit();
      const g = await gpu.readFloat32(d.bufs[1], 4099 + SENTINELS);
      assert(g.subarray(0, 4099).every((x) => x === 0), "grads not zeroed");
      assert(g.subarray(4099).every((x) => x === SENTINEL), "zeroing ran past the range");
      opt.destroy();
      d.bufs.forEach((b) => b.destroy());
    });
  } finally {
    gpu.destroy();
  }
});

Deno.test("decay masks and argument checks", () => {
  const spans: DecaySpan[] = [
    { name: "w", offset: 0, size: 100, decay: true },
    { name: "norm", offset: 128, size: 64, decay: false },
    { name: "w2", offset: 192, size: 65, decay: true },
  ];
  const m = decayMask(spans, 64, 200);
  assert(m.length === 4 && m[0] === 1 && m[1] === 0 && m[2] === 1 && m[3] === 1, `mask ${m}`);
  assertThrows(
    () =>
      decayMask(
        [{ name: "a", offset: 0, size: 70, decay: true }, {
          name: "b",
          offset: 70,
          size: 10,
          decay: false,
        }],
        0,
        80,
      ),
    "KernelArgumentError",
    "share a 64-float block",
  );
  for (
    const [name, want] of [
      ["model.layers.0.self_attn.q_proj.weight", true],
      ["model.layers.0.self_attn.q_proj.bias", false],
      ["model.layers.0.input_layernorm.weight", false],
      ["model.layers.3.self_attn.k_norm.weight", false],
      ["model.norm.weight", false],
      ["model.embed_tokens.weight", true],
      ["base_model.model.model.layers.0.mlp.down_proj.lora_B.weight", true],
    ] as const
  ) {
    assert(hfDecays(name) === want, `${name}: expected decay ${want}`);
  }
});
