// The engine at real model sizes (issue 24): the shapes of SmolLM2-135M, Qwen2.5-0.5B and
// Qwen3-0.6B (test/fixtures/configs/, their HF config.json files), random-init and written as HF
// folders, measured from those folders:
//   - start-up: reading the folder, creating the GpuModel, the first generate (shader compiles),
//     creating each ModelTrainer and its first step;
//   - prefill and greedy batched-decode tok/s at each batch size (every sequence decodes its
//     newTokens: no stop ids);
//   - train-step tok/s (forward + backward + AdamW, cross-entropy on every position) at
//     B × T, LoRA (r 16, α 32, every projection) and full;
//   - the GPU bytes each allocates, by kind (tallied at buffer creation);
//   - with longContext, decode after long prompts with the attention split over positions and
//     without.
// Beside it, in the same run and on the same folders, PyTorch + transformers eager fp32
// (test/bench/scale_torch.py) where `python3` imports torch and transformers (GPU machines), with
// the ratios; elsewhere the peer is reported as skipped with the reason.
//
// Dims: B sequences, P prompt tokens, N new tokens, T tokens per training sequence.

import { DEFAULT_SUBMIT_CHUNK, type Gpu, setSubmitChunk } from "../../src/gpu/mod.ts";
import { activeProfiler, GpuProfiler, type KernelTime } from "../../src/gpu/profiler.ts";
import { writeFilesAtomic } from "../../src/io/deno_files.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { Generator } from "../../src/model/generate.ts";
import { Sampler, type SamplerOptions } from "../../src/model/sampling.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { hfFolderFiles, initModel, Rng } from "../../src/model/init.ts";
import type { LoraConfig } from "../../src/model/lora_layout.ts";
import { loadModel, type ModelWeights } from "../../src/model/weights.ts";
import { ModelTrainer, type TrainerOptions, type TrainMode } from "../../src/train/trainer.ts";
import { createOps } from "../../src/ops/mod.ts";
import { tallyBuffers } from "../../src/gpu/memory.ts";
import { round } from "./timing.ts";

export interface ScaleShape {
  /** Row name, e.g. "smollm2-135m". */
  readonly name: string;
  /** An HF config.json (path from the repository root). */
  readonly config: string;
}

export const SCALE_SHAPES: readonly ScaleShape[] = [
  { name: "smollm2-135m", config: "test/fixtures/configs/smollm2-135m-instruct.json" },
  { name: "qwen2.5-0.5b", config: "test/fixtures/configs/qwen2.5-0.5b-instruct.json" },
  { name: "qwen3-0.6b", config: "test/fixtures/configs/qwen3-0.6b.json" },
];

/** --quick: the reduced full-vocabulary Qwen2.5 shape the CPU tests use. */
export const SCALE_QUICK_SHAPES: readonly ScaleShape[] = [
  { name: "qwen2.5-reduced", config: "configs/models/reduced/qwen2.5-0.5b.json" },
];

export interface ScaleBenchOptions {
  readonly shapes: readonly ScaleShape[];
  readonly batches: readonly number[];
  readonly promptLen: number;
  readonly newTokens: number;
  /** Training: B sequences of T tokens. */
  readonly trainBatch: number;
  readonly trainLen: number;
  readonly modes: readonly TrainMode[];
  /** Timed rounds / steps after one warm-up (medians reported). */
  readonly rounds: number;
  /** Where the HF folders are written (one sub-folder per shape; rewritten each run). */
  readonly dir: string;
  /** The Python that runs the peer (default "python3"); null: no peer. */
  readonly python?: string | null;
  /**
   * Also time every kernel (timestamp queries, one pass per dispatch) over one more generate at
   * each batch size and one more train step per mode: the top kernels by GPU time. Where the
   * adapter lacks timestamp-query: null.
   */
  readonly profile?: boolean;
  /**
   * Our models with the frozen base in half floats (GpuModelOptions.halfBase): inference and the
   * LoRA trainer (full fine-tuning stays f32). The peer is unchanged (PyTorch eager fp32).
   */
  readonly halfBase?: boolean;
  /**
   * Also decode after prompts of this many tokens at batch 1 and 4, with the decode attention
   * split over positions (GpuModelOptions.attentionSplit, the default) and without: what
   * flash-decoding gains on a long context.
   */
  readonly longContext?: number;
  /**
   * The sampler of every measured decode (default: the adapter's own). Where it splits a row of
   * the shape's vocabulary (Sampler.chunksFor > 1), decode at FOLD_BATCHES is also timed with
   * one workgroup a row, greedy and with the HF configs' top-k / top-p (`sampler_split_gain*`).
   */
  readonly sampler?: SamplerOptions;
}

/**
 * The batch sizes whose decode is also timed without the split-K and RoPE folds (GPU adapters
 * only): the inference rows' `fold_gain`.
 */
const FOLD_BATCHES = [1, 8];

/**
 * The HF configs' sampling (configs/hf/*.json): decode with it too, where the sampler splits this
 * vocabulary's rows (GPU adapters), with the split and without (`sampler_split_gain*`).
 */
const HF_SAMPLING = { temperature: 0.7, topK: 20, topP: 0.9 } as const;

/** The batch sizes of the long-context rows (ScaleBenchOptions.longContext). */
const LONG_BATCHES = [1, 4];

const TOP_KERNELS = 12;

/** `fn` run under a GpuProfiler: its top kernels by GPU time (null without timestamp-query). */
async function profiled(gpu: Gpu, fn: () => Promise<unknown>) {
  if (!gpu.device.features.has("timestamp-query")) return null;
  const p = new GpuProfiler(gpu.device);
  activeProfiler(p);
  try {
    await fn();
  } finally {
    activeProfiler(null);
  }
  const rep: KernelTime[] = await p.report();
  const total = rep.reduce((a, k) => a + k.ms, 0);
  return {
    gpu_ms: round(total, 2),
    top: rep.slice(0, TOP_KERNELS).map((k) => ({
      kernel: k.kernel,
      calls: k.calls,
      ms: round(k.ms, 3),
      share: round(k.share, 3),
    })),
  };
}

/**
 * Microseconds per dispatch of a chain of tiny dependent dispatches (an in-place add of 64
 * floats, DISPATCH_CHAIN of them, replayed): the floor a decode step pays per dispatch on this
 * adapter, whatever its kernels compute. `floor_us` submits as plans do (DEFAULT_SUBMIT_CHUNK
 * dispatches a submission, so the GPU runs while JS encodes); `one_submit_us` encodes the whole
 * chain before one submission; `encode_us` is the CPU time of encoding alone (encode and finish,
 * no submission): what the chunked submission can hide behind the GPU's work.
 */
const DISPATCH_CHAIN = 2000;
async function dispatchFloor(gpu: Gpu) {
  const ops = await createOps(gpu);
  const x = gpu.zeros(64), y = gpu.zeros(64);
  const rec = gpu.recorder("dispatch floor");
  for (let i = 0; i < DISPATCH_CHAIN; i++) {
    ops.elementwise.binaryInPlace(rec, { op: "add", n: 64 }, x, y);
  }
  const plan = rec.finish();
  const perDispatch = (ms: number[]) => round(median(ms) * 1000 / DISPATCH_CHAIN, 2);
  const timed = async (chunk: number) => { // over the adapter-class default (CommandPlan.run)
    const prev = setSubmitChunk(chunk);
    try {
      const times: number[] = [];
      for (let r = 0; r < 4; r++) { // round 0 warms up
        const t0 = performance.now();
        plan.run();
        await gpu.sync();
        if (r > 0) times.push(performance.now() - t0);
      }
      return perDispatch(times);
    } finally {
      setSubmitChunk(prev);
    }
  };
  try {
    const floor_us = await timed(DEFAULT_SUBMIT_CHUNK);
    const one_submit_us = await timed(Infinity);
    const encode: number[] = [];
    for (let r = 0; r < 3; r++) {
      const t0 = performance.now();
      const enc = gpu.device.createCommandEncoder();
      plan.run(enc);
      enc.finish(); // never submitted
      encode.push(performance.now() - t0);
    }
    return { floor_us, one_submit_us, encode_us: perDispatch(encode) };
  } finally {
    plan.destroy();
    x.destroy();
    y.destroy();
  }
}

/**
 * Dispatches the forward of one decode step of B rows records (to the logits; the sampler and
 * the position advance add one each, none where the step samples inside its one dispatch).
 */
function decodeDispatches(gpu: Gpu, model: GpuModel, B: number): number {
  const rec = gpu.recorder("count");
  model.encodeForward(rec, B, B, true);
  const plan = rec.finish();
  const n = plan.dispatchCount;
  plan.destroy();
  return n;
}

const LORA_RANK = 16;
export const SCALE_LORA: LoraConfig = {
  rank: LORA_RANK,
  alpha: 2 * LORA_RANK,
  targets: ["q", "k", "v", "o", "gate", "up", "down"],
  adapters: ["bench"],
};
/** One setting for both sides. */
export const SCALE_HYPER = { lr: 1e-5, weightDecay: 0.01, maxGradNorm: 1 };

const median = (a: readonly number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const seconds = (t0: number) => round((performance.now() - t0) / 1000, 3);

/** B × L token ids from a fixed stream (the training batch is also given to the peer). */
function tokens(B: number, L: number, V: number, seed: number): number[][] {
  const rng = new Rng(seed);
  return Array.from({ length: B }, () => Array.from({ length: L }, () => rng.nextU32() % V));
}

/** Writes the shape's random-init HF folder (seed 1); returns the weights as loaded from it. */
async function writeShape(shape: ScaleShape, dir: string) {
  const json = JSON.parse(await Deno.readTextFile(shape.config));
  const config = parseModelConfig(json);
  const t0 = performance.now();
  const files = hfFolderFiles(initModel(config, { seed: 1, distribution: "uniform" }), {
    maxShardBytes: 2 ** 31,
  });
  await Deno.mkdir(dir, { recursive: true });
  await writeFilesAtomic(dir, files);
  const write_s = seconds(t0);
  const t1 = performance.now();
  const w = await loadModel(denoFolder(dir));
  return { w, write_s, load_s: seconds(t1) };
}

/**
 * Prefill and decode tok/s of B sequences (`at`: another prompt length, the attention split off,
 * no profile).
 */
async function oursInference(
  gpu: Gpu,
  w: ModelWeights,
  B: number,
  o: ScaleBenchOptions,
  at: {
    promptLen?: number;
    attentionSplit?: boolean;
    /** Off: decode without the split-K folds and the attention folds (GpuModelOptions). */
    folds?: boolean;
    profile?: boolean;
    /** Decode with these sampling params instead of greedy. */
    sampling?: typeof HF_SAMPLING;
    /** The sampler's row split (SamplerOptions.rowChunks): 1 = one workgroup a row. */
    rowChunks?: number;
  } = {},
) {
  const promptLen = at.promptLen ?? o.promptLen;
  const t0 = performance.now();
  const { value: model, bytes } = await tallyBuffers(
    gpu.device,
    () =>
      GpuModel.create(gpu, w, {
        slots: B,
        maxLen: promptLen + o.newTokens + 1,
        chunkRows: Math.min(512, B * promptLen),
        halfBase: o.halfBase,
        attentionSplit: at.attentionSplit,
        splitKFolds: at.folds,
        attentionFold: at.folds === false ? "none" : undefined,
      }),
  );
  const create_s = seconds(t0);
  try {
    const gen = await Generator.create(model, {
      sampler: { ...o.sampler, ...(at.rowChunks ? { rowChunks: at.rowChunks } : {}) },
    });
    const prompts = tokens(B, promptLen, w.config.vocabSize, 11);
    const reqs = prompts.map((prompt, i) => ({
      prompt,
      maxNewTokens: o.newTokens,
      sequence: i,
      sampling: at.sampling ?? { temperature: 0 },
    }));
    const prefill: number[] = [], decode: number[] = [];
    let first_generate_s = 0;
    for (let r = 0; r <= o.rounds; r++) { // round 0 compiles and warms up
      const t1 = performance.now();
      // Prefill: the forward over every prompt token, logits of each sequence's last one.
      const rows = prompts.flatMap((p, slot) => p.map((token, pos) => ({ token, slot, pos })));
      await model.forward(rows, prompts.map((_, i) => (i + 1) * promptLen - 1));
      const t2 = performance.now();
      const timing = { prefillMs: 0, decodeMs: 0, decodeSteps: 0 };
      await gen.generate(reqs, { timing });
      if (r === 0) {
        first_generate_s = seconds(t1);
        continue;
      }
      prefill.push(B * promptLen / ((t2 - t1) / 1000));
      decode.push(B * o.newTokens / (timing.decodeMs / 1000));
    }
    const profile = (at.profile ?? o.profile)
      ? await profiled(gpu, () => gen.generate(reqs))
      : null;
    return {
      prefill_tok_s: round(median(prefill), 1),
      decode_tok_s: round(median(decode), 1),
      decode_forward_dispatches: decodeDispatches(gpu, model, B),
      create_s,
      first_generate_s,
      gpu_bytes_by_kind: bytes,
      profile,
    };
  } finally {
    model.destroy();
  }
}

/**
 * Workgroups the default sampler splits a row of this vocabulary over on this adapter, and its
 * threads a workgroup (as a generator's sampler: tuned picks apply).
 */
async function samplerShape(
  gpu: Gpu,
  vocab: number,
  opts?: SamplerOptions,
): Promise<{ chunks: number; workgroupSize: number }> {
  const s = await Sampler.create(gpu, { vocab, ...opts, lazy: true });
  try {
    return { chunks: s.chunksFor(vocab), workgroupSize: s.workgroupSize };
  } finally {
    s.destroy();
  }
}

/** The training batch of a shape: ours, and the peer's through TRAIN_IDS in the folder. */
const trainBatch = (o: ScaleBenchOptions, V: number) => tokens(o.trainBatch, o.trainLen, V, 7);
const TRAIN_IDS = "bench_train_ids.json";

async function oursTrain(gpu: Gpu, w: ModelWeights, mode: TrainMode, o: ScaleBenchOptions) {
  const batch = trainBatch(o, w.config.vocabSize);
  const opts: TrainerOptions = {
    mode,
    lora: SCALE_LORA,
    seed: 3,
    optimizer: { weightDecay: SCALE_HYPER.weightDecay, maxGradNorm: SCALE_HYPER.maxGradNorm },
    schedule: { kind: "constant", lr: SCALE_HYPER.lr },
    loss: { kind: "cross-entropy" },
    chunkRows: Math.min(o.trainBatch * o.trainLen, 1024),
    slots: o.trainBatch,
    maxLen: o.trainLen,
    halfBase: o.halfBase && mode === "lora",
  };
  const t0 = performance.now();
  const { value: tr, bytes } = await tallyBuffers(
    gpu.device,
    () => ModelTrainer.create(gpu, w, opts),
  );
  const create_s = seconds(t0);
  const seqs = batch.map((t) => ({ tokens: t, adapter: 0, weights: t.slice(1).map(() => 1) }));
  const tokS: number[] = [], losses: number[] = [];
  let first_step_s = 0;
  try {
    for (let s = 0; s <= o.rounds; s++) {
      const t1 = performance.now();
      const m = await tr.step(seqs);
      const dt = (performance.now() - t1) / 1000;
      losses.push(round(m.loss.loss, 4));
      if (s === 0) first_step_s = round(dt, 3);
      else tokS.push(o.trainBatch * o.trainLen / dt);
    }
    const profile = o.profile ? await profiled(gpu, () => tr.step(seqs)) : null;
    return {
      tok_s: round(median(tokS), 1),
      create_s,
      first_step_s,
      losses,
      gpu_bytes_by_kind: bytes,
      profile,
    };
  } finally {
    tr.destroy();
  }
}

export interface PeerResult {
  readonly device?: string;
  readonly versions?: Record<string, string>;
  readonly load_s?: number;
  readonly inference?: readonly { batch: number; prefill_tok_s: number; decode_tok_s: number }[];
  readonly train?: readonly { mode: string; tok_s: number; losses: number[] }[];
  readonly memory_bytes?: Record<string, number>;
  readonly error?: string;
}

/** Runs scale_torch.py on the folder: its JSON (last stdout line), or why there is none. */
export async function torchPeer(
  python: string,
  dir: string,
  o: ScaleBenchOptions,
  log: (s: string) => void,
): Promise<PeerResult | { skipped: string }> {
  let why: string | null = null;
  try {
    const probe = await new Deno.Command(python, {
      args: ["-c", "import torch, transformers"],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!probe.success) why = new TextDecoder().decode(probe.stderr).trim().split("\n").at(-1)!;
  } catch (e) {
    why = `${(e as Error).name}: ${(e as Error).message}`;
  }
  if (why !== null) return { skipped: `${python} cannot import torch and transformers (${why})` };
  const script = new URL("./scale_torch.py", import.meta.url).pathname;
  const args = [
    script,
    "--folder",
    dir,
    "--batches",
    o.batches.join(","),
    "--prompt-len",
    String(o.promptLen),
    "--new-tokens",
    String(o.newTokens),
    "--train-batch",
    String(o.trainBatch),
    "--train-len",
    String(o.trainLen),
    "--modes",
    o.modes.join(","),
    "--rounds",
    String(o.rounds),
    "--lora-rank",
    String(LORA_RANK),
    "--lr",
    String(SCALE_HYPER.lr),
    "--weight-decay",
    String(SCALE_HYPER.weightDecay),
    "--max-grad-norm",
    String(SCALE_HYPER.maxGradNorm),
    "--train-ids",
    `${dir}/${TRAIN_IDS}`,
  ];
  const V = JSON.parse(await Deno.readTextFile(`${dir}/config.json`)).vocab_size as number;
  await Deno.writeTextFile(`${dir}/${TRAIN_IDS}`, JSON.stringify(trainBatch(o, V)));
  log(`peer: ${python} ${args.join(" ")}`);
  const out = await new Deno.Command(python, { args, stdout: "piped", stderr: "piped" }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  for (const line of stderr.trim().split("\n").filter(Boolean)) log(`peer: ${line}`);
  const last = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
  if (!out.success) return { error: `exit ${out.code}: ${stderr.trim().split("\n").at(-1)}` };
  try {
    return JSON.parse(last) as PeerResult;
  } catch {
    return { error: `no JSON on the peer's last stdout line: ${last.slice(0, 200)}` };
  }
}

/** The largest |ours - peer| over the first `steps` both took (null without a peer). */
function lossDiff(
  ours: readonly number[],
  peer: readonly number[] | undefined,
  steps: number,
): number | null {
  if (!peer?.length) return null;
  const n = Math.min(ours.length, peer.length, steps);
  let m = 0;
  for (let i = 0; i < n; i++) m = Math.max(m, Math.abs(ours[i] - peer[i]));
  return round(m, 5);
}

const ratio = (a: number | undefined, b: number | undefined) =>
  a !== undefined && b !== undefined && b > 0 ? round(a / b) : null;

/** The "scale" section of `deno task bench`. */
export async function benchScale(gpu: Gpu, o: ScaleBenchOptions, log: (s: string) => void) {
  const python = o.python === undefined ? "python3" : o.python;
  const floor = await dispatchFloor(gpu), floorUs = floor.floor_us;
  log(
    `dispatch floor: ${floorUs} µs per dependent dispatch (${DISPATCH_CHAIN} of them; one submission: ${floor.one_submit_us} µs; encoding alone ${floor.encode_us} µs)`,
  );
  const shapes = [];
  for (const shape of o.shapes) {
    const dir = `${o.dir}/${shape.name}`;
    const { w, write_s, load_s } = await writeShape(shape, dir);
    const params = w.layout.tensors.reduce((s, t) => s + t.size, 0);
    log(`${shape.name}: ${params} parameters, written in ${write_s} s, read in ${load_s} s`);
    const inference = [];
    // Workgroups the sampler splits this vocabulary's rows over (the same at every batch size).
    const { chunks, workgroupSize } = await samplerShape(gpu, w.config.vocabSize, o.sampler);
    for (const B of o.batches) {
      const r = await oursInference(gpu, w, B, o);
      log(
        `${shape.name} B${B}: prefill ${r.prefill_tok_s} tok/s, decode ${r.decode_tok_s} tok/s (create ${r.create_s} s, first generate ${r.first_generate_s} s)`,
      );
      // The decode folds (GpuModelOptions.splitKFolds, attentionFold) apply on GPU adapters only.
      let unfused = null;
      if (gpu.adapterClass === "gpu" && FOLD_BATCHES.includes(B)) {
        unfused = await oursInference(gpu, w, B, o, { folds: false, profile: false });
        log(
          `${shape.name} B${B}: decode ${unfused.decode_tok_s} tok/s without the split-K and RoPE folds (${unfused.decode_forward_dispatches} dispatches a step, against ${r.decode_forward_dispatches})`,
        );
      }
      // The sampler's split rows (Sampler.chunksFor: GPU adapters, large vocabularies), greedy
      // and with the HF configs' top-k / top-p, against one workgroup a row.
      let sampler = null;
      if (chunks > 1 && FOLD_BATCHES.includes(B)) {
        const quiet = { profile: false };
        const one = await oursInference(gpu, w, B, o, { ...quiet, rowChunks: 1 });
        const hf = await oursInference(gpu, w, B, o, { ...quiet, sampling: HF_SAMPLING });
        const hfOne = await oursInference(gpu, w, B, o, {
          ...quiet,
          sampling: HF_SAMPLING,
          rowChunks: 1,
        });
        log(
          `${shape.name} B${B}: decode with rows split over ${chunks} sampler workgroups of ${workgroupSize} threads ${r.decode_tok_s} tok/s greedy, ${hf.decode_tok_s} top-k/top-p; one workgroup a row ${one.decode_tok_s}, ${hfOne.decode_tok_s}`,
        );
        sampler = {
          sampler_chunks: chunks,
          sampler_workgroup_size: workgroupSize,
          decode_tok_s_one_sampler_workgroup: one.decode_tok_s,
          decode_tok_s_top_k_p: hf.decode_tok_s,
          decode_tok_s_top_k_p_one_sampler_workgroup: hfOne.decode_tok_s,
          sampler_split_gain: ratio(r.decode_tok_s, one.decode_tok_s),
          sampler_split_gain_top_k_p: ratio(hf.decode_tok_s, hfOne.decode_tok_s),
        };
      }
      inference.push({
        batch: B,
        ...r,
        decode_tok_s_unfused: unfused?.decode_tok_s ?? null,
        decode_forward_dispatches_unfused: unfused?.decode_forward_dispatches ?? null,
        fold_gain: ratio(r.decode_tok_s, unfused?.decode_tok_s),
        ...sampler,
      });
    }
    const long_context = [];
    for (const B of o.longContext ? LONG_BATCHES : []) {
      const promptLen = o.longContext!;
      const split = await oursInference(gpu, w, B, o, { promptLen, profile: false });
      const one = await oursInference(gpu, w, B, o, {
        promptLen,
        attentionSplit: false,
        profile: false,
      });
      log(
        `${shape.name} B${B} after ${promptLen} prompt tokens: decode ${split.decode_tok_s} tok/s with the attention split over positions, ${one.decode_tok_s} without`,
      );
      long_context.push({
        batch: B,
        prompt_len: promptLen,
        prefill_tok_s: split.prefill_tok_s,
        decode_tok_s_split: split.decode_tok_s,
        decode_tok_s_one_workgroup: one.decode_tok_s,
        split_gain: ratio(split.decode_tok_s, one.decode_tok_s),
      });
    }
    const train = [];
    for (const mode of o.modes) {
      const r = await oursTrain(gpu, w, mode, o);
      log(
        `${shape.name} train ${mode} B${o.trainBatch}×T${o.trainLen}: ${r.tok_s} tok/s (create ${r.create_s} s, first step ${r.first_step_s} s)`,
      );
      train.push({ mode, ...r });
    }
    const peer = python === null
      ? { skipped: "no peer asked for" }
      : await torchPeer(python, dir, o, log);
    const p = "skipped" in peer || peer.error ? null : peer;
    const pInf = (B: number) => p?.inference?.find((r) => r.batch === B);
    const pTrain = (m: string) => p?.train?.find((r) => r.mode === m);
    // fp32 weights read once per decode step: the bytes a step must move at the least.
    const weightBytes = 4 * params;
    shapes.push({
      shape: shape.name,
      config: shape.config,
      params,
      weight_bytes: weightBytes,
      write_s,
      load_s,
      inference: inference.map((r) => ({
        ...r,
        decode_weight_gb_s: round(weightBytes * r.decode_tok_s / r.batch / 1e9, 1),
        // The tok/s a decode step's forward dispatches alone would allow at the dispatch floor.
        decode_dispatch_floor_tok_s: round(
          r.batch * 1e6 / (r.decode_forward_dispatches * floorUs),
          1,
        ),
        torch_prefill_tok_s: pInf(r.batch)?.prefill_tok_s ?? null,
        torch_decode_tok_s: pInf(r.batch)?.decode_tok_s ?? null,
        prefill_ratio: ratio(r.prefill_tok_s, pInf(r.batch)?.prefill_tok_s),
        decode_ratio: ratio(r.decode_tok_s, pInf(r.batch)?.decode_tok_s),
      })),
      long_context,
      train: train.map((r) => ({
        ...r,
        torch_tok_s: pTrain(r.mode)?.tok_s ?? null,
        torch_losses: pTrain(r.mode)?.losses ?? null,
        // Same weights, batch and hyperparameters: full fine-tuning's losses agree to float32
        // rounding at every step; LoRA's only at the first (peft draws A its own way).
        loss_diff: lossDiff(r.losses, pTrain(r.mode)?.losses, r.mode === "lora" ? 1 : Infinity),
        ratio: ratio(r.tok_s, pTrain(r.mode)?.tok_s),
      })),
      peer,
    });
  }
  return {
    settings: {
      batches: o.batches,
      prompt_len: o.promptLen,
      new_tokens: o.newTokens,
      train_batch: o.trainBatch,
      train_len: o.trainLen,
      lora: SCALE_LORA,
      hyper: SCALE_HYPER,
      rounds: o.rounds,
      half_base: o.halfBase ?? false,
      long_context: o.longContext ?? null,
    },
    peer: "PyTorch + transformers eager fp32 (test/bench/scale_torch.py), same folders, same run",
    dispatch_floor_us: floorUs,
    dispatch_floor_one_submit_us: floor.one_submit_us,
    dispatch_encode_us: floor.encode_us,
    load_average: Deno.loadavg().map((x) => round(x)),
    shapes,
  };
}
