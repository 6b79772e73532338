// The supervised fine-tuning run's typed config: every field declared once in SFT_SCHEMA with its
// default and effect, `--set a.b=c` overrides typed by the schema, cross-field rules, and errors
// (SftConfigError) that name every bad field. The run itself is sft.ts; the reference table in
// configs/sft/README.md is describeSftConfigMarkdown().

import * as Fields from "../io/config_fields.ts";
import {
  applySetsWith,
  BASE_CHECKS,
  type BaseFieldType,
  type ConfigIssue,
  fieldAt,
  type FieldCheck,
  fieldsOf,
  isObject,
  issuesMessage,
  nameFromSource,
  rangeText,
  readJsonConfig,
  resolveSection,
  type Section,
  setNumber,
} from "../io/config_fields.ts";
import { LORA_MODULES } from "../model/lora_layout.ts";
import { TrainError } from "./errors.ts";

const { int, num, text, oneOf, listOf, paths, nullable } = Fields;

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
    train: paths(
      [],
      'JSONL files of {"prompt","completion"} or {"messages":[...]} records (npx deno task demos writes them); a --set value may be one path.',
      0,
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
        LORA_MODULES,
        "Linear layers that get adapters (all = PEFT's all-linear; gpt2 has qkv = c_attn, o = attn.c_proj, up = c_fc, down = mlp.c_proj, and a model's missing modules are skipped).",
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

export type SftConfig = Fields.ValueOf<typeof SFT_SCHEMA>;
export type { ConfigIssue };

/** The SFT config is unusable; `issues` names every bad field with the reason. */
export class SftConfigError extends TrainError {
  readonly field: string;
  constructor(readonly issues: readonly ConfigIssue[], source?: string) {
    super(issuesMessage(issues, source));
    this.field = issues[0]?.path ?? "";
  }
  static at(path: string, message: string, source?: string): SftConfigError {
    return new SftConfigError([{ path, message }], source);
  }
}

const ROOT = SFT_SCHEMA as unknown as Section;
const errorAt = (path: string, message: string) => SftConfigError.at(path, message);
const check: FieldCheck = (s, v) => BASE_CHECKS[s.type as BaseFieldType](s, v);

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

/** Types a --set value by its field: a list takes a JSON array or comma-separated items. */
function coerceSet(path: string, value: string): unknown {
  const { field, rest } = fieldAt(ROOT, path, errorAt);
  if (rest.length) throw errorAt(path, "goes inside a field, not a section");
  if (field.nullable && value === "null") return null;
  if (field.type === "int" || field.type === "number") return setNumber(value, path, errorAt);
  if (field.type !== "list" && field.type !== "paths") return value;
  try {
    const v = JSON.parse(value);
    if (Array.isArray(v)) return v;
  } catch { /* a bare value is a one-item list */ }
  return value.split(",").map((s) => s.trim()).filter(Boolean);
}

/** A copy of `raw` with each `path=value` applied, typed by the schema. */
export function applySets(raw: unknown, sets: readonly string[]): Record<string, unknown> {
  return applySetsWith(raw, sets, coerceSet, errorAt, "update.optimizer.lr=1e-3");
}

/** Defaults + JSON + overrides → a validated config, or one SftConfigError naming every bad field. */
export function parseSftConfig(
  raw: unknown,
  opts: { sets?: readonly string[]; source?: string } = {},
): SftConfig {
  const withSets = applySets(raw, opts.sets ?? []);
  const issues: ConfigIssue[] = [];
  let c = resolveSection(ROOT, withSets, "", issues, check) as unknown as SftConfig;
  if (issues.length) throw new SftConfigError(issues, opts.source);
  // A folder given without a preset replaces the default preset rather than clashing with it.
  const m = withSets.model;
  if (isObject(m) && m.folder != null && m.preset === undefined) {
    c = { ...c, model: { ...c.model, preset: null } };
  }
  issues.push(...RULES.map((r) => r(c)).filter((i): i is ConfigIssue => i !== null));
  if (issues.length) throw new SftConfigError(issues, opts.source);
  return { ...c, run: { ...c.run, name: c.run.name || nameFromSource(opts.source) || "sft" } };
}

/** Reads a JSON config file and validates it with the overrides applied. */
export async function loadSftConfig(
  path: string,
  sets: readonly string[] = [],
): Promise<SftConfig> {
  const raw = await readJsonConfig(path, SftConfigError.at);
  return parseSftConfig(raw, { sets, source: path });
}

/** The config reference (configs/sft/README.md): one Markdown table row per field. */
export function describeSftConfigMarkdown(): string {
  const rows = fieldsOf(ROOT).map(([path, n]) => {
    const range = rangeText(n);
    const type = (n.type === "enum"
      ? n.choices!.map((c) =>
        `"${c}"`
      ).join(" \\| ")
      : n.type === "list"
      ? `list of ${n.choices!.join(" ")}`
      : n.type === "paths"
      ? "list of paths"
      : n.type) +
      (range ? ` (${range})` : "") + (n.nullable ? " \\| null" : "");
    return `| \`${path}\` | ${type} | \`${JSON.stringify(n.default)}\` | ${
      n.doc.replaceAll("|", "\\|")
    } |`;
  });
  return ["| field | type | default | effect |", "|---|---|---|---|", ...rows].join("\n");
}
