// The sampler's GPU cases, shared by Deno (test/model/sampling_test.ts) and the browser worker:
// each runs the sampler (shaders/sampling.wgsl, or sampling_lane.wgsl with { variant: "lane" })
// and compares with the float64 reference
// (src/model/sampling_reference.ts), returning its worst error relative to tolerance (≤ 1
// passes) or throwing with the first mismatch. Shapes are awkward on purpose: V = 1, V not a
// multiple of 4 or of the workgroup, V = 152064, B = 1 and 37, tied and −inf logits.
//
// A row passes when the GPU's token holds the draw: u lies in that token's interval of the
// reference CDF, give or take DRAW_TOL (float32 sums over up to 152k terms differ from float64
// by ~1e-6), the token is in the reference's support unless a top-k/top-p cut was within
// CUT_MARGIN of flipping, and the log-probs equal the reference's for that token (past such a
// near cut, only the full-vocabulary one: the truncated one depends on the cut's side). Most rows
// must also pick exactly the reference's token.

import { type BufferRef, readUint32 } from "../../src/gpu/buffers.ts";
import type { Gpu } from "../../src/gpu/mod.ts";
import {
  packSamplingParams,
  Sampler,
  type SamplerOptions,
  type SamplingParams,
} from "../../src/model/sampling.ts";
import {
  cdfIntervalDistance,
  CUT_MARGIN,
  DRAW_TOL,
  LOGP_ATOL,
  LOGP_RTOL,
  sampleRef,
  samplingUniform,
  truncatedProbsRef,
} from "../../src/model/sampling_reference.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";

export interface SamplingCase {
  name: string;
  /** Worst error relative to tolerance; the case passes when ≤ 1. `options` pick the kernel. */
  run(gpu: Gpu, options?: SamplerOptions): Promise<number>;
}

const LARGE_V = 152064; // Qwen2's padded vocabulary

// ---------------------------------------------------------------------------------------------
// Running a batch on the GPU.

export interface Batch {
  vocab: number;
  /** [rows, vocab] */
  logits: Float32Array;
  params: SamplingParams[];
  /** Seen ids per row (the repetition penalty's history). */
  history?: number[][];
}

export interface GpuResult {
  ids: Uint32Array;
  logprobs: Float32Array;
  truncated: Float32Array;
}

const samplers = new WeakMap<Gpu, Map<string, Promise<Sampler>>>();
/** One cached sampler per adapter and options (e.g. { variant: "lane" }). */
export function samplerFor(gpu: Gpu, options: SamplerOptions = {}): Promise<Sampler> {
  let byOptions = samplers.get(gpu);
  if (!byOptions) samplers.set(gpu, byOptions = new Map());
  const key = JSON.stringify(options);
  let s = byOptions.get(key);
  if (!s) byOptions.set(key, s = Sampler.create(gpu, options));
  return s;
}

function historyBuffers(gpu: Gpu, rows: number, history: number[][], capacity: number) {
  const ids = new Uint32Array(Math.max(1, rows * capacity));
  history.forEach((h, r) => ids.set(h.slice(0, capacity), r * capacity));
  return {
    ids: gpu.upload(ids),
    counts: gpu.upload(Uint32Array.from({ length: rows }, (_, r) => history[r]?.length ?? 0)),
    capacity,
  };
}

const readU32 = (gpu: Gpu, ref: BufferRef, n: number) => readUint32(gpu.device, ref, n);

/** How runBatch passes the history: its capacity (default: the longest) and whether ids are appended. */
export interface HistoryOptions {
  capacity?: number;
  append?: boolean;
}

/** Samples one batch; with `append`, also the history counts and ids the kernel left. */
export async function runBatch(
  gpu: Gpu,
  b: Batch,
  options: SamplerOptions = {},
  hist: HistoryOptions = {},
): Promise<GpuResult & { counts?: Uint32Array; historyIds?: Uint32Array }> {
  const sampler = await samplerFor(gpu, options);
  const rows = b.params.length;
  const capacity = hist.capacity ?? Math.max(1, ...(b.history ?? []).map((h) => h.length));
  const logits = gpu.upload(b.logits), params = gpu.upload(packSamplingParams(b.params));
  const ids = gpu.zeros(rows), logprobs = gpu.zeros(2 * rows);
  const history = b.history
    ? { ...historyBuffers(gpu, rows, b.history, capacity), append: hist.append }
    : undefined;
  const rec = gpu.recorder("sampling case");
  sampler.encode(rec, {
    rows,
    vocab: b.vocab,
    logits,
    params,
    history,
    ids,
    logprobs,
    truncatedLogprobs: true,
  });
  rec.submit();
  const lp = await gpu.readFloat32(logprobs, 2 * rows);
  const out = {
    ids: await readU32(gpu, ids, rows),
    logprobs: lp.slice(0, rows),
    truncated: lp.slice(rows),
    ...(history?.append
      ? {
        counts: await readU32(gpu, history.counts, rows),
        historyIds: await readU32(gpu, history.ids, rows * capacity),
      }
      : {}),
  };
  for (const buf of [logits, params, ids, logprobs, history?.ids, history?.counts]) buf?.destroy();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Comparing with the reference.

function rowOf(b: Batch, r: number): Float32Array {
  return b.logits.subarray(r * b.vocab, (r + 1) * b.vocab);
}

function checkRow(b: Batch, r: number, got: GpuResult): { ratio: number; exact: boolean } {
  const p = b.params[r];
  const ref = sampleRef(rowOf(b, r), p, b.history?.[r] ?? []);
  const { scores: z, probs } = ref;
  const id = got.ids[r];
  const fail = (why: string) =>
    new Error(
      `row ${r} ${
        JSON.stringify(p)
      }: GPU sampled ${id}, reference ${ref.id} (u=${ref.u}, kept ${ref.kept}): ${why}`,
    );
  if (!(id < b.vocab)) throw fail("not a token id");
  const greedy = (p.temperature ?? 1) === 0;
  if (greedy) {
    // Only a float32-level near tie may pick another maximum.
    if (id !== ref.id && z[id] < z[ref.id] - 1e-6 * Math.max(1, Math.abs(z[ref.id]))) {
      throw fail("not the argmax");
    }
  } else {
    if (probs[id] === 0 && ref.cutMargin >= CUT_MARGIN) {
      throw fail("outside the top-k/top-p support");
    }
    const d = cdfIntervalDistance(probs, id, ref.u);
    if (d > DRAW_TOL) {
      throw fail(`the draw is ${d.toExponential(2)} outside the token's CDF interval`);
    }
  }
  // The reference's log-probs for the token the GPU picked (the same token almost always). Where
  // a top-k/top-p cut was within CUT_MARGIN of flipping, float32's sums may keep the other side of
  // it, whose renormalised (truncated) log-probs differ: only the full one is compared there.
  const full = z[id] - (z[ref.id] - ref.logprob); // log-softmax over the full row
  if (!greedy && ref.cutMargin < CUT_MARGIN) {
    return {
      ratio: toleranceRatio([got.logprobs[r]], [full], LOGP_ATOL, LOGP_RTOL),
      exact: id === ref.id,
    };
  }
  const truncated = greedy ? 0 : probs[id] > 0 ? Math.log(probs[id]) : got.truncated[r];
  return {
    ratio: toleranceRatio(
      [got.logprobs[r], got.truncated[r]],
      [full, truncated],
      LOGP_ATOL,
      LOGP_RTOL,
    ),
    exact: id === ref.id,
  };
}

/** Worst log-prob error ratio over the rows; throws when a row's token is wrong. */
export function compareWithReference(b: Batch, got: GpuResult, minExact = 0.8): number {
  let worst = 0, exact = 0;
  b.params.forEach((_, r) => {
    const c = checkRow(b, r, got);
    worst = Math.max(worst, c.ratio);
    if (c.exact) exact++;
  });
  if (exact < minExact * b.params.length) {
    throw new Error(
      `only ${exact} of ${b.params.length} rows picked exactly the reference's token`,
    );
  }
  return worst;
}

// ---------------------------------------------------------------------------------------------
// Data.

/** Logits in [-scale, scale), rounded to multiples of `step` when given (to plant ties). */
export function logitsOf(n: number, seed: number, scale = 3, step = 0): Float32Array {
  const x = seededValues(n, seed, -scale, scale);
  return step ? x.map((v) => Math.round(v / step) * step) : x;
}

/** Roughly normal logits with standard deviation sd (Box–Muller), like a trained LM head's. */
export function normalLogits(n: number, seed: number, sd = 3): Float32Array {
  const a = seededValues(n, seed, 0, 1), b = seededValues(n, seed + 1, 0, 1);
  return a.map((v, i) => sd * Math.sqrt(-2 * Math.log(1 - v)) * Math.cos(2 * Math.PI * b[i]));
}

/** Row parameters cycling through `variants`, each row its own sequence. */
function rowsOf(rows: number, variants: Partial<SamplingParams>[], seed = 7): SamplingParams[] {
  return Array.from(
    { length: rows },
    (_, r) => ({ seed, sequence: 1000 + r, step: r % 5, ...variants[r % variants.length] }),
  );
}

function historiesOf(rows: number, vocab: number, seed: number, length = 12): number[][] {
  const v = seededValues(rows * length, seed, 0, 1);
  // Repeats on purpose (each distinct id is penalised once), and an id past the vocabulary.
  return Array.from({ length: rows }, (_, r) => {
    const h = Array.from({ length }, (_, j) => Math.floor(v[r * length + j] * Math.min(vocab, 40)));
    return [...h, h[0], vocab + 3];
  });
}

function referenceCase(name: string, make: () => Batch): SamplingCase {
  return {
    name,
    async run(gpu, options) {
      const b = make();
      return compareWithReference(b, await runBatch(gpu, b, options));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Cases.

function rngCases(): SamplingCase[] {
  return [{
    name: "Philox draws on the GPU equal the CPU's bit for bit (37 rows)",
    async run(gpu, options) {
      const sampler = await samplerFor(gpu, options);
      const seeds = [0, 1, 0xffffffff, 123456789, 0x80000000];
      const params = Array.from(
        { length: 37 },
        (_, r) => ({ seed: seeds[r % 5], sequence: r * 7919, step: r * r }),
      );
      const P = gpu.upload(packSamplingParams(params)), out = gpu.zeros(37);
      const rec = gpu.recorder();
      sampler.encodeDraws(rec, 37, P, out);
      rec.submit();
      const got = await gpu.readFloat32(out, 37);
      P.destroy();
      out.destroy();
      const want = params.map((p) => samplingUniform(p.seed, p.sequence, p.step));
      const bad = want.findIndex((w, r) => got[r] !== w);
      if (bad >= 0) throw new Error(`row ${bad}: GPU draw ${got[bad]}, CPU ${want[bad]}`);
      return 0;
    },
  }];
}

function greedyCases(): SamplingCase[] {
  return [1, 7, 264, 5003].map((vocab) => ({
    name: `greedy = argmax, lowest id among ties, V=${vocab} B=37`,
    async run(gpu, options) {
      // Logits on a 0.5 grid make ties at the maximum common; some rows also penalise.
      const b: Batch = {
        vocab,
        logits: logitsOf(37 * vocab, 11 + vocab, 3, 0.5),
        params: rowsOf(37, [{ temperature: 0 }, { temperature: 0, repetitionPenalty: 1.5 }]),
        history: historiesOf(37, vocab, 5),
      };
      const tiedRows = b.params.filter((_, r) => {
        const row = rowOf(b, r), max = Math.max(...row);
        return row.filter((v) => v === max).length > 1;
      }).length;
      if (vocab > 1 && tiedRows === 0) {
        throw new Error("no row has a tie at its maximum: the tie rule is untested");
      }
      return compareWithReference(b, await runBatch(gpu, b, options), 1);
    },
  }));
}

function temperatureCases(): SamplingCase[] {
  const out: SamplingCase[] = [];
  for (const vocab of [1, 7, 264, 1000, 5003]) {
    for (const rows of [1, 37]) {
      out.push(referenceCase(`temperature sampling V=${vocab} B=${rows}`, () => ({
        vocab,
        logits: logitsOf(rows * vocab, 21 + vocab, 4),
        params: rowsOf(rows, [1, 0.25, 0.7, 2].map((temperature) => ({ temperature }))),
      })));
    }
  }
  return out;
}

function truncationCases(): SamplingCase[] {
  const out: SamplingCase[] = [];
  for (const vocab of [264, 5003]) {
    const ks = [1, 2, 5, 50, vocab - 1, 1000];
    for (const tied of [false, true]) {
      const grid = tied ? 0.25 : 0;
      const tag = tied ? " (ties at thresholds)" : "";
      out.push(referenceCase(`top-k V=${vocab} B=37${tag}`, () => ({
        vocab,
        logits: logitsOf(37 * vocab, 31 + vocab, 3, grid),
        params: rowsOf(37, ks.map((topK, i) => ({ topK, temperature: [1, 0.6, 1.5][i % 3] }))),
      })));
      out.push(referenceCase(`top-p V=${vocab} B=37${tag}`, () => ({
        vocab,
        logits: logitsOf(37 * vocab, 41 + vocab, 3, grid),
        params: rowsOf(
          37,
          [0, 0.3, 0.6, 0.9, 0.99, 0.999].map((topP, i) => ({
            topP,
            temperature: 1 - (i % 2) * 0.4,
          })),
        ),
      })));
      out.push(referenceCase(`top-k then top-p V=${vocab} B=37${tag}`, () => ({
        vocab,
        logits: logitsOf(37 * vocab, 51 + vocab, 3, grid),
        params: rowsOf(37, [{ topK: 50, topP: 0.9 }, { topK: 3, topP: 0.5 }, {
          topK: 700,
          topP: 0.95,
          temperature: 0.8,
        }]),
      })));
    }
    out.push(referenceCase(`repetition penalty with every warper V=${vocab} B=37`, () => ({
      vocab,
      logits: logitsOf(37 * vocab, 61 + vocab, 3),
      params: rowsOf(37, [
        { repetitionPenalty: 1.3 },
        { repetitionPenalty: 0.5, temperature: 0.7 },
        { repetitionPenalty: 2, topK: 20 },
        { repetitionPenalty: 1.2, topP: 0.8, temperature: 1.2 },
      ]),
      history: historiesOf(37, vocab, 9),
    })));
  }
  return out;
}

function largeVocabCases(): SamplingCase[] {
  const mixed: Partial<SamplingParams>[] = [
    { temperature: 0 },
    { temperature: 1 },
    { temperature: 0.6, topK: 50 },
    { topP: 0.9 },
    { topK: 2000, topP: 0.95 },
    { repetitionPenalty: 1.3, topP: 0.8 },
    { topK: 1, temperature: 0.7 },
    { temperature: 1.3, topP: 0.5 },
    // Split rows (GPUs) draw these from the chunks' top-k candidates: the HF configs' setting,
    // and k at the chunks' candidate slots (SPLIT_SLOTS) with the penalty.
    { topK: 20, topP: 0.9, temperature: 0.7 },
    { topK: 32, repetitionPenalty: 1.2 },
  ];
  const special = (vocab: number): Float32Array => {
    const x = normalLogits(4 * vocab, 71, 2);
    for (let i = 0; i < 3000; i++) x[(i * 37) % vocab] = 6; // row 0: 3000 tokens tied at the top
    x.fill(0, vocab, 2 * vocab); // row 1: all equal
    for (let i = 2 * vocab; i < 3 * vocab; i += 3) x[i] = -Infinity; // row 2: every third masked
    x[3 * vocab + 77] = 40; // row 3: one token dominates
    return x;
  };
  return [
    referenceCase(`mixed warpers V=${LARGE_V} B=10`, () => ({
      vocab: LARGE_V,
      logits: normalLogits(10 * LARGE_V, 81, 3),
      params: rowsOf(10, mixed),
      history: historiesOf(10, LARGE_V, 13, 40),
    })),
    referenceCase(`plateau, uniform, −inf-masked and one-hot rows V=${LARGE_V}`, () => ({
      vocab: LARGE_V,
      logits: special(LARGE_V),
      // Row 0's top-k ties overflow a split row's candidate slots (its merge searches the
      // whole row); row 2's top-k candidates include masked logits.
      params: rowsOf(4, [{ topK: 20 }, { topP: 0.5 }, { topK: 20, topP: 0.9 }, {
        topP: 0.9,
        temperature: 0.8,
      }]),
    })),
  ];
}

/** The same (seed, sequence, step) gives the same token at any row of any batch. */
function independenceCase(): SamplingCase {
  const vocab = 5003;
  const probe: SamplingParams = {
    seed: 5,
    sequence: 42,
    step: 9,
    topK: 300,
    topP: 0.9,
    repetitionPenalty: 1.4,
    temperature: 0.9,
  };
  const probeLogits = logitsOf(vocab, 91, 3);
  const probeHistory = [1, 2, 3, 2, 77];
  const batch = (rows: number, at: number, seed: number): Batch => {
    const logits = logitsOf(rows * vocab, seed, 3);
    logits.set(probeLogits, at * vocab);
    const params = rowsOf(rows, [{ temperature: 1.1 }, { topK: 7 }, { topP: 0.6 }, {
      temperature: 0,
    }], seed);
    params[at] = probe;
    const history = historiesOf(rows, vocab, seed);
    history[at] = probeHistory;
    return { vocab, logits, params, history };
  };
  return {
    name: "a row's sample does not depend on its batch or its position in it",
    async run(gpu, options) {
      const layouts: [number, number][] = [[1, 0], [37, 20], [5, 4], [37, 0]];
      const results = [];
      for (const [rows, at] of layouts) {
        const r = await runBatch(gpu, batch(rows, at, 100 + rows + at), options);
        results.push([r.ids[at], r.logprobs[at], r.truncated[at]]);
      }
      const first = JSON.stringify(results[0]);
      const odd = results.findIndex((r) => JSON.stringify(r) !== first);
      if (odd >= 0) {
        throw new Error(
          `layout ${layouts[odd]} gave ${JSON.stringify(results[odd])}, alone ${first}`,
        );
      }
      return compareWithReference({
        vocab,
        logits: probeLogits,
        params: [probe],
        history: [probeHistory],
      }, {
        ids: Uint32Array.of(results[0][0]),
        logprobs: Float32Array.of(results[0][1]),
        truncated: Float32Array.of(results[0][2]),
      }, 1);
    },
  };
}

/** Upper critical value of χ² with `df` degrees of freedom at α = 0.001 (Wilson–Hilferty, ~1%). */
export function chiSquareCritical(df: number, z999 = 3.0902): number {
  const a = 2 / (9 * df);
  return df * (1 - a + z999 * Math.sqrt(a)) ** 3;
}

/**
 * Draws `draws` samples of one row (one batch row per draw, each its own sequence) and returns
 * χ² / critical(α = 0.001) against the reference's truncated distribution; a token outside
 * the support is an immediate failure. Seeds are fixed, so the verdict is deterministic.
 */
function frequencyCase(
  name: string,
  row: Float32Array,
  p: Partial<SamplingParams>,
  draws: number,
  history: number[] = [],
): SamplingCase {
  return {
    name,
    async run(gpu, options) {
      const vocab = row.length;
      const logits = new Float32Array(draws * vocab);
      for (let r = 0; r < draws; r++) logits.set(row, r * vocab);
      const params = Array.from(
        { length: draws },
        (_, r) => ({ seed: 2024, sequence: r, step: 3, ...p }),
      );
      const got = await runBatch(gpu, {
        vocab,
        logits,
        params,
        history: params.map(() => history),
      }, options);
      const probs = truncatedProbsRef(row, params[0], history);
      const counts = new Float64Array(vocab);
      for (const id of got.ids) {
        if (!(probs[id] > 0)) throw new Error(`sampled token ${id}, which ${name} excludes`);
        counts[id]++;
      }
      // Bins with fewer than 5 expected draws are pooled, as χ² needs.
      let chi = 0, bins = 0, restObs = 0, restExp = 0;
      probs.forEach((q, i) => {
        if (q === 0) return;
        if (q * draws < 5) {
          restObs += counts[i];
          restExp += q * draws;
          return;
        }
        chi += (counts[i] - q * draws) ** 2 / (q * draws);
        bins++;
      });
      if (restExp > 0) {
        chi += (restObs - restExp) ** 2 / restExp;
        bins++;
      }
      if (bins < 4) throw new Error(`only ${bins} bins: the case has too little to test`);
      return chi / chiSquareCritical(bins - 1);
    },
  };
}

function frequencyCases(): SamplingCase[] {
  const ten = Float32Array.of(1.2, -0.5, 0.3, 2.0, 0.0, -1.0, 1.5, 0.8, -0.2, 0.5);
  const twelve = Float32Array.of(1, 1, 0.5, 2, 0.5, 0.5, -1, 1, 0, 2, -0.5, 0.5); // ties at the top-p cut
  // Past CAP, so the top-p threshold comes from passes over storage before the gather.
  const wide = new Float32Array(3001).fill(-30);
  [3.0, 2.5, 2.5, 2.2, 2.0, 1.8, 1.5, 1.5, 1.2, 1.0, 0.5, 0.2].forEach((v, i) =>
    wide[i * 250 + 3] = v
  );
  return [
    frequencyCase("frequencies match the softmax at T=1 (χ², α=0.001, 4000 draws)", ten, {}, 4000),
    frequencyCase("top-k=4 at T=0.8: frequencies match, excluded never drawn", ten, {
      topK: 4,
      temperature: 0.8,
    }, 3000),
    frequencyCase("top-p=0.7 with ties: frequencies match, excluded never drawn", twelve, {
      topP: 0.7,
    }, 3000),
    frequencyCase(
      "repetition penalty 1.5 at T=1.2: frequencies match",
      ten,
      { repetitionPenalty: 1.5, temperature: 1.2 },
      3000,
      [0, 0, 3, 6],
    ),
    frequencyCase("top-p=0.9 over V=3001: frequencies match, excluded never drawn", wide, {
      topP: 0.9,
    }, 1500),
  ];
}

/** Several steps in one recording, each appending its ids to the history the next one reads. */
function chainCase(): SamplingCase {
  const rows = 3, vocab = 264, capacity = 6, steps = 5;
  const start = [[5, 6, 7], [1], []];
  const logits = logitsOf(rows * vocab, 123, 2);
  const paramsAt = (step: number) =>
    Array.from(
      { length: rows },
      (_, r) => ({ seed: 3, sequence: r, step, repetitionPenalty: 1.8, topK: 40 }),
    );
  return {
    name: "appending to the history chains steps in one recording; storage stops at capacity",
    async run(gpu, options) {
      const sampler = await samplerFor(gpu, options);
      const history = { ...historyBuffers(gpu, rows, start, capacity), append: true };
      const L = gpu.upload(logits);
      const outs = Array.from(
        { length: steps },
        (_, s) => ({
          P: gpu.upload(packSamplingParams(paramsAt(s))),
          ids: gpu.zeros(rows),
          lp: gpu.zeros(rows),
        }),
      );
      const rec = gpu.recorder("chain");
      for (const o of outs) {
        sampler.encode(rec, {
          rows,
          vocab,
          logits: L,
          params: o.P,
          history,
          ids: o.ids,
          logprobs: o.lp,
        });
      }
      rec.submit();
      const seen = start.map((h) => [...h]);
      for (let s = 0; s < steps; s++) {
        const ids = await readU32(gpu, outs[s].ids, rows);
        for (let r = 0; r < rows; r++) {
          const ref = sampleRef(
            logits.subarray(r * vocab, (r + 1) * vocab),
            paramsAt(s)[r],
            seen[r].slice(0, capacity),
          );
          if (ref.drawMargin < DRAW_TOL || ref.cutMargin < CUT_MARGIN) {
            throw new Error("ambiguous draw: change the case's seed");
          }
          if (ids[r] !== ref.id) {
            throw new Error(`step ${s} row ${r}: GPU ${ids[r]}, reference ${ref.id}`);
          }
          seen[r].push(ref.id);
        }
      }
      const counts = await readU32(gpu, history.counts, rows),
        stored = await readU32(gpu, history.ids, rows * capacity);
      for (let r = 0; r < rows; r++) {
        if (counts[r] !== start[r].length + steps) {
          throw new Error(`row ${r}: count ${counts[r]}, want ${start[r].length + steps}`);
        }
        const want = seen[r].slice(0, capacity).join(),
          have = Array.from(
            stored.subarray(r * capacity, r * capacity + Math.min(capacity, seen[r].length)),
          ).join();
        if (want !== have) throw new Error(`row ${r}: history [${have}], want [${want}]`);
      }
      for (
        const b of [L, history.ids, history.counts, ...outs.flatMap((o) => [o.P, o.ids, o.lp])]
      ) b.destroy();
      return 0;
    },
  };
}

/** Every GPU case of the sampler. */
export function samplingCases(): SamplingCase[] {
  return [
    ...rngCases(),
    ...greedyCases(),
    ...temperatureCases(),
    ...truncationCases(),
    ...largeVocabCases(),
    independenceCase(),
    chainCase(),
    ...frequencyCases(),
  ];
}
