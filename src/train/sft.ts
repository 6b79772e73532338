// Supervised fine-tuning: the run loop that turns JSONL demonstrations into optimizer steps on a
// ModelTrainer (cross-entropy on completion / assistant tokens only), from the typed config of
// sft_config.ts, with the run folder docs/runs.md describes:
//
//   runs/sft/<name>/<timestamp>/config.json      resolved config (what --resume reads back)
//                               metrics.jsonl    one object per step (+ eval_loss when evaluated)
//                               summary.log      what happened, for humans
//                               checkpoints/step-N/   PEFT adapter or full HF model, optimizer
//                                                moments, data-order state (keep-last-N)
//                               final/adapter/   PEFT adapter (LoRA runs)
//                               final/model/     full HF model folder (merged for LoRA runs),
//                                                loadable by `deno task generate --model`
//
// Exact resume: the data order is a pure function of (seed, epoch, cursor), the held-out split of
// the seed alone, and the checkpoint holds parameters + Adam moments + step; so a resumed run
// takes the same batches with the same state as an uninterrupted one. Paths in a config are
// relative to the working directory (the repository root under `deno task`).

import { type Folder, readFolderText } from "../io/bytesource.ts";
import { denoFolder, joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { Gpu } from "../gpu/mod.ts";
import { parseModelConfig } from "../model/config.ts";
import { hfFolderFiles, initModel } from "../model/init.ts";
import { LoraLayout, mergeLora } from "../model/lora_layout.ts";
import { ByteTokenizer, loadTokenizer, type Tokenizer } from "../model/tokenizer.ts";
import { loadModel, type ModelWeights } from "../model/weights.ts";
import { type CheckpointContents, TOKENIZER_FILES } from "./checkpoint.ts";
import {
  latestCheckpoint,
  loadCheckpoint,
  pruneCheckpoints,
  writeCheckpoint,
  writeDirAtomic,
} from "./checkpoint_dir.ts";
import { CheckpointMismatchError, CheckpointNotFoundError, TrainError } from "./errors.ts";
import { writeFailure, writingTo } from "../io/errors.ts";
import { fromPeftAdapter, toPeftAdapter } from "./lora_peft.ts";
import { CrossEntropyLoss } from "./losses.ts";
import { peftAdapterFiles } from "./peft.ts";
import { type SftConfig, SftConfigError } from "./sft_config.ts";
import type { LrSchedule } from "./schedule.ts";
import {
  DataOrder,
  type DataOrderState,
  type EncodedRecord,
  prepareSftData,
  type SftData,
} from "./sft_data.ts";
import {
  ModelTrainer,
  type StepMetrics,
  type TrainerOptions,
  type TrainSequence,
} from "./trainer.ts";

// ---- the run -------------------------------------------------------------------------------

const ADAPTER = "policy";

/** Flags a signal handler sets; the loop reads them after each step. */
export interface SftControl {
  /** Checkpoint after the current step and return (Ctrl-C). */
  stop: boolean;
  /** Checkpoint after the current step and go on (SIGUSR1). */
  checkpoint: boolean;
}

export interface SftProgress {
  readonly step: number;
  readonly totalSteps: number;
  readonly loss: number;
  readonly lr: number;
  readonly tokensPerS: number;
  readonly epoch: number;
  readonly elapsedS: number;
  readonly evalLoss?: number;
}

export interface SftRunOptions {
  readonly config: SftConfig;
  /** A run folder to continue from its latest checkpoint (its config.json is `config`). */
  readonly resumeDir?: string;
  /** Reused across runs in tests (pipelines are cached per Gpu); created and destroyed otherwise. */
  readonly gpu?: Gpu;
  /** Return (with a checkpoint) once this many steps are complete, as Ctrl-C would. */
  readonly stopAfter?: number;
  readonly control?: SftControl;
  readonly onProgress?: (p: SftProgress) => void;
  /** Human-readable lines (also written to summary.log). */
  readonly log?: (line: string) => void;
}

export interface SftResult {
  readonly runDir: string;
  /** Steps completed, of totalSteps; `stopped` when the run returned before its last (Ctrl-C, stopAfter). */
  readonly steps: number;
  readonly totalSteps: number;
  readonly stopped: boolean;
  readonly lastLoss: number | null;
  readonly lastEvalLoss: number | null;
  /** final/ (null when stopped). */
  readonly exportDir: string | null;
}

interface Base {
  readonly weights: ModelWeights;
  readonly tokenizer: Tokenizer;
  /** The HF folder (tokenizer files to copy, original config.json), or null for a preset. */
  readonly folder: Folder | null;
  readonly hfConfig?: Record<string, unknown>;
  readonly name: string;
}

async function loadBase(c: SftConfig): Promise<Base> {
  if (c.model.folder !== null) {
    const folder = denoFolder(c.model.folder);
    const weights = await loadModel(folder);
    const tokenizer = await loadTokenizer(folder, { config: weights.config });
    const hfConfig = JSON.parse((await readFolderText(folder, "config.json"))!) as Record<
      string,
      unknown
    >;
    return { weights, tokenizer, folder, hfConfig, name: c.model.folder };
  }
  const url = new URL(`../../configs/models/${c.model.preset}.json`, import.meta.url);
  let json: unknown;
  try {
    json = JSON.parse(await Deno.readTextFile(url));
  } catch (e) {
    throw SftConfigError.at(
      "model.preset",
      `cannot read configs/models/${c.model.preset}.json (${
        (e as Error).message
      }); name a file there`,
    );
  }
  const weights = initModel(parseModelConfig(json), { seed: c.run.seed });
  return {
    weights,
    tokenizer: new ByteTokenizer(),
    folder: null,
    name: `configs/models/${c.model.preset}.json`,
  };
}

export function totalSteps(c: SftConfig, trainRecords: number): number {
  return c.run.steps ?? Math.max(1, Math.ceil((c.run.epochs * trainRecords) / c.update.batchSize));
}

function schedule(c: SftConfig, total: number): LrSchedule {
  const { kind, warmupSteps, minRatio } = c.update.schedule, lr = c.update.optimizer.lr;
  return kind === "constant"
    ? { kind, lr, warmupSteps }
    : { kind, lr, warmupSteps, totalSteps: Math.max(warmupSteps, total), minRatio };
}

function trainerOptions(c: SftConfig, total: number, loraData?: Float32Array): TrainerOptions {
  const u = c.update, o = u.optimizer;
  return {
    mode: u.mode,
    lora: { rank: u.lora.rank, alpha: u.lora.alpha, targets: u.lora.targets, adapters: [ADAPTER] },
    loraData,
    seed: c.run.seed,
    optimizer: {
      beta1: o.beta1,
      beta2: o.beta2,
      eps: o.eps,
      weightDecay: o.weightDecay,
      maxGradNorm: o.maxGradNorm,
    },
    schedule: schedule(c, total),
    loss: { kind: "cross-entropy" },
    chunkRows: u.microBatchRows,
    slots: u.microBatchSeqs,
    maxLen: c.data.maxSeqLen,
  };
}

/** A new run folder: <outDir>/<name>/<UTC timestamp>[-k]. */
async function newRunDir(c: SftConfig): Promise<string> {
  const stamp = new Date().toISOString().replace(/\.\d+Z$/, "Z").replace(/[:]/g, "-");
  const parent = joinPath(c.run.outDir, c.run.name);
  await writingTo(parent, () => Deno.mkdir(parent, { recursive: true }));
  for (let k = 1;; k++) {
    const dir = joinPath(parent, k === 1 ? stamp : `${stamp}-${k}`);
    try {
      await Deno.mkdir(dir);
      return dir;
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw writeFailure(e, dir);
    }
  }
}

/** Keeps metrics.jsonl to the steps a resume has not redone (a crash may have logged more). */
async function trimMetrics(path: string, upToStep: number): Promise<void> {
  const lines = (await Deno.readTextFile(path).catch(() => "")).split("\n").filter(Boolean);
  const keep = lines.filter((l) => (JSON.parse(l) as { step: number }).step <= upToStep);
  if (keep.length !== lines.length) await writeFileAtomic(path, keep.map((l) => l + "\n").join(""));
}

/** Everything one run holds; the loop's helpers take it. */
interface Run {
  readonly c: SftConfig;
  readonly dir: string;
  readonly base: Base;
  readonly data: SftData;
  readonly total: number;
  readonly trainer: ModelTrainer;
  readonly order: DataOrder;
  readonly log: (line: string) => Promise<void>;
}

/** HF folder files of `w` with the base's tokenizer (byte tokenizer files for presets). */
async function modelFiles(run: Run, w: ModelWeights): Promise<Map<string, Uint8Array>> {
  const folder = run.base.folder;
  const files = hfFolderFiles(
    w,
    folder ? { tokenizer: "none", baseConfig: run.base.hfConfig } : {},
  );
  for (const f of folder ? TOKENIZER_FILES : []) {
    const src = await folder!.open(f);
    if (!src) continue;
    files.set(f, await src.read(0, src.size));
    src.close();
  }
  return files;
}

async function saveCheckpoint(run: Run): Promise<string> {
  const t = run.trainer, step = t.completedSteps;
  const contents: CheckpointContents = {
    state: {
      step,
      rng: { data: { ...run.order.state } },
      extra: { fingerprint: run.data.fingerprint, records: run.data.train.length },
    },
    optimizers: { [ADAPTER]: await t.optimizerState() },
    ...(t.lora
      ? {
        adapters: {
          [ADAPTER]: {
            adapter: toPeftAdapter(t.lora.layout, (await t.readLora())!, 0, run.base.name),
            base: run.base.weights.config,
          },
        },
      }
      : {
        models: {
          [ADAPTER]: {
            weights: await t.readWeights(),
            tokenizerFrom: run.base.folder ?? undefined,
            hf: { baseConfig: run.base.hfConfig },
          },
        },
      }),
  };
  const root = joinPath(run.dir, "checkpoints"), dir = joinPath(root, `step-${step}`);
  await writeCheckpoint(dir, contents);
  const pruned = await pruneCheckpoints(root, run.c.run.keepLast);
  await run.log(`checkpoint: ${dir}${pruned.length ? ` (removed ${pruned.length} older)` : ""}`);
  return dir;
}

/** final/: the PEFT adapter (LoRA) and a full HF model folder (merged for LoRA). */
async function exportFinal(run: Run): Promise<string> {
  const t = run.trainer, files = new Map<string, Uint8Array>();
  const add = (prefix: string, m: Map<string, Uint8Array>) =>
    m.forEach((v, k) => files.set(`${prefix}/${k}`, v));
  if (t.lora) {
    const data = (await t.readLora())!;
    add(
      "adapter",
      peftAdapterFiles(
        toPeftAdapter(t.lora.layout, data, 0, run.base.name),
        run.base.weights.config,
      ),
    );
    add("model", await modelFiles(run, mergeLora(run.base.weights, t.lora.layout, data, 0)));
  } else {
    add("model", await modelFiles(run, await t.readWeights()));
  }
  const dir = joinPath(run.dir, "final");
  await writeDirAtomic(dir, files);
  await run.log(
    `exported: ${dir}/model (npx deno task generate --model ${dir}/model)${
      t.lora ? ` and ${dir}/adapter (PEFT)` : ""
    }`,
  );
  return dir;
}

/**
 * Token-mean cross-entropy of the held-out sequences with the current parameters: forward
 * micro-batches through the trainer's own model and loss head (the gradient it writes is unused).
 */
async function evalLoss(
  trainer: ModelTrainer,
  seqs: readonly TrainSequence[],
  rowData: GPUBuffer,
): Promise<number> {
  const head = trainer.lossHead;
  if (!(head instanceof CrossEntropyLoss)) {
    throw new TrainError("SFT eval needs the cross-entropy loss head");
  }
  const targets = seqs.flatMap((s) =>
    s.tokens.map((_, t) => (t + 1 < s.tokens.length ? s.tokens[t + 1] : 0))
  );
  const weights = seqs.flatMap((s) => [...s.weights, 0]);
  const packed = head.pack({ targets, weights });
  const { chunkRows, slots } = trainer.opts;
  let row = 0, k = 0;
  for (let i = 0; i < seqs.length; k++) {
    const rows = [];
    for (
      let slot = 0;
      i < seqs.length && slot < slots && rows.length + seqs[i].tokens.length <= chunkRows;
      slot++, i++
    ) {
      rows.push(
        ...seqs[i].tokens.map((token, pos) => ({ token, slot, pos, adapter: seqs[i].adapter })),
      );
    }
    trainer.model.writeRows(rows, []);
    trainer.gpu.write(rowData, packed.subarray(row * 8, (row + rows.length) * 8));
    const rec = trainer.gpu.recorder("sft eval");
    trainer.model.encodeTrunk(rec, rows.length);
    trainer.encodeHeadLoss(rec, rows.length, rowData, k > 0, false);
    rec.submit();
    row += rows.length;
  }
  return (await head.readMetrics()).loss;
}

const toSequence = (r: EncodedRecord, lora: boolean): TrainSequence => ({
  tokens: r.tokens,
  weights: r.weights,
  adapter: lora ? 0 : undefined,
});

/** Loads the latest checkpoint of a run folder: trainer init data, optimizer state, data order. */
async function resumeState(dir: string, c: SftConfig, base: Base, data: SftData) {
  const ckDir = await latestCheckpoint(joinPath(dir, "checkpoints"));
  if (!ckDir) {
    throw new CheckpointNotFoundError(
      dir,
      "has no complete checkpoint: the run stopped before its first one; start it again",
    );
  }
  const ck = await loadCheckpoint(ckDir, { base: base.weights.config });
  const extra = ck.state.extra as { fingerprint?: string } | undefined;
  if (extra?.fingerprint !== data.fingerprint) {
    throw new CheckpointMismatchError(
      ckDir,
      "the training data (files, tokenizer or maxSeqLen) differs from what this run trained on; resume with the same data",
    );
  }
  const order = (ck.state.rng as unknown as { data?: DataOrderState } | null)?.data;
  if (!order) {
    throw new CheckpointMismatchError(
      ckDir,
      "holds no SFT data-order state: it is not an SFT checkpoint; resume the run folder sft wrote",
    );
  }
  let loraData: Float32Array | undefined, weights = base.weights;
  if (c.update.mode === "lora") {
    const layout = new LoraLayout(base.weights.config, trainerOptions(c, 1).lora!);
    loraData = new Float32Array(layout.totalFloats);
    fromPeftAdapter(layout, loraData, 0, ck.adapters[ADAPTER], base.weights.config);
  } else {
    weights = ck.models[ADAPTER];
  }
  return {
    ckDir,
    step: ck.state.step,
    order,
    loraData,
    weights,
    optimizer: ck.optimizers[ADAPTER],
  };
}

async function openRun(o: SftRunOptions, gpu: Gpu): Promise<Run> {
  const c = o.config;
  const base = await loadBase(c);
  const data = await prepareSftData(c.data.train, base.tokenizer, {
    maxSeqLen: c.data.maxSeqLen,
    evalFraction: c.eval.fraction,
    seed: c.run.seed,
  });
  const total = totalSteps(c, data.train.length);
  const resumed = o.resumeDir ? await resumeState(o.resumeDir, c, base, data) : null;
  const trainer = await ModelTrainer.create(
    gpu,
    resumed?.weights ?? base.weights,
    trainerOptions(c, total, resumed?.loraData),
  );
  // The folder comes last, so a bad model, data file or checkpoint leaves no empty run behind.
  const dir = o.resumeDir ?? await newRunDir(c);
  const log = async (line: string) => {
    o.log?.(line);
    await Deno.writeTextFile(
      joinPath(dir, "summary.log"),
      `${new Date().toISOString()} ${line}\n`,
      { append: true },
    );
  };
  // Rewritten on resume too: --set overrides then stay in force for later resumes.
  await writeFileAtomic(joinPath(dir, "config.json"), JSON.stringify(c, null, 2) + "\n");
  if (resumed) {
    trainer.restoreOptimizer(resumed.optimizer);
    await trimMetrics(joinPath(dir, "metrics.jsonl"), resumed.step);
    await log(`resumed from ${resumed.ckDir} at step ${resumed.step}`);
  } else {
    await log(`run: ${dir}${c.description ? ` — ${c.description}` : ""}`);
  }
  const order = new DataOrder(
    data.train.length,
    resumed?.order ?? { seed: c.run.seed, epoch: 0, cursor: 0 },
  );
  const run: Run = { c, dir, base, data, total, trainer, order, log };
  const w = base.weights,
    trainable = trainer.lora
      ? trainer.lora.layout.entries.reduce(
        (a, e) => a + c.update.lora.rank * (e.inDim + e.outDim),
        0,
      )
      : w.layout.numParams;
  await log(
    `model: ${base.name} (${w.config.modelType}, ${w.layout.numParams} parameters; ${c.update.mode}, ${trainable} trainable) on ${gpu.describe()}`,
  );
  for (const note of data.notes) await log(note);
  await log(
    `steps: ${total} of ${c.update.batchSize} sequences (${
      (total * c.update.batchSize / data.train.length).toFixed(2)
    } epochs)`,
  );
  return run;
}

function metricsLine(
  m: StepMetrics,
  epoch: number,
  evalLossValue: number | null,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    step: m.step,
    epoch: Number(epoch.toFixed(4)),
    loss: m.loss.loss,
    tokens: m.tokens,
    loss_tokens: m.loss.tokens,
    lr: m.lr,
    grad_norm: m.optimizer.gradNorm,
    seconds: m.seconds,
    tokens_per_s: m.tokens / m.seconds,
  };
  if (!m.optimizer.finite) out.skipped_nonfinite = true;
  if (evalLossValue !== null) out.eval_loss = evalLossValue;
  return out;
}

/** Runs (or resumes) an SFT run to its last step, or until stopped; see the header for the outputs. */
export async function runSft(o: SftRunOptions): Promise<SftResult> {
  const gpu = o.gpu ?? await Gpu.create();
  const run = await openRun(o, gpu);
  const { c, trainer, total } = run;
  const rowData = gpu.zeros(c.update.microBatchRows * 8, "sft.eval.rows");
  const evalSeqs = run.data.eval.map((r) => toSequence(r, !!trainer.lora));
  const metricsPath = joinPath(run.dir, "metrics.jsonl");
  const t0 = performance.now();
  let lastLoss: number | null = null, lastEval: number | null = null, savedAt = -1;
  try {
    while (trainer.completedSteps < total) {
      const batch = run.order.next(c.update.batchSize).map((i) =>
        toSequence(run.data.train[i], !!trainer.lora)
      );
      const m = await trainer.step(batch);
      const step = trainer.completedSteps, last = step === total;
      const evalDue = evalSeqs.length > 0 &&
        (last || (c.eval.everySteps > 0 && step % c.eval.everySteps === 0));
      const ev = evalDue ? await evalLoss(trainer, evalSeqs, rowData) : null;
      [lastLoss, lastEval] = [m.loss.loss, ev ?? lastEval];
      await Deno.writeTextFile(
        metricsPath,
        JSON.stringify(metricsLine(m, run.order.progress, ev)) + "\n",
        { append: true },
      );
      o.onProgress?.({
        step,
        totalSteps: total,
        loss: m.loss.loss,
        lr: m.lr,
        tokensPerS: m.tokens / m.seconds,
        epoch: run.order.progress,
        elapsedS: (performance.now() - t0) / 1000,
        evalLoss: ev ?? undefined,
      });
      if (ev !== null) {
        await run.log(
          `step ${step}: eval loss ${ev.toFixed(4)} (train loss ${m.loss.loss.toFixed(4)})`,
        );
      }
      const stop = !!o.control?.stop || (o.stopAfter !== undefined && step >= o.stopAfter);
      if (
        last || stop || o.control?.checkpoint ||
        (c.run.checkpointEvery > 0 && step % c.run.checkpointEvery === 0)
      ) {
        await saveCheckpoint(run);
        savedAt = step;
        if (o.control) o.control.checkpoint = false;
      }
      if (stop && !last) {
        await run.log(
          `stopped at step ${step}/${total}; continue with: npx deno task sft --resume ${run.dir}`,
        );
        return {
          runDir: run.dir,
          steps: step,
          totalSteps: total,
          stopped: true,
          lastLoss,
          lastEvalLoss: lastEval,
          exportDir: null,
        };
      }
    }
    if (savedAt < 0) await run.log(`already complete at step ${total}`);
    const exportDir = await exportFinal(run);
    const secs = (performance.now() - t0) / 1000;
    await run.log(
      `done: ${total} steps, last loss ${lastLoss?.toFixed(4) ?? "-"}${
        lastEval !== null ? `, eval loss ${lastEval.toFixed(4)}` : ""
      }, ${secs.toFixed(1)} s`,
    );
    return {
      runDir: run.dir,
      steps: total,
      totalSteps: total,
      stopped: false,
      lastLoss,
      lastEvalLoss: lastEval,
      exportDir,
    };
  } finally {
    rowData.destroy();
    trainer.destroy();
    if (!o.gpu) gpu.destroy();
  }
}
