// The fused LoRA forward's tuner (src/model/lora_tune.ts) on the WebGPU adapter Deno finds: it
// refuses a target whose outputs are wrong, times the targets that chunk the groups differently
// (once each), keeps the fastest, and LoraAdapters on that adapter then use the tuned target
// (src/ops/tuned_picks.ts); the picks file keeps it across tunings that do not retune it.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { FUSED_TARGET_WORKGROUPS, fusedColumnChunks, LoraAdapters } from "../../src/model/lora.ts";
import { LoraLayout } from "../../src/model/lora_layout.ts";
import {
  loraFusedEntry,
  type LoraLike,
  loraTuneShape,
  tuneLoraFused,
} from "../../src/model/lora_tune.ts";
import {
  describeTunedPicks,
  parseTunedPicks,
  resetTunedPicks,
  type TunedPicksEntry,
  useTunedPicks,
  withEntry,
} from "../../src/ops/tuned_picks.ts";
import { entryFor, OTHER_ADAPTER_ENTRY } from "../ops/tuned_entry.ts";

const tinyJson = JSON.parse(
  await Deno.readTextFile(new URL("../../configs/models/tiny-llama.json", import.meta.url)),
);
// A gate/up group of 2600 outputs: up to 3 column chunks (one per 256 column quads); the other
// groups fit one workgroup's columns.
const wider = parseModelConfig({ ...tinyJson, hidden_size: 288, intermediate_size: 1300 });

Deno.test("fused LoRA tuner: refuses a wrong target, times each chunking once, LoraAdapters use the pick", async () => {
  const gpu = await Gpu.create();
  try {
    // At rows 1 and 5 (1 and 2 row tiles): target 1 chunks gate/up 1 and 1, target 2 2 and 1,
    // targets ≥ 6 (8, the built-in 128) 3 and 3. A planted fault: target 2 adds nothing.
    assertEquals([1, 2, 8, 128].map((t) => [1, 2].map((r) => fusedColumnChunks(r, 2600, t))), [
      [1, 1],
      [2, 1],
      [3, 3],
      [3, 3],
    ]);
    const planted = async (
      g: Gpu,
      layout: LoraLayout,
      n: number,
      data: Float32Array,
    ): Promise<LoraLike> => {
      const lora = await LoraAdapters.create(g, layout, n, data, "workgroup", "fused");
      const encode = lora.encodeForwardGroup.bind(lora);
      lora.encodeForwardGroup = (...a) => {
        if (lora.fusedTarget !== 2) encode(...a);
      };
      return lora;
    };
    const lines: string[] = [];
    const r = await tuneLoraFused(gpu, {
      config: wider,
      rank: 8,
      rows: [1, 5],
      candidates: [1, 2, 8],
      minMs: 2,
      adaptersFor: planted,
      log: (l) => lines.push(l),
    });
    assertEquals(r.refused.map((x) => x.target), [2]);
    assert(r.refused[0].why.includes("tolerance"), r.refused[0].why);
    assertEquals(r.same, [{ target: 8, as: FUSED_TARGET_WORKGROUPS }]);
    assertEquals(r.times.map((t) => t.target), [1, FUSED_TARGET_WORKGROUPS]);
    const finals = r.times.filter((t) => t.final);
    assertEquals(finals.length, 2);
    const fastest = finals.reduce((a, b) => (b.ms < a.ms ? b : a));
    assertEquals([r.best, r.bestMs], [fastest.target, fastest.ms]);
    assertEquals(r.current, FUSED_TARGET_WORKGROUPS);
    assert(r.currentMs > 0 && r.bestMs > 0);
    assertEquals(r.shape, loraTuneShape(wider));
    assertEquals([r.rank, r.rows], [8, [1, 5]]);
    assert(lines.some((l) => l.startsWith("fused LoRA target 2: refused")), lines.join("\n"));

    // Every target wrong: an error, not a pick.
    await assertRejects(
      () =>
        tuneLoraFused(gpu, {
          config: wider,
          rank: 8,
          rows: [1],
          candidates: [1],
          minMs: 1,
          adaptersFor: async (g, layout, n, data) => {
            const lora = await LoraAdapters.create(g, layout, n, data, "workgroup", "fused");
            lora.encodeForwardGroup = () => {};
            return lora;
          },
        }),
      "LoraTuneError",
      "every fused LoRA target was wrong",
    );

    // LoraAdapters on this adapter take the tuned target; without it, the built-in one.
    const layout = new LoraLayout(wider, {
      rank: 8,
      alpha: 16,
      targets: ["gate", "up"],
      adapters: ["a"],
    });
    const entry: TunedPicksEntry = entryFor(gpu.ctx.info, loraFusedEntry({ ...r, best: 7 }));
    resetTunedPicks();
    try {
      useTunedPicks([entry]);
      const tuned = await LoraAdapters.create(gpu, layout, 4, undefined, "workgroup", "fused");
      assertEquals(tuned.fusedTarget, 7);
      tuned.destroy();
      assert(describeTunedPicks(gpu.ctx.info).includes("fused LoRA tuned: 7 workgroups"));
    } finally {
      resetTunedPicks();
    }
    const plain = await LoraAdapters.create(gpu, layout, 4, undefined, "workgroup", "fused");
    assertEquals(plain.fusedTarget, FUSED_TARGET_WORKGROUPS);
    plain.destroy();
  } finally {
    gpu.destroy();
  }
});

Deno.test("picks file: the fused LoRA target is validated and kept by tunings that do not retune it", () => {
  const base = OTHER_ADAPTER_ENTRY;
  const times = {
    shape: "hidden 8",
    rank: 16,
    rows: [1],
    current: 128,
    currentMs: 2,
    best: 32,
    bestMs: 1,
  };
  const tuned = withEntry(null, { ...base, loraFusedTarget: 32, loraFusedTimes: times });
  // Tuned again without the LoRA step: the target stays; tuned with it: replaced.
  const kept = withEntry(tuned, { ...base, tunedFor: "b" });
  assertEquals([kept.entries.length, kept.entries[0].loraFusedTarget], [1, 32]);
  assertEquals(kept.entries[0].loraFusedTimes, times);
  assertEquals(
    withEntry(kept, { ...base, loraFusedTarget: 64 }).entries[0].loraFusedTarget,
    64,
  );
  const text = (v: unknown) =>
    JSON.stringify({ ...tuned, entries: [{ ...base, loraFusedTarget: v }] });
  assertEquals(parseTunedPicks(text(32), "f.json").entries[0].loraFusedTarget, 32);
  for (const v of [0, 2.5, "32", 1e9, -1, null]) {
    assertThrows(
      () => parseTunedPicks(text(v), "f.json"),
      "TunedPicksError",
      `"loraFusedTarget" ${JSON.stringify(v)} is not a whole number`,
    );
  }
});
