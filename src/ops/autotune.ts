// The matmul tuner: times the matmul variants on this device at one model's real products and
// picks the fastest per form and shape bucket, for Matmul to use on this adapter from then on
// (src/ops/tuned_picks.ts keeps them). The built-in picks (src/ops/tuning.ts) come from a lab on
// one machine per adapter class; a laptop's GPU differs from an H100 in every way that decides a
// tile (lanes, caches, workgroup memory), so the tuner measures instead of guessing.
//
// Per bucket, every variant that can run its shapes is first checked against the float64
// reference (a wrong kernel is never picked), then screened (one short timing per shape), and the
// best few are timed again at length. A bucket's score is Σ over its shapes of (uses a step ×
// ms): the products a model runs most weigh most. Where a variant cannot run a shape (Matmul then
// runs a stand-in bucket's pick or the fallback), the fallback's time counts for it.

import type { Gpu } from "../gpu/mod.ts";
import { screenThenTime, timeIt } from "../gpu/timing.ts";
import type { ModelConfig } from "../model/config.ts";
import { encodeMatmulWith } from "./matmul.ts";
import {
  BUCKET_STANDIN,
  bucketsForShapes,
  findVariant,
  kernelSpec,
  MATMUL_VARIANTS,
  type MatmulForm,
  type MatmulShape,
  type MatmulVariant,
  type ShapeBucket,
  shapeBucket,
  variantSupports,
} from "./matmul_variants.ts";
import { packHalves, roundToHalf } from "./matmul_half.ts";
import { matmulRef, seededValues, toleranceRatio } from "./reference.ts";
import { matmulPicks } from "./tuning.ts";

/** One product a model runs: its shape, how many times a step runs it, and what it is. */
export interface WorkloadShape {
  shape: MatmulShape;
  count: number;
  what: string;
  /**
   * The bucket whose pick runs it: its own, or the stand-in Matmul runs where the model does not
   * compile its own (BUCKET_STANDIN: a tiny model's 16-row products run the 8–15-row pick).
   * Unset: its own.
   */
  bucket?: ShapeBucket;
}

export interface WorkloadOptions {
  /** Rows of a decode step's products: the batch sizes generation runs at (default 1, 8, 32). */
  decodeRows?: readonly number[];
  /** Rows of a prefill's products: the prompt tokens prefilled at once (default none). */
  prefillRows?: readonly number[];
  /** Rows of a training chunk (B × T tokens); 0: no training products (default 1024). */
  trainRows?: number;
  /**
   * Rows of the LM head a training chunk computes at a time (the trainer's logitRows:
   * defaultLogitRows in src/train/trainer.ts); default trainRows.
   */
  logitRows?: number;
  /** Full fine-tuning: the weight gradients (Aᵀ·B) too; LoRA trains only its adapters. */
  full?: boolean;
  /** A frozen base in half floats (GpuModelOptions.halfBase): the A·Bᵀ and A·B read half B. */
  halfB?: boolean;
}

/**
 * The matmuls of a Llama-family model (Llama/SmolLM, Qwen2, Qwen3): each projection [out, in]
 * and the LM head at decode rows (x·Wᵀ) and at a training chunk's rows (x·Wᵀ forward, dy·W input
 * gradient, and with `full` dyᵀ·x weight gradient), each counted once per layer that runs it.
 */
export function matmulWorkload(c: ModelConfig, o: WorkloadOptions = {}): WorkloadShape[] {
  if (c.modelType === "gpt2") {
    throw new RangeError(
      "the matmul tuner knows the Llama family's products (llama, qwen2, qwen3), not gpt2's",
    );
  }
  const decodeRows = o.decodeRows ?? [1, 8, 32];
  const trainRows = o.trainRows ?? 1024;
  const halfB = o.halfB ?? false;
  const H = c.hiddenSize, I = c.intermediateSize, L = c.numLayers;
  const q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  // [name, out, in, uses a step]
  const proj: [string, number, number, number][] = [
    ["q", q, H, L],
    ["k/v", kv, H, 2 * L],
    ["o", H, q, L],
    ["gate/up", I, H, 2 * L],
    ["down", H, I, L],
    ["head", c.vocabSize, H, 1],
  ];
  // The buckets a model of these weights compiles (GpuModel: its chunk rows, at least 256, or
  // its slots); a shape of another bucket runs its stand-in's pick.
  const maxRows = Math.max(trainRows > 0 ? trainRows : 256, ...decodeRows);
  const prepared = new Set(bucketsForShapes(maxRows, proj.map(([, n, k]) => [n, k])));
  const runsIn = (s: MatmulShape): ShapeBucket => {
    const own = shapeBucket(s);
    return [own, ...BUCKET_STANDIN[own]].find((b) => prepared.has(b)) ?? own;
  };
  const out: WorkloadShape[] = [];
  const add = (shape: MatmulShape, count: number, what: string) => {
    const same = out.find((w) =>
      w.shape.form === shape.form && w.shape.M === shape.M && w.shape.N === shape.N &&
      w.shape.K === shape.K
    );
    if (same) {
      same.count += count;
      same.what += `, ${what}`;
    } else {
      const s = halfB && shape.form !== "tn" ? { ...shape, halfB } : shape;
      out.push({ shape: s, count, what, bucket: runsIn(s) });
    }
  };
  for (const m of decodeRows) {
    for (const [name, n, k, uses] of proj) {
      add({ form: "nt", M: m, N: n, K: k }, uses, `${name} x·Wᵀ at ${m} rows`);
    }
  }
  // A prefill runs every projection at its rows (the head only at each prompt's last row).
  for (const m of o.prefillRows ?? []) {
    for (const [name, n, k, uses] of proj) {
      if (name !== "head") add({ form: "nt", M: m, N: n, K: k }, uses, `${name} x·Wᵀ at ${m} rows`);
    }
  }
  if (trainRows > 0) {
    for (const [name, n, k, layerUses] of proj) {
      // The head runs logitRows rows at a time, as often as it takes to cover a chunk.
      const head = name === "head";
      const m = head ? Math.min(o.logitRows ?? trainRows, trainRows) : trainRows;
      const uses = head ? Math.ceil(trainRows / m) : layerUses;
      add({ form: "nt", M: m, N: n, K: k }, uses, `${name} x·Wᵀ at ${m} rows`);
      add({ form: "nn", M: m, N: k, K: n }, uses, `${name} dy·W at ${m} rows`);
      if (o.full) add({ form: "tn", M: n, N: k, K: m }, uses, `${name} dyᵀ·x over ${m} rows`);
    }
  }
  return out;
}

export interface TuneOptions {
  /** Wall time of a final timing, per shape (ms); a screening timing takes a fifth. */
  minMs?: number;
  /** Only the variants whose names match (the current picks and the fallback always run). */
  variants?: RegExp;
  /** Variants kept from screening for the final timing, per bucket (the current pick too). */
  keep?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /**
   * Candidates instead of MATMUL_VARIANTS (tests: a variant that computes the wrong product
   * must be refused by the reference check).
   */
  candidates?: readonly MatmulVariant[];
}

/** One bucket's outcome: the pick it had, the pick it gets, and the score of each. */
export interface TunedBucket {
  /** "form:bucket", the key of Matmul's picks. */
  key: string;
  shapes: number;
  current: string;
  currentMs: number;
  best: string;
  bestMs: number;
}

export interface TuneResult {
  /** Picks by "form:bucket" (every tuned bucket, changed or not). */
  picks: Record<string, string>;
  buckets: TunedBucket[];
  /** Variants (and forms) that failed the reference check: never picked. */
  refused: string[];
  seconds: number;
}

const fallbackFor = (gpu: Gpu) => (gpu.adapterClass === "cpu" ? "generic" : "tiled64");

/** Whether the variant computes `form` (with half B where asked) within float32's tolerance. */
export async function checkVariant(
  gpu: Gpu,
  v: MatmulVariant,
  form: MatmulForm,
  half = false,
): Promise<boolean> {
  const s: MatmulShape = { form, M: 37, N: 44, K: 52, batch: 2 };
  if (!variantSupports(v, s)) return true;
  const na = 2 * s.M * s.K, nb = 2 * s.K * s.N;
  const a = seededValues(na, 5), b = seededValues(nb, 6);
  const A = gpu.upload(a), B = gpu.upload(half ? packHalves(b) : b), C = gpu.zeros(2 * s.M * s.N);
  try {
    const rec = gpu.recorder();
    encodeMatmulWith(
      rec,
      await gpu.kernel(kernelSpec(v, form, half, gpu.subgroups)),
      v,
      s,
      A,
      B,
      C,
    );
    rec.submit();
    const got = await gpu.readFloat32(C, 2 * s.M * s.N);
    return toleranceRatio(got, matmulRef(s, a, half ? roundToHalf(b) : b), 1e-4, 1e-4) <= 1;
  } finally {
    [A, B, C].forEach((x) => x.destroy());
  }
}

/** Seeded operands of a product: A, B (packed half floats where `halfB`) and C. */
export interface Operands {
  A: GPUBuffer;
  B: GPUBuffer;
  C: GPUBuffer;
}

export function makeOperands(gpu: Gpu, s: MatmulShape): Operands {
  const [ra, rb] = s.form === "tn" ? [s.K, s.M] : [s.M, s.K];
  const b = seededValues(s.K * s.N, 2);
  return {
    A: gpu.upload(seededValues(ra * rb, 1)),
    B: gpu.upload(s.halfB ? packHalves(b) : b),
    C: gpu.zeros(s.M * s.N),
  };
}

const destroyOperands = ({ A, B, C }: Operands) => [A, B, C].forEach((x) => x.destroy());

/**
 * Milliseconds per product of `v` at shape `s` on this device (median of `rounds`), on
 * `operands` (made for `s`) or on operands of its own.
 */
export async function timeVariant(
  gpu: Gpu,
  v: MatmulVariant,
  s: MatmulShape,
  minMs: number,
  rounds = 3,
  operands?: Operands,
): Promise<number> {
  const { A, B, C } = operands ?? makeOperands(gpu, s);
  const k = await gpu.kernel(kernelSpec(v, s.form, s.halfB, gpu.subgroups));
  try {
    const t = await timeIt(
      async (reps) => {
        const rec = gpu.recorder();
        for (let i = 0; i < reps; i++) encodeMatmulWith(rec, k, v, s, A, B, C);
        rec.submit();
        await gpu.sync();
      },
      minMs,
      rounds,
    );
    return t.msPerRep;
  } finally {
    if (!operands) destroyOperands({ A, B, C });
  }
}

/** Whether a variant is worth timing on a shape (as the lab: split-K is for decode rows). */
function worthTiming(v: MatmulVariant, s: MatmulShape): boolean {
  if (!variantSupports(v, s)) return false;
  if (v.kind === "splitk" && s.M > 32) return false;
  if (v.kind === "generic" && s.M * s.N * s.K > 2 ** 27 && s.M > 32) return false;
  return true;
}

/**
 * Tunes the picks of every bucket the workload's products fall in. Takes seconds to minutes
 * (dozens of pipelines to compile, hundreds of timings at a large model's sizes); run it once
 * per device and model (`npx deno task tune`), not per run.
 */
export async function tuneMatmuls(
  gpu: Gpu,
  workload: readonly WorkloadShape[],
  o: TuneOptions = {},
): Promise<TuneResult> {
  const t0 = performance.now();
  const minMs = o.minMs ?? 60;
  const keep = o.keep ?? 3;
  const log = o.log ?? (() => {});
  const current = matmulPicks(gpu.ctx.info);
  const fallback = fallbackFor(gpu);
  const all = o.candidates ?? MATMUL_VARIANTS;
  // A product whose operand exceeds one binding runs as split tensors (src/model/split_kernels.ts),
  // not through Matmul's picks: nothing to tune there.
  const limit = Math.min(
    gpu.device.limits.maxStorageBufferBindingSize,
    gpu.device.limits.maxBufferSize,
  );
  const fits = (s: MatmulShape) =>
    4 * Math.max(s.M * s.K, s.K * s.N / (s.halfB ? 2 : 1), s.M * s.N) <= limit;
  const buckets = new Map<string, WorkloadShape[]>();
  for (const w of workload) {
    if (!fits(w.shape)) {
      log(`skipped ${w.what}: an operand exceeds one binding, so it runs as split tensors`);
      continue;
    }
    const key = `${w.shape.form}:${w.bucket ?? shapeBucket(w.shape)}`;
    buckets.set(key, [...(buckets.get(key) ?? []), w]);
  }
  const refused: string[] = [];
  const checked = new Map<string, Promise<boolean>>();
  const valid = (v: MatmulVariant, form: MatmulForm, half: boolean) => {
    const key = `${v.name}:${form}${half ? ":hb" : ""}`;
    if (!checked.has(key)) {
      checked.set(
        key,
        checkVariant(gpu, v, form, half).then((ok) => {
          if (!ok) refused.push(key);
          return ok;
        }),
      );
    }
    return checked.get(key)!;
  };
  // Times by variant and shape: a fallback time is shared by every variant that needs it. A
  // bucket's operands are made once, for all its candidates (a 0.5B model's LM head is 136M
  // seeded values), and freed when the bucket is done.
  const times = new Map<string, number>();
  const operands = new Map<WorkloadShape, Operands>();
  const time = async (v: MatmulVariant, w: WorkloadShape, ms: number, rounds: number) => {
    const { form, M, N, K, halfB } = w.shape;
    const key = `${v.name}|${form}|${M}|${N}|${K}|${halfB ? "hb" : ""}|${rounds}`;
    if (!times.has(key)) {
      if (!operands.has(w)) operands.set(w, makeOperands(gpu, w.shape));
      times.set(key, await timeVariant(gpu, v, w.shape, ms, rounds, operands.get(w)));
    }
    return times.get(key)!;
  };
  const fb = findVariant(fallback);
  const score = async (v: MatmulVariant, ws: WorkloadShape[], ms: number, rounds: number) => {
    let total = 0;
    for (const w of ws) {
      const runs = worthTiming(v, w.shape) || v === fb;
      total += w.count * await time(runs ? v : fb, w, ms, rounds);
    }
    return total;
  };
  const result: TuneResult = { picks: {}, buckets: [], refused, seconds: 0 };
  try {
    for (const [key, ws] of buckets) {
      const form = ws[0].shape.form;
      const half = ws.some((w) => w.shape.halfB);
      const now = current[key] ?? fallback;
      // A decode A·Bᵀ bucket that runs split-K keeps split-K: the folded RMSNorm and SwiGLU and the
      // grouped q/k/v and gate/up products (fewer dispatches a step) exist for split-K only, which
      // one product's time does not show.
      const splitOnly = form === "nt" &&
        MATMUL_VARIANTS.find((v) => v.name === now)?.kind === "splitk";
      const candidates: MatmulVariant[] = [];
      for (const v of all) {
        if (splitOnly && v.kind !== "splitk") continue;
        const named = v.name === now || v.name === fallback || !o.variants ||
          o.variants.test(v.name);
        if (!named || !ws.some((w) => worthTiming(v, w.shape)) && v.name !== now) continue;
        if (!(await valid(v, form, false)) || (half && !(await valid(v, form, true)))) continue;
        candidates.push(v);
      }
      // What runs today: the current pick, or the fallback where that is not a candidate.
      const base = candidates.find((v) => v.name === now) ?? fb;
      // Screened with one short round per shape; the best `keep`, and what runs today, timed
      // again at length.
      const { best, bestMs, times } = await screenThenTime(
        candidates,
        base,
        (v, ms, rounds) => score(v, ws, ms, rounds),
        { minMs, keep },
      );
      const nowMs = times.get(base)!.ms;
      result.picks[key] = best.name;
      result.buckets.push({
        key,
        shapes: ws.length,
        current: now,
        currentMs: nowMs,
        best: best.name,
        bestMs,
      });
      log(
        `${key}: ${best.name} ${bestMs.toFixed(3)} ms a step against ${now} ${
          nowMs.toFixed(3)
        } ms (${candidates.length} variants, ${ws.length} shapes)`,
      );
      operands.forEach(destroyOperands);
      operands.clear();
    }
  } finally {
    operands.forEach(destroyOperands);
  }
  result.seconds = (performance.now() - t0) / 1000;
  return result;
}
