// The sampler's tuner (src/model/sampler_tune.ts) on the WebGPU adapter Deno finds: it refuses a
// split that samples wrongly, picks by measured time, and a Sampler on that adapter then splits
// rows as tuned (src/ops/tuned_picks.ts); the picks file keeps each vocabulary's split.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  rowError,
  samplerEntry,
  type SamplerLike,
  samplerSplits,
  tuneSampler,
} from "../../src/model/sampler_tune.ts";
import { Sampler } from "../../src/model/sampling.ts";
import { sampleRef } from "../../src/model/sampling_reference.ts";
import {
  adapterKey,
  kernelSetId,
  parseTunedPicks,
  resetTunedPicks,
  type TunedPicksEntry,
  tunedSamplerChunks,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";

// The workgroup kernel at the CPU adapters' default size, as sampling_test.ts's split
// configuration compiles it (a warm shader cache on llvmpipe).
const OPTIONS = { variant: "workgroup" } as const;
const VOCAB = 3000;

Deno.test("sampler tuner: refuses a wrong split, picks the fastest of the rest, and Sampler then splits as tuned", async () => {
  const gpu = await Gpu.create();
  try {
    // A planted fault: the 4-way split reads every row but the first at the wrong offset.
    const planted = async (g: Gpu, chunks: number): Promise<SamplerLike> => {
      const s = await Sampler.create(g, { ...OPTIONS, rowChunks: chunks, lazy: true });
      if (chunks !== 4) return s;
      return {
        prepare: (v) => s.prepare(v),
        chunksFor: (v) => s.chunksFor(v),
        destroy: () => s.destroy(),
        encode: (rec, a) => s.encode(rec, { ...a, vocab: a.vocab - 1 }),
      };
    };
    const lines: string[] = [];
    const r = await tuneSampler(gpu, {
      vocab: VOCAB,
      rows: [1, 3],
      candidates: [1, 2, 4, 8],
      minMs: 2,
      sampler: OPTIONS,
      samplerFor: planted,
      log: (l) => lines.push(l),
    });
    assertEquals(r.refused.map((x) => x.chunks), [4]);
    assert(r.refused[0].why.includes("row "), r.refused[0].why);
    // CPU adapters never split by default; a GPU's built-in split at 3000 words is 1 too.
    assertEquals(r.current, 1);
    assertEquals(r.times.map((t) => t.chunks), [1, 2, 8]);
    assert(r.times.every((t) => t.ms > 0), JSON.stringify(r.times));
    // The pick is the fastest of the final timings, which always include the built-in split.
    const finals = r.times.filter((t) => t.final);
    assert(finals.some((t) => t.chunks === 1), JSON.stringify(r.times));
    assertEquals(r.best, finals.reduce((a, b) => (b.ms < a.ms ? b : a)).chunks);
    assertEquals(r.bestMs, Math.min(...finals.map((t) => t.ms)));
    assertEquals(r.currentMs, finals.find((t) => t.chunks === 1)!.ms);
    assert(lines.some((l) => l.includes("refused")), lines.join("\n"));

    // Every candidate wrong: a named error, not a pick.
    await assertRejects(
      () =>
        tuneSampler(gpu, {
          vocab: VOCAB,
          rows: [2],
          candidates: [2],
          minMs: 1,
          sampler: OPTIONS,
          samplerFor: async (g, c) => {
            const s = await Sampler.create(g, { ...OPTIONS, rowChunks: c, lazy: true });
            return { ...bind(s), encode: (rec, a) => s.encode(rec, { ...a, vocab: a.vocab - 1 }) };
          },
        }),
      "SamplerTuneError",
      "every sampler split was wrong",
    );
    // The lane kernel samples small vocabularies on CPU adapters: nothing to split.
    if (gpu.adapterClass === "cpu") {
      assertEquals(await samplerSplits(gpu, 264), false);
      await assertRejects(
        () => tuneSampler(gpu, { vocab: 264, rows: [1] }),
        "SamplerTuneError",
        "nothing to tune",
      );
    }
    assertEquals(await samplerSplits(gpu, VOCAB, OPTIONS), true);

    // Sampler's "auto" takes this adapter's tuned split for that vocabulary only.
    const entry: TunedPicksEntry = {
      adapter: adapterKey(gpu.ctx.info),
      kernels: kernelSetId(),
      picks: {},
      tunedFor: "test",
      date: "2026-11-28T00:00:00.000Z",
      ...samplerEntry({ ...r, best: 4 }),
    };
    resetTunedPicks();
    try {
      useTunedPicks([entry]);
      assertEquals(tunedSamplerChunks(gpu.ctx.info, VOCAB)?.chunks, 4);
      const auto = await Sampler.create(gpu, { ...OPTIONS, lazy: true });
      const pinned = await Sampler.create(gpu, { ...OPTIONS, rowChunks: 1, lazy: true });
      assertEquals(auto.chunksFor(VOCAB), 4);
      assertEquals(auto.chunksFor(VOCAB + 1), 1); // untuned, under SPLIT_MIN_VOCAB
      assertEquals(pinned.chunksFor(VOCAB), 1);
      auto.destroy();
      pinned.destroy();
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

Deno.test("tuned picks: each vocabulary's sampler split survives tuning another model; a bad split is a named error", () => {
  const base = {
    adapter: "gpu: some GPU",
    kernels: kernelSetId(),
    picks: { "nt:square": "r8c8_wg8x4" },
    tunedFor: "t",
    date: "2026-11-28T00:00:00.000Z",
  };
  const times = (vocab: number, best: number) => ({
    vocab,
    rows: [1, 8],
    current: 32,
    currentMs: 1,
    best,
    bestMs: 0.5,
  });
  let file = withEntry(null, {
    ...base,
    samplerChunks: { "151936": 16 },
    samplerTimes: [times(151936, 16)],
  });
  // Tuning another model on the same adapter: its split is added, the first one's kept.
  file = withEntry(file, {
    ...base,
    picks: { "nt:square": "r16c8_wg8x1" },
    samplerChunks: { "49152": 8 },
    samplerTimes: [times(49152, 8)],
  });
  // Tuning without the sampler keeps both; tuning the first vocabulary again replaces its split.
  file = withEntry(file, base);
  file = withEntry(file, {
    ...base,
    samplerChunks: { "151936": 32 },
    samplerTimes: [times(151936, 32)],
  });
  assertEquals(file.entries.length, 1);
  const e = parseTunedPicks(JSON.stringify(file), "p.json").entries[0];
  assertEquals(e.samplerChunks, { "151936": 32, "49152": 8 });
  assertEquals(e.samplerTimes?.map((t) => [t.vocab, t.best]), [[49152, 8], [151936, 32]]);
  assertEquals(e.picks, base.picks);
  for (const bad of [{ "151936": 0 }, { "151936": 2.5 }, { "x": 4 }, [4]]) {
    assertThrows(
      () =>
        parseTunedPicks(
          JSON.stringify({ ...file, entries: [{ ...e, samplerChunks: bad }] }),
          "/x/p.json",
        ),
      "TunedPicksError",
      "samplerChunks",
    );
  }
});
