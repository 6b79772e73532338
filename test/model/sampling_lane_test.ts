// The lane sampler (shaders/sampling_lane.wgsl) against the workgroup sampler (sampling.wgsl) on
// many random rows: random logits (normal, on a coarse grid for ties, with −inf entries, one-hot,
// constant and all −inf rows), random temperature / top-k / top-p / repetition penalty and
// history, with truncated log-probs and history append. Both kernels must pick the same ids and
// leave the same histories; log-probs agree to float32 tolerance. Their float32 sums run in
// different orders, so a row may differ only where the float64 reference puts the draw or a
// top-p cut within AMBIGUOUS of a boundary (a handful of rows at most).

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { laneLoopBound, Sampler, type SamplingParams } from "../../src/model/sampling.ts";
import { sampleRef } from "../../src/model/sampling_reference.ts";
import { seededValues } from "../../src/ops/reference.ts";
import { logitsOf, normalLogits, runBatch } from "./sampling_cases.ts";

const AMBIGUOUS = 1e-5;
const LOGP_ATOL = 1e-4, LOGP_RTOL = 1e-5;

/** A deterministic stream of numbers in [0, 1). */
function rng(seed: number): () => number {
  const v = seededValues(1 << 16, seed, 0, 1);
  let i = 0;
  return () => v[i++ & 0xffff];
}

interface RandomBatch {
  vocab: number;
  logits: Float32Array;
  params: SamplingParams[];
  history: number[][];
  capacity: number;
}

function randomBatch(vocab: number, rows: number, seed: number): RandomBatch {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const logits = new Float32Array(rows * vocab);
  const params: SamplingParams[] = [];
  const history: number[][] = [];
  const capacity = 24;
  for (let row = 0; row < rows; row++) {
    const kind = pick(["normal", "normal", "grid", "grid", "masked", "onehot", "flat", "uniform"]);
    let x: Float32Array;
    if (kind === "normal") x = normalLogits(vocab, seed * 131 + row, 1 + 4 * r());
    else if (kind === "grid") x = logitsOf(vocab, seed * 131 + row, 3, pick([0.25, 0.5, 1]));
    else if (kind === "uniform") x = logitsOf(vocab, seed * 131 + row, 10);
    else if (kind === "flat") x = new Float32Array(vocab).fill(pick([0, -2.5, 7]));
    else if (kind === "onehot") {
      x = normalLogits(vocab, seed * 131 + row, 1);
      x[Math.floor(r() * vocab)] = 30;
    } else {
      x = logitsOf(vocab, seed * 131 + row, 3, 0.5);
      const frac = pick([0.1, 0.5, 0.9, 1]); // 1: the whole row is −inf
      for (let i = 0; i < vocab; i++) if (r() < frac) x[i] = -Infinity;
    }
    logits.set(x, row * vocab);
    params.push({
      seed: Math.floor(r() * 2 ** 32),
      sequence: Math.floor(r() * 2 ** 32),
      step: Math.floor(r() * 1000),
      temperature: pick([0, 0, 0.3, 0.7, 1, 1, 1.5]),
      topK: pick([0, 0, 1, 2, 5, 50, vocab - 1, vocab, Math.floor(r() * vocab)]),
      topP: pick([1, 1, 0, 0.3, 0.9, 0.99, Math.fround(r())]),
      repetitionPenalty: pick([1, 1, 0.5, 1.3, 2]),
    });
    const n = pick([0, 1, 5, capacity, capacity + 3]); // counts past capacity are not penalised
    history.push(
      Array.from(
        { length: n },
        () => pick([Math.floor(r() * vocab), Math.floor(r() * 8), vocab + 5]),
      ),
    );
  }
  return { vocab, logits, params, history, capacity };
}

type Run = Required<Awaited<ReturnType<typeof runBatch>>>;

/** One batch through one kernel, appending to the histories (sampling_cases.ts runBatch). */
async function run(gpu: Gpu, variant: "lane" | "workgroup", b: RandomBatch): Promise<Run> {
  return await runBatch(gpu, b, { variant }, { capacity: b.capacity, append: true }) as Run;
}

function close(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true; // also equal infinities
  return Math.abs(a - b) <= LOGP_ATOL + LOGP_RTOL * Math.abs(b);
}

/** Compares one batch; returns the rows whose ids differ on an ambiguous draw or cut. */
function compare(b: RandomBatch, lane: Run, wg: Run, label: string): number {
  let ambiguous = 0;
  for (let r = 0; r < b.params.length; r++) {
    const p = b.params[r];
    const where = `${label} row ${r} ${JSON.stringify(p)}`;
    if (lane.ids[r] !== wg.ids[r]) {
      const row = b.logits.subarray(r * b.vocab, (r + 1) * b.vocab);
      const ref = sampleRef(row, p, b.history[r].slice(0, b.capacity));
      const margin = Math.min(ref.drawMargin, ref.cutMargin);
      assert(
        (p.temperature ?? 1) > 0 && margin < AMBIGUOUS,
        `${where}: lane sampled ${lane.ids[r]}, workgroup ${wg.ids[r]}, reference ${ref.id} ` +
          `(draw/cut margin ${margin.toExponential(2)})`,
      );
      ambiguous++;
      continue;
    }
    assert(
      close(lane.logprobs[r], wg.logprobs[r]),
      `${where}: log-prob lane ${lane.logprobs[r]}, workgroup ${wg.logprobs[r]}`,
    );
    assert(
      close(lane.truncated[r], wg.truncated[r]),
      `${where}: truncated log-prob lane ${lane.truncated[r]}, workgroup ${wg.truncated[r]}`,
    );
  }
  assertEquals(Array.from(lane.counts), Array.from(wg.counts), `${label}: history counts`);
  for (let r = 0; r < b.params.length; r++) {
    if (lane.ids[r] !== wg.ids[r]) continue;
    const at = r * b.capacity;
    assertEquals(
      Array.from(lane.historyIds.subarray(at, at + b.capacity)),
      Array.from(wg.historyIds.subarray(at, at + b.capacity)),
      `${label} row ${r}: appended history`,
    );
  }
  return ambiguous;
}

Deno.test("lane sampler = workgroup sampler on random rows", async (t) => {
  const gpu = await Gpu.create();
  try {
    const lane = await Sampler.create(gpu, { variant: "lane" });
    const shapes: [number, number][] = [
      [1, 9],
      [3, 17],
      [7, 33],
      [64, 40],
      [264, 64],
      [264, 128],
      [1001, 40],
      [4096, 24],
      [5003, 16],
    ];
    let rows = 0, ambiguous = 0;
    for (const [i, [vocab, n]] of shapes.entries()) {
      await t.step(`V=${vocab} B=${n}`, async () => {
        assertEquals(lane.variantFor(vocab, 24), "lane");
        const b = randomBatch(vocab, n, 1000 + i);
        ambiguous += compare(
          b,
          await run(gpu, "lane", b),
          await run(gpu, "workgroup", b),
          `V=${vocab}`,
        );
        rows += n;
      });
    }
    assert(ambiguous <= Math.max(2, rows / 100), `${ambiguous} of ${rows} rows differ`);
    lane.destroy();
  } finally {
    gpu.destroy();
  }
});

Deno.test("lane sampler: picked per call, workgroup past llvmpipe's loop limit", async () => {
  const gpu = await Gpu.create();
  try {
    // The bound grows with the vocabulary and the history: 152k logits cannot fit 65535.
    assert(laneLoopBound(264, 64) < 65535 && laneLoopBound(152064, 0) > 65535);
    const pinned = await Sampler.create(gpu, { variant: "lane" });
    assertEquals(pinned.variantFor(264), "lane");
    assertEquals(pinned.variantFor(152064), "workgroup");
    assertEquals(pinned.variantFor(264, 1 << 20), "workgroup");
    const wg = await Sampler.create(gpu, { variant: "workgroup" });
    assertEquals(wg.variantFor(264), "workgroup");
    const auto = await Sampler.create(gpu);
    assertEquals(auto.variantFor(264), gpu.adapterClass === "cpu" ? "lane" : "workgroup");
    assertEquals(auto.variantFor(151936), "workgroup");
    for (const s of [pinned, wg, auto]) s.destroy();
  } finally {
    gpu.destroy();
  }
});
