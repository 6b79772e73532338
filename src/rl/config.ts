// The AT-GRPO run configuration: one typed object whose every field is declared once in SCHEMA
// with its type, default, range and effect (TRL grpo_config.py style), the paper's value beside
// it where the paper has one. `parseConfig` turns JSON plus `--set a.b=c` overrides into a
// validated RunConfig or throws one ConfigError that names every bad field and says why;
// `describeConfig` renders the same schema as docs/config.md's reference table.
//
// Browser-safe except `loadConfigFile` (Deno file reads). Paths in a config are relative to the
// working directory (the repository root for `deno task train`).

import type { Difficulty } from "../envs/types.ts";
import { envIds, getEnv, soloAgentsOf, soloEnvFor } from "../envs/registry.ts";
import { type PolicyLossConfig } from "../train/losses.ts";
import type { LrSchedule } from "../train/schedule.ts";
import type { ValueHeadSettings } from "../train/trainer.ts";
import { agentGenerationIssues, agentOverrideProblem } from "./generation.ts";

import type * as Fields from "../io/config_fields.ts";
import {
  applySetsWith,
  BASE_CHECKS,
  type ConfigIssue,
  defaultsOf,
  didYouMean,
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
  setJson,
  setNumber,
  show,
  valueAt,
} from "../io/config_fields.ts";
import { type FieldType, type RunConfig, SCHEMA } from "./config_schema.ts";
export * from "./config_schema.ts";

// ---- errors and field checks ----------------------------------------------------------------

export type { ConfigIssue };
export { didYouMean };

/** The config is unusable; `issues` lists every bad field with the reason. */
export class ConfigError extends Error {
  readonly path: string;
  constructor(readonly issues: readonly ConfigIssue[], source?: string) {
    super(issuesMessage(issues, source));
    this.name = "ConfigError";
    this.path = issues[0]?.path ?? "";
  }
  static at(path: string, message: string, source?: string): ConfigError {
    return new ConfigError([{ path, message }], source);
  }
}

const ROOT = SCHEMA as unknown as Section;
const errorAt = (path: string, message: string) => ConfigError.at(path, message);

/** The defaults of every field (a fresh object each call). */
export function defaultConfig(): RunConfig {
  return defaultsOf(ROOT) as unknown as RunConfig;
}

const HTTP_URL = /^https?:\/\/[^\s/]+/;

/** Type checks per field type: a problem description, or null when the value fits. */
const TYPE_CHECKS: { readonly [K in FieldType]: FieldCheck } = {
  ...BASE_CHECKS,
  agents: (_, v) => {
    if (!isObject(v)) {
      return `must be an object of agent → settings, e.g. {"tool": {"temperature": 0.7}}, got ${
        show(v)
      }`;
    }
    for (const [agent, o] of Object.entries(v)) {
      const p = agentOverrideProblem(o);
      if (p) return `${agent}: ${p}`;
    }
    return null;
  },
  knobs: (_, v) =>
    isObject(v) && Object.values(v).every((x) => ["number", "boolean", "string"].includes(typeof x))
      ? null
      : `must be an object of numbers, booleans and strings, got ${show(v)}`,
  urls: (_, v) => {
    if (!isObject(v) || Object.values(v).some((x) => typeof x !== "string")) {
      return `must be an object of agent → URL strings, got ${show(v)}`;
    }
    const bad = Object.entries(v).find(([, u]) => !HTTP_URL.test(u as string));
    return bad ? `${bad[0]}: "${bad[1]}" is not an http(s) URL, e.g. http://127.0.0.1:8000` : null;
  },
};
const check: FieldCheck = (s, v) => TYPE_CHECKS[s.type as FieldType](s, v);

// ---- cross-field rules ----------------------------------------------------------------------

type Rule = (c: RunConfig) => ConfigIssue | null;
const issue = (path: string, message: string): ConfigIssue => ({ path, message });

/** Combinations that cannot run, each with the reason (TRL's __post_init__ checks, as a table). */
const RULES: readonly Rule[] = [
  (c) =>
    (c.model.preset === null) !== (c.model.folder === null && c.model.hub === null)
      ? null
      : c.model.preset === null
      ? issue(
        "model",
        "set model.preset (a configs/models preset), model.folder (an HF model folder) or model.hub (a Hub id)",
      )
      : issue(
        "model",
        `set only one of model.preset and model.${
          c.model.folder !== null ? "folder" : "hub"
        } (the other to null, e.g. --set model.preset=null): both name the weights to start from`,
      ),
  (c) =>
    c.model.hub === null || /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(c.model.hub) ? null : issue(
      "model.hub",
      `"${c.model.hub}" is not a Hub id; write owner/name, e.g. Qwen/Qwen2.5-0.5B-Instruct`,
    ),
  (c) =>
    c.eval.maxNewTokens === null || c.eval.maxNewTokens <= c.rollout.maxNewTokens ? null : issue(
      "eval.maxNewTokens",
      `${c.eval.maxNewTokens} > rollout.maxNewTokens (${c.rollout.maxNewTokens}), which sizes the KV cache; raise rollout.maxNewTokens or lower this`,
    ),
  (c) =>
    c.level === "L0" && c.rollout.mode !== "single-agent"
      ? issue(
        "rollout.mode",
        `level L0 is one agent doing the whole task, which needs single-agent rollouts; set "single-agent" (got "${c.rollout.mode}")`,
      )
      : null,
  (c) =>
    c.rollout.mode === "single-agent" && c.level !== "L0"
      ? issue(
        "level",
        `single-agent rollouts have one agent, so only level L0 applies (got ${c.level}); use rollout.mode "tree" for L1–L3`,
      )
      : null,
  (c) =>
    c.level === "L2" && c.update.mode !== "lora"
      ? issue(
        "update.mode",
        `level L2 is a frozen shared base with one LoRA adapter per agent; set "lora" (got "${c.update.mode}")`,
      )
      : null,
  (c) =>
    c.level === "L3" && c.update.mode !== "full"
      ? issue(
        "update.mode",
        `level L3 trains one full model per agent; set "full" (got "${c.update.mode}"; per-agent adapters on one base are L2)`,
      )
      : null,
  (c) =>
    c.update.advantage === "gae" && c.rollout.mode !== "independent"
      ? issue(
        "update.advantage",
        `"gae" chains each agent's turns through one episode, so it needs whole trajectories: set rollout.mode "independent" (got "${c.rollout.mode}"; tree rollouts branch at every turn, and single-agent ones are tree rollouts of one agent)`,
      )
      : null,
  (c) =>
    c.rewards.groupBy !== "agent-turn" &&
      (c.rollout.mode === "independent" || c.update.advantage === "gae")
      ? issue(
        "rewards.groupBy",
        `"${c.rewards.groupBy}" regroups a tree rollout's candidates; ${
          c.update.advantage === "gae"
            ? `update.advantage "gae" takes no groups`
            : `independent rollouts group each env's whole trajectories`
        }; use "agent-turn" or rollout.mode "tree"`,
      )
      : null,
  (c) =>
    c.rollout.k < 2 && c.update.advantage === "grpo"
      ? issue(
        "rollout.k",
        `${c.rollout.mode} rollouts with k = ${c.rollout.k}: a group of one candidate has no spread, so every advantage is 0 and nothing trains; use k ≥ 2 (paper: 4)`,
      )
      : null,
  (c) =>
    c.update.logitRows > 0 && c.update.logitRows < c.update.chunkRows &&
      c.update.logitRows % 64 !== 0
      ? issue(
        "update.logitRows",
        `${c.update.logitRows} is below chunkRows (${c.update.chunkRows}) and not a multiple of 64: the head's row chunks must start at aligned offsets; use a multiple of 64, or 0 for the default`,
      )
      : null,
  (c) =>
    c.update.chunkRows < c.rollout.maxPromptTokens + c.rollout.maxNewTokens
      ? issue(
        "update.chunkRows",
        `${c.update.chunkRows} < rollout.maxPromptTokens + rollout.maxNewTokens = ${
          c.rollout.maxPromptTokens + c.rollout.maxNewTokens
        }; the trainer refuses a sample longer than one chunk`,
      )
      : null,
  (c) =>
    c.rollout.sampling.repetitionPenalty !== 1
      ? issue(
        "rollout.sampling.repetitionPenalty",
        `${c.rollout.sampling.repetitionPenalty}: the sampler's log-probs would be of penalised logits, which the update cannot recompute, so every PPO ratio would be off; use 1 (the temperature is fine: the loss reads logits/T as the sampler does)`,
      )
      : null,
  (c) =>
    c.rewards.filter === "drop-lowest-mean" && c.rewards.filterFraction === 0
      ? issue(
        "rewards.filterFraction",
        `drop-lowest-mean with fraction 0 drops nothing; set a fraction in (0, 1) or filter "none"`,
      )
      : null,
  (c) =>
    c.warmStart.path !== null && c.warmStart.kind === "peft-adapter" && c.update.mode !== "lora"
      ? issue(
        "warmStart.kind",
        `a PEFT adapter initialises LoRA adapters, but update.mode is "${c.update.mode}"; use "lora" or warm start from a full checkpoint`,
      )
      : null,
  (c) =>
    c.logging.wandb.baseUrl === null || /^https?:\/\/[^\s/]+/.test(c.logging.wandb.baseUrl)
      ? null
      : issue(
        "logging.wandb.baseUrl",
        `"${c.logging.wandb.baseUrl}" is not an http(s) URL, e.g. https://api.wandb.ai`,
      ),
  (c) =>
    c.logging.wandb.project === null || /^[^/\\#?%:]+$/.test(c.logging.wandb.project)
      ? null
      : issue(
        "logging.wandb.project",
        `"${c.logging.wandb.project}" cannot be a W&B project name (no / \\ # ? % : and not empty)`,
      ),
  (c) =>
    c.logging.wandb.entity === null || /^[^/\\#?%:]+$/.test(c.logging.wandb.entity) ? null : issue(
      "logging.wandb.entity",
      `"${c.logging.wandb.entity}" cannot be a W&B entity name (no / \\ # ? % : and not empty)`,
    ),
  (c) =>
    c.model.endpoint === null || HTTP_URL.test(c.model.endpoint) ? null : issue(
      "model.endpoint",
      `"${c.model.endpoint}" is not an http(s) URL, e.g. http://127.0.0.1:8000`,
    ),
  (c) =>
    /^[A-Za-z0-9._-]*$/.test(c.run.name) ? null : issue(
      "run.name",
      `"${c.run.name}" becomes a folder name; use letters, digits, ".", "_" and "-"`,
    ),
];

/** Env id, knob names and types, then one generated task per split (range checks live in the env). */
function envIssues(c: RunConfig): ConfigIssue[] {
  const ids = envIds();
  if (!ids.includes(c.env.id)) {
    return [
      issue(
        "env.id",
        `unknown environment "${c.env.id}"${didYouMean(c.env.id, ids)}; registered: ${
          ids.join(", ")
        }`,
      ),
    ];
  }
  const env = getEnv(c.env.id),
    defaults = env.defaultDifficulty as Difficulty,
    knobNames = Object.keys(defaults);
  const out: ConfigIssue[] = [];
  if (env.soloOf !== undefined) {
    out.push(
      issue(
        "env.id",
        `"${c.env.id}" is the single-agent variant of "${env.soloOf}"; name the team's env ("${env.soloOf}") and set level "L0" for the single agent`,
      ),
    );
  }
  if (c.level === "L0") {
    try {
      soloEnvFor(c.env.id);
    } catch (e) {
      out.push(issue("level", (e as Error).message));
    }
    if (c.env.soloAgent !== null && !soloAgentsOf(c.env.id).includes(c.env.soloAgent)) {
      const roles = soloAgentsOf(c.env.id);
      out.push(
        issue(
          "env.soloAgent",
          `no "${c.env.soloAgent}" works alone in ${c.env.id}${
            didYouMean(c.env.soloAgent, roles)
          }; roles with a single-agent variant: ${roles.join(", ") || "none"}`,
        ),
      );
    }
  } else if (c.env.soloAgent !== null) {
    out.push(
      issue(
        "env.soloAgent",
        `"${c.env.soloAgent}" names the role that works alone at level L0; level ${c.level} plays the whole team, so leave it null`,
      ),
    );
  }
  for (const [k, v] of Object.entries(c.env.difficulty)) {
    if (!(k in defaults)) {
      out.push(
        issue(
          `env.difficulty.${k}`,
          `${c.env.id} has no knob "${k}"${didYouMean(k, knobNames)}; knobs: ${
            knobNames.join(", ")
          }`,
        ),
      );
    } else if (typeof v !== typeof defaults[k]) {
      out.push(
        issue(
          `env.difficulty.${k}`,
          `must be a ${typeof defaults[k]} like the default ${show(defaults[k])}, got ${show(v)}`,
        ),
      );
    }
  }
  if (!env.rewardKnobs) {
    if (c.rewards.shaping !== null) {
      out.push(issue("rewards.shaping", `${c.env.id} has no shaping term to weigh; leave it null`));
    }
    if (c.rewards.success !== "shaped") {
      out.push(
        issue("rewards.success", `${c.env.id} has fixed rewards (no reward knobs); use "shaped"`),
      );
    }
  }
  const agents = c.level === "L0" && env.soloOf === undefined
    ? safeSoloAgents(c.env.id, c.env.soloAgent)
    : env.possibleAgents;
  out.push(...agentGenerationIssues(c, agents));
  for (const a of Object.keys(c.model.endpoints)) {
    if (!agents.includes(a)) {
      out.push(
        issue(
          `model.endpoints.${a}`,
          `${c.env.id}${c.level === "L0" ? " (L0)" : ""} has no agent "${a}"${
            didYouMean(a, agents)
          }; agents: ${agents.join(", ")}`,
        ),
      );
    }
  }
  if (out.length) return out;
  for (const [split, seed] of [["train", c.env.trainSeed], ["test", c.env.testSeed]] as const) {
    try {
      env.generate(seed, { split, difficulty: c.env.difficulty });
    } catch (e) {
      const name = (e as Error).name;
      if (name !== "DifficultyError" && name !== "SplitExhaustedError") throw e;
      return [issue("env.difficulty", (e as Error).message)];
    }
  }
  return [];
}

function safeSoloAgents(id: string, agent: string | null): readonly string[] {
  try {
    return soloEnvFor(id, agent ?? undefined).possibleAgents;
  } catch {
    return getEnv(id).possibleAgents;
  }
}

/** Agents sampled from an OpenAI-compatible server (model.endpoints, else model.endpoint), with its URL. */
export function endpointOf(c: RunConfig, agent: string): string | null {
  return c.model.endpoints[agent] ?? c.model.endpoint;
}

/** Files the config names, checked when the caller can see a file system. */
function pathIssues(c: RunConfig, exists: (path: string) => boolean): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  if (c.model.folder !== null && !exists(`${c.model.folder}/config.json`)) {
    out.push(
      issue(
        "model.folder",
        `no config.json in "${c.model.folder}": not an HF model folder (make one with npx deno task init-model)`,
      ),
    );
  }
  if (c.warmStart.path !== null && !exists(c.warmStart.path)) {
    out.push(
      issue(
        "warmStart.path",
        `"${c.warmStart.path}" does not exist; point it at a checkpoint or adapter folder, or set it to null`,
      ),
    );
  }
  return out;
}

// ---- --set overrides ------------------------------------------------------------------------

const json = (ok: (v: unknown) => boolean, what: string) => (t: string, p: string) =>
  setJson(t, p, ok, what, errorAt);
const COERCE: { readonly [K in FieldType]: (text: string, path: string) => unknown } = {
  int: (t, p) => setNumber(t, p, errorAt),
  number: (t, p) => setNumber(t, p, errorAt),
  boolean: (t, p) => {
    if (t === "true" || t === "false") return t === "true";
    throw ConfigError.at(p, `--set value "${t}" is not true or false`);
  },
  string: (t) => t,
  enum: (t) => t,
  list: json(Array.isArray, `a JSON array, e.g. ["q","v"]`),
  strings: json(Array.isArray, `a JSON array of strings, e.g. ["</answer>"]`),
  paths: json(Array.isArray, `a JSON array of paths, e.g. ["data/train.jsonl"]`),
  agents: json(isObject, `a JSON object, e.g. {"tool":{"temperature":0.7}}`),
  knobs: json(isObject, `a JSON object, e.g. {"size":5}`),
  urls: json(isObject, `a JSON object, e.g. {"tool":"http://127.0.0.1:8000"}`),
};

/** Types a --set value by its field; knob paths (env.difficulty.size) type their value from JSON. */
function coerceSet(path: string, value: string): unknown {
  const { field, rest } = fieldAt(ROOT, path, errorAt);
  const type = field.type as FieldType;
  if (rest.length === 1 && type === "knobs") {
    const v = parseJsonOr(value);
    return typeof v === "number" || typeof v === "boolean" ? v : value;
  }
  if (rest.length === 1 && type === "urls") return value; // model.endpoints.<agent>=URL
  if (rest.length === 1 && type === "agents") {
    return setJson(value, path, isObject, `a JSON object, e.g. {"temperature":0.7}`, errorAt);
  }
  if (rest.length) {
    const field = path.split(".").slice(0, -rest.length).join(".");
    throw ConfigError.at(path, `${field} is a field, not a section`);
  }
  return field.nullable && value === "null" ? null : COERCE[type](value, path);
}

function parseJsonOr(t: string): unknown {
  try {
    return JSON.parse(t);
  } catch {
    return t;
  }
}

/** A copy of `raw` with each `path=value` applied, typed by the schema (before validation). */
export function applySets(raw: unknown, sets: readonly string[]): Record<string, unknown> {
  return applySetsWith(raw, sets, coerceSet, errorAt, "rollout.k=8");
}

// ---- parse, load, describe ------------------------------------------------------------------

export interface ParseOptions {
  /** `path=value` overrides, applied in order before validation. */
  readonly sets?: readonly string[];
  /** Where the JSON came from (prefixes messages; its base name is the default run.name). */
  readonly source?: string;
  /** File-system probe; when given, model.folder and warmStart.path must exist. */
  readonly pathExists?: (path: string) => boolean;
}

/** Defaults + JSON + overrides → a validated config with env knobs and eval temperature resolved. */
export function parseConfig(raw: unknown, opts: ParseOptions = {}): RunConfig {
  const withSets = opts.sets?.length ? applySets(raw, opts.sets) : raw;
  const issues: ConfigIssue[] = [];
  if (!isObject(withSets)) {
    throw ConfigError.at("", `a config must be a JSON object, got ${show(withSets)}`, opts.source);
  }
  let c = resolveSection(ROOT, withSets, "", issues, check) as unknown as RunConfig;
  if (issues.length) throw new ConfigError(issues, opts.source);
  // A folder given without a preset replaces the default preset rather than clashing with it.
  const m = withSets.model;
  if (isObject(m) && (m.folder != null || m.hub != null) && m.preset === undefined) {
    c = { ...c, model: { ...c.model, preset: null } };
  }
  issues.push(
    ...RULES.map((r) => r(c)).filter((i): i is ConfigIssue => i !== null),
    ...envIssues(c),
  );
  if (opts.pathExists) issues.push(...pathIssues(c, opts.pathExists));
  if (issues.length) throw new ConfigError(issues, opts.source);
  return {
    ...c,
    env: { ...c.env, difficulty: { ...getEnv(c.env.id).defaultDifficulty, ...c.env.difficulty } },
    rewards: {
      ...c.rewards,
      shaping: c.rewards.shaping ?? getEnv(c.env.id).rewardKnobs?.defaultShaping ?? null,
    },
    eval: { ...c.eval, temperature: evalTemperature(c) },
    run: { ...c.run, name: c.run.name || nameFromSource(opts.source) || "run" },
  };
}

/** Reads and validates a JSON config file (Deno): missing folders named in it are errors too. */
export async function loadConfigFile(
  path: string,
  sets: readonly string[] = [],
): Promise<RunConfig> {
  const raw = await readJsonConfig(path, ConfigError.at);
  const pathExists = (p: string) => {
    try {
      Deno.statSync(p);
      return true;
    } catch {
      return false;
    }
  };
  return parseConfig(raw, { sets, source: path, pathExists });
}

/** Envs whose validation samples at temperature 0.6 (the paper's code/math setting); others are greedy. */
const SAMPLED_EVAL_ENVS: Readonly<Record<string, number>> = { code_v1: 0.6, math_v1: 0.6 };

/** Validation temperature: the configured one, else the paper's per task (0.6 code/math, greedy otherwise). */
export function evalTemperature(c: RunConfig): number {
  return c.eval.temperature ?? SAMPLED_EVAL_ENVS[c.env.id] ?? 0;
}

/** The preset's config.json path (what init-model reads), or null for a folder model. */
export function presetPath(c: RunConfig): string | null {
  return c.model.preset === null ? null : `configs/models/${c.model.preset}.json`;
}

/**
 * The trainer's LR schedule, in RL steps (verl steps its scheduler once per training step): the
 * session evaluates it at the RL step for every update of that step, however many epochs and
 * mini-batches the step's samples make.
 */
export function lrSchedule(c: RunConfig): LrSchedule {
  const { kind, warmupSteps, minRatio } = c.update.schedule, lr = c.update.optimizer.lr;
  if (kind === "constant") return { kind, lr, warmupSteps };
  return { kind, lr, warmupSteps, totalSteps: Math.max(warmupSteps, c.run.steps), minRatio };
}

/** The GRPO loss head's settings. */
export function policyLossConfig(c: RunConfig): PolicyLossConfig {
  const { clipLow, clipHigh, dualClip, aggregation } = c.update.loss;
  return { clipLow, clipHigh, dualClip, aggregation, klCoef: c.update.klCoef };
}

/** Each trainer's value head (update.advantage "gae": PPO's critic), or undefined (GRPO). */
export function valueHeadSettings(c: RunConfig): ValueHeadSettings | undefined {
  if (c.update.advantage !== "gae") return undefined;
  const { coef, clip, lr } = c.update.value;
  return { coef, clip, lrScale: lr === null ? 1 : lr / c.update.optimizer.lr };
}

/** Legal but probably unintended settings, for the run log. */
export function configWarnings(c: RunConfig): string[] {
  const out: string[] = [];
  const envTurns = c.env.difficulty.maxTurns;
  if (typeof envTurns === "number" && envTurns !== c.rollout.maxTurns) {
    out.push(
      `rollout.maxTurns ${c.rollout.maxTurns} ≠ env.difficulty.maxTurns ${envTurns}: episodes end at the smaller (${
        Math.min(envTurns, c.rollout.maxTurns)
      })`,
    );
  }
  if (c.model.preset !== null && c.update.optimizer.lr < 1e-5) {
    out.push(
      `update.optimizer.lr ${c.update.optimizer.lr} is the paper's rate for a 1.7B model; a tiny preset barely moves at it (try 1e-3 LoRA, 3e-4 full)`,
    );
  }
  if (c.model.preset !== null && c.warmStart.path === null) {
    out.push(
      `a freshly initialised preset writes random bytes, so most actions score the invalid penalty; warm start from an SFT checkpoint for a useful run`,
    );
  }
  // A warning, not an error: a short smoke run of a real config (--set run.steps=1) is legitimate.
  if (
    c.update.schedule.kind !== "constant" && c.run.steps > 0 &&
    c.update.schedule.warmupSteps > c.run.steps
  ) {
    out.push(
      `update.schedule.warmupSteps ${c.update.schedule.warmupSteps} > run.steps ${c.run.steps}: the run ends before the lr reaches its peak and the ${c.update.schedule.kind} decay has no room`,
    );
  }
  if (c.run.steps > 0 && c.eval.everySteps > c.run.steps) {
    out.push(
      `eval.everySteps ${c.eval.everySteps} > run.steps ${c.run.steps}: no validation during training`,
    );
  }
  if (c.update.advantage === "gae" && c.rewards.filter !== "none") {
    out.push(
      `rewards.filter "${c.rewards.filter}" is GRPO's group filter; under update.advantage "gae" every sample trains (the critic needs them all)`,
    );
  }
  if (c.level === "L3" && getEnv(c.env.id).symmetric) {
    out.push(
      `${c.env.id} is symmetric self-play: L3 trains a full model per player for no role difference`,
    );
  }
  return out;
}

export interface FieldDoc {
  readonly path: string;
  readonly type: string;
  readonly default: string;
  readonly doc: string;
  readonly paper: string;
}

function typeText(s: Fields.FieldSpec<unknown>): string {
  const range = rangeText(s);
  const base = s.type === "enum"
    ? s.choices!.map((c) => `"${c}"`).join(" | ")
    : s.type === "list"
    ? `list of ${s.choices!.join(" ")}`
    : s.type === "knobs"
    ? "object (env knobs)"
    : s.type === "urls"
    ? "object (agent → URL)"
    : s.type === "agents"
    ? "object (agent → generation settings)"
    : s.type === "strings"
    ? "list of strings"
    : s.type === "paths"
    ? "list of paths"
    : s.type;
  return base + (range ? ` (${range})` : "") + (s.nullable ? " | null" : "");
}

/** One row per field: path, type, default, effect, the paper's value. */
export function describeConfig(): FieldDoc[] {
  return fieldsOf(ROOT).map(([path, s]) => ({
    path,
    type: typeText(s),
    default: JSON.stringify(s.default),
    doc: s.doc,
    paper: s.paper ?? "",
  }));
}

/** docs/config.md's reference: a Markdown table generated from the schema. */
export function describeConfigMarkdown(): string {
  const cell = (t: string) => t.replaceAll("|", "\\|");
  const rows = describeConfig().map((d) =>
    `| \`${d.path}\` | ${cell(d.type)} | \`${cell(d.default)}\` | ${cell(d.doc)} | ${
      cell(d.paper)
    } |`
  );
  return ["| field | type | default | effect | paper |", "|---|---|---|---|---|", ...rows].join(
    "\n",
  );
}

/** The resolved config, one `path value` line per field; fields off their default show it. */
export function formatConfig(c: RunConfig): string {
  const all = fieldsOf(ROOT), width = Math.max(...all.map(([p]) => p.length));
  return all.map(([path, s]) => {
    const v = JSON.stringify(valueAt(c, path)), d = JSON.stringify(s.default);
    return `${path.padEnd(width)}  ${v}${v === d ? "" : `   (default ${d})`}`;
  }).join("\n");
}
