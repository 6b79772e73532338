// Tunes how far the fused LoRA forward (shaders/lora_fused.wgsl) splits a group's output columns
// on this device. At a decode step's few rows, one workgroup per 4 rows would do a whole group's
// up half alone; LoraAdapters split the columns until a dispatch has `fusedTarget` workgroups
// (fusedColumnChunks), each chunk recomputing its rows' U. The built-in target, 128, was estimated
// from one H100's 132 SMs; a laptop GPU with a tenth of the compute units may want fewer chunks,
// each recomputing U once less. This times candidate targets on a model's LoRA groups at the
// decode batch sizes and keeps the fastest (`npx deno task tune`, the web app's "Tune kernels").
//
// Each candidate's outputs are first checked against a float64 reference of y + scale·B(A·x) on
// every group; a wrong one is refused and never picked.

import type { Gpu } from "../gpu/mod.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { msPerEncode, screenThenTime } from "../gpu/timing.ts";
import { seededValues, toleranceRatio } from "../ops/reference.ts";
import type { TunedLoraFused } from "../ops/tuned_picks.ts";
import type { ModelConfig } from "./config.ts";
import { ModelError } from "./errors.ts";
import {
  FUSED_TARGET_WORKGROUPS,
  fusedColumnChunks,
  LoraAdapters,
  type LoraGroupPart,
} from "./lora.ts";
import { LORA_MODULES, type LoraEntry, LoraLayout, type LoraModule } from "./lora_layout.ts";

/** The tuner cannot run here (no fused kernel, every candidate wrong, bad options). */
export class LoraTuneError extends ModelError {}

/** The part of LoraAdapters the tuner drives. */
export type LoraLike = Pick<
  LoraAdapters,
  "fusedTarget" | "forward" | "setRows" | "encodeForwardGroup" | "destroy"
>;

export interface LoraTuneOptions {
  /** The model whose LoRA groups are timed (one layer of them: every layer has the same). */
  config: ModelConfig;
  /** LoRA rank (default 16). */
  rank?: number;
  /** Rows a decode step runs: the batch sizes generation runs at (default 1, 8, 32). */
  rows?: readonly number[];
  /** Targets to try (default 1, then powers of two from 8 to 1024, and the built-in). */
  candidates?: readonly number[];
  /** Wall time of a final timing per batch size (ms); a screening takes a fifth. */
  minMs?: number;
  /** Candidates kept from screening for the final timing (the built-in too). */
  keep?: number;
  log?: (line: string) => void;
  /** What runs the groups (default: LoraAdapters, fused). Tests plant a wrong one here. */
  adaptersFor?: (
    gpu: Gpu,
    layout: LoraLayout,
    maxRows: number,
    data: Float32Array,
  ) => Promise<LoraLike>;
}

export interface LoraTuneResult extends TunedLoraFused {
  /** Every candidate's score (ms a step: the sum over batch sizes); `final`: timed at length. */
  times: { target: number; ms: number; final: boolean }[];
  /** Candidates whose chunking matches another's at every batch size: timed once, as that one. */
  same: { target: number; as: number }[];
  refused: { target: number; why: string }[];
  seconds: number;
}

/** A layer's LoRA groups as the model runs them (src/model/projections.ts): one input each. */
const GROUPS: readonly (readonly LoraModule[])[] = [
  ["q", "k", "v"],
  ["qkv"],
  ["o"],
  ["gate", "up"],
  ["down"],
];

/** The shape of the products timed, for the picks file. */
export function loraTuneShape(c: ModelConfig): string {
  return `hidden ${c.hiddenSize}, q ${c.numHeads * c.headDim}, kv ${
    c.numKvHeads * c.headDim
  }, intermediate ${c.intermediateSize}`;
}

interface Group {
  entries: LoraEntry[];
  x: Float32Array;
  y0: Float32Array[];
}

/** y + scale·B_a(A_a·x) per row, in float64: each row's adapter a from `ids`. */
function groupReference(layout: LoraLayout, data: Float32Array, ids: number[], g: Group) {
  const r = layout.cfg.rank, s = layout.scale;
  return g.entries.map((e, m) => {
    const I = e.inDim, O = e.outDim;
    const y = Float64Array.from(g.y0[m]);
    ids.forEach((a, row) => {
      const A = e.offsetA + a * e.strideA, B = e.offsetB + a * e.strideB;
      const u = new Float64Array(r);
      for (let j = 0; j < r; j++) {
        let t = 0;
        for (let k = 0; k < I; k++) t += g.x[row * I + k] * data[A + j * I + k];
        u[j] = t;
      }
      for (let o = 0; o < O; o++) {
        let t = 0;
        for (let j = 0; j < r; j++) t += data[B + o * r + j] * u[j];
        y[row * O + o] += s * t;
      }
    });
    return y;
  });
}

/**
 * Times fused LoRA targets on one layer of `config`'s groups (rank 16 on every projection, two
 * adapters, rows split between them as a team's are) and returns the fastest beside the built-in.
 * Seconds on a GPU; run once per device (`npx deno task tune`), not per run.
 */
export async function tuneLoraFused(gpu: Gpu, o: LoraTuneOptions): Promise<LoraTuneResult> {
  const t0 = performance.now();
  const rank = o.rank ?? 16;
  const rows = [...new Set(o.rows ?? [1, 8, 32])];
  const minMs = o.minMs ?? 60, keep = o.keep ?? 3;
  const log = o.log ?? (() => {});
  if (!rows.length || rows.some((r) => !(Number.isInteger(r) && r > 0))) {
    throw new LoraTuneError(`tuneLoraFused: rows ${rows} must be positive integers`);
  }
  const wanted = o.candidates ?? [1, 8, 16, 32, 64, 128, 256, 512, 1024];
  for (const c of wanted) {
    if (!(Number.isInteger(c) && c >= 1)) {
      throw new LoraTuneError(`tuneLoraFused: candidate ${c} must be an integer ≥ 1`);
    }
  }
  // One layer of the model: every layer's groups have the same shapes.
  const config = { ...o.config, numLayers: 1 };
  const layout = new LoraLayout(config, {
    rank,
    alpha: 2 * rank,
    targets: [...LORA_MODULES],
    adapters: ["a", "b"],
  });
  const data = layout.init(5, 0.3);
  const maxRows = Math.max(...rows);
  // The first half of the rows on adapter 0, the rest on 1 (a team's batch, adapter-contiguous).
  const idsOf = (n: number) => Array.from({ length: n }, (_, i) => (i < n / 2 ? 0 : 1));
  const groups: Group[] = GROUPS.map((mods) =>
    mods.map((m) => layout.entry(0, m)).filter((e): e is LoraEntry => e !== undefined)
  ).filter((es) => es.length).map((entries, gi) => ({
    entries,
    x: seededValues(maxRows * entries[0].inDim, 100 + gi),
    y0: entries.map((e, m) => seededValues(maxRows * e.outDim, 200 + 10 * gi + m)),
  }));
  const lora = await (o.adaptersFor ??
    ((g, l, n, d) => LoraAdapters.create(g, l, n, d, "workgroup", "fused")))(
      gpu,
      layout,
      maxRows,
      data,
    );
  const xs = groups.map((g) => gpu.upload(g.x));
  const ys = groups.map((g) => g.y0.map((y) => gpu.upload(y)));
  const partsOf = (gi: number): LoraGroupPart[] =>
    groups[gi].entries.map((e, m) => ({ module: e.module, y: ys[gi][m] }));
  const encodeStep = (rec: Recorder, n: number) => {
    groups.forEach((_, gi) => lora.encodeForwardGroup(rec, n, 0, partsOf(gi), xs[gi]));
  };
  try {
    if (lora.forward !== "fused") {
      throw new LoraTuneError(
        "the fused LoRA forward is off here (PETTINGLLMS_LORA_FORWARD=split?): nothing to tune",
      );
    }
    // Candidates that chunk every group alike at every batch size are one candidate, the
    // built-in first among them.
    const tilesOf = (n: number) => Math.ceil(n / 4);
    const chunking = (target: number) =>
      rows.map((n) =>
        groups.map((g) =>
          fusedColumnChunks(tilesOf(n), g.entries.reduce((s, e) => s + e.outDim, 0), target)
        ).join(",")
      ).join("|");
    const byChunking = new Map<string, number>();
    const same: LoraTuneResult["same"] = [];
    for (const c of [FUSED_TARGET_WORKGROUPS, ...wanted]) {
      const k = chunking(c), first = byChunking.get(k);
      if (first === undefined) byChunking.set(k, c);
      else if (first !== c && !same.some((x) => x.target === c)) {
        same.push({ target: c, as: first });
      }
    }
    const candidates = [...byChunking.values()].sort((a, b) => a - b);

    // The check: every group at the largest batch, from y0, against the float64 reference.
    const ids = idsOf(maxRows);
    const want = groups.map((g) => groupReference(layout, data, ids, g));
    const refused: LoraTuneResult["refused"] = [];
    const ok: number[] = [];
    for (const target of candidates) {
      lora.fusedTarget = target;
      lora.setRows(ids);
      groups.forEach((g, gi) => g.y0.forEach((y, m) => gpu.write(ys[gi][m], y)));
      const rec = gpu.recorder("lora tune check");
      encodeStep(rec, maxRows);
      rec.submit();
      let why: string | null = null;
      for (const [gi, g] of groups.entries()) {
        for (const [m, e] of g.entries.entries()) {
          const got = await gpu.readFloat32(ys[gi][m], maxRows * e.outDim);
          const ratio = toleranceRatio(got, want[gi][m], 1e-4, 1e-4);
          if (!(ratio <= 1)) {
            why ??= `${e.module}'s output is ${ratio.toFixed(1)}× the tolerance off`;
          }
        }
      }
      if (why) {
        refused.push({ target, why });
        log(`fused LoRA target ${target}: refused, wrong against the float64 reference: ${why}`);
      } else ok.push(target);
    }
    if (!ok.length) {
      throw new LoraTuneError(
        `every fused LoRA target was wrong against the float64 reference: ${
          refused.map((r) => `${r.target}: ${r.why}`).join("; ")
        }`,
      );
    }
    const score = async (target: number, ms: number, rounds: number) => {
      lora.fusedTarget = target;
      let total = 0;
      for (const n of rows) {
        lora.setRows(idsOf(n));
        total += await msPerEncode(gpu, "lora tune", (rec) => encodeStep(rec, n), ms, rounds);
      }
      return total;
    };
    const { best, bestMs, times } = await screenThenTime(
      ok,
      ok.includes(FUSED_TARGET_WORKGROUPS) ? FUSED_TARGET_WORKGROUPS : undefined,
      score,
      { minMs, keep },
    );
    const currentMs = times.get(FUSED_TARGET_WORKGROUPS)?.ms ?? NaN;
    log(
      `fused LoRA: ${best} workgroups a dispatch ${
        bestMs.toFixed(3)
      } ms a step against the built-in ${FUSED_TARGET_WORKGROUPS}'s ${
        currentMs.toFixed(3)
      } ms (rows ${
        rows.join(",")
      }, rank ${rank}, ${groups.length} groups, ${ok.length} candidates)`,
    );
    return {
      shape: loraTuneShape(o.config),
      rank,
      rows,
      current: FUSED_TARGET_WORKGROUPS,
      currentMs,
      best,
      bestMs,
      times: [...times].map(([target, t]) => ({ target, ...t })).sort((a, b) =>
        a.target - b.target
      ),
      same,
      refused,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    [...xs, ...ys.flat()].forEach((b) => b.destroy());
    lora.destroy();
  }
}

/** When to tune the fused LoRA forward: "auto" where it is the default (GPU-class adapters). */
export type LoraTuneMode = "auto" | "on" | "off";

/** tuneLoraFused where `mode` asks for it; else null. */
export async function tuneLoraFusedIf(
  gpu: Gpu,
  mode: LoraTuneMode,
  o: LoraTuneOptions,
): Promise<LoraTuneResult | null> {
  if (mode === "off" || (mode === "auto" && gpu.adapterClass !== "gpu")) return null;
  o.log?.(`timing the fused LoRA forward's column split (rank ${o.rank ?? 16})`);
  return await tuneLoraFused(gpu, o);
}

/** The picks-file fields of a tuning: the target to use, and its times. */
export function loraFusedEntry(
  r: LoraTuneResult,
): { loraFusedTarget: number; loraFusedTimes: TunedLoraFused } {
  const { shape, rank, rows, current, currentMs, best, bestMs } = r;
  return {
    loraFusedTarget: best,
    loraFusedTimes: { shape, rank, rows, current, currentMs, best, bestMs },
  };
}
