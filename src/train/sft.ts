// Supervised fine-tuning: the typed run config (every field declared once in SFT_SCHEMA with its
// default and effect; `--set a.b=c` overrides; errors name the field) and the run loop that turns
// JSONL demonstrations into optimizer steps on a ModelTrainer (cross-entropy on completion /
// assistant tokens only), with the run folder docs/runs.md describes:
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
import { LORA_MODULES, LoraLayout, mergeLora } from "../model/lora.ts";
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

// ---- config schema ------------------------------------------------------------------------

type Kind = "int" | "number" | "string" | "enum" | "list";

interface FieldSpec<T> {
  readonly kind: Kind;
  readonly default: T;
  readonly doc: string;
  readonly min?: number;
  readonly max?: number;
  /** Strict bound. */
  readonly exclusive?: "min" | "max";
  /** Enums: allowed values; lists: allowed items (any string when absent). */
  readonly choices?: readonly string[];
  readonly nullable?: boolean;
}

type Extra = Pick<FieldSpec<unknown>, "min" | "max" | "exclusive">;
const int = (d: number, doc: string, x: Extra = {}): FieldSpec<number> => ({
  kind: "int",
  default: d,
  doc,
  ...x,
});
const num = (d: number, doc: string, x: Extra = {}): FieldSpec<number> => ({
  kind: "number",
  default: d,
  doc,
  ...x,
});
const text = (d: string, doc: string): FieldSpec<string> => ({ kind: "string", default: d, doc });
const oneOf = <const C extends readonly string[]>(
  choices: C,
  d: C[number],
  doc: string,
): FieldSpec<C[number]> => ({ kind: "enum", choices, default: d, doc });
const listOf = <T extends string>(
  d: readonly T[],
  doc: string,
  choices?: readonly T[],
): FieldSpec<readonly T[]> => ({ kind: "list", default: d, doc, choices, min: 1 });
const nullable = <T>(s: FieldSpec<T>, d: T | null = null): FieldSpec<T | null> => ({
  ...s,
  nullable: true,
  default: d,
});

export const SFT_SCHEMA = {
  description: text("", "One line on what the run is for; shown in summary.log, no other effect."),
  model: {
    preset: nullable(
      text(
        "tiny-llama",
        "configs/models/<preset>.json freshly initialised with run.seed (HF init, byte tokenizer) — the same base an RL run with that run.seed builds. Setting model.folder alone clears it.",
      ),
      "tiny-llama",
    ),
    folder: nullable(
      text(
        "",
        "HF model folder (config.json + safetensors + tokenizer files) to fine-tune instead of a preset.",
      ),
    ),
  },
  data: {
    train: listOf<string>(
      [],
      'JSONL files of {"prompt","completion"} or {"messages":[...]} records (npx deno task demos writes them); a --set value may be one path.',
    ),
    maxSeqLen: int(
      1024,
      "Longest sequence in tokens; longer records are cut (counted in summary.log), records whose prompt alone fills it are dropped.",
      { min: 2 },
    ),
  },
  eval: {
    fraction: num(
      0,
      "Fraction of records held out (seeded by run.seed) for the eval loss; 0 = no eval.",
      { min: 0, max: 1, exclusive: "max" },
    ),
    everySteps: int(
      0,
      "Evaluate every N steps; 0 = only after the last step (when fraction > 0).",
      { min: 0 },
    ),
  },
  update: {
    mode: oneOf(
      ["lora", "full"],
      "lora",
      "lora: train adapters over the frozen base (export: PEFT adapter + merged model). full: train every weight. A fresh preset needs full: its frozen random head bounds what an adapter can fit.",
    ),
    lora: {
      rank: int(16, "LoRA rank r.", { min: 1 }),
      alpha: num(32, "LoRA alpha; the update is scaled by alpha / rank.", {
        min: 0,
        exclusive: "min",
      }),
      targets: listOf(
        LORA_MODULES,
        "Linear layers that get adapters (all = PEFT's all-linear; gpt2 has qkv = c_attn, o = attn.c_proj, up = c_fc, down = mlp.c_proj, and a model's missing modules are skipped).",
        LORA_MODULES,
      ),
    },
    optimizer: {
      lr: num(
        2e-4,
        "Peak learning rate (AdamW). ~2e-4 suits LoRA on a pretrained model; a tiny preset trained fully from its init wants ~3e-3.",
        { min: 0, exclusive: "min" },
      ),
      beta1: num(0.9, "Adam β1.", { min: 0, max: 1, exclusive: "max" }),
      beta2: num(0.999, "Adam β2.", { min: 0, max: 1, exclusive: "max" }),
      eps: num(1e-8, "Adam ε.", { min: 0, exclusive: "min" }),
      weightDecay: num(
        0,
        "Decoupled weight decay (TRL's SFT default 0); norms, biases and embeddings get none.",
        { min: 0 },
      ),
      maxGradNorm: num(1, "Global gradient-norm clip (0 = off; the norm is still logged).", {
        min: 0,
      }),
    },
    schedule: {
      kind: oneOf(
        ["constant", "linear", "cosine"],
        "cosine",
        "Learning-rate schedule over the run's steps.",
      ),
      warmupSteps: int(0, "Optimizer steps of linear warmup from 0.", { min: 0 }),
      minRatio: num(0, "Floor of the linear/cosine decay as a fraction of lr.", { min: 0, max: 1 }),
    },
    batchSize: int(8, "Sequences per optimizer step (loss = token mean over the whole batch).", {
      min: 1,
    }),
    microBatchRows: int(
      1024,
      "Token rows per forward/backward micro-batch (activation memory); must be ≥ data.maxSeqLen.",
      { min: 2 },
    ),
    microBatchSeqs: int(8, "Sequences per micro-batch at most (KV-cache slots).", { min: 1 }),
  },
  run: {
    name: text(
      "",
      "Run folder name (<outDir>/<name>/<timestamp>/); empty: the config file's base name.",
    ),
    outDir: text("runs/sft", "Folder that holds SFT run folders."),
    seed: int(0, "Seed of the preset's init, LoRA init, the held-out split and the data order.", {
      min: 0,
      max: 2 ** 32 - 1,
    }),
    epochs: num(
      1,
      "Passes over the training records (used when run.steps is null): steps = ceil(epochs · records / batchSize).",
      { min: 0, exclusive: "min" },
    ),
    steps: nullable(int(1, "Optimizer steps; null = derive from run.epochs.", { min: 1 })),
    checkpointEvery: int(
      0,
      "Checkpoint every N steps (0 = only at the end; Ctrl-C and SIGUSR1/SIGUSR2 also checkpoint).",
      { min: 0 },
    ),
    keepLast: int(2, "Step checkpoints kept; older ones are deleted.", { min: 1 }),
  },
};

type ValueOf<S> = S extends FieldSpec<infer T> ? T : { readonly [K in keyof S]: ValueOf<S[K]> };
export type SftConfig = ValueOf<typeof SFT_SCHEMA>;

export type ConfigIssue = { readonly path: string; readonly message: string };

/** The SFT config is unusable; `issues` names every bad field with the reason. */
export class SftConfigError extends TrainError {
  readonly field: string;
  constructor(readonly issues: readonly ConfigIssue[], source?: string) {
    const one = (i: ConfigIssue) => (i.path ? `${i.path}: ${i.message}` : i.message);
    const body = issues.length === 1
      ? one(issues[0])
      : `${issues.length} problems:\n` + issues.map((i) => `  ${one(i)}`).join("\n");
    super((source ? `${source}: ` : "") + body);
    this.field = issues[0]?.path ?? "";
  }
  static at(path: string, message: string, source?: string): SftConfigError {
    return new SftConfigError([{ path, message }], source);
  }
}

type Node = FieldSpec<unknown> | { readonly [k: string]: Node };
type Section = { readonly [k: string]: Node };
const ROOT = SFT_SCHEMA as unknown as Section;
const isField = (n: Node): n is FieldSpec<unknown> =>
  typeof (n as FieldSpec<unknown>).doc === "string";
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const join = (a: string, b: string) => (a ? `${a}.${b}` : b);
const show = (v: unknown) => (v === undefined ? "nothing" : JSON.stringify(v));

/** ` (did you mean "x"?)` for an option sharing a 3-letter prefix or differing by case only. */
function didYouMean(word: string, options: readonly string[]): string {
  const w = word.toLowerCase();
  const hit = options.find((o) => o.toLowerCase() === w) ??
    options.find((o) =>
      w.length >= 3 &&
      (o.toLowerCase().startsWith(w.slice(0, 3)) || w.startsWith(o.toLowerCase().slice(0, 3)))
    );
  return hit ? ` (did you mean "${hit}"?)` : "";
}

function checkValue(s: FieldSpec<unknown>, v: unknown): string | null {
  if (s.kind === "list") {
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
      return `must be a list of strings, got ${show(v)}`;
    }
    const bad = s.choices && v.find((x) => !s.choices!.includes(x));
    if (bad) return `"${bad}" is not one of ${s.choices!.join(", ")}${didYouMean(bad, s.choices!)}`;
    return new Set(v).size !== v.length ? `lists ${show(v)} with a repeat` : null;
  }
  if (s.kind === "string") return typeof v === "string" ? null : `must be a string, got ${show(v)}`;
  if (s.kind === "enum") {
    return typeof v === "string" && s.choices!.includes(v)
      ? null
      : `must be one of ${s.choices!.map((c) => `"${c}"`).join(", ")}, got ${show(v)}` +
        (typeof v === "string" ? didYouMean(v, s.choices!) : "");
  }
  if (typeof v !== "number" || !Number.isFinite(v) || (s.kind === "int" && !Number.isInteger(v))) {
    return `must be a ${s.kind === "int" ? "whole number" : "number"}, got ${show(v)}`;
  }
  const lowOk = s.min === undefined || (s.exclusive === "min" ? v > s.min : v >= s.min);
  const highOk = s.max === undefined || (s.exclusive === "max" ? v < s.max : v <= s.max);
  if (lowOk && highOk) return null;
  const lo = s.min === undefined ? "" : `${s.exclusive === "min" ? ">" : "≥"} ${s.min}`;
  const hi = s.max === undefined ? "" : `${s.exclusive === "max" ? "<" : "≤"} ${s.max}`;
  return `must be ${[lo, hi].filter(Boolean).join(" and ")}, got ${v}`;
}

function resolveSection(
  node: Section,
  raw: unknown,
  path: string,
  issues: ConfigIssue[],
): Record<string, unknown> {
  const names = Object.keys(node);
  if (raw !== undefined && !isObject(raw)) {
    issues.push({
      path,
      message: `must be an object with fields ${names.join(", ")}, got ${show(raw)}`,
    });
    raw = {};
  }
  const obj = (raw ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(obj).filter((k) => !(k in node))) {
    issues.push({
      path: join(path, key),
      message: `unknown field${didYouMean(key, names)}; ${path || "the config"} has ${
        names.join(", ")
      }`,
    });
  }
  return Object.fromEntries(names.map((k) => {
    const n = node[k], p = join(path, k), v = obj[k];
    if (!isField(n)) return [k, resolveSection(n, v, p, issues)];
    if (v === undefined) return [k, structuredClone(n.default)];
    if (v === null && n.nullable) return [k, null];
    const problem = v === null ? "must not be null" : checkValue(n, v);
    if (problem) issues.push({ path: p, message: problem });
    return [k, structuredClone(v)];
  }));
}

/** Combinations that cannot run, each with the reason. */
const RULES: readonly ((c: SftConfig) => ConfigIssue | null)[] = [
  (c) =>
    (c.model.preset === null) !== (c.model.folder === null) ? null : {
      path: "model",
      message: c.model.preset === null
        ? "set model.preset (configs/models/<name>.json) or model.folder (an HF model folder)"
        : "set only one of model.preset and model.folder (the other to null): both name the weights to start from",
    },
  (c) =>
    c.data.train.length ? null : {
      path: "data.train",
      message: "needs at least one JSONL file (make one with npx deno task demos)",
    },
  (c) =>
    c.update.microBatchRows >= c.data.maxSeqLen ? null : {
      path: "update.microBatchRows",
      message:
        `${c.update.microBatchRows} < data.maxSeqLen ${c.data.maxSeqLen}; a micro-batch must hold the longest sequence`,
    },
  (c) =>
    c.eval.everySteps > 0 && c.eval.fraction === 0
      ? {
        path: "eval.everySteps",
        message:
          "is set but eval.fraction is 0, so nothing is held out to evaluate; set eval.fraction (e.g. 0.05)",
      }
      : null,
  (c) =>
    /^[A-Za-z0-9._-]*$/.test(c.run.name) ? null : {
      path: "run.name",
      message: `"${c.run.name}" becomes a folder name; use letters, digits, ".", "_" and "-"`,
    },
];

function coerceSet(path: string, value: string): unknown {
  let node: Node = ROOT;
  for (const part of path.split(".")) {
    if (isField(node) || !(part in node)) {
      const names = isField(node) ? [] : Object.keys(node);
      throw SftConfigError.at(
        path,
        isField(node)
          ? "goes inside a field, not a section"
          : `unknown field${didYouMean(part, names)}; known: ${names.join(", ")}`,
      );
    }
    node = node[part];
  }
  if (!isField(node)) {
    throw SftConfigError.at(
      path,
      `is a section; set one of its fields: ${Object.keys(node).join(", ")}`,
    );
  }
  if (node.nullable && value === "null") return null;
  if (node.kind === "int" || node.kind === "number") {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) {
      throw SftConfigError.at(path, `--set value "${value}" is not a number`);
    }
    return n;
  }
  if (node.kind !== "list") return value;
  try {
    const v = JSON.parse(value);
    if (Array.isArray(v)) return v;
  } catch { /* a bare value is a one-item list */ }
  return value.split(",").map((s) => s.trim()).filter(Boolean);
}

/** A copy of `raw` with each `path=value` applied, typed by the schema. */
export function applySets(raw: unknown, sets: readonly string[]): Record<string, unknown> {
  if (!isObject(raw)) {
    throw SftConfigError.at("", `a config must be a JSON object, got ${show(raw)}`);
  }
  const out = structuredClone(raw);
  for (const s of sets) {
    const eq = s.indexOf("=");
    if (eq <= 0) {
      throw SftConfigError.at(
        "--set",
        `"${s}" is not path=value, e.g. --set update.optimizer.lr=1e-3`,
      );
    }
    const path = s.slice(0, eq).trim(), parts = path.split(".");
    const value = coerceSet(path, s.slice(eq + 1));
    let obj = out;
    for (const k of parts.slice(0, -1)) {
      if (!isObject(obj[k])) obj[k] = {};
      obj = obj[k] as Record<string, unknown>;
    }
    obj[parts[parts.length - 1]] = value;
  }
  return out;
}

/** Defaults + JSON + overrides → a validated config, or one SftConfigError naming every bad field. */
export function parseSftConfig(
  raw: unknown,
  opts: { sets?: readonly string[]; source?: string } = {},
): SftConfig {
  const withSets = applySets(raw, opts.sets ?? []);
  const issues: ConfigIssue[] = [];
  let c = resolveSection(ROOT, withSets, "", issues) as unknown as SftConfig;
  if (issues.length) throw new SftConfigError(issues, opts.source);
  // A folder given without a preset replaces the default preset rather than clashing with it.
  const m = withSets.model;
  if (isObject(m) && m.folder != null && m.preset === undefined) {
    c = { ...c, model: { ...c.model, preset: null } };
  }
  issues.push(...RULES.map((r) => r(c)).filter((i): i is ConfigIssue => i !== null));
  if (issues.length) throw new SftConfigError(issues, opts.source);
  const base = (opts.source?.split(/[\\/]/).pop() ?? "").replace(/\.json$/, "").replace(
    /[^A-Za-z0-9._-]/g,
    "_",
  );
  return { ...c, run: { ...c.run, name: c.run.name || base || "sft" } };
}

/** Reads a JSON config file and validates it with the overrides applied. */
export async function loadSftConfig(
  path: string,
  sets: readonly string[] = [],
): Promise<SftConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    throw SftConfigError.at(
      "",
      e instanceof SyntaxError
        ? `not valid JSON: ${e.message}`
        : `cannot read it: ${(e as Error).message}`,
      path,
    );
  }
  return parseSftConfig(raw, { sets, source: path });
}

/** The config reference (configs/sft/README.md): one Markdown table row per field. */
export function describeSftConfigMarkdown(): string {
  const rows: string[] = [];
  const walk = (node: Section, prefix: string) => {
    for (const [k, n] of Object.entries(node)) {
      if (!isField(n)) {
        walk(n, join(prefix, k));
        continue;
      }
      const range = [
        n.min !== undefined && n.kind !== "list"
          ? `${n.exclusive === "min" ? ">" : "≥"} ${n.min}`
          : "",
        n.max !== undefined ? `${n.exclusive === "max" ? "<" : "≤"} ${n.max}` : "",
      ].filter(Boolean).join(", ");
      const type = (n.kind === "enum"
        ? n.choices!.map((c) =>
          `"${c}"`
        ).join(" \\| ")
        : n.kind === "list"
        ? `list${n.choices ? ` of ${n.choices.join(" ")}` : " of paths"}`
        : n.kind) +
        (range ? ` (${range})` : "") + (n.nullable ? " \\| null" : "");
      rows.push(
        `| \`${join(prefix, k)}\` | ${type} | \`${JSON.stringify(n.default)}\` | ${
          n.doc.replaceAll("|", "\\|")
        } |`,
      );
    }
  };
  walk(ROOT, "");
  return ["| field | type | default | effect |", "|---|---|---|---|", ...rows].join("\n");
}

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
