// The loss heads' tuner (src/train/loss_tune.ts) on the WebGPU adapter Deno finds: it refuses a
// head whose loss or gradient is wrong against float64, picks the fastest of the rest, and loss
// heads of that vocabulary on that adapter then run the tuned lanes a row (src/ops/tuned_picks.ts).

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  describeTunedPicks,
  parseTunedPicks,
  resetTunedPicks,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";
import { entryFor, OTHER_ADAPTER_ENTRY } from "../ops/tuned_entry.ts";
import { lossEntry, tuneLossHead } from "../../src/train/loss_tune.ts";
import { CrossEntropyLoss, LOSS_WG, PolicyLoss } from "../../src/train/losses.ts";

const VOCAB = 3000;

Deno.test("loss head tuner: refuses a wrong head, picks the fastest of the rest, loss heads then run the pick", async () => {
  const gpu = await Gpu.create();
  try {
    const builtIn = LOSS_WG[gpu.adapterClass];
    // Planted faults: at 32 lanes the head reads the logits at temperature 2 (a wrong loss); at
    // 128 it computes the right loss but writes its gradient elsewhere (the check clears the
    // gradient first, so the previous head's cannot pass for it).
    const lines: string[] = [];
    const elsewhere = gpu.zeros(6 * VOCAB);
    const r = await tuneLossHead(gpu, {
      vocab: VOCAB,
      rows: 6,
      candidates: [32, 64, 128],
      minMs: 2,
      log: (l) => lines.push(l),
      headFor: async (g, wg, rows, vocab) => {
        const head = await PolicyLoss.create(g, {
          maxRows: rows,
          vocabSize: vocab,
          workgroupSize: wg,
          ...(wg === 32 ? { temperature: 2 } : {}),
        });
        if (wg !== 128) return head;
        return {
          pack: head.pack.bind(head),
          readMetrics: head.readMetrics.bind(head),
          destroy: head.destroy.bind(head),
          encode: (rec, args) => head.encode(rec, { ...args, dlogits: elsewhere }),
        };
      },
    });
    elsewhere.destroy();
    assertEquals(r.refused.map((x) => x.workgroupSize), [32, 128]);
    assert(r.refused[1].why.includes("dL/dlogits"), r.refused[1].why);
    const timed = [...new Set([64, builtIn])].sort((a, b) => a - b);
    assertEquals(r.times.map((t) => t.workgroupSize), timed);
    const fastest = r.times.filter((t) => t.final).reduce((a, b) => (b.ms < a.ms ? b : a));
    assertEquals([r.best, r.bestMs], [fastest.workgroupSize, fastest.ms]);
    assertEquals([r.vocab, r.rows, r.current], [VOCAB, 6, builtIn]);
    assert(
      lines.some((l) => l.startsWith("loss head at 32 lanes a row: refused")),
      lines.join("\n"),
    );

    await assertRejects(
      () =>
        tuneLossHead(gpu, {
          vocab: VOCAB,
          rows: 2,
          candidates: [64],
          minMs: 1,
          headFor: (g, wg, rows, vocab) =>
            PolicyLoss.create(g, {
              maxRows: rows,
              vocabSize: vocab,
              workgroupSize: wg,
              temperature: 3,
            }),
        }),
      "LossTuneError",
      "every lanes-a-row candidate was wrong",
    );

    // Heads of the tuned vocabulary take the pick; other vocabularies and explicit sizes do not.
    resetTunedPicks();
    try {
      useTunedPicks([entryFor(gpu.ctx.info, lossEntry({ ...r, best: 128 }))]);
      const heads = [
        await PolicyLoss.create(gpu, { maxRows: 2, vocabSize: VOCAB }),
        await CrossEntropyLoss.create(gpu, { maxRows: 2, vocabSize: VOCAB }),
        await PolicyLoss.create(gpu, { maxRows: 2, vocabSize: VOCAB + 1 }),
        await PolicyLoss.create(gpu, { maxRows: 2, vocabSize: VOCAB, workgroupSize: 32 }),
      ];
      assertEquals(heads.map((h) => h.workgroupSize), [128, 128, builtIn, 32]);
      heads.forEach((h) => h.destroy());
      assert(
        describeTunedPicks(gpu.ctx.info).includes(
          `loss heads tuned: 128 lanes a row at vocabulary ${VOCAB}`,
        ),
      );
    } finally {
      resetTunedPicks();
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("picks file: loss-head picks are kept per vocabulary and validated", () => {
  const base = OTHER_ADAPTER_ENTRY;
  const times = (vocab: number, best: number) => ({
    vocab,
    rows: 64,
    current: 256,
    currentMs: 2,
    best,
    bestMs: 1,
  });
  const one = withEntry(null, { ...base, lossPicks: { "1000": 64 }, lossTimes: [times(1000, 64)] });
  const two = withEntry(one, {
    ...base,
    lossPicks: { "2000": 128 },
    lossTimes: [times(2000, 128)],
  });
  assertEquals(two.entries[0].lossPicks, { "1000": 64, "2000": 128 });
  assertEquals(two.entries[0].lossTimes!.map((t) => t.vocab), [1000, 2000]);
  assertEquals(withEntry(two, base).entries[0].lossPicks, { "1000": 64, "2000": 128 });
  const text = (v: unknown) => JSON.stringify({ ...one, entries: [{ ...base, lossPicks: v }] });
  assertEquals(parseTunedPicks(text({ "5": 32 }), "f.json").entries[0].lossPicks, { "5": 32 });
  for (const v of [{ "5": 48 }, { "5": 512 }, { x: 64 }, { "5": "64" }, [64], 64]) {
    assertThrows(() => parseTunedPicks(text(v), "f.json"), "TunedPicksError", `"lossPicks"`);
  }
});
