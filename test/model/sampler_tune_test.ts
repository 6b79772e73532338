// The sampler's tuner (src/model/sampler_tune.ts) on the WebGPU adapter Deno finds: it refuses a
// split that samples wrongly, picks by measured time, and a Sampler on that adapter then splits
// rows as tuned (src/ops/tuned_picks.ts); the picks file keeps each vocabulary's split.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  maxRowChunks,
  rowError,
  samplerEntry,
  type SamplerLike,
  tuneSampler,
} from "../../src/model/sampler_tune.ts";
import { Sampler } from "../../src/model/sampling.ts";
import { sampleRef } from "../../src/model/sampling_reference.ts";
import {
  kernelSetId,
  parseTunedPicks,
  resetTunedPicks,
  type SamplerPick,
  type TunedPicksEntry,
  tunedSamplerPicks,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";
import { entryFor } from "../ops/tuned_entry.ts";

// The workgroup kernel at the CPU adapters' default size, as sampling_test.ts's split
// configuration compiles it (a warm shader cache on llvmpipe).
const OPTIONS = { variant: "workgroup" } as const;
const VOCAB = 3000;

Deno.test("sampler tuner: refuses a wrong split, picks the fastest of the rest, and Sampler then samples as tuned", async () => {
  const gpu = await Gpu.create();
  try {
    // A planted fault: the 4-way split reads every row but the first at the wrong offset. And a
    // second workgroup size, 48, that runs the 32-thread kernels (no compile of another size).
    const created: SamplerPick[] = [];
    const planted = async (g: Gpu, pick: SamplerPick): Promise<SamplerLike> => {
      created.push(pick);
      const s = await Sampler.create(g, {
        ...OPTIONS,
        rowChunks: pick.rowChunks,
        workgroupSize: 32,
        lazy: true,
      });
      if (pick.rowChunks !== 4) return bind(s);
      return { ...bind(s), encode: (rec, a) => s.encode(rec, { ...a, vocab: a.vocab - 1 }) };
    };
    const lines: string[] = [];
    const r = await tuneSampler(gpu, {
      vocab: VOCAB,
      rows: [1, 3],
      candidates: [1, 2, 4, 8],
      workgroupSizes: [32, 48],
      minMs: 2,
      // The built-in pick at 32 threads on every adapter class: one workgroup a row.
      sampler: { ...OPTIONS, workgroupSize: 32 },
      samplerFor: planted,
      log: (l) => lines.push(l),
    });
    const tried = (p: SamplerPick) => `${p.rowChunks}x${p.workgroupSize}`;
    // The probe of the most chunks (capacity 1024 / 32 slots), then every pair once.
    assertEquals(created.slice(1).map(tried), [
      ...[1, 2, 4, 8].map((c) => `${c}x32`),
      ...[1, 2, 4, 8].map((c) => `${c}x48`),
    ]);
    assertEquals(r.refused.map(tried), ["4x32", "4x48"]);
    assert(r.refused[0].why.includes("row "), r.refused[0].why);
    // CPU adapters never split by default; a GPU's built-in split at 3000 words is 1 too.
    assertEquals(r.current, { rowChunks: 1, workgroupSize: 32 });
    assertEquals(r.times.map(tried), ["1x32", "2x32", "8x32", "1x48", "2x48", "8x48"]);
    assert(r.times.every((t) => t.ms > 0), JSON.stringify(r.times));
    // The pick is the fastest of the final timings, which include the built-in pick.
    const finals = r.times.filter((t) => t.final);
    assert(finals.length >= 3 && finals.length <= 4 && finals.some((t) => tried(t) === "1x32"));
    const fastest = finals.reduce((a, b) => (b.ms < a.ms ? b : a));
    assertEquals(tried(r.best), tried(fastest));
    assertEquals(r.bestMs, fastest.ms);
    assertEquals(r.currentMs, finals.find((t) => tried(t) === "1x32")!.ms);
    assert(lines.some((l) => l.includes("refused")), lines.join("\n"));

    // Every candidate wrong: a named error, not a pick.
    await assertRejects(
      () =>
        tuneSampler(gpu, {
          vocab: VOCAB,
          rows: [2],
          candidates: [2],
          workgroupSizes: [32],
          minMs: 1,
          sampler: OPTIONS,
          samplerFor: async (g, p) => {
            const s = await Sampler.create(g, { ...OPTIONS, ...p, lazy: true });
            return { ...bind(s), encode: (rec, a) => s.encode(rec, { ...a, vocab: a.vocab - 1 }) };
          },
        }),
      "SamplerTuneError",
      "every sampler split was wrong",
    );
    // A workgroup size this device's workgroup memory cannot hold is skipped, not an error.
    const big = await tuneSampler(gpu, {
      vocab: VOCAB,
      rows: [1],
      candidates: [1],
      workgroupSizes: [32, 256],
      minMs: 1,
      // The built-in pick at 32 threads on every class (a GPU's default, 64, would be timed too).
      sampler: { ...OPTIONS, capacity: 1 << 20, workgroupSize: 32 },
      samplerFor: (g, p) =>
        p.workgroupSize === 256
          ? Sampler.create(g, { ...OPTIONS, capacity: 1 << 20, ...p, lazy: true })
          : Sampler.create(g, { ...OPTIONS, ...p, lazy: true }),
    });
    assertEquals(big.times.map(tried), ["1x32"]);
    // The lane kernel samples small vocabularies on CPU adapters: nothing to split.
    if (gpu.adapterClass === "cpu") {
      assertEquals(await maxRowChunks(gpu, { vocab: 264 }), 1);
      await assertRejects(
        () => tuneSampler(gpu, { vocab: 264, rows: [1] }),
        "SamplerTuneError",
        "nothing to tune",
      );
    }
    assert((await maxRowChunks(gpu, { vocab: VOCAB, sampler: OPTIONS })) > 1);

    // Sampler's defaults take this adapter's tuned pick for that vocabulary: its workgroup size
    // where the sampler is created for the vocabulary, and its split at that size only.
    const entry: TunedPicksEntry = entryFor(
      gpu.ctx.info,
      samplerEntry({ ...r, best: { rowChunks: 4, workgroupSize: 128 } }),
    );
    resetTunedPicks();
    try {
      useTunedPicks([entry]);
      assertEquals(tunedSamplerPicks(gpu.ctx.info)[String(VOCAB)], {
        rowChunks: 4,
        workgroupSize: 128,
      });
      const lazy = { ...OPTIONS, lazy: true };
      const tuned = await Sampler.create(gpu, { ...lazy, vocab: VOCAB });
      assertEquals([tuned.workgroupSize, tuned.chunksFor(VOCAB)], [128, 4]);
      assertEquals(tuned.chunksFor(VOCAB + 1), 1); // untuned, under SPLIT_MIN_VOCAB
      // Another size (the default, or asked for): the built-in split.
      const defaultWg = gpu.adapterClass === "cpu" ? 32 : 64;
      const other = await Sampler.create(gpu, lazy);
      assertEquals([other.workgroupSize, other.chunksFor(VOCAB)], [defaultWg, 1]);
      const asked = await Sampler.create(gpu, { ...lazy, vocab: VOCAB, workgroupSize: 64 });
      assertEquals([asked.workgroupSize, asked.chunksFor(VOCAB)], [64, 1]);
      const pinned = await Sampler.create(gpu, { ...lazy, vocab: VOCAB, rowChunks: 1 });
      assertEquals([pinned.workgroupSize, pinned.chunksFor(VOCAB)], [128, 1]);
      [tuned, other, asked, pinned].forEach((s) => s.destroy());
    } finally {
      resetTunedPicks();
    }
  } finally {
    gpu.destroy();
  }
});

function bind(s: Sampler): SamplerLike {
  return {
    prepare: (v) => s.prepare(v),
    chunksFor: (v) => s.chunksFor(v),
    destroy: () => s.destroy(),
    encode: (rec, a) => s.encode(rec, a),
  };
}

Deno.test("sampler tuner's row check: the reference's token passes; another token, or a wrong log-prob, does not", () => {
  const logits = Float32Array.from({ length: 50 }, (_, i) => Math.sin(i * 1.7) * 3);
  for (
    const p of [
      { temperature: 0, seed: 1, sequence: 0, step: 0 },
      { temperature: 1, seed: 2, sequence: 3, step: 0 },
      { temperature: 0.7, topK: 5, topP: 0.9, seed: 3, sequence: 1, step: 0 },
    ]
  ) {
    const ref = sampleRef(logits, p);
    assertEquals(rowError(logits, p, ref.id, ref.logprob), null);
    const other = ref.id === 0 ? 1 : 0;
    assert(rowError(logits, p, other, ref.scores[other]) !== null, JSON.stringify(p));
    assert(rowError(logits, p, ref.id, ref.logprob + 0.01)!.includes("log-prob"));
    assert(rowError(logits, p, 50, 0)!.includes("not a token id"));
  }
});

Deno.test("tuned picks: each vocabulary's sampler pick survives tuning another model; a bad split is a named error", () => {
  const base = {
    adapter: "gpu: some GPU",
    kernels: kernelSetId(),
    picks: { "nt:square": "r8c8_wg8x4" },
    tunedFor: "t",
    date: "2026-11-28T00:00:00.000Z",
  };
  const pick = (rowChunks: number, workgroupSize = 64) => ({ rowChunks, workgroupSize });
  const times = (vocab: number, best: number) => ({
    vocab,
    rows: [1, 8],
    current: pick(32),
    currentMs: 1,
    best: pick(best),
    bestMs: 0.5,
  });
  let file = withEntry(null, {
    ...base,
    samplerPicks: { "151936": pick(16) },
    samplerTimes: [times(151936, 16)],
  });
  // Tuning another model on the same adapter: its split is added, the first one's kept.
  file = withEntry(file, {
    ...base,
    picks: { "nt:square": "r16c8_wg8x1" },
    samplerPicks: { "49152": pick(8, 128) },
    samplerTimes: [times(49152, 8)],
  });
  // Tuning without the sampler keeps both; tuning the first vocabulary again replaces its split.
  file = withEntry(file, base);
  file = withEntry(file, {
    ...base,
    samplerPicks: { "151936": pick(32) },
    samplerTimes: [times(151936, 32)],
  });
  assertEquals(file.entries.length, 1);
  const e = parseTunedPicks(JSON.stringify(file), "p.json").entries[0];
  assertEquals(e.samplerPicks, { "151936": pick(32), "49152": pick(8, 128) });
  assertEquals(e.samplerTimes?.map((t) => [t.vocab, t.best.rowChunks]), [[49152, 8], [
    151936,
    32,
  ]]);
  assertEquals(e.picks, base.picks);
  for (
    const bad of [
      { "151936": pick(0) },
      { "151936": pick(2.5) },
      { "151936": pick(4, 96) },
      { "151936": pick(4, 512) },
      { "151936": 4 },
      { "x": pick(4) },
      [pick(4)],
    ]
  ) {
    assertThrows(
      () =>
        parseTunedPicks(
          JSON.stringify({ ...file, entries: [{ ...e, samplerPicks: bad }] }),
          "/x/p.json",
        ),
      "TunedPicksError",
      "samplerPicks",
    );
  }
});
