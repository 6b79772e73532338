// The sampler: Philox against Random123's known answers, the reference's HF semantics on
// hand-made rows, argument errors, and every GPU case of sampling_cases.ts against the float64
// reference on the WebGPU adapter Deno finds, once per kernel variant (workgroup and lane).

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  packSamplingParams,
  PARAM_WORDS,
  Sampler,
  type SamplerVariant,
  SPLIT_MIN_VOCAB,
  SPLIT_SLOTS,
} from "../../src/model/sampling.ts";
import {
  applyRepetitionPenalty,
  philox4x32_10,
  sampleRef,
  samplingUniform,
  truncatedProbsRef,
} from "../../src/model/sampling_reference.ts";
import { runBatch, samplingCases } from "./sampling_cases.ts";

Deno.test("philox4x32_10 matches Random123's known-answer vectors", () => {
  assertEquals(philox4x32_10([0, 0, 0, 0], [0, 0]), [
    0x6627e8d5,
    0xe169c58d,
    0xbc57ac4c,
    0x9b00dbd8,
  ]);
  const ones = 0xffffffff;
  assertEquals(philox4x32_10([ones, ones, ones, ones], [ones, ones]), [
    0x408f276d,
    0x41c83b0e,
    0xa20bc7c6,
    0x6d5451fd,
  ]);
  assertEquals(
    philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
    [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
  );
});

Deno.test("samplingUniform: 24-bit values in [0, 1), keyed by every coordinate", () => {
  const u = samplingUniform(1, 2, 3);
  assert(u >= 0 && u < 1 && Math.fround(u) === u && Number.isInteger(u * 2 ** 24), `u = ${u}`);
  const others = [samplingUniform(2, 2, 3), samplingUniform(1, 3, 3), samplingUniform(1, 2, 4)];
  assert(others.every((o) => o !== u), "seed, sequence and step must each change the draw");
  let sum = 0;
  for (let i = 0; i < 4000; i++) sum += samplingUniform(9, i, 0);
  assert(Math.abs(sum / 4000 - 0.5) < 0.02, `mean of 4000 draws ${sum / 4000}`);
});

Deno.test("repetition penalty follows HF: once per distinct id, x>0 → x/p, else x·p", () => {
  const x = [2, -1, 0.5, -3, 1];
  // ids 0 and 1 seen (0 twice), 7 is outside the vocabulary and ignored.
  assertEquals(Array.from(applyRepetitionPenalty(x, [0, 1, 0, 7], 2)), [1, -2, 0.5, -3, 1]);
  assertEquals(Array.from(applyRepetitionPenalty(x, [0, 3], 0.5)), [4, -1, 0.5, -1.5, 1]);
});

Deno.test("reference warpers on hand-made rows", () => {
  const base = { seed: 0, sequence: 0, step: 0 };
  // Greedy picks the lowest id of a tie; its log-prob is over the full vocabulary at T = 1.
  const g = sampleRef([1, 3, 3, 0], { ...base, temperature: 0 });
  assertEquals(g.id, 1);
  assert(Math.abs(g.logprob - (3 - Math.log(Math.E + 2 * Math.E ** 3 + 1))) < 1e-12);
  // top-k = 2 keeps both tokens tied at the 2nd value as well: {3, 2, 2}.
  const k = truncatedProbsRef([0, 2, 3, 2, 1], { ...base, topK: 2 });
  assertEquals(Array.from(k, (q) => q > 0), [false, true, true, true, false]);
  // top-p: probs ∝ e^z; the top token alone has 0.644 of the mass, the top two 0.881.
  const z = [3, 2, 1, 0];
  assertEquals(Array.from(truncatedProbsRef(z, { ...base, topP: 0.6 }), (q) => q > 0), [
    true,
    false,
    false,
    false,
  ]);
  assertEquals(Array.from(truncatedProbsRef(z, { ...base, topP: 0.7 }), (q) => q > 0), [
    true,
    true,
    false,
    false,
  ]);
  assertEquals(Array.from(truncatedProbsRef(z, { ...base, topP: 0 }), (q) => q > 0), [
    true,
    false,
    false,
    false,
  ]);
  // The draw walks kept tokens in id order: u just below / above the first token's share.
  const p0 = Math.exp(3) / (Math.exp(3) + Math.exp(2));
  assertEquals(sampleRef(z, { ...base, topP: 0.7 }, [], p0 - 1e-9).id, 0);
  assertEquals(sampleRef(z, { ...base, topP: 0.7 }, [], p0 + 1e-9).id, 1);
});

Deno.test("packSamplingParams: layout and named errors", () => {
  const w = packSamplingParams([{
    seed: 7,
    sequence: 8,
    step: 9,
    temperature: 0.5,
    topK: 40,
    topP: 0.9,
    repetitionPenalty: 1.1,
  }]);
  assertEquals(w.length, PARAM_WORDS);
  const f = new Float32Array(w.buffer);
  assertEquals([f[0], w[1], f[2], f[3], w[4], w[5], w[6], w[7]], [
    0.5,
    40,
    Math.fround(0.9),
    Math.fround(1.1),
    7,
    8,
    9,
    0,
  ]);
  const d = new Float32Array(packSamplingParams([{ seed: 0, sequence: 0, step: 0 }]).buffer);
  assertEquals([d[0], d[2], d[3]], [1, 1, 1]);
  const base = { seed: 0, sequence: 0, step: 0 };
  assertThrows(
    () => packSamplingParams([{ ...base, temperature: -1 }]),
    "SamplingParamsError",
    "temperature",
  );
  assertThrows(
    () => packSamplingParams([base, { ...base, topP: 1.5 }]),
    "SamplingParamsError",
    "row 1: topP",
  );
  assertThrows(() => packSamplingParams([{ ...base, topK: 2.5 }]), "SamplingParamsError", "topK");
  assertThrows(
    () => packSamplingParams([{ ...base, repetitionPenalty: 0 }]),
    "SamplingParamsError",
    "repetitionPenalty",
  );
  assertThrows(() => packSamplingParams([{ ...base, step: -1 }]), "SamplingParamsError", "step");
});

// Pinned to "lane", vocabularies past llvmpipe's loop limit (the V = 152064 cases) still run the
// workgroup kernel: Sampler.variantFor, tested in sampling_lane_test.ts. "split rows" runs the
// workgroup kernel with every row over 5 workgroups and a merge (sample_chunks, sample_merge),
// as GPUs split large vocabularies; the tiny vocabularies leave some chunks empty. It leaves out
// the χ² frequency cases (thousands of draws, CI time): every reference case already checks that
// each row's token is the one whose float64 CDF interval holds the row's uniform draw.
const CONFIGS: readonly [
  string,
  { variant: SamplerVariant; rowChunks?: number },
  (name: string) => boolean,
][] = [
  ["workgroup kernel", { variant: "workgroup", rowChunks: 1 }, () => true],
  ["lane kernel", { variant: "lane" }, () => true],
  ["split rows", { variant: "workgroup", rowChunks: 5 }, (n) => !n.includes("frequencies match")],
];
for (const [label, options, runs] of CONFIGS) {
  const variant = options.variant;
  Deno.test(`sampler on the real adapter (${label})`, async (t) => {
    const gpu = await Gpu.create();
    try {
      await t.step("the HF penalty on a hand-made row, on the GPU", async () => {
        // Penalised logits [1, −2, 0.5, −3, 1]: greedy takes id 0 (tied with 4, lower id).
        const got = await runBatch(gpu, {
          vocab: 5,
          logits: Float32Array.of(2, -1, 0.5, -3, 1),
          params: [{ seed: 0, sequence: 0, step: 0, temperature: 0, repetitionPenalty: 2 }],
          history: [[0, 1, 0, 7]],
        }, options);
        assertEquals(got.ids[0], 0);
        const want = 1 - Math.log(2 * Math.E + Math.exp(-2) + Math.exp(0.5) + Math.exp(-3));
        assert(
          Math.abs(got.logprobs[0] - want) < 1e-6,
          `log-prob ${got.logprobs[0]}, want ${want}`,
        );
      });

      await t.step("encode rejects bad shapes and buffers with KernelArgumentError", async () => {
        const sampler = await Sampler.create(gpu, options);
        assertEquals(sampler.variantFor(100), variant);
        const small = gpu.zeros(4), big = gpu.zeros(1024);
        const params = gpu.upload(packSamplingParams([{ seed: 0, sequence: 0, step: 0 }]));
        // Logits are read as whole vec4s: 5 floats need 32 bytes of buffer, not 20.
        const tight = gpu.device.createBuffer({ size: 20, usage: GPUBufferUsage.STORAGE });
        const rec = gpu.recorder();
        const args = { rows: 1, vocab: 100, logits: small, params, ids: small, logprobs: small };
        const rejects = (change: object, includes: string) =>
          assertThrows(
            () => sampler.encode(rec, { ...args, ...change }),
            "KernelArgumentError",
            includes,
          );
        rejects({}, "logits holds");
        rejects({ vocab: 4, params: small }, "params");
        rejects({ vocab: 0 }, "positive");
        rejects({ vocab: 5, logits: tight }, "whole vec4s");
        rejects({ vocab: 4, logits: { buffer: big, offset: 16 } }, "not a multiple of");
        assertEquals(rec.length, 0);
        for (const b of [small, big, params, tight]) b.destroy();
        sampler.destroy();
      });

      for (const c of samplingCases().filter((c) => runs(c.name))) {
        await t.step(c.name, async () => {
          const ratio = await c.run(gpu, options);
          assert(ratio <= 1, `${c.name}: error is ${ratio.toFixed(2)}× the tolerance`);
        });
      }
    } finally {
      gpu.destroy();
    }
  });
}

Deno.test("split rows: GPUs split large vocabularies by vocabulary alone; CPU adapters never", async () => {
  const cpu = await Gpu.create({ adapterClass: "cpu" });
  const gpuClass = await Gpu.create({ adapterClass: "gpu" });
  try {
    const onCpu = await Sampler.create(cpu, { lazy: true });
    const onGpu = await Sampler.create(gpuClass, { lazy: true });
    const forced = await Sampler.create(cpu, { lazy: true, variant: "workgroup", rowChunks: 5 });
    const small = await Sampler.create(gpuClass, { lazy: true, rowChunks: 40, capacity: 128 });
    assertEquals([151936, 49152, 5003].map((v) => onCpu.chunksFor(v)), [1, 1, 1]);
    // ⌊⌈V / 4⌉ / SPLIT_UNITS⌋ from SPLIT_MIN_VOCAB words on, at most capacity / SPLIT_SLOTS.
    assertEquals(
      [151936, 49152, SPLIT_MIN_VOCAB, SPLIT_MIN_VOCAB - 1, 5003].map((v) => onGpu.chunksFor(v)),
      [1024 / SPLIT_SLOTS, 24, 8, 1, 1],
    );
    // A fixed count splits any workgroup-kernel row, at most one chunk per vec4 unit.
    assertEquals([5003, 7, 1].map((v) => forced.chunksFor(v)), [5, 2, 1]);
    assertEquals(small.chunksFor(151936), 128 / SPLIT_SLOTS);
    await assertRejects(
      () => Sampler.create(cpu, { rowChunks: 0 }),
      "KernelArgumentError",
      "rowChunks 0",
    );
    for (const s of [onCpu, onGpu, forced, small]) s.destroy();
  } finally {
    cpu.destroy();
    gpuClass.destroy();
  }
});

Deno.test("a lazy sampler compiles only what prepare asks for; before it, encode is a named error", async () => {
  const gpu = await Gpu.create();
  try {
    const rows = 3, vocab = 37;
    const logits = gpu.upload(Float32Array.from({ length: rows * vocab }, (_, i) => (i * 7) % 11));
    const params = gpu.upload(
      packSamplingParams(
        Array.from(
          { length: rows },
          (_, i) => ({ temperature: 0.7, seed: i, sequence: i, step: 0 }),
        ),
      ),
    );
    const sample = async (s: Sampler) => {
      const ids = gpu.zeros(rows), logprobs = gpu.zeros(rows);
      const rec = gpu.recorder("lazy sampler");
      s.encode(rec, { rows, vocab, logits, params, ids, logprobs });
      rec.submit();
      const got = [...await gpu.readFloat32(logprobs, rows)];
      [ids, logprobs].forEach((b) => b.destroy());
      return got;
    };
    for (const variant of ["lane", "workgroup"] as const) {
      const lazy = await Sampler.create(gpu, { variant, lazy: true });
      const eager = await Sampler.create(gpu, { variant });
      assertEquals(lazy.variantFor(vocab), variant);
      const before = gpu.pipelines.created;
      assertThrows(
        () =>
          lazy.encode(gpu.recorder("unprepared"), {
            rows,
            vocab,
            logits,
            params,
            ids: gpu.zeros(rows),
            logprobs: gpu.zeros(rows),
          }),
        "KernelArgumentError",
        `await sampler.prepare(${vocab})`,
      );
      await lazy.prepare(vocab);
      await lazy.prepare(vocab);
      // The eager sampler of the same options compiled it already: the cache hands it over.
      assertEquals(gpu.pipelines.created, before);
      assertEquals(await sample(lazy), await sample(eager));
      lazy.destroy();
      eager.destroy();
    }
    // Compiled fresh (a workgroup size no other sampler here uses), a lazy sampler builds only
    // the kernel its vocabulary takes.
    const before = gpu.pipelines.created;
    const fresh = await Sampler.create(gpu, { variant: "lane", lazy: true, laneWorkgroupSize: 4 });
    assertEquals(gpu.pipelines.created, before, "the draws kernel is cached already");
    await fresh.prepare(vocab);
    assertEquals(gpu.pipelines.created, before + 1, "only the lane kernel");
    fresh.destroy();
    [logits, params].forEach((b) => b.destroy());
  } finally {
    gpu.destroy();
  }
});
