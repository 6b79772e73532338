// The matmul tuner (src/ops/autotune.ts) and its picks (src/ops/tuned_picks.ts): a model's
// products, the reference check that keeps a wrong kernel out, picks that Matmul then runs and
// that compute the reference's product, and the picks file (per adapter and kernel set; a bad
// file is a named error that says what to do).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import {
  checkVariant,
  matmulWorkload,
  tuneMatmuls,
  type WorkloadShape,
} from "../../src/ops/autotune.ts";
import { Matmul, type MatmulVariant, shapeBucket } from "../../src/ops/matmul.ts";
import { matmulRef, seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import {
  adapterKey,
  kernelSetId,
  parseTunedPicks,
  resetTunedPicks,
  tunedPicksFor,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";
import { matmulPicks } from "../../src/ops/tuning.ts";

const preset = async (name: string) =>
  parseModelConfig(
    JSON.parse(
      await Deno.readTextFile(new URL(`../../configs/models/${name}.json`, import.meta.url)),
    ),
  );

Deno.test("matmul workload: a Llama-family model's products at decode and training rows, counted per step", async () => {
  const c = await preset("tiny-llama");
  const w = matmulWorkload(c, { decodeRows: [1], trainRows: 64, full: true });
  const find = (form: string, M: number, N: number, K: number) =>
    w.find((x) => x.shape.form === form && x.shape.M === M && x.shape.N === N && x.shape.K === K);
  const H = c.hiddenSize, I = c.intermediateSize, L = c.numLayers;
  // gate and up share a shape: one entry run 2L times a step; the head runs once.
  assertEquals(find("nt", 1, I, H)?.count, 2 * L);
  assertEquals(find("nt", 1, c.vocabSize, H)?.count, 1);
  assertEquals(find("nn", 64, H, I)?.count, 2 * L, "the input gradient through gate and up");
  assertEquals(find("tn", H, I, 64)?.count, L, "down's weight gradient [H, I] over 64 rows");
  // LoRA: no weight gradients of the base; a half base: its nt and nn read half B.
  const lora = matmulWorkload(c, { decodeRows: [1], trainRows: 64, halfB: true });
  assert(lora.every((x) => x.shape.form !== "tn"));
  assert(lora.every((x) => x.shape.halfB === true));
  // The head at the trainer's logit rows, as often as it takes to cover the chunk.
  const chunked = matmulWorkload(c, { decodeRows: [], trainRows: 100, logitRows: 32 });
  assertEquals(
    chunked.filter((x) => x.shape.N === c.vocabSize).map((x) => [x.shape.M, x.count]),
    [[32, 4]],
  );
  // A prefill's rows; a tiny model compiles no 16–32-row picks, so its 16-row products run the
  // 8–15-row bucket's pick, and are tuned with it.
  const pre = matmulWorkload(c, { decodeRows: [8], trainRows: 0, prefillRows: [16] });
  assertEquals([...new Set(pre.map((x) => `${x.shape.M} ${x.bucket}`))], ["8 skinny", "16 skinny"]);
  assert(!pre.some((x) => x.shape.M === 16 && x.shape.N === c.vocabSize), "no head at prefill");
  assertThrows(() => matmulWorkload({ ...c, modelType: "gpt2" }), "RangeError", "gpt2");
});

// A split-K kernel at 48 lanes: its workgroup sum halves a power of two, so it drops lanes.
const BROKEN: MatmulVariant = { name: "sk_r1_wg48", kind: "splitk", r: 1, c: 4, wgx: 48, wgy: 1 };

Deno.test("matmul tuner: refuses a kernel that misses the float64 reference, picks by measured time, and Matmul runs the picks exactly", async () => {
  const gpu = await Gpu.create();
  try {
    assertEquals(await checkVariant(gpu, BROKEN, "nt"), false, "the 48-lane split-K is wrong");
    const c = await preset("tiny-llama");
    const workload: WorkloadShape[] = matmulWorkload(c, {
      decodeRows: [1],
      prefillRows: [16],
      trainRows: 64,
    });
    const named = ["r1c8_wg32x1", "r8c8_wg8x1", "sk_r1_wg32"];
    const { MATMUL_VARIANTS } = await import("../../src/ops/matmul.ts");
    const candidates = [...MATMUL_VARIANTS.filter((v) => named.includes(v.name)), BROKEN];
    const r = await tuneMatmuls(gpu, workload, { candidates, minMs: 5 });
    assert(r.refused.includes("sk_r1_wg48:nt"), `refused: ${r.refused.join(", ")}`);
    const keyOf = (w: WorkloadShape) => `${w.shape.form}:${w.bucket ?? shapeBucket(w.shape)}`;
    const keys = [...new Set(workload.map(keyOf))];
    assertEquals(Object.keys(r.picks).sort(), keys.sort());
    for (const b of r.buckets) {
      assert(b.best !== BROKEN.name, `${b.key} picked the wrong kernel`);
      assert(b.bestMs <= b.currentMs, `${b.key}: the pick ${b.bestMs} ms, built-in ${b.currentMs}`);
    }

    // A product with an operand over one binding runs as split tensors: skipped, said so.
    const lines: string[] = [];
    const big = gpu.device.limits.maxStorageBufferBindingSize / 4 + 4;
    const none = await tuneMatmuls(
      gpu,
      [{ shape: { form: "nt", M: 1, N: big, K: 1 }, count: 1, what: "a huge head" }],
      { candidates, log: (l) => lines.push(l) },
    );
    assertEquals([none.picks, lines], [{}, [
      "skipped a huge head: an operand exceeds one binding, so it runs as split tensors",
    ]]);

    // Registered for this adapter, the picks are what matmulPicks and Matmul use.
    useTunedPicks([{
      adapter: adapterKey(gpu.ctx.info),
      kernels: kernelSetId(),
      picks: r.picks,
      tunedFor: "test",
      date: new Date().toISOString(),
    }]);
    try {
      for (const [k, v] of Object.entries(r.picks)) assertEquals(matmulPicks(gpu.ctx.info)[k], v);
      // The buckets the model compiles: a 16-row product runs the 8–15-row pick.
      const m = await Matmul.create(gpu, {}, [...new Set(workload.map((w) => w.bucket!))]);
      for (const w of workload) {
        const s = w.shape;
        const pick = r.picks[keyOf(w)];
        assertEquals(m.variantFor(s).name, pick, `${s.form} ${s.M}x${s.N}x${s.K}`);
        const [ra, rb] = s.form === "tn" ? [s.K, s.M] : [s.M, s.K];
        const a = seededValues(ra * rb, 11), b = seededValues(s.K * s.N, 12);
        const A = gpu.upload(a), B = gpu.upload(b), C = gpu.zeros(s.M * s.N);
        const rec = gpu.recorder();
        m.encode(rec, s, A, B, C);
        rec.submit();
        const got = await gpu.readFloat32(C, s.M * s.N);
        [A, B, C].forEach((x) => x.destroy());
        const ratio = toleranceRatio(got, matmulRef(s, a, b), 1e-4, 1e-4);
        assert(ratio <= 1, `${pick} on ${s.form} ${s.M}x${s.N}x${s.K}: ${ratio}× the tolerance`);
      }
    } finally {
      resetTunedPicks();
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("tuned picks: only this adapter's entry of this kernel set is used; a bad file is a named error saying what to do", () => {
  const info = {
    vendor: "v",
    architecture: "a",
    device: "d",
    description: "some GPU",
    isFallback: false,
    adapterClass: "gpu" as const,
  };
  const entry = (adapter: string, kernels: string, pick: string) => ({
    adapter,
    kernels,
    picks: { "nt:square": pick },
    tunedFor: "t",
    date: "2026-11-27T00:00:00.000Z",
  });
  let file = withEntry(null, entry(adapterKey(info), kernelSetId(), "r8c8_wg8x4"));
  file = withEntry(
    file,
    entry(adapterKey({ ...info, adapterClass: "cpu" }), kernelSetId(), "r4c4_wg16x1"),
  );
  file = withEntry(file, entry(adapterKey(info), "00000000", "r8c4_wg16x1"));
  // The same adapter and kernel set again replaces its entry.
  file = withEntry(file, entry(adapterKey(info), kernelSetId(), "r16c8_wg8x1"));
  assertEquals(file.entries.length, 3);
  const parsed = parseTunedPicks(JSON.stringify(file), "picks.json");
  resetTunedPicks();
  try {
    useTunedPicks(parsed.entries);
    assertEquals(tunedPicksFor(info)?.picks, { "nt:square": "r16c8_wg8x1" });
    assertEquals(matmulPicks(info)["nt:square"], "r16c8_wg8x1");
    // Another adapter (even the same one forced to another class) and unknown variants: not used.
    assertEquals(tunedPicksFor({ ...info, description: "another GPU" }), null);
    resetTunedPicks();
    useTunedPicks([entry(adapterKey(info), kernelSetId(), "no_such_kernel")]);
    assertEquals(tunedPicksFor(info)?.picks, {});
  } finally {
    resetTunedPicks();
  }
  for (
    const [text, says] of [
      ["{", "not JSON"],
      ['{"format":"x"}', "not a matmul picks file"],
      [JSON.stringify({ ...file, version: 2 }), "version 2"],
      [JSON.stringify({ ...file, entries: [{ adapter: "a" }] }), "entry 0"],
      [
        JSON.stringify({ ...file, entries: [{ ...file.entries[0], picks: { "nt:huge": "x" } }] }),
        "entry 0",
      ],
    ]
  ) {
    const e = assertThrows(() => parseTunedPicks(text, "/x/picks.json"), "TunedPicksError", says);
    assert(e.message.includes("/x/picks.json") && e.message.includes("deno task tune"), e.message);
  }
});
