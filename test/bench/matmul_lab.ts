// The kernel lab for matmul: validate every named variant against the float64 reference,
// time the valid ones over the shapes the model uses, pick the best per form and shape
// bucket for this adapter class, then measure the picks against TF.js on the same adapter.

import type { Gpu } from "../../src/gpu/mod.ts";
import { checkVariant, timeVariant } from "../../src/ops/autotune.ts";
import {
  Matmul,
  MATMUL_FORMS,
  MATMUL_VARIANTS,
  type MatmulShape,
  type MatmulVariant,
  shapeBucket,
  variantSupports,
} from "../../src/ops/matmul.ts";
import { seededValues } from "../../src/ops/reference.ts";
import { gflops, round, timeIt } from "./timing.ts";
import { tfjsMatmulMs, tfjsReady } from "./tfjs_peer.ts";

export interface LabOptions {
  /** Time every variant and pick (slow); otherwise only the current picks run. */
  lab: boolean;
  squares: number[];
  skinnyM: number[];
  skinnyKN: number;
  minMs: number;
  /** Time only the variants whose names match (the fallback is always timed: picks score by it). */
  variants?: RegExp;
  /** The GEMMs of training and prefill at a real model's size instead of the square/skinny set. */
  modelShapes?: boolean;
  /** With modelShapes: 64 rows and no LM head (a smoke run on a CPU adapter). */
  quick?: boolean;
  /**
   * Also time each variant's half-B twin (B as half floats: a frozen weight) on the A·Bᵀ and A·B
   * shapes, as "<name>+hb"; with modelShapes, decode rows (1, 8, 32) join the shapes. The picks
   * stay the f32 kernels'; `halfPicks` are the twins'.
   */
  half?: boolean;
}

const HB = "+hb";

// The "small" bucket: a tiny model's training chunk (320 rows) through its projections
// (hidden 64, MLP 192, vocab 264), and the weight gradients (Aᵀ·B over the rows).
const SMALL_NK: ReadonlyArray<readonly [number, number]> = [[64, 64], [192, 64], [64, 192], [
  264,
  64,
], [64, 264]];

/**
 * Qwen2.5-0.5B's projections (in → out: q/o, k/v, gate/up, down) and its LM head at a training
 * step's 1024 rows (B 8 × T 128, the scale bench's): the forward x·Wᵀ (nt), the input gradient
 * dy·W (nn) and the weight gradient dyᵀ·x (tn); prefill chunks of 512 rows run the nt ones.
 */
const MODEL_PROJ: ReadonlyArray<readonly [number, number]> = [
  [896, 896],
  [896, 128],
  [896, 4864],
  [4864, 896],
];
const MODEL_ROWS = 1024;

function modelShapes(quick: boolean, half: boolean): MatmulShape[] {
  const rows = quick ? 64 : MODEL_ROWS;
  const out: MatmulShape[] = [];
  for (const [i, o] of MODEL_PROJ) {
    // Decode rows, where B's bytes bound the time: what half-float weights are for.
    if (half) { for (const m of [1, 8, 32]) out.push({ form: "nt", M: m, N: o, K: i }); }
    out.push({ form: "nt", M: rows, N: o, K: i });
    out.push({ form: "nt", M: rows / 2, N: o, K: i });
    out.push({ form: "nn", M: rows, N: i, K: o });
    out.push({ form: "tn", M: o, N: i, K: rows });
  }
  if (!quick) out.push({ form: "nt", M: rows, N: 151936, K: 896 }); // the LM head
  return out;
}

function labShapes(o: LabOptions): MatmulShape[] {
  if (o.modelShapes) return modelShapes(o.quick ?? false, o.half ?? false);
  const out: MatmulShape[] = [];
  for (const form of MATMUL_FORMS) {
    for (const n of o.squares) out.push({ form, M: n, N: n, K: n });
    for (const m of o.skinnyM) out.push({ form, M: m, N: o.skinnyKN, K: o.skinnyKN });
    for (const [a, b] of SMALL_NK) {
      out.push(form === "tn" ? { form, M: b, N: a, K: 320 } : { form, M: 320, N: a, K: b });
    }
  }
  return out;
}

const label = (s: MatmulShape) => `${s.form} ${s.M}x${s.N}x${s.K}`;

/** Times every valid variant on lab shapes; returns timings and the best pick per bucket. */
export async function runLab(gpu: Gpu, o: LabOptions, log: (s: string) => void) {
  const valid: MatmulVariant[] = [];
  const invalid: string[] = [];
  const fallback = gpu.adapterClass === "cpu" ? "generic" : "tiled64";
  const chosen = MATMUL_VARIANTS.filter((v) =>
    !o.variants || o.variants.test(v.name) || v.name === fallback
  );
  const halfValid = new Set<string>();
  for (const v of chosen) {
    const ok = (await Promise.all(MATMUL_FORMS.map((f) => checkVariant(gpu, v, f)))).every(Boolean);
    if (ok) valid.push(v);
    else invalid.push(v.name);
    if (o.half) {
      const forms = ["nt", "nn"] as const;
      if ((await Promise.all(forms.map((f) => checkVariant(gpu, v, f, true)))).every(Boolean)) {
        halfValid.add(v.name);
      } else invalid.push(`${v.name}${HB}`);
    }
  }
  const timings: Record<string, Record<string, number>> = {};
  for (const s of labShapes(o)) {
    const row: Record<string, number> = {};
    for (const v of valid) {
      if (!variantSupports(v, s)) continue;
      // The generic kernel is the fallback: time it where it could run (it is slow at 1024³+).
      if (v.kind === "generic" && s.M * s.N * s.K > 2 ** 27 && s.M > 32) continue;
      // Split-K kernels are for few rows (decode); on many rows they only cost lab time.
      if (v.kind === "splitk" && s.M > 32) continue;
      const g = gflops(2 * s.M * s.N * s.K, await timeVariant(gpu, v, s, o.minMs));
      row[v.name] = round(g);
      if (halfValid.has(v.name) && s.form !== "tn") {
        const h = { ...s, halfB: true };
        row[`${v.name}${HB}`] = round(
          gflops(2 * s.M * s.N * s.K, await timeVariant(gpu, v, h, o.minMs)),
        );
      }
    }
    timings[label(s)] = row;
    const best = Object.entries(row).sort((a, b) => b[1] - a[1])[0];
    log(`lab ${label(s)}: best ${best?.[0]} ${best?.[1]} GFLOPS`);
  }
  // Pick by geometric mean over the bucket's shapes, scoring a variant that cannot run a shape
  // with the fallback's time there, which is what happens at run time.
  const buckets = new Map<string, MatmulShape[]>();
  for (const s of labShapes(o)) {
    const key = `${s.form}:${shapeBucket(s)}`;
    buckets.set(key, [...(buckets.get(key) ?? []), s]);
  }
  const pick = (tail: string) => {
    const picks: Record<string, string> = {};
    for (const [bucket, shapes] of buckets) {
      if (tail && bucket.startsWith("tn:")) continue;
      let best = fallback, bestScore = -1;
      for (const v of valid) {
        const at = (s: MatmulShape) =>
          timings[label(s)][v.name + tail] ?? timings[label(s)][fallback + tail];
        const gs = shapes.map(at);
        if (gs.some((g) => !(g > 0))) continue;
        const gm = Math.exp(gs.reduce((acc, g) => acc + Math.log(g), 0) / gs.length);
        if (gm > bestScore) [best, bestScore] = [v.name, gm];
      }
      picks[bucket] = best;
    }
    return picks;
  };
  return {
    invalid,
    timings,
    picks: pick(""),
    ...(o.half ? { halfPicks: pick(HB) } : {}),
  };
}

/** The selected kernels vs TF.js on square and skinny shapes, with ratios. */
export async function compareWithTfjs(
  gpu: Gpu,
  o: LabOptions,
  picks: Record<string, string> | undefined,
  log: (s: string) => void,
) {
  const matmul = await Matmul.create(gpu, picks as never);
  const haveTf = await tfjsReady();
  const rows = [];
  for (const s of labShapes({ ...o, squares: o.squares })) {
    const v = matmul.variantFor(s);
    const [ra, rb] = s.form === "tn" ? [s.K, s.M] : [s.M, s.K];
    const A = gpu.upload(seededValues(ra * rb, 1)),
      B = gpu.upload(seededValues(s.K * s.N, 2)),
      C = gpu.zeros(s.M * s.N);
    const t = await timeIt(async (reps) => {
      const rec = gpu.recorder();
      for (let i = 0; i < reps; i++) matmul.encode(rec, s, A, B, C);
      rec.submit();
      await gpu.sync();
    }, o.minMs);
    [A, B, C].forEach((x) => x.destroy());
    const flops = 2 * s.M * s.N * s.K;
    const ours = gflops(flops, t.msPerRep);
    let tfjs: number | null = null;
    if (haveTf) tfjs = gflops(flops, await tfjsMatmulMs(s.form, s.M, s.N, s.K, o.minMs));
    const ratio = tfjs ? ours / tfjs : null;
    log(
      `${label(s)}: ${v.name} ${ours.toFixed(2)} GFLOPS, TF.js ${tfjs?.toFixed(2) ?? "n/a"} → ${
        ratio?.toFixed(2) ?? "n/a"
      }×`,
    );
    rows.push({
      shape: label(s),
      variant: v.name,
      gflops: round(ours),
      tfjs_gflops: tfjs === null ? null : round(tfjs),
      ratio_vs_tfjs: ratio === null ? null : round(ratio),
    });
  }
  return { tfjs_available: haveTf, rows };
}
