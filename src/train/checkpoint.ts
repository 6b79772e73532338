// Training checkpoints as a folder of files, host-neutral (Deno disk, OPFS, memory): LoRA adapters
// in PEFT format, full models as HF folders (config.json + safetensors + tokenizer files), the
// optimizer's moments, and the trainer's step and RNG state for an exact resume. checkpoint.json
// is the manifest: written last, it lists every file with its size, so a reader never mistakes a
// half-written folder for a checkpoint. Deno writes the folder atomically (checkpoint_dir.ts).
//
//   step-N/checkpoint.json                       manifest (format, step, parts, file sizes)
//          trainer_state.json                    step, rng, extra, optimizer settings
//          optimizer/<name>.safetensors          m.<i>, v.<i> per range, F32 (bit-exact)
//          adapters/<name>/adapter_config.json   PEFT
//          adapters/<name>/adapter_model.safetensors
//          models/<name>/config.json, model.safetensors, tokenizer files
//          value_heads/<name>.safetensors        PPO critic heads: weight [C], bias [1], F32

import type { Folder } from "../io/bytesource.ts";
import { readFolderText } from "../io/bytesource.ts";
import { encodeSafetensors, SafetensorsCheckpoint } from "../io/safetensors.ts";
import type { ModelConfig } from "../model/config.ts";
import { hfFolderFiles, type HFFolderOptions } from "../model/init.ts";
import { loadModel, type ModelWeights } from "../model/weights.ts";
import type { AdamWHyper, OptimizerState } from "./adamw.ts";
import {
  CheckpointCorruptError,
  CheckpointMismatchError,
  CheckpointNotFoundError,
  TrainConfigError,
} from "./errors.ts";
import { loadPeftAdapter, type LoraAdapter, peftAdapterFiles } from "./peft.ts";

export const MANIFEST = "checkpoint.json";
export const TRAINER_STATE = "trainer_state.json";
const FORMAT = "pettingllms-checkpoint";
const VERSION = 1;

/** Tokenizer files an HF model folder may have; those present are copied into full checkpoints. */
export const TOKENIZER_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "added_tokens.json",
  "vocab.json",
  "merges.txt",
  "tokenizer.model",
  "chat_template.jinja",
];

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** What the trainer itself needs to continue exactly where it stopped. */
export interface TrainState {
  /** Optimizer steps completed. */
  readonly step: number;
  /** RNG states of the trainer (rollout sampling seeds, env task streams, ...), opaque here. */
  readonly rng: JsonValue;
  /** Anything else worth keeping: resolved config, best validation score, ... */
  readonly extra?: JsonValue;
}

export interface FullModelPart {
  readonly weights: ModelWeights;
  readonly hf?: HFFolderOptions;
  /** The base model folder whose tokenizer files are copied (overrides hf.tokenizer). */
  readonly tokenizerFrom?: Folder;
}

export interface CheckpointContents {
  readonly state: TrainState;
  /** LoRA adapters by name (one per agent policy), each with its base model's config. */
  readonly adapters?: Readonly<
    Record<string, { readonly adapter: LoraAdapter; readonly base: ModelConfig }>
  >;
  /** Full models by name. */
  readonly models?: Readonly<Record<string, FullModelPart>>;
  /** Optimizer states by name (usually one per policy, named like its adapter or model). */
  readonly optimizers?: Readonly<Record<string, OptimizerState>>;
  /** PPO value heads by name (one per trainer): [w (hidden floats), b]. */
  readonly valueHeads?: Readonly<Record<string, Float32Array>>;
}

interface Manifest {
  format: string;
  version: number;
  step: number;
  adapters: string[];
  models: string[];
  optimizers: string[];
  /** PPO value heads (absent in checkpoints written before they existed). */
  valueHeads?: string[];
  /** Path → size in bytes, for every file but the manifest. */
  files: Record<string, number>;
}

interface StoredOptimizer {
  step: number;
  hyper: AdamWHyper;
  numel: number[];
}

const NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

function checkName(kind: string, name: string): void {
  if (!NAME_RE.test(name)) {
    throw new TrainConfigError(
      kind,
      `"${name}" is not usable as a folder name; use letters, digits, _ . -`,
    );
  }
}

async function tokenizerBytes(from: Folder): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const f of TOKENIZER_FILES) {
    const src = await from.open(f);
    if (src === null) continue;
    try {
      out.set(f, await src.read(0, src.size));
    } finally {
      src.close();
    }
  }
  return out;
}

async function modelFiles(part: FullModelPart): Promise<Map<string, Uint8Array>> {
  if (!part.tokenizerFrom) return hfFolderFiles(part.weights, part.hf);
  const files = hfFolderFiles(part.weights, { ...part.hf, tokenizer: "none" });
  for (const [name, bytes] of await tokenizerBytes(part.tokenizerFrom)) files.set(name, bytes);
  return files;
}

function optimizerFile(o: OptimizerState): Uint8Array {
  const tensors = o.moments.flatMap((mv, i) => [
    { name: `m.${i}`, shape: [mv.m.length], data: mv.m },
    { name: `v.${i}`, shape: [mv.v.length], data: mv.v },
  ]);
  return encodeSafetensors(tensors, { dtype: "F32" });
}

/** Every file of a checkpoint, manifest included (last in iteration order: write it last). */
export async function checkpointFiles(c: CheckpointContents): Promise<Map<string, Uint8Array>> {
  const enc = new TextEncoder();
  const files = new Map<string, Uint8Array>();
  const add = (prefix: string, m: Map<string, Uint8Array>) =>
    m.forEach((v, k) => files.set(`${prefix}/${k}`, v));
  const adapters = Object.entries(c.adapters ?? {}), models = Object.entries(c.models ?? {});
  const optimizers = Object.entries(c.optimizers ?? {});
  for (const [name, { adapter, base }] of adapters) {
    add(`adapters/${checked("adapter", name)}`, peftAdapterFiles(adapter, base));
  }
  for (const [name, part] of models) {
    add(`models/${checked("model", name)}`, await modelFiles(part));
  }
  const valueHeads = Object.entries(c.valueHeads ?? {});
  for (const [name, head] of valueHeads) {
    const C = head.length - 1;
    files.set(
      `value_heads/${checked("value head", name)}.safetensors`,
      encodeSafetensors([
        { name: "weight", shape: [C], data: head.subarray(0, C) },
        { name: "bias", shape: [1], data: head.subarray(C) },
      ], { dtype: "F32" }),
    );
  }
  const stored: Record<string, StoredOptimizer> = {};
  for (const [name, o] of optimizers) {
    files.set(`optimizer/${checked("optimizer", name)}.safetensors`, optimizerFile(o));
    stored[name] = { step: o.step, hyper: o.hyper, numel: o.moments.map((mv) => mv.m.length) };
  }
  if (!Number.isInteger(c.state.step) || c.state.step < 0) {
    throw new TrainConfigError(
      "state.step",
      `${c.state.step} must be the whole number of completed optimizer steps`,
    );
  }
  checkJson("state.rng", c.state.rng);
  checkJson("state.extra", c.state.extra ?? null);
  const state = {
    step: c.state.step,
    rng: c.state.rng,
    extra: c.state.extra ?? null,
    optimizers: stored,
  };
  files.set(TRAINER_STATE, enc.encode(JSON.stringify(state, null, 2) + "\n"));
  const manifest: Manifest = {
    format: FORMAT,
    version: VERSION,
    step: c.state.step,
    adapters: adapters.map(([n]) => n),
    models: models.map(([n]) => n),
    optimizers: optimizers.map(([n]) => n),
    ...(valueHeads.length ? { valueHeads: valueHeads.map(([n]) => n) } : {}),
    files: Object.fromEntries([...files].map(([k, v]) => [k, v.length])),
  };
  files.set(MANIFEST, enc.encode(JSON.stringify(manifest, null, 2) + "\n"));
  return files;
}

/** JSON cannot hold NaN, ±Infinity or undefined: refuse them rather than lose them silently. */
function checkJson(where: string, v: unknown): void {
  if (typeof v === "number" && !Number.isFinite(v)) {
    throw new TrainConfigError(
      where,
      `${v} cannot be stored exactly in JSON; store RNG state as integers`,
    );
  }
  if (v === undefined || typeof v === "function" || typeof v === "bigint") {
    throw new TrainConfigError(where, `a ${typeof v} cannot be stored in JSON`);
  }
  if (typeof v === "object" && v !== null) {
    for (const [k, x] of Object.entries(v)) checkJson(`${where}.${k}`, x);
  }
}

function checked(kind: string, name: string): string {
  checkName(kind, name);
  return name;
}

/** A view of `prefix/` inside a folder. */
export function subFolder(folder: Folder, prefix: string): Folder {
  return { name: `${folder.name}/${prefix}`, open: (file) => folder.open(`${prefix}/${file}`) };
}

export interface LoadedCheckpoint {
  readonly state: TrainState;
  readonly adapters: Readonly<Record<string, LoraAdapter>>;
  readonly models: Readonly<Record<string, ModelWeights>>;
  readonly optimizers: Readonly<Record<string, OptimizerState>>;
  /** PPO value heads by name, [w, b] (empty for a GRPO run's checkpoint). */
  readonly valueHeads: Readonly<Record<string, Float32Array>>;
}

export interface LoadOptions {
  /** Base model config of each adapter (needed to check shapes); default: `base` for all. */
  readonly adapterBases?: Readonly<Record<string, ModelConfig>>;
  readonly base?: ModelConfig;
}

function parseJson<T>(where: string, file: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new CheckpointCorruptError(where, `${file} is not valid JSON (${(e as Error).message})`, {
      cause: e,
    });
  }
}

/** Reads and checks the manifest: every listed file must exist with its recorded size. */
async function readManifest(folder: Folder): Promise<Manifest> {
  const text = await readFolderText(folder, MANIFEST);
  if (text === null) {
    throw new CheckpointNotFoundError(
      folder.name,
      `no ${MANIFEST}: not a checkpoint, or its write was interrupted; resume from an earlier one`,
    );
  }
  const m = parseJson<Manifest>(folder.name, MANIFEST, text);
  if (m.format !== FORMAT || typeof m.files !== "object" || m.files === null) {
    throw new CheckpointCorruptError(folder.name, `${MANIFEST} is not a ${FORMAT} manifest`);
  }
  if (m.version > VERSION) {
    throw new CheckpointMismatchError(
      folder.name,
      `checkpoint format version ${m.version} is newer than ${VERSION}; update pettingllms-webgpu`,
    );
  }
  for (const [file, size] of Object.entries(m.files)) {
    const src = await folder.open(file);
    if (src === null) {
      throw new CheckpointCorruptError(
        folder.name,
        `${file} is missing; the checkpoint is damaged`,
      );
    }
    const actual = src.size;
    src.close();
    if (actual !== size) {
      throw new CheckpointCorruptError(
        folder.name,
        `${file} has ${actual} bytes but the manifest says ${size}; the checkpoint is damaged`,
      );
    }
  }
  return m;
}

async function readOptimizer(
  folder: Folder,
  name: string,
  s: StoredOptimizer | undefined,
): Promise<OptimizerState> {
  if (!s) {
    throw new CheckpointCorruptError(
      folder.name,
      `${TRAINER_STATE} has no settings for optimizer "${name}"`,
    );
  }
  const ckpt = await SafetensorsCheckpoint.open(folder, `optimizer/${name}.safetensors`);
  try {
    const moments = [];
    for (let i = 0; i < s.numel.length; i++) {
      const m = await ckpt.readF32(`m.${i}`, [s.numel[i]]),
        v = await ckpt.readF32(`v.${i}`, [s.numel[i]]);
      moments.push({ m, v });
    }
    return { step: s.step, hyper: s.hyper, moments };
  } finally {
    ckpt.close();
  }
}

async function readValueHead(folder: Folder, name: string): Promise<Float32Array> {
  const file = `value_heads/${name}.safetensors`;
  const ckpt = await SafetensorsCheckpoint.open(folder, file);
  try {
    const shape = ckpt.has("weight") ? ckpt.info("weight").shape : [];
    if (shape.length !== 1) {
      throw new CheckpointCorruptError(
        folder.name,
        `${file} has no 1-D "weight" tensor; the checkpoint is damaged`,
      );
    }
    const C = shape[0];
    const out = new Float32Array(C + 1);
    out.set(await ckpt.readF32("weight", [C]));
    out.set(await ckpt.readF32("bias", [1]), C);
    return out;
  } finally {
    ckpt.close();
  }
}

/** Loads a checkpoint folder written by `checkpointFiles`, validating every part. */
export async function readCheckpoint(
  folder: Folder,
  opts: LoadOptions = {},
): Promise<LoadedCheckpoint> {
  const m = await readManifest(folder);
  const stateText = await readFolderText(folder, TRAINER_STATE);
  if (stateText === null) {
    throw new CheckpointCorruptError(folder.name, `${TRAINER_STATE} is missing`);
  }
  const raw = parseJson<TrainState & { optimizers: Record<string, StoredOptimizer> }>(
    folder.name,
    TRAINER_STATE,
    stateText,
  );
  if (!Number.isInteger(raw.step) || raw.step !== m.step) {
    throw new CheckpointCorruptError(
      folder.name,
      `${TRAINER_STATE} step ${raw.step} disagrees with the manifest's ${m.step}; the checkpoint is damaged`,
    );
  }
  const adapters: Record<string, LoraAdapter> = {};
  for (const name of m.adapters) {
    const base = opts.adapterBases?.[name] ?? opts.base;
    if (!base) {
      throw new CheckpointMismatchError(
        folder.name,
        `adapter "${name}" needs its base model config: pass base or adapterBases`,
      );
    }
    adapters[name] = await loadPeftAdapter(subFolder(folder, `adapters/${name}`), base);
  }
  const models: Record<string, ModelWeights> = {};
  for (const name of m.models) models[name] = await loadModel(subFolder(folder, `models/${name}`));
  const optimizers: Record<string, OptimizerState> = {};
  for (const name of m.optimizers) {
    optimizers[name] = await readOptimizer(folder, name, raw.optimizers?.[name]);
  }
  const valueHeads: Record<string, Float32Array> = {};
  for (const name of m.valueHeads ?? []) valueHeads[name] = await readValueHead(folder, name);
  const state: TrainState = { step: raw.step, rng: raw.rng, extra: raw.extra ?? undefined };
  return { state, adapters, models, optimizers, valueHeads };
}

/** The step a checkpoint folder holds, from its manifest alone (validates file sizes too). */
export async function checkpointStep(folder: Folder): Promise<number> {
  return (await readManifest(folder)).step;
}
