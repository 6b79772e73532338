// Train-step throughput (forward + backward + AdamW) of ModelTrainer beside the same Llama in
// TF.js (test/bench/tfjs_llama.ts) on the same adapter, weights, LoRA init, hyperparameters and
// batch, in the same run: tokens/s, the ratio, and the GPU bytes each mode allocates, with the
// gradient + optimizer-state bytes apart (LoRA mode allocates none for the frozen base).
//
// It also checks that the peer is the same model: equal parameter count, its logits equal to the
// CPU oracle's (src/model/reference.ts), both losses start at ≈ ln V and fall, and the two loss
// curves coincide step by step. A failed check is a warning in the log and the JSON.
//
// Dims: B sequences per step, T tokens per sequence, V vocab.

import * as tf from "@tensorflow/tfjs-core";
import type { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel, Rng } from "../../src/model/init.ts";
import { type LoraConfig, LoraLayout } from "../../src/model/lora_layout.ts";
import { referenceForward } from "../../src/model/reference.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import { ModelTrainer, type TrainerOptions, type TrainMode } from "../../src/train/trainer.ts";
import { TfjsLlama } from "./tfjs_llama.ts";
import { tfjsReady } from "./tfjs_peer.ts";
import { tallyBuffers } from "../../src/gpu/memory.ts";
import { round } from "./timing.ts";

export interface TrainBenchOptions {
  presets: string[];
  modes: TrainMode[];
  /** Sequences per step (B). */
  batch: number;
  /** Tokens per sequence (T). */
  seqLen: number;
  /** Timed steps after one warm-up step (the median is reported). */
  steps: number;
}

// One setting for both sides. LoRA: every projection, rank 8 (PEFT defaults otherwise).
const LORA: LoraConfig = {
  rank: 8,
  alpha: 16,
  targets: ["q", "k", "v", "o", "gate", "up", "down"],
  adapters: ["bench"],
};
const HYPER = { lr: 1e-3, weightDecay: 0.01, maxGradNorm: 1 };
const LORA_SEED = 3;

async function loadPreset(preset: string): Promise<ModelWeights> {
  const json = JSON.parse(
    await Deno.readTextFile(new URL(`../../configs/models/${preset}.json`, import.meta.url)),
  );
  return initModel(parseModelConfig(json), { seed: 1 });
}

/** B fixed random sequences of T tokens (the same batch every step, for both sides). */
function benchBatch(B: number, T: number, V: number): number[][] {
  const rng = new Rng(7);
  return Array.from({ length: B }, () => Array.from({ length: T }, () => rng.nextU32() % V));
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

interface SideResult {
  tokS: number;
  /** Loss of each step (before its update): warm-up first. */
  losses: number[];
}

/** Our trainer: create (bytes tallied by kind), one warm-up step, `steps` timed steps. */
async function oursRun(
  gpu: Gpu,
  w: ModelWeights,
  mode: TrainMode,
  batch: number[][],
  steps: number,
) {
  const T = batch[0].length;
  const opts: TrainerOptions = {
    mode,
    lora: LORA,
    seed: LORA_SEED,
    optimizer: { weightDecay: HYPER.weightDecay, maxGradNorm: HYPER.maxGradNorm },
    schedule: { kind: "constant", lr: HYPER.lr },
    loss: { kind: "cross-entropy" },
    chunkRows: batch.length * T,
    slots: batch.length,
    maxLen: T,
  };
  const { value: tr, bytes } = await tallyBuffers(
    gpu.device,
    () => ModelTrainer.create(gpu, w, opts),
  );
  const seqs = batch.map((tokens) => ({
    tokens,
    adapter: 0,
    weights: tokens.slice(1).map(() => 1),
  }));
  const losses: number[] = [], tokS: number[] = [];
  try {
    for (let s = 0; s <= steps; s++) {
      const t0 = performance.now();
      const m = await tr.step(seqs);
      const dt = (performance.now() - t0) / 1000;
      losses.push(m.loss.loss);
      if (s > 0) tokS.push(m.tokens / dt);
    }
  } finally {
    tr.destroy();
  }
  return { tokS: median(tokS), losses, bytes };
}

/** The TF.js peer, timed the same way; bytes from tf.memory() (moments appear at the first step). */
async function tfjsRun(w: ModelWeights, mode: TrainMode, batch: number[][], steps: number) {
  const layout = new LoraLayout(w.config, LORA);
  const base = tf.memory().numBytes;
  const model = TfjsLlama.create(w, {
    mode,
    ...HYPER,
    lora: { layout, data: layout.init(LORA_SEED) },
  });
  const created = tf.memory().numBytes;
  const losses: number[] = [], tokS: number[] = [];
  let afterStep = created;
  try {
    for (let s = 0; s <= steps; s++) {
      const t0 = performance.now();
      losses.push(await model.step(batch));
      const dt = (performance.now() - t0) / 1000;
      if (s === 0) afterStep = tf.memory().numBytes;
      else tokS.push(batch.length * batch[0].length / dt);
    }
    return {
      tokS: median(tokS),
      losses,
      trainable: model.trainableCount,
      params: model.paramCount,
      bytes: afterStep - base,
      // Moments persist; gradients live for one step (4 bytes per trainable float).
      gradsAndMoments: model.trainableCount * 4 + (afterStep - created),
    };
  } finally {
    model.dispose();
  }
}

/** The peer's logits against the float64 oracle on one short sequence: max |Δ| / max |logit|. */
async function peerForwardError(w: ModelWeights, T: number): Promise<number> {
  const ids = benchBatch(1, T, w.config.vocabSize)[0];
  const model = TfjsLlama.create(w, { mode: "full", ...HYPER });
  try {
    const got = await model.logits(ids);
    const want = referenceForward(w, ids).logits;
    let err = 0, scale = 0;
    want.forEach((x, i) => {
      err = Math.max(err, Math.abs(x - got[i]));
      scale = Math.max(scale, Math.abs(x));
    });
    return err / scale;
  } finally {
    model.dispose();
  }
}

/** The checks that make the ratio meaningful; failures are logged as warnings. */
function lossChecks(ours: SideResult, peer: SideResult, V: number, log: (s: string) => void) {
  const lnV = Math.log(V),
    first = (r: SideResult) => r.losses[0],
    last = (r: SideResult) => r.losses.at(-1)!;
  // Same weights, batch and AdamW: the two loss curves should coincide (f32 rounding apart),
  // which checks the peer's gradients and optimizer, not only its forward.
  const maxDiff = Math.max(...ours.losses.map((x, i) => Math.abs(x - peer.losses[i])));
  const checks = {
    initial_loss_near_ln_vocab: [ours, peer].every((r) => Math.abs(first(r) - lnV) < 0.05 * lnV),
    loss_decreases: [ours, peer].every((r) => last(r) < first(r)),
    loss_curves_match: maxDiff < 5e-3,
  };
  for (const [name, ok] of Object.entries(checks)) {
    if (!ok) {
      log(
        `WARNING: check ${name} failed: ours ${ours.losses.map((x) => x.toFixed(4))}, TF.js ${
          peer.losses.map((x) => x.toFixed(4))
        }, ln V ${lnV.toFixed(4)}`,
      );
    }
  }
  return { ...checks, max_loss_diff: maxDiff };
}

async function benchRow(
  gpu: Gpu,
  preset: string,
  w: ModelWeights,
  mode: TrainMode,
  o: TrainBenchOptions,
  log: (s: string) => void,
) {
  const batch = benchBatch(o.batch, o.seqLen, w.config.vocabSize);
  const ours = await oursRun(gpu, w, mode, batch, o.steps);
  const peer = await tfjsRun(w, mode, batch, o.steps);
  const total = Object.values(ours.bytes).reduce((a, b) => a + b, 0);
  const row = {
    preset,
    mode,
    batch: o.batch,
    seq_len: o.seqLen,
    tokens_per_step: o.batch * o.seqLen,
    params: peer.params,
    trainable_params: peer.trainable,
    ours_tok_s: round(ours.tokS, 1),
    tfjs_tok_s: round(peer.tokS, 1),
    ratio_vs_tfjs: round(ours.tokS / peer.tokS),
    ours_gpu_bytes: total,
    ours_gpu_bytes_by_kind: ours.bytes,
    ours_grads_and_moments_bytes: ours.bytes.grads + ours.bytes.optimizer,
    tfjs_bytes: peer.bytes,
    tfjs_grads_and_moments_bytes: peer.gradsAndMoments,
    ours_losses: ours.losses.map((x) => round(x, 4)),
    tfjs_losses: peer.losses.map((x) => round(x, 4)),
    checks: lossChecks(ours, peer, w.config.vocabSize, log),
  };
  log(
    `train ${preset} ${mode} B=${o.batch} T=${o.seqLen}: ours ${row.ours_tok_s} tok/s, TF.js ${row.tfjs_tok_s} tok/s (×${row.ratio_vs_tfjs}); ` +
      `grads+moments ours ${mib(row.ours_grads_and_moments_bytes)}, TF.js ${
        mib(row.tfjs_grads_and_moments_bytes)
      }`,
  );
  return row;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(2)} MiB`;

/** The "train" section of `deno task bench`. */
export async function benchTrain(gpu: Gpu, o: TrainBenchOptions, log: (s: string) => void) {
  if (!(await tfjsReady())) return { skipped: "TF.js WebGPU backend unavailable" };
  const rows = [], presets = [];
  for (const preset of o.presets) {
    const w = await loadPreset(preset);
    const forwardErr = await peerForwardError(w, 8);
    if (!(forwardErr < 1e-3)) {
      log(`WARNING: ${preset}: TF.js logits differ from the oracle by ${forwardErr} (relative)`);
    }
    const params = w.layout.tensors.reduce((s, t) => s + t.size, 0);
    const mine: Awaited<ReturnType<typeof benchRow>>[] = [];
    for (const mode of o.modes) mine.push(await benchRow(gpu, preset, w, mode, o, log));
    if (mine.some((r) => r.params !== params)) {
      log(`WARNING: ${preset}: the TF.js model holds ${mine[0].params} parameters, ours ${params}`);
    }
    rows.push(...mine);
    const gm = (m: TrainMode) =>
      mine.find((r) => r.mode === m)?.ours_grads_and_moments_bytes ?? null;
    const [lora, full] = [gm("lora"), gm("full")];
    presets.push({
      preset,
      params,
      same_param_count: mine.every((r) => r.params === params),
      tfjs_forward_rel_err_vs_oracle: forwardErr,
      grads_and_moments_bytes_lora: lora,
      grads_and_moments_bytes_full: full,
      lora_over_full: lora !== null && full ? round(lora / full, 4) : null,
    });
  }
  return {
    peer:
      "TF.js 4.22 WebGPU backend, same adapter, same weights/batch/LoRA init; AdamW = tf.train.adam + decoupled decay + global-norm clip",
    hyper: { ...HYPER, lora: LORA },
    load_average: Deno.loadavg().map((x) => round(x)),
    presets,
    rows,
  };
}
