// The CPU oracle against hand-computed cases, HF semantics as properties (RoPE pairing and
// relativity, GQA as repeat_kv, tied head, biases, causality), and an independent numpy
// implementation of the three architectures (test/fixtures/numpy_reference.py).

import assert from "node:assert/strict";
import { maxAbsDiff } from "../assert.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import {
  applyRope,
  causalAttention,
  logitsAt,
  logSoftmax,
  referenceForward,
  referenceGreedy,
  referenceLogprobs,
  rmsNorm,
  ropeInvFreq,
} from "../../src/model/reference.ts";
import { loadModel, type ModelWeights, ParamLayout, slice } from "../../src/model/weights.ts";

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what = "") => {
  assert.equal(a.length, b.length, `${what} length`);
  for (let i = 0; i < a.length; i++) {
    assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]} (tol ${tol})`);
  }
};
Deno.test("rmsNorm: x / sqrt(mean(x²) + eps) * w, by hand", () => {
  const r = 1 / Math.sqrt(7.5); // mean of 1, 4, 9, 16
  close(rmsNorm([1, 2, 3, 4], [1, 1, 2, 0.5], 0), [r, 2 * r, 6 * r, 2 * r], 1e-15);
  const r1 = 1 / Math.sqrt(8.5);
  close(rmsNorm([1, 2, 3, 4], [1, 1, 1, 1], 1), [r1, 2 * r1, 3 * r1, 4 * r1], 1e-15);
});

Deno.test("RoPE: identity at position 0; rotate-half pairs i with i + D/2, by hand", () => {
  const inv = ropeInvFreq(4, 100); // [1, 100^(-1/2)] = [1, 0.1]
  close(inv, [1, 0.1], 1e-16);
  assert.deepEqual([...applyRope([1, 2, 3, 4], 0, inv)], [1, 2, 3, 4]);
  const [c1, s1, c2, s2] = [Math.cos(1), Math.sin(1), Math.cos(0.1), Math.sin(0.1)];
  // pairs (x0, x2) at angle 1 and (x1, x3) at angle 0.1 — not the interleaved (x0, x1) layout
  close(applyRope([1, 2, 3, 4], 1, inv), [
    1 * c1 - 3 * s1,
    2 * c2 - 4 * s2,
    3 * c1 + 1 * s1,
    4 * c2 + 2 * s2,
  ], 1e-15);
  close(ropeInvFreq(8, 10000), [1, 0.1, 0.01, 0.001], 1e-18);
});

Deno.test("RoPE: q·k after rotation depends only on the position difference", () => {
  const inv = ropeInvFreq(8, 50);
  const q = [0.3, -1, 2, 0.5, 0.1, 0.7, -0.2, 1.1], k = [1, 0.2, -0.4, 0.9, 0.3, -1.2, 0.5, 0.8];
  const dot = (m: number, n: number) => {
    const a = applyRope(q, m, inv), b = applyRope(k, n, inv);
    return a.reduce((s, x, i) => s + x * b[i], 0);
  };
  assert.ok(Math.abs(dot(7, 3) - dot(104, 100)) < 1e-12);
  assert.ok(Math.abs(dot(7, 3) - dot(3, 7)) > 1e-3); // and it is not symmetric in m, n
});

Deno.test("attention: position 0 returns v of its kv head; equal scores average v", () => {
  const q = [Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8]), new Float64Array(8)]; // NH=4, D=2
  const k = [Float64Array.from([1, -1, 2, 0]), new Float64Array(4)]; // KV=2
  const v = [Float64Array.from([10, 11, 20, 21]), Float64Array.from([30, 31, 40, 41])];
  const out = causalAttention(q, k, v, 4, 2, 2);
  // heads 0,1 read kv head 0; heads 2,3 read kv head 1 (repeat_kv), whatever the scores
  assert.deepEqual([...out[0]], [10, 11, 10, 11, 20, 21, 20, 21]);
  // q = 0 at position 1: all scores 0, uniform over positions 0 and 1
  assert.deepEqual([...out[1]], [20, 21, 20, 21, 30, 31, 30, 31]);
});

/** A 1-layer llama with C = D = 2, one head, vocab 4, all weights zero except as `set` says. */
function handModel(set: (w: ModelWeights) => void): ModelWeights {
  const config = parseModelConfig({
    model_type: "llama",
    vocab_size: 4,
    hidden_size: 2,
    intermediate_size: 1,
    num_hidden_layers: 1,
    num_attention_heads: 1,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: true,
  });
  const layout = new ParamLayout(config);
  const w = { config, layout, data: new Float32Array(layout.totalFloats) };
  const v = layout.layerView(0);
  slice(w.data, layout.embed).set([1, 0, 0, 2, 3, -1, -1, -1]);
  for (const t of [v.inputNorm, v.postNorm, layout.finalNorm]) slice(w.data, t).fill(1);
  slice(w.data, v.v!).set([1, 0, 0, 1]);
  slice(w.data, v.o).set([1, 0, 0, 1]);
  slice(w.data, v.up).set([1, 1]); // gate stays 0: silu(0) * up = 0, so the MLP adds nothing
  slice(w.data, v.down).set([1, 1]);
  set(w);
  return w;
}

const E = [[1, 0], [0, 2], [3, -1], [-1, -1]];
const n = (x: number[]) => {
  const r = 1 / Math.sqrt((x[0] ** 2 + x[1] ** 2) / 2 + 1e-6);
  return [x[0] * r, x[1] * r];
};
const tiedLogits = (x: number[]) => E.map((e) => e[0] * n(x)[0] + e[1] * n(x)[1]);

Deno.test("hand-computed 1-layer model, q = k = 0: x_t = e_t + mean(norm(e_s), s ≤ t)", () => {
  const w = handModel(() => {});
  const { logits } = referenceForward(w, [0, 1, 2]);
  const ne = [n(E[0]), n(E[1]), n(E[2])];
  const x0 = [1 + ne[0][0], 0 + ne[0][1]];
  const x1 = [0 + (ne[0][0] + ne[1][0]) / 2, 2 + (ne[0][1] + ne[1][1]) / 2];
  const x2 = [3 + (ne[0][0] + ne[1][0] + ne[2][0]) / 3, -1 + (ne[0][1] + ne[1][1] + ne[2][1]) / 3];
  close(logitsAt(logits, 4, 0), tiedLogits(x0), 1e-12, "t=0");
  close(logitsAt(logits, 4, 1), tiedLogits(x1), 1e-12, "t=1");
  close(logitsAt(logits, 4, 2), tiedLogits(x2), 1e-12, "t=2");
});

Deno.test("hand-computed 1-layer model with q = k = identity: RoPE angle 1 rad per position", () => {
  const w = handModel((w) => {
    const v = w.layout.layerView(0);
    slice(w.data, v.q!).set([1, 0, 0, 1]);
    slice(w.data, v.k!).set([1, 0, 0, 1]);
  });
  const { logits } = referenceForward(w, [2, 1]);
  const a = n(E[2]), b = n(E[1]);
  // D = 2: inv_freq = [1]; position 1 rotates (x0, x1) by 1 radian; position 0 not at all.
  const rot = (
    x: number[],
  ) => [x[0] * Math.cos(1) - x[1] * Math.sin(1), x[1] * Math.cos(1) + x[0] * Math.sin(1)];
  const q1 = rot(b);
  const s0 = (q1[0] * a[0] + q1[1] * a[1]) / Math.SQRT2; // k0 = a, unrotated
  const s1 = (b[0] ** 2 + b[1] ** 2) / Math.SQRT2; // q1·k1: both rotated alike
  const p0 = 1 / (1 + Math.exp(s1 - s0)), p1 = 1 - p0;
  const x0 = [E[2][0] + a[0], E[2][1] + a[1]]; // position 0 attends only to itself: v0 = a
  const x1 = [E[1][0] + p0 * a[0] + p1 * b[0], E[1][1] + p0 * a[1] + p1 * b[1]];
  close(logitsAt(logits, 4, 0), tiedLogits(x0), 1e-12, "t=0");
  close(logitsAt(logits, 4, 1), tiedLogits(x1), 1e-12, "t=1");
});

const MICRO = ["micro-llama", "micro-qwen2", "micro-qwen3"];
const fixtureDir = (name: string) => new URL(`../fixtures/${name}`, import.meta.url).pathname;

for (const name of MICRO) {
  Deno.test(`${name}: logits match the independent numpy implementation to 1e-12`, async () => {
    const w = await loadModel(denoFolder(fixtureDir(name)));
    const golden = JSON.parse(await Deno.readTextFile(`${fixtureDir(name)}/numpy_logits.json`)) as {
      ids: number[];
      shape: [number, number];
      logits: number[];
    };
    const { logits } = referenceForward(w, golden.ids);
    assert.deepEqual(golden.shape, [golden.ids.length, w.config.vocabSize]);
    close(logits, golden.logits, 1e-12, name);
    assert.ok(
      maxAbsDiff(logits, new Float64Array(logits.length)) > 0.5,
      "logits are not trivially small",
    );
  });
}

const microConfig = async (name: string) =>
  JSON.parse(await Deno.readTextFile(`${fixtureDir(name)}/config.json`)) as Record<string, unknown>;
const IDS = [3, 1, 4, 1, 5, 9, 2, 6];
const INIT = { seed: 11, std: 0.3, biasStd: 0.3, normNoise: 0.2 };

Deno.test("GQA = multi-head attention with each kv head repeated for its group (repeat_kv)", async () => {
  const raw = await microConfig("micro-llama"); // 4 heads, 2 kv heads, head_dim 4
  const gqa = initModel(parseModelConfig(raw), INIT);
  const mha = initModel(parseModelConfig({ ...raw, num_key_value_heads: 4 }), INIT);
  for (const t of gqa.layout.tensors) {
    const src = slice(gqa.data, t), dst = slice(mha.data, mha.layout.get(t.name));
    if (src.length === dst.length) {
      dst.set(src);
      continue;
    }
    // k/v weights [KV*D, C] and biases [KV*D]: kv head j's rows go to heads 2j and 2j+1
    const perHead = src.length / 2;
    for (let j = 0; j < 2; j++) {
      const block = src.subarray(j * perHead, (j + 1) * perHead);
      dst.set(block, 2 * j * perHead);
      dst.set(block, (2 * j + 1) * perHead);
    }
  }
  close(referenceForward(gqa, IDS).logits, referenceForward(mha, IDS).logits, 1e-12, "gqa vs mha");
});

Deno.test("tied head = untied head holding a copy of the embedding; a different head differs", async () => {
  const raw = await microConfig("micro-qwen2"); // tied
  const tied = initModel(parseModelConfig(raw), INIT);
  const untied = initModel(parseModelConfig({ ...raw, tie_word_embeddings: false }), INIT);
  const base = referenceForward(tied, IDS).logits;
  assert.ok(maxAbsDiff(base, referenceForward(untied, IDS).logits) > 0.1);
  slice(untied.data, untied.layout.lmHead).set(slice(tied.data, tied.layout.embed));
  close(referenceForward(untied, IDS).logits, base, 0, "copied head");
});

Deno.test("qwen2 with zero biases computes exactly llama; nonzero biases change the logits", async () => {
  const raw = { ...(await microConfig("micro-qwen2")), tie_word_embeddings: false };
  const llama = initModel(parseModelConfig({ ...raw, model_type: "llama" }), {
    ...INIT,
    biasStd: 0,
  });
  const qwen2 = initModel(parseModelConfig(raw), { ...INIT, biasStd: 0 });
  const l = referenceForward(llama, IDS).logits;
  close(referenceForward(qwen2, IDS).logits, l, 0, "zero biases");
  const biased = initModel(parseModelConfig(raw), INIT);
  assert.ok(maxAbsDiff(referenceForward(biased, IDS).logits, l) > 0.01);
});

Deno.test("qwen3 q/k norms make logits invariant to scaling q_proj and k_proj; llama's are not", async () => {
  const scaleQK = (w: ModelWeights) => {
    const out = { ...w, data: w.data.slice() };
    for (let l = 0; l < w.config.numLayers; l++) {
      const v = w.layout.layerView(l);
      for (const t of [v.q!, v.k!]) slice(out.data, t).forEach((x, i, a) => (a[i] = x * 8));
    }
    return out;
  };
  // eps 1e-12 so that RMSNorm is scale invariant to far below the tolerance
  const tinyEps = { ...(await microConfig("micro-qwen3")), rms_norm_eps: 1e-12 };
  const q3 = initModel(parseModelConfig(tinyEps), INIT);
  close(referenceForward(scaleQK(q3), IDS).logits, referenceForward(q3, IDS).logits, 1e-9, "qwen3");
  const ll = initModel(parseModelConfig(await microConfig("micro-llama")), { ...INIT, biasStd: 0 });
  assert.ok(
    maxAbsDiff(referenceForward(scaleQK(ll), IDS).logits, referenceForward(ll, IDS).logits) > 0.01,
  );
});

Deno.test("causal: a position's logits ignore later tokens; shifted positions change nothing", async () => {
  for (const name of MICRO) {
    const w = initModel(parseModelConfig(await microConfig(name)), INIT);
    const V = w.config.vocabSize;
    const full = referenceForward(w, IDS).logits;
    const prefix = referenceForward(w, IDS.slice(0, 3)).logits;
    close(full.subarray(0, 3 * V), prefix, 0, `${name} prefix`);
    const other = referenceForward(w, [...IDS.slice(0, 3), 7, 7, 7, 7, 7]).logits;
    close(other.subarray(0, 3 * V), prefix, 0, `${name} changed suffix`);
    const shifted = referenceForward(w, IDS, { positions: IDS.map((_, t) => t + 37) }).logits;
    close(shifted, full, 1e-9, `${name} shifted positions`);
  }
});

Deno.test("hidden states: embeddings first, one per layer", async () => {
  const w = initModel(parseModelConfig(await microConfig("micro-llama")), INIT);
  const { hiddenStates } = referenceForward(w, [5, 0]);
  assert.equal(hiddenStates.length, w.config.numLayers + 1);
  const C = w.config.hiddenSize;
  const embed = slice(w.data, w.layout.embed);
  close(
    hiddenStates[0],
    [...embed.subarray(5 * C, 6 * C), ...embed.subarray(0, C)],
    0,
    "embeddings",
  );
});

Deno.test("referenceLogprobs = log-softmax of the previous position's logits at the next id", async () => {
  const w = await loadModel(denoFolder(fixtureDir("micro-qwen3")));
  const V = w.config.vocabSize;
  const lp = referenceLogprobs(w, IDS);
  assert.equal(lp.length, IDS.length - 1);
  const { logits } = referenceForward(w, IDS);
  for (let t = 1; t < IDS.length; t++) {
    const row = logitsAt(logits, V, t - 1);
    const lse = Math.log(row.reduce((s, x) => s + Math.exp(x), 0));
    assert.ok(Math.abs(lp[t - 1] - (row[IDS[t]] - lse)) < 1e-12);
    assert.ok(lp[t - 1] < 0);
  }
  // no overflow for large logits (exp(1000) would be inf)
  close(logSoftmax([1000, 1000]), [-Math.LN2, -Math.LN2], 1e-12, "stable");
  assert.equal(referenceLogprobs(w, [3]).length, 0);
});

Deno.test("referenceGreedy picks each step's argmax and stops at a stop id", async () => {
  const w = await loadModel(denoFolder(fixtureDir("micro-llama")));
  const out = referenceGreedy(w, [1, 2, 3], 4);
  assert.equal(out.length, 4);
  const ids = [1, 2, 3];
  for (const next of out) {
    const row = logitsAt(referenceForward(w, ids).logits, 32, ids.length - 1);
    assert.equal(next, row.indexOf(Math.max(...row)));
    ids.push(next);
  }
  assert.deepEqual(referenceGreedy(w, [1, 2, 3], 4, [out[0]]), [out[0]]);
});

Deno.test("bad inputs: token ids outside the vocabulary, positions of the wrong length", async () => {
  const w = await loadModel(denoFolder(fixtureDir("micro-llama")));
  assert.throws(() => referenceForward(w, [32]), RangeError);
  assert.throws(() => referenceForward(w, [1.5]), RangeError);
  assert.throws(() => referenceForward(w, [1, 2], { positions: [0] }), RangeError);
});
