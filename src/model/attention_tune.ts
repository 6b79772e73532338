// Tunes when decode attention splits over positions on this device (attention4_part +
// attention4_merge, src/model/attention_kernels.ts). A decode call of few rows × heads runs one
// workgroup per (head, row) over the whole context, which leaves most of a GPU idle; split, each
// (head, row) takes several workgroups of at least SPLIT_MIN_SPAN positions and a merge adds them.
// The built-in thresholds (split up to 64 rows × heads, 128 positions a split at least) are
// estimates for an H100. This times every decode batch size, at a long context, one workgroup
// per (head, row) against the split at each span, and keeps the span and the threshold (split
// up to a batch size's rows × heads, or never) whose calls take the least time in all
// (`npx deno task tune --attention`).
//
// Every call timed is first checked against a float64 reference of the attention; a span whose
// split is wrong is refused and never picked.

import type { Gpu } from "../gpu/mod.ts";
import { msPerEncode } from "../gpu/timing.ts";
import { seededValues, toleranceRatio } from "../ops/reference.ts";
import type { AttentionSplitPick, TunedAttentionSplit } from "../ops/tuned_picks.ts";
import {
  type AttentionCall,
  AttentionKernels,
  SPLIT_MIN_SPAN,
  SPLIT_ROW_HEADS,
} from "./attention_kernels.ts";
import type { ModelConfig } from "./config.ts";
import { ModelError } from "./errors.ts";

/** The tuner cannot run here (no split at this shape, every span wrong, bad options). */
export class AttentionTuneError extends ModelError {}

export interface AttentionTuneOptions {
  /** The model whose heads are timed (heads, kv heads, head size). */
  config: ModelConfig;
  /** Cache positions each row attends to (default 2048, at most the model's). */
  context?: number;
  /** Rows a decode step runs: the batch sizes generation runs at (default 1, 8, 32). */
  rows?: readonly number[];
  /** Positions a split at least, to try (default 128, 256, 512, 1024; multiples of 64). */
  spans?: readonly number[];
  /** Wall time of each timing (ms). */
  minMs?: number;
  log?: (line: string) => void;
}

export interface AttentionTuneResult extends TunedAttentionSplit {
  /** Every span's split time per batch size (ms a call). */
  spans: { span: number; splitMs: number[] }[];
  refused: { span: number; why: string }[];
  seconds: number;
}

/** "14 heads over 2 kv heads of 64". */
export function attentionTuneShape(c: ModelConfig): string {
  return `${c.numHeads} heads over ${c.numKvHeads} kv heads of ${c.headDim}`;
}

/** The attention of `rows` rows in float64: out [N, NH·D] and lse [N, NH]. */
function attentionRef(
  q: Float32Array,
  kc: Float32Array,
  vc: Float32Array,
  meta: Uint32Array,
  N: number,
  NH: number,
  KV: number,
  D: number,
  P: number,
) {
  const out = new Float64Array(N * NH * D), lse = new Float64Array(N * NH);
  const scale = 1 / Math.sqrt(D), G = NH / KV;
  for (let n = 0; n < N; n++) {
    const slot = meta[2 * n], len = meta[2 * n + 1] + 1;
    for (let h = 0; h < NH; h++) {
      const base = ((slot * KV + Math.floor(h / G)) * P) * D, qo = (n * NH + h) * D;
      const s = new Float64Array(len);
      let m = -Infinity;
      for (let j = 0; j < len; j++) {
        let t = 0;
        for (let d = 0; d < D; d++) t += q[qo + d] * kc[base + j * D + d];
        s[j] = t * scale;
        m = Math.max(m, s[j]);
      }
      let z = 0;
      for (let j = 0; j < len; j++) z += s[j] = Math.exp(s[j] - m);
      for (let j = 0; j < len; j++) {
        const w = s[j] / z;
        for (let d = 0; d < D; d++) out[qo + d] += w * vc[base + j * D + d];
      }
      lse[n * NH + h] = m + Math.log(z);
    }
  }
  return { out, lse };
}

/**
 * Times decode attention at `config`'s heads over a `context`-position cache, one workgroup per
 * (head, row) against the split at each span, at every batch size; returns the pick beside the
 * built-in. Seconds on a GPU; run once per device (`npx deno task tune`), not per run.
 */
export async function tuneAttentionSplit(
  gpu: Gpu,
  o: AttentionTuneOptions,
): Promise<AttentionTuneResult> {
  const t0 = performance.now();
  const c = o.config, NH = c.numHeads, KV = c.numKvHeads, D = c.headDim;
  const P = Math.min(o.context ?? 2048, c.maxPositionEmbeddings);
  const rows = [...new Set(o.rows ?? [1, 8, 32])].sort((a, b) => a - b);
  const minMs = o.minMs ?? 60;
  const log = o.log ?? (() => {});
  if (!rows.length || rows.some((r) => !(Number.isInteger(r) && r > 0))) {
    throw new AttentionTuneError(`tuneAttentionSplit: rows ${rows} must be positive integers`);
  }
  if (D % 4 !== 0 || D > 256) {
    throw new AttentionTuneError(
      `head_dim ${D} takes the scalar attention, which is never split: nothing to tune`,
    );
  }
  const spans = [...new Set(o.spans ?? [SPLIT_MIN_SPAN, 256, 512, 1024])].sort((a, b) => a - b);
  for (const s of spans) {
    if (!(Number.isInteger(s) && s >= 64 && s % 64 === 0)) {
      throw new AttentionTuneError(`tuneAttentionSplit: span ${s} must be a multiple of 64`);
    }
  }
  const usable = spans.filter((s) => s < P);
  if (!usable.length) {
    throw new AttentionTuneError(
      `a ${P}-position context is not longer than any span (${spans.join(", ")}): nothing to split`,
    );
  }
  const maxN = rows.at(-1)!;
  // Each row its own slot, deep in the context (rows end a few positions apart).
  const meta = new Uint32Array(2 * maxN);
  for (let n = 0; n < maxN; n++) [meta[2 * n], meta[2 * n + 1]] = [n, P - 1 - (n % 5) * 3];
  const q = seededValues(maxN * NH * D, 31),
    kc = seededValues(maxN * KV * P * D, 32),
    vc = seededValues(maxN * KV * P * D, 33);
  const want = attentionRef(q, kc, vc, meta, maxN, NH, KV, D, P);
  const bufs = {
    meta: gpu.upload(meta),
    q: gpu.upload(q),
    kc: gpu.upload(kc),
    vc: gpu.upload(vc),
    out: gpu.zeros(maxN * NH * D),
    lse: gpu.zeros(maxN * NH),
  };
  const scratch: GPUBuffer[] = [];
  try {
    const callOf = (N: number, parts: AttentionCall["parts"]): AttentionCall => ({
      N,
      NH,
      KV,
      D,
      ...bufs,
      parts,
      context: P,
    });
    /** Why the last call's output is wrong against the reference at maxN rows, or null. */
    const wrong = async (): Promise<string | null> => {
      const out = await gpu.readFloat32(bufs.out, maxN * NH * D);
      const lse = await gpu.readFloat32(bufs.lse, maxN * NH);
      const ro = toleranceRatio(out, want.out, 1e-4, 1e-4);
      const rl = toleranceRatio(lse, want.lse, 1e-4, 1e-4);
      return ro <= 1 && rl <= 1
        ? null
        : `output ${ro.toFixed(1)}×, lse ${rl.toFixed(1)}× the tolerance off`;
    };
    const time = (k: AttentionKernels, N: number, parts: AttentionCall["parts"]) =>
      msPerEncode(gpu, "attention tune", (rec) => k.attention(rec, callOf(N, parts)), minMs, 3);
    const create = (span: number) =>
      AttentionKernels.create(gpu, P, {
        headDim: D,
        attentionVariant: "workgroup",
        attentionSplit: true,
        splitRowHeads: maxN * NH,
        splitMinSpan: span,
      });

    // One workgroup per (head, row): the same kernels called without the split's scratch.
    const plain = await create(usable[0]);
    {
      // Cleared first: a call that writes nothing must not pass on the last one's output.
      const rec = gpu.recorder("attention tune check").clear(bufs.out).clear(bufs.lse);
      plain.attention(rec, callOf(maxN, null));
      rec.submit();
      const why = await wrong();
      if (why) throw new AttentionTuneError(`decode attention is wrong here: ${why}`);
    }
    const unsplitMs: number[] = [];
    for (const N of rows) unsplitMs.push(await time(plain, N, null));

    const refused: AttentionTuneResult["refused"] = [];
    const timed: AttentionTuneResult["spans"] = [];
    for (const span of usable) {
      const k = span === usable[0] ? plain : await create(span);
      if (k.attnSplit.splits < 2) continue;
      const f = k.splitScratchFloats(D);
      const parts = { o: gpu.zeros(f.o), ml: gpu.zeros(f.ml) };
      scratch.push(parts.o, parts.ml);
      // Cleared first: a call that writes nothing must not pass on the last one's output.
      const rec = gpu.recorder("attention tune check").clear(bufs.out).clear(bufs.lse);
      k.attention(rec, callOf(maxN, parts));
      rec.submit();
      const why = await wrong();
      if (why) {
        refused.push({ span, why });
        log(`attention split of ${span} positions: refused, wrong against float64: ${why}`);
        continue;
      }
      const splitMs: number[] = [];
      for (const N of rows) splitMs.push(await time(k, N, parts));
      timed.push({ span, splitMs });
    }
    if (!timed.length) {
      throw new AttentionTuneError(
        `every attention split was wrong against the float64 reference: ${
          refused.map((r) => `${r.span}: ${r.why}`).join("; ")
        }`,
      );
    }
    // A pick's score: one call at each batch size, split where its threshold says so.
    const score = (p: AttentionSplitPick, splitMs: number[] | undefined) =>
      rows.reduce(
        (s, N, i) => s + (splitMs && N * NH <= p.rowHeads ? splitMs[i] : unsplitMs[i]),
        0,
      );
    // Every threshold the timings can tell apart (split none, or up to each batch size's rows ×
    // heads) at every span; the built-in pick splits as one of them, so the pick is never slower
    // than it in these figures. Ties keep the earlier: no split, then smaller spans and thresholds.
    const current: AttentionSplitPick = { rowHeads: SPLIT_ROW_HEADS, minSpan: SPLIT_MIN_SPAN };
    const currentMs = score(current, timed.find((t) => t.span === SPLIT_MIN_SPAN)?.splitMs);
    let best: AttentionSplitPick = { rowHeads: 0, minSpan: SPLIT_MIN_SPAN };
    let bestMs = score(best, undefined), bestSplit: number[] | undefined;
    for (const t of timed) {
      for (const N of rows) {
        const p = { rowHeads: N * NH, minSpan: t.span }, ms = score(p, t.splitMs);
        if (ms < bestMs) [best, bestMs, bestSplit] = [p, ms, t.splitMs];
      }
    }
    log(
      `decode attention at ${P} positions (${attentionTuneShape(c)}): ${
        best.rowHeads === 0
          ? "never split"
          : `split up to ${best.rowHeads} rows × heads, ${best.minSpan} positions a split`
      } ${bestMs.toFixed(3)} ms a step against the built-in's ${currentMs.toFixed(3)} ms (rows ${
        rows.join(",")
      })`,
    );
    return {
      shape: attentionTuneShape(c),
      context: P,
      current,
      best,
      calls: rows.map((N, i) => ({
        rows: N,
        rowHeads: N * NH,
        unsplitMs: unsplitMs[i],
        splitMs: (bestSplit ?? timed[0].splitMs)[i],
      })),
      spans: timed,
      refused,
      currentMs,
      bestMs,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    [...Object.values(bufs), ...scratch].forEach((b) => b.destroy());
  }
}

/** When to tune the attention split: "auto" on GPU-class adapters (CPU adapters never split). */
export type AttentionTuneMode = "auto" | "on" | "off";

/** tuneAttentionSplit where `mode` asks for it and the model's heads can be split; else null. */
export async function tuneAttentionSplitIf(
  gpu: Gpu,
  mode: AttentionTuneMode,
  o: AttentionTuneOptions,
): Promise<AttentionTuneResult | null> {
  if (mode === "off" || (mode === "auto" && gpu.adapterClass !== "gpu")) return null;
  const D = o.config.headDim;
  if (D % 4 !== 0 || D > 256) {
    o.log?.(`attention: head_dim ${D} takes the scalar attention, never split: nothing to tune`);
    return null;
  }
  const P = Math.min(o.context ?? 2048, o.config.maxPositionEmbeddings);
  if (P <= Math.min(...(o.spans ?? [SPLIT_MIN_SPAN]))) {
    o.log?.(`attention: a ${P}-position cache is never split: nothing to tune`);
    return null;
  }
  o.log?.(`timing decode attention split over positions`);
  return await tuneAttentionSplit(gpu, o);
}

/** The picks-file fields of a tuning: the split to use, and its times. */
export function attentionSplitEntry(
  r: AttentionTuneResult,
): { attentionSplit: AttentionSplitPick; attentionSplitTimes: TunedAttentionSplit } {
  const { shape, context, current, currentMs, best, bestMs, calls } = r;
  return {
    attentionSplit: best,
    attentionSplitTimes: { shape, context, current, currentMs, best, bestMs, calls },
  };
}
