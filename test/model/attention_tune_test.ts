// The decode attention split's tuner (src/model/attention_tune.ts) on the WebGPU adapter Deno
// finds (the workgroup vec4 attention, as GPUs run it): every call it times equals a float64
// attention, the pick is the span and threshold its own timings favour, and AttentionKernels on
// that adapter then split as tuned (src/ops/tuned_picks.ts); the picks file validates and keeps it.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  AttentionKernels,
  attentionSplits,
  SPLIT_MIN_SPAN,
  SPLIT_ROW_HEADS,
} from "../../src/model/attention_kernels.ts";
import {
  attentionSplitEntry,
  attentionTuneShape,
  tuneAttentionSplit,
} from "../../src/model/attention_tune.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import {
  describeTunedPicks,
  parseTunedPicks,
  resetTunedPicks,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";
import { entryFor, OTHER_ADAPTER_ENTRY } from "../ops/tuned_entry.ts";

const tinyJson = JSON.parse(
  await Deno.readTextFile(new URL("../../configs/models/tiny-llama.json", import.meta.url)),
);
// 4 heads over 2 kv heads of 16 (tiny-llama's heads), over a 600-position cache.
const tiny = parseModelConfig({ ...tinyJson, max_position_embeddings: 4096 });

Deno.test("attention split tuner: checks every split against float64, picks by its timings, AttentionKernels use the pick", async () => {
  const gpu = await Gpu.create();
  try {
    const lines: string[] = [];
    const r = await tuneAttentionSplit(gpu, {
      config: tiny,
      context: 600,
      rows: [3, 1],
      spans: [128, 256, 1024],
      minMs: 2,
      log: (l) => lines.push(l),
    });
    const NH = tiny.numHeads;
    assertEquals(r.shape, attentionTuneShape(tiny));
    assertEquals([r.context, r.refused], [600, []]);
    // 1024 is not shorter than the context: not a split. The rows sorted.
    assertEquals(r.spans.map((s) => s.span), [128, 256]);
    assertEquals(r.calls.map((c) => [c.rows, c.rowHeads]), [[1, NH], [3, 3 * NH]]);
    for (const c of r.calls) assert(c.unsplitMs > 0 && c.splitMs > 0, JSON.stringify(c));
    // The pick is the best of every span's threshold by the same timings, never worse than
    // not splitting at all, and its threshold is a batch size's rows × heads.
    const unsplit = r.calls.reduce((s, c) => s + c.unsplitMs, 0);
    assert(r.bestMs <= unsplit + 1e-9, `${r.bestMs} > ${unsplit}`);
    assert([0, NH, 3 * NH].includes(r.best.rowHeads), JSON.stringify(r.best));
    assert(r.bestMs <= r.currentMs + 1e-9, JSON.stringify(r));
    // Recomputed from the reported times: the least of every (span, threshold), each threshold
    // splitting the batch sizes up to it (whatever the others do: not only a prefix of wins).
    const scores = r.spans.flatMap((s) =>
      [1, 3].map((N) =>
        r.calls.reduce((t, c, i) => t + (c.rows <= N ? s.splitMs[i] : c.unsplitMs), 0)
      )
    );
    const least = Math.min(unsplit, ...scores);
    assert(Math.abs(r.bestMs - least) < 1e-9, `${r.bestMs} ≠ ${least}`);
    assertEquals(r.current, { rowHeads: SPLIT_ROW_HEADS, minSpan: SPLIT_MIN_SPAN });
    assert(lines.some((l) => l.startsWith("decode attention at 600 positions")), lines.join("\n"));

    await assertRejects(
      () => tuneAttentionSplit(gpu, { config: tiny, context: 100, rows: [1], minMs: 1 }),
      "AttentionTuneError",
      "nothing to split",
    );
    const scalar = parseModelConfig({ ...tinyJson, head_dim: 6 });
    await assertRejects(
      () => tuneAttentionSplit(gpu, { config: scalar, rows: [1], minMs: 1 }),
      "AttentionTuneError",
      "never split",
    );

    // AttentionKernels on this adapter take the tuned split; without it, the built-in one.
    const opts = { headDim: 16, attentionVariant: "workgroup" } as const;
    const entry = (rowHeads: number, minSpan: number) =>
      entryFor(gpu.ctx.info, attentionSplitEntry({ ...r, best: { rowHeads, minSpan } }));
    resetTunedPicks();
    try {
      useTunedPicks([entry(8, 256)]);
      const k = await AttentionKernels.create(gpu, 600, opts);
      assertEquals([k.splitRowHeads, k.attnSplit], [8, attentionSplits(600, 256)]);
      assertEquals(k.attnSplit.splits, 3);
      assertEquals(k.splitScratchFloats(16), { o: 8 * 3 * 16, ml: 2 * 8 * 3 });
      assert(describeTunedPicks(gpu.ctx.info).includes("decode attention tuned: split at up to 8"));
      resetTunedPicks();
      useTunedPicks([entry(0, 128)]);
      const never = await AttentionKernels.create(gpu, 600, opts);
      assertEquals(never.attnSplit.splits, 0);
    } finally {
      resetTunedPicks();
    }
    const plain = await AttentionKernels.create(gpu, 600, opts);
    assertEquals([plain.splitRowHeads, plain.attnSplit], [SPLIT_ROW_HEADS, attentionSplits(600)]);
    await assertRejects(
      () => AttentionKernels.create(gpu, 600, { ...opts, splitMinSpan: 100 }),
      "KernelArgumentError",
      "multiple of 64",
    );
  } finally {
    gpu.destroy();
  }
});

Deno.test("picks file: the attention split is validated and kept by tunings that do not retune it", () => {
  const base = OTHER_ADAPTER_ENTRY;
  const split = { rowHeads: 28, minSpan: 256 };
  const tuned = withEntry(null, { ...base, attentionSplit: split });
  const kept = withEntry(tuned, { ...base, tunedFor: "b" });
  assertEquals(kept.entries[0].attentionSplit, split);
  assertEquals(
    withEntry(kept, { ...base, attentionSplit: { rowHeads: 0, minSpan: 128 } }).entries[0]
      .attentionSplit,
    { rowHeads: 0, minSpan: 128 },
  );
  const text = (v: unknown) =>
    JSON.stringify({ ...tuned, entries: [{ ...base, attentionSplit: v }] });
  assertEquals(parseTunedPicks(text(split), "f.json").entries[0].attentionSplit, split);
  for (
    const v of [
      { rowHeads: -1, minSpan: 128 },
      { rowHeads: 8, minSpan: 100 },
      { rowHeads: 2.5, minSpan: 128 },
      { rowHeads: 1e6, minSpan: 128 },
      { rowHeads: 8 },
      28,
      null,
    ]
  ) {
    assertThrows(
      () => parseTunedPicks(text(v), "f.json"),
      "TunedPicksError",
      `"attentionSplit" ${JSON.stringify(v)} is not`,
    );
  }
});
