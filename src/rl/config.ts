// The AT-GRPO run configuration: one typed object whose every field is declared once in SCHEMA
// with its type, default, range and effect (TRL grpo_config.py style), the paper's value beside
// it where the paper has one. `parseConfig` turns JSON plus `--set a.b=c` overrides into a
// validated RunConfig or throws one ConfigError that names every bad field and says why;
// `describeConfig` renders the same schema as docs/config.md's reference table.
//
// Browser-safe except `loadConfigFile` (Deno file reads). Paths in a config are relative to the
// working directory (the repository root for `deno task train`).

import type { Difficulty } from "../envs/types.ts";
import { envIds, getEnv, soloEnvFor } from "../envs/registry.ts";
import type { FloatDtype } from "../io/dtypes.ts";
import { LORA_MODULES, type LoraModule } from "../model/lora.ts";
import { POLICY_LOSS_DEFAULTS, type PolicyLossConfig } from "../train/losses.ts";
import { LOSS_AGG_MODES, type LossAggMode } from "../train/loss_rows.ts";
import type { LrSchedule, ScheduleKind } from "../train/schedule.ts";
import type { TrainMode, ValueHeadSettings } from "../train/trainer.ts";
import {
  AGENT_GENERATION_KEYS,
  agentGenerationIssues,
  type AgentGenerationOverride,
  agentOverrideProblem,
} from "./generation.ts";

export const LEVELS = ["L0", "L1", "L2", "L3"] as const;
/** L0 one agent · L1 one shared model, roles by prompt · L2 shared base + LoRA per agent · L3 a model per agent. */
export type Level = typeof LEVELS[number];
export const ROLLOUT_MODES = ["tree", "independent", "single-agent"] as const;
export type RolloutMode = typeof ROLLOUT_MODES[number];
export const GROUP_FILTERS = ["none", "drop-zero-variance", "drop-lowest-mean"] as const;
export type GroupFilterKind = typeof GROUP_FILTERS[number];
export const ADVANTAGE_ESTIMATORS = ["grpo", "gae"] as const;
/** grpo: group-normalised rewards (the paper); gae: PPO with a critic (src/rl/critic.ts, docs/ppo.md). */
export type AdvantageEstimator = typeof ADVANTAGE_ESTIMATORS[number];
export const NORMALIZATIONS = ["std", "mean-only"] as const;
export type Normalization = typeof NORMALIZATIONS[number];
/** The presets in configs/models/ (a test keeps this list equal to the folder's files). */
export const MODEL_PRESETS = [
  "tiny-llama",
  "tiny-qwen2",
  "tiny-qwen3",
  "tiny-gpt2",
  "small-30m",
] as const;
export type ModelPreset = typeof MODEL_PRESETS[number];
/** Envs whose validation samples at temperature 0.6 (the paper's code/math setting); others are greedy. */
const SAMPLED_EVAL_ENVS: Readonly<Record<string, number>> = { code_v1: 0.6, math_v1: 0.6 };

// ---- schema -------------------------------------------------------------------------------

type FieldType =
  | "int"
  | "number"
  | "boolean"
  | "string"
  | "enum"
  | "list"
  | "strings"
  | "knobs"
  | "urls"
  | "agents";

/** One leaf of the config: how it parses, its default and what it does. */
export interface FieldSpec<T> {
  readonly type: FieldType;
  readonly default: T;
  readonly doc: string;
  /** The paper's (or released config's) value, when it has one. */
  readonly paper?: string;
  readonly nullable?: boolean;
  /** Numbers: bounds; lists: least number of items. */
  readonly min?: number;
  readonly max?: number;
  /** Which bounds are strict. */
  readonly exclusive?: "min" | "max" | "both";
  /** Enums: allowed values; lists: allowed items. */
  readonly choices?: readonly string[];
  /** Why the range exists; appended to range errors. */
  readonly why?: string;
}

type Extra = Pick<FieldSpec<unknown>, "paper" | "min" | "max" | "exclusive" | "why">;
const int = (d: number, doc: string, x: Extra = {}): FieldSpec<number> => ({
  type: "int",
  default: d,
  doc,
  ...x,
});
const num = (d: number, doc: string, x: Extra = {}): FieldSpec<number> => ({
  type: "number",
  default: d,
  doc,
  ...x,
});
const bool = (d: boolean, doc: string): FieldSpec<boolean> => ({
  type: "boolean",
  default: d,
  doc,
});
const text = (d: string, doc: string): FieldSpec<string> => ({ type: "string", default: d, doc });
const oneOf = <const C extends readonly string[]>(
  choices: C,
  d: C[number],
  doc: string,
  x: Extra = {},
): FieldSpec<C[number]> => ({
  type: "enum",
  choices,
  default: d,
  doc,
  ...x,
});
const listOf = <const C extends readonly string[]>(
  choices: C,
  d: readonly C[number][],
  doc: string,
  x: Extra = {},
): FieldSpec<readonly C[number][]> => ({
  type: "list",
  choices,
  default: d,
  doc,
  min: 1,
  ...x,
});
const knobs = (doc: string): FieldSpec<Difficulty> => ({ type: "knobs", default: {}, doc });
const urls = (doc: string): FieldSpec<Readonly<Record<string, string>>> => ({
  type: "urls",
  default: {},
  doc,
});
const strings = (doc: string): FieldSpec<readonly string[]> => ({
  type: "strings",
  default: [],
  doc,
});
const agents = (doc: string): FieldSpec<Readonly<Record<string, AgentGenerationOverride>>> => ({
  type: "agents",
  default: {},
  doc,
});
const nullable = <T>(spec: FieldSpec<T>, d: T | null = null): FieldSpec<T | null> => ({
  ...spec,
  nullable: true,
  default: d,
});

export const SCHEMA = {
  description: text(
    "",
    "One line on what the run is for; shown in logs and the dashboard, no other effect.",
  ),
  model: {
    preset: nullable(
      oneOf(
        MODEL_PRESETS,
        "tiny-llama",
        "configs/models/{preset}.json, freshly initialised with run.seed (byte tokenizer). Setting model.folder alone " +
          "clears it; setting both is an error.",
      ),
      "tiny-llama",
    ),
    folder: nullable(
      text(
        "",
        "HF model folder (config.json + safetensors + tokenizer) to start from instead of a preset.",
      ),
    ),
    hub: nullable(
      text(
        "",
        "Hugging Face Hub id (e.g. Qwen/Qwen2.5-0.5B-Instruct), read file by file from $HF_ENDPOINT (default https://huggingface.co) " +
          "at revision model.revision when model.folder is null. With model.folder set, the folder's files are used and the id only names the model.",
      ),
    ),
    revision: text("main", "Hub revision (branch, tag or commit) model.hub is read at."),
    dtype: oneOf(
      ["F32", "F16", "BF16"],
      "F32",
      "Storage dtype of weights this run writes (preset init, full checkpoints); the GPU computes in f32 regardless.",
    ),
    endpoint: nullable(
      text(
        "",
        "OpenAI-compatible server (npx deno task serve, vLLM, SGLang, llama.cpp) that every agent samples from instead of the local " +
          "model, e.g. http://127.0.0.1:8000: for evaluation (npx deno task eval); nothing is left to train. null: local models.",
      ),
    ),
    endpoints: urls(
      'Agent → server URL for some agents only, e.g. {"tool": "http://127.0.0.1:8000"}: a frozen partner sampled from the server ' +
        "while the other agents train; its samples never enter the loss. Overrides model.endpoint for the agents it names.",
    ),
    endpointPrompt: oneOf(
      ["text", "ids"],
      "text",
      "How endpoint requests carry the prompt: text (decoded with the local tokenizer; any server) or token ids (the server " +
        "must use the same tokenizer; its reply's token ids are used where it returns them).",
    ),
  },
  env: {
    id: text("plan_path_v1", "Versioned environment id from src/envs/registry.ts."),
    difficulty: knobs(
      "Overrides of the env's difficulty knobs (grid size, maxTurns, ...), passed through; the resolved config lists every knob.",
    ),
    trainSeed: int(
      0,
      "Base seed of training tasks (train split); train and test tasks are disjoint by content.",
      { min: 0, max: 2 ** 32 - 1 },
    ),
    testSeed: int(
      1_000_000,
      "Base seed of validation tasks (test split): every validation sees the same tasks.",
      { min: 0, max: 2 ** 32 - 1 },
    ),
  },
  level: oneOf(
    LEVELS,
    "L2",
    "Specialization: L0 one agent does the task; L1 one shared model, roles by prompt; L2 frozen shared base + one LoRA per agent; L3 one full model per agent.",
  ),
  rollout: {
    mode: oneOf(
      ROLLOUT_MODES,
      "tree",
      "tree: AT-GRPO (K candidates per env, agent and turn; continue from the best). independent: plain GRPO (K whole trajectories, group = env). single-agent: L0.",
    ),
    k: int(
      4,
      "Candidates per group (K). Each is a training sample; the spread of their rewards is the learning signal.",
      { paper: "4", min: 1 },
    ),
    envsPerStep: int(
      8,
      "Environments sampled per RL step (E), all generated as one batch. Memory and step time grow with E·K.",
      { paper: "global batch 128 on 8 GPUs", min: 1 },
    ),
    maxTurns: int(
      4,
      "Turns the engine drives per episode (T); the env's own limit (difficulty.maxTurns) also ends them.",
      { paper: "4", min: 1 },
    ),
    maxPromptTokens: int(
      768,
      "Longest prompt in tokens; with maxNewTokens it sizes the KV cache and each training sample.",
      { min: 1 },
    ),
    maxNewTokens: int(
      256,
      "Most tokens generated per agent action; generation stops earlier at a stop token.",
      { min: 1 },
    ),
    sampling: {
      temperature: num(1.0, "Rollout softmax temperature.", {
        paper: "1.0",
        min: 0,
        exclusive: "min",
        why: "greedy rollouts make the K candidates identical, so every group has zero variance",
      }),
      topP: num(0.9, "Nucleus mass kept when sampling (1 = off).", {
        paper: "0.9",
        min: 0,
        max: 1,
        exclusive: "min",
        why: "0 keeps only the top token, which is greedy",
      }),
      topK: int(20, "Keep the k most likely tokens (0 = off).", { paper: "20", min: 0 }),
      repetitionPenalty: num(
        1.0,
        "HF repetition penalty over the sequence so far (1 = off); RL updates need 1 (see the rule below).",
        { min: 0, exclusive: "min" },
      ),
      stop: strings(
        "Stop strings besides the tokenizer's stop tokens (eos, <|im_end|>): an action ends at the token whose text completes one. " +
          "That token is kept, so the ids trained on are exactly the ids sampled and the env reads their decoded text.",
      ),
    },
    agents: agents(
      `Per-agent generation during rollouts, over rollout.sampling and rollout.maxNewTokens, e.g. {"tool": {"maxNewTokens": 512, "stop": ["\\n\`\`\`\\n"]}}; ` +
        `keys ${
          AGENT_GENERATION_KEYS.join(", ")
        }. maxNewTokens may not exceed rollout.maxNewTokens (it sizes the KV cache); agents that share a ` +
        "trainer (L1, L2) share its temperature (the loss reads logits/T at one T per trainer).",
    ),
    promptStyle: oneOf(
      ["auto", "compact", "chat"],
      "auto",
      "compact: terse plain text for the tiny byte-level presets. chat: a system message (role, rules, answer format) and a user message " +
        "(task, partner's last output) through the tokenizer's chat template (instruct models). auto: chat for an HF tokenizer with a chat " +
        "template, compact for the byte tokenizer.",
    ),
  },
  rewards: {
    alpha: num(1, "Weight of the team reward: r = α·team + local.", { paper: "1", min: 0 }),
    normalize: oneOf(
      NORMALIZATIONS,
      "std",
      "std: A = (r − mean)/(std + eps) per group (GRPO). mean-only: A = r − mean (Dr. GRPO), keeps reward scale.",
    ),
    eps: num(1e-6, "Added to the group std so near-constant groups do not blow up (verl's 1e-6).", {
      min: 0,
      exclusive: "min",
    }),
    filter: oneOf(
      GROUP_FILTERS,
      "none",
      "Groups left out of the update: none; drop-zero-variance (all-equal rewards: zero advantages that only dilute the " +
        "token mean); drop-lowest-mean (the filterFraction of groups with the lowest mean reward).",
    ),
    filterFraction: num(
      0.25,
      "Fraction of groups drop-lowest-mean removes each step (rounded down).",
      { min: 0, max: 1, exclusive: "max", why: "dropping every group leaves nothing to train on" },
    ),
    shaping: nullable(
      num(
        1,
        "Weight of the env's shaping term (Plan-Path: γΦ′ − Φ, Φ = −Manhattan distance; Sokoban: box distance; Sudoku: progress), " +
          "1 = the paper's. null: the env's success-dominant weight (Plan-Path 0.1, Sokoban 1, Sudoku 1), under which a solving " +
          "move out-scores every non-solving one by a clear margin. Only for envs with reward knobs (the tool → plan tasks).",
        { paper: "1", min: 0 },
      ),
    ),
    success: oneOf(
      ["shaped", "binary"],
      "shaped",
      "shaped: the env's rewards (step costs, bonuses, shaping at rewards.shaping, fail penalty). binary: a move earns 1 if it " +
        "solves the task, else 0 (format penalties stay). Only for envs with reward knobs.",
    ),
    toolCredit: oneOf(
      ["lookahead", "none"],
      "lookahead",
      "Team reward of a tool agent's candidate (tree rollouts): lookahead: the team reward of the next agent's step on the state " +
        "the candidate leaves (one sample of that agent's policy per candidate, not trained on), so r = α·team + local trains the " +
        "tool to help its partner; none: the tool gets its local reward only.",
    ),
  },
  update: {
    mode: oneOf(
      ["lora", "full"],
      "lora",
      "lora: train adapters over a frozen base (L2 needs it). full: train every weight (L3 needs it); L0/L1 take either.",
    ),
    lora: {
      rank: int(16, "LoRA rank r.", { paper: "16", min: 1 }),
      alpha: num(32, "LoRA alpha; the update is scaled by alpha / rank.", {
        paper: "32",
        min: 0,
        exclusive: "min",
      }),
      targets: listOf(
        LORA_MODULES,
        LORA_MODULES,
        "Linear layers that get adapters (all = q k v o gate up down qkv, PEFT's all-linear; gpt2 has qkv = c_attn, o = attn.c_proj, up = c_fc, down = mlp.c_proj, and a model's missing modules are skipped).",
      ),
    },
    advantage: oneOf(
      ADVANTAGE_ESTIMATORS,
      "grpo",
      "grpo: each sample's advantage is its reward normalised within its group (AT-GRPO; the rewards.* settings). gae: PPO with a " +
        "critic: a value head on the final hidden state (its own parameters and AdamW, trained with the clipped value loss; the trunk " +
        "learns from both losses), per-token GAE over each agent's chained turns, whitened over the step; needs rollout.mode " +
        '"independent" (whole trajectories). See docs/ppo.md.',
      { paper: "grpo" },
    ),
    gae: {
      gamma: num(
        1,
        "GAE discount γ per generated token (gae only); 1 counts a turn's reward undiscounted at every earlier token, as RLHF PPO does.",
        {
          paper: "1 (TRL PPO, verl)",
          min: 0,
          max: 1,
        },
      ),
      lambda: num(
        0.95,
        "GAE λ (gae only): 0 is the one-step TD error (lowest variance, most critic bias), 1 the return minus V.",
        {
          paper: "0.95 (TRL PPO; verl 1.0)",
          min: 0,
          max: 1,
        },
      ),
      whiten: bool(
        true,
        "Whiten the advantages over each policy's tokens of the step: (A − mean) / std (gae only; TRL's whiten_advantages).",
      ),
    },
    value: {
      coef: num(0.1, "Weight of the value loss beside the policy loss (vf_coef; gae only).", {
        paper: "0.1 (TRL PPO)",
        min: 0,
      }),
      clip: num(
        0.2,
        "ε_v of the clipped value loss ½·max((V − R)², (clip(V, V_old ± ε_v) − R)²) (gae only).",
        {
          paper: "0.2 (TRL PPO cliprange_value)",
          min: 0,
          exclusive: "min",
        },
      ),
      lr: nullable(
        num(
          1e-3,
          "The value head's peak learning rate on the same schedule (gae only); null: update.optimizer.lr.",
          {
            min: 0,
            exclusive: "min",
          },
        ),
      ),
    },
    ppoEpochs: int(1, "Passes over each step's samples.", { paper: "1", min: 1 }),
    miniBatchSize: int(
      64,
      "Samples per optimizer update; a step's samples make ceil(n / size) updates per epoch.",
      { paper: "64", min: 1 },
    ),
    loss: {
      clipLow: num(POLICY_LOSS_DEFAULTS.clipLow, "PPO ε below 1: ratio clipped at 1 − ε.", {
        paper: "0.2",
        min: 0,
        max: 1,
        exclusive: "max",
        why: "1 − ε must stay positive",
      }),
      clipHigh: num(
        POLICY_LOSS_DEFAULTS.clipHigh,
        "PPO ε above 1: ratio clipped at 1 + ε (DAPO's clip-higher raises it).",
        {
          paper: "0.2",
          min: 0,
        },
      ),
      dualClip: nullable(
        num(
          POLICY_LOSS_DEFAULTS.dualClip,
          "Dual-clip bound c for negative advantages (null = off).",
          {
            paper: "3",
            min: 1,
            exclusive: "min",
            why:
              "c caps the loss of a negative advantage at c·|A|; c ≤ 1 would cap even on-policy samples (ratio 1)",
          },
        ),
        POLICY_LOSS_DEFAULTS.dualClip,
      ),
      aggregation: oneOf(
        LOSS_AGG_MODES,
        POLICY_LOSS_DEFAULTS.aggregation,
        "How token losses combine (src/train/loss_rows.ts).",
        { paper: "token-mean" },
      ),
    },
    klCoef: num(
      POLICY_LOSS_DEFAULTS.klCoef,
      "β of the k3 KL to the policy the run started from (the base or the warm start; src/rl/reference_policy.ts); > 0 keeps a frozen copy of each policy on the GPU and costs a reference forward per sample.",
      { paper: "0 (no KL term)", min: 0 },
    ),
    optimizer: {
      lr: num(
        5e-6,
        "Peak learning rate. 5e-6 is the paper's for Qwen3-1.7B; tiny presets need far more (shipped configs: 1e-3 LoRA, " +
          "3e-4 full): lr scales about with 1/width (2048 → 64 is ×32) and LoRA takes ~5–10× a full fine-tune's.",
        { paper: "5e-6", min: 0, exclusive: "min" },
      ),
      beta1: num(0.9, "Adam β1: decay of the gradient average (momentum).", {
        min: 0,
        max: 1,
        exclusive: "max",
      }),
      beta2: num(0.999, "Adam β2: decay of the squared-gradient average that scales each step.", {
        min: 0,
        max: 1,
        exclusive: "max",
      }),
      eps: num(1e-8, "Adam ε: keeps steps finite where the squared-gradient average is ~0.", {
        min: 0,
        exclusive: "min",
      }),
      weightDecay: num(
        0.01,
        "Decoupled weight decay (torch / verl default); norms, biases and embeddings get none.",
        { min: 0 },
      ),
      maxGradNorm: num(1, "Global gradient-norm clip (0 = off, the norm is still logged).", {
        paper: "1.0",
        min: 0,
      }),
    },
    schedule: {
      kind: oneOf(
        ["constant", "linear", "cosine"],
        "cosine",
        "Learning-rate schedule over run.steps.",
        { paper: "cosine" },
      ),
      warmupSteps: int(
        10,
        "RL steps of linear warmup from 0 (verl steps the schedule once per training step).",
        { paper: "10", min: 0 },
      ),
      minRatio: num(0.3, "Floor of the decay as a fraction of lr.", {
        paper: "0.3",
        min: 0,
        max: 1,
      }),
    },
    chunkRows: int(
      1024,
      "Token rows per training micro-batch (activation memory); must hold the longest prompt + completion.",
      { min: 1 },
    ),
    logitRows: int(
      0,
      "Token rows whose logits the LM head, the loss and its backward hold at a time (0: all of a micro-batch's where [chunkRows, vocab] floats fit 256 MiB, else the most multiples of 64 that do: 384 for a 151936-word vocabulary); a multiple of 64 below chunkRows.",
      { min: 0 },
    ),
    halfBase: oneOf(
      ["auto", "on", "off"],
      "auto",
      "A LoRA trainer's frozen base (embedding, projections, LM head) stored as half floats, read by half-float matmul kernels " +
        "with f32 arithmetic: half the weight memory and half the bytes a decode step reads (bf16 weights convert exactly down to 6.1e-5 in magnitude, below it to half subnormals). " +
        "auto: on a GPU-class adapter for LoRA trainers of the Llama family; on: every LoRA trainer (an error for gpt2); off: f32.",
    ),
  },
  eval: {
    everySteps: int(
      10,
      "Validate every N RL steps (0 = only before and after training); best/ is kept by validation success.",
      {
        paper: "10",
        min: 0,
      },
    ),
    beforeTraining: bool(true, "Validate once before the first update (the untrained baseline)."),
    episodes: int(32, "Test-split episodes per validation.", { min: 1 }),
    temperature: nullable(
      num(
        0,
        "Validation temperature (0 = greedy; > 0 uses rollout topP/topK). null: greedy for planning and games, 0.6 for code and math.",
        { paper: "greedy planning, 0.6 code/math", min: 0 },
      ),
    ),
    topP: nullable(
      num(
        1,
        "Validation nucleus mass (used when the temperature is > 0). null: rollout.sampling.topP.",
        { min: 0, max: 1, exclusive: "min" },
      ),
    ),
    topK: nullable(
      int(
        0,
        "Validation top-k (used when the temperature is > 0; 0 = off). null: rollout.sampling.topK.",
        { min: 0 },
      ),
    ),
    maxNewTokens: nullable(
      int(
        256,
        "Most tokens per action in validation. null: rollout.maxNewTokens (the cap: it sizes the KV cache).",
        { min: 1 },
      ),
    ),
    stop: nullable(strings("Validation stop strings. null: rollout.sampling.stop.")),
    agents: agents(
      `Per-agent generation during validation, over the eval fields above, e.g. {"reasoner": {"temperature": 0.6}}; keys ${
        AGENT_GENERATION_KEYS.join(", ")
      }.`,
    ),
  },
  run: {
    name: text(
      "",
      'Run folder name (runs/<name>/<timestamp>/); empty: the config file\'s base name, or "run".',
    ),
    outDir: text("runs", "Folder that holds run folders."),
    seed: int(
      0,
      "Seed of model init, sampling and shuffles; a run is reproducible from (config, seed).",
      { min: 0, max: 2 ** 32 - 1 },
    ),
    steps: int(100, "RL steps (0 = validate only).", { min: 0 }),
    checkpointEvery: int(
      10,
      "Save a checkpoint every N steps (0 = only at the end; best/ is kept regardless).",
      { min: 0 },
    ),
    keepLast: int(3, "Checkpoints kept besides best/; older ones are deleted.", { min: 1 }),
    saveRollouts: bool(true, "Write each step's conversations to rollouts/step-N.jsonl."),
  },
  logging: {
    tensorboard: bool(
      true,
      "Write every numeric metric as a TensorBoard scalar to events.out.tfevents.* in the run directory (tensorboard --logdir runs/).",
    ),
    wandb: {
      project: nullable(
        text(
          "",
          "Weights & Biases project to send the same scalars to; null: W&B off. The API key comes from WANDB_API_KEY, never from the config.",
        ),
      ),
      entity: nullable(
        text(
          "",
          'W&B entity (user or team); null: the API key\'s default entity (online) or "offline".',
        ),
      ),
      name: nullable(
        text("", "W&B run display name; null: <run.name>/<run directory's timestamp>."),
      ),
      mode: oneOf(
        ["online", "offline", "disabled"],
        "online",
        "online: send as the run goes; offline: write wandb/wandb-history.jsonl (+ summary, config) in the run directory instead; " +
          "disabled: W&B off (as project null). Failures to reach W&B warn once and never stop training.",
      ),
      baseUrl: nullable(
        text(
          "",
          "W&B server URL (self-hosted or a local test server); null: WANDB_BASE_URL, else https://api.wandb.ai.",
        ),
      ),
    },
  },
  warmStart: {
    path: nullable(
      text(
        "",
        "Start from trained weights instead of the model's: a run checkpoint folder (step-N/, best/) or a PEFT adapter folder.",
      ),
    ),
    kind: oneOf(
      ["checkpoint", "peft-adapter"],
      "checkpoint",
      "checkpoint: weights (adapters or full) of an earlier run, per policy. peft-adapter: one adapter (e.g. from SFT) " +
        "copied into every agent's adapter.",
    ),
  },
};

/** The config's type, read off the schema: each field is declared once, above. */
type ValueOf<S> = S extends FieldSpec<infer T> ? T : { readonly [K in keyof S]: ValueOf<S[K]> };
export type RunConfig = ValueOf<typeof SCHEMA>;
export type ModelSection = RunConfig["model"];
export type EnvSection = RunConfig["env"];
export type RolloutSection = RunConfig["rollout"];
export type RewardsSection = RunConfig["rewards"];
export type UpdateSection = RunConfig["update"];
export type EvalSection = RunConfig["eval"];
export type RunSection = RunConfig["run"];
export type WarmStartSection = RunConfig["warmStart"];
export type LoggingSection = RunConfig["logging"];

// Compile-time: the schema's choices are exactly the engine's types (a drift fails `deno check`).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _engineTypes: [
  Same<ModelSection["dtype"], FloatDtype>,
  Same<UpdateSection["mode"], TrainMode>,
  Same<UpdateSection["schedule"]["kind"], ScheduleKind>,
  Same<UpdateSection["loss"]["aggregation"], LossAggMode>,
  Same<UpdateSection["lora"]["targets"][number], LoraModule>,
] = [true, true, true, true, true];

// ---- errors and small helpers ---------------------------------------------------------------

export interface ConfigIssue {
  /** Dotted field path, e.g. "rollout.k" ("" for the whole config). */
  readonly path: string;
  readonly message: string;
}

/** The config is unusable; `issues` lists every bad field with the reason. */
export class ConfigError extends Error {
  readonly path: string;
  constructor(readonly issues: readonly ConfigIssue[], source?: string) {
    const one = (i: ConfigIssue) => (i.path ? `${i.path}: ${i.message}` : i.message);
    const body = issues.length === 1
      ? one(issues[0])
      : `${issues.length} problems:\n` + issues.map((i) => `  ${one(i)}`).join("\n");
    super((source ? `${source}: ` : "") + body);
    this.name = "ConfigError";
    this.path = issues[0]?.path ?? "";
  }
  static at(path: string, message: string, source?: string): ConfigError {
    return new ConfigError([{ path, message }], source);
  }
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** ` (did you mean "x"?)` for the closest option (prefix or small edit distance), else "". */
export function didYouMean(word: string, options: readonly string[]): string {
  const w = word.toLowerCase();
  let best = "", bestD = Infinity;
  for (const o of options) {
    const d = o.toLowerCase().startsWith(w) && w.length >= 3
      ? 0.5
      : editDistance(w, o.toLowerCase());
    if (d < bestD) [best, bestD] = [o, d];
  }
  return bestD <= Math.max(2, Math.floor(word.length / 3)) ? ` (did you mean "${best}"?)` : "";
}

type Node = FieldSpec<unknown> | { readonly [key: string]: Node };
type Section = { readonly [key: string]: Node };
const ROOT = SCHEMA as unknown as Section;
const isField = (n: Node): n is FieldSpec<unknown> =>
  typeof (n as FieldSpec<unknown>).doc === "string";
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const join = (a: string, b: string) => (a ? `${a}.${b}` : b);
const show = (v: unknown) => (v === undefined ? "nothing" : JSON.stringify(v));

/** Every field with its dotted path, in schema order. */
function fields(node: Section = ROOT, prefix = ""): [string, FieldSpec<unknown>][] {
  return Object.entries(node).flatMap((
    [k, n],
  ) => (isField(n)
    ? [[join(prefix, k), n] as [string, FieldSpec<unknown>]]
    : fields(n, join(prefix, k)))
  );
}

function getPath(obj: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((o, k) => (isObject(o) ? o[k] : undefined), obj);
}

/** The defaults of every field (a fresh object each call). */
export function defaultConfig(): RunConfig {
  const build = (node: Section): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(node).map(([k, n]) => [k, isField(n) ? structuredClone(n.default) : build(n)]),
    );
  return build(ROOT) as unknown as RunConfig;
}

// ---- field checks -----------------------------------------------------------------------------

function rangeProblem(spec: FieldSpec<unknown>, v: number): string | null {
  const ex = spec.exclusive;
  const lowStrict = ex === "min" || ex === "both", highStrict = ex === "max" || ex === "both";
  const low = spec.min !== undefined && (lowStrict ? !(v > spec.min) : !(v >= spec.min));
  const high = spec.max !== undefined && (highStrict ? !(v < spec.max) : !(v <= spec.max));
  if (!low && !high) return null;
  const lo = spec.min === undefined ? "" : `${lowStrict ? ">" : "≥"} ${spec.min}`;
  const hi = spec.max === undefined ? "" : `${highStrict ? "<" : "≤"} ${spec.max}`;
  return `must be ${[lo, hi].filter(Boolean).join(" and ")}, got ${v}` +
    (spec.why ? ` (${spec.why})` : "");
}

const HTTP_URL = /^https?:\/\/[^\s/]+/;

/** Type checks per field kind: a problem description, or null when the value fits. */
const TYPE_CHECKS: {
  readonly [K in FieldType]: (s: FieldSpec<unknown>, v: unknown) => string | null;
} = {
  int: (s, v) =>
    typeof v !== "number" || !Number.isInteger(v)
      ? `must be a whole number, got ${show(v)}`
      : rangeProblem(s, v),
  number: (s, v) =>
    typeof v !== "number" || !Number.isFinite(v)
      ? `must be a number, got ${show(v)}`
      : rangeProblem(s, v),
  boolean: (_, v) => (typeof v === "boolean" ? null : `must be true or false, got ${show(v)}`),
  string: (_, v) => (typeof v === "string" ? null : `must be a string, got ${show(v)}`),
  enum: (s, v) =>
    typeof v === "string" && s.choices!.includes(v)
      ? null
      : `must be one of ${s.choices!.map((c) => `"${c}"`).join(", ")}, got ${show(v)}` +
        (typeof v === "string" ? didYouMean(v, s.choices!) : ""),
  list: (s, v) => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
      return `must be a list of strings, got ${show(v)}`;
    }
    const bad = v.find((x) => !s.choices!.includes(x));
    if (bad !== undefined) {
      return `"${bad}" is not one of ${s.choices!.join(", ")}` + didYouMean(bad, s.choices!);
    }
    if (new Set(v).size !== v.length) return `lists ${show(v)} with a repeat; name each item once`;
    return v.length < (s.min ?? 0) ? `needs at least ${s.min} item(s)` : null;
  },
  strings: (_, v) =>
    Array.isArray(v) && v.every((x) => typeof x === "string" && x !== "")
      ? null
      : `must be a list of non-empty strings, e.g. ["</answer>"], got ${show(v)}`,
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

function checkField(
  spec: FieldSpec<unknown>,
  v: unknown,
  path: string,
  issues: ConfigIssue[],
): unknown {
  if (v === undefined) return structuredClone(spec.default);
  if (v === null && spec.nullable) return null;
  const problem = v === null ? "must not be null" : TYPE_CHECKS[spec.type](spec, v);
  if (problem) issues.push({ path, message: problem });
  return problem ? structuredClone(spec.default) : structuredClone(v);
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
  for (const key of Object.keys(obj)) {
    if (!(key in node)) {
      issues.push({
        path: join(path, key),
        message: `unknown field${didYouMean(key, names)}; ${path || "the config"} has ${
          names.join(", ")
        }`,
      });
    }
  }
  return Object.fromEntries(names.map((k) => {
    const n = node[k], p = join(path, k);
    return [
      k,
      isField(n) ? checkField(n, obj[k], p, issues) : resolveSection(n, obj[k], p, issues),
    ];
  }));
}

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
    ? safeSoloAgents(c.env.id)
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

function safeSoloAgents(id: string): readonly string[] {
  try {
    return soloEnvFor(id).possibleAgents;
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

const COERCE: { readonly [K in FieldType]: (text: string, path: string) => unknown } = {
  int: (t, p) => toNumber(t, p),
  number: (t, p) => toNumber(t, p),
  boolean: (t, p) => {
    if (t === "true" || t === "false") return t === "true";
    throw ConfigError.at(p, `--set value "${t}" is not true or false`);
  },
  string: (t) => t,
  enum: (t) => t,
  list: (t, p) => parseJson(t, p, Array.isArray, `a JSON array, e.g. ["q","v"]`),
  strings: (t, p) => parseJson(t, p, Array.isArray, `a JSON array of strings, e.g. ["</answer>"]`),
  agents: (t, p) => parseJson(t, p, isObject, `a JSON object, e.g. {"tool":{"temperature":0.7}}`),
  knobs: (t, p) => parseJson(t, p, isObject, `a JSON object, e.g. {"size":5}`),
  urls: (t, p) => parseJson(t, p, isObject, `a JSON object, e.g. {"tool":"http://127.0.0.1:8000"}`),
};

function toNumber(t: string, path: string): number {
  const n = Number(t);
  if (t.trim() === "" || !Number.isFinite(n)) {
    throw ConfigError.at(path, `--set value "${t}" is not a number`);
  }
  return n;
}

function parseJson(t: string, path: string, ok: (v: unknown) => boolean, what: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    v = undefined;
  }
  if (!ok(v)) throw ConfigError.at(path, `--set value ${t} is not ${what}`);
  return v;
}

/** Finds the field a --set path names; knob paths (env.difficulty.size) type their value from JSON. */
function coerceSet(path: string, value: string): unknown {
  const parts = path.split(".");
  let node: Node = ROOT;
  for (let i = 0; i < parts.length; i++) {
    const here = parts.slice(0, i).join(".");
    if (isField(node)) {
      if (node.type === "knobs" && i === parts.length - 1) {
        const v = parseJsonOr(value);
        return typeof v === "number" || typeof v === "boolean" ? v : value;
      }
      if (node.type === "urls" && i === parts.length - 1) return value; // model.endpoints.<agent>=URL
      if (node.type === "agents" && i === parts.length - 1) {
        return parseJson(value, path, isObject, `a JSON object, e.g. {"temperature":0.7}`);
      }
      throw ConfigError.at(path, `${here} is a field, not a section`);
    }
    const names = Object.keys(node);
    if (!(parts[i] in node)) {
      throw ConfigError.at(
        path,
        `unknown field${didYouMean(parts[i], names)}; ${here || "the config"} has ${
          names.join(", ")
        }`,
      );
    }
    node = node[parts[i]];
  }
  if (!isField(node)) {
    throw ConfigError.at(
      path,
      `is a section; set one of its fields: ${Object.keys(node).join(", ")}`,
    );
  }
  return node.nullable && value === "null" ? null : COERCE[node.type](value, path);
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
  if (!isObject(raw)) throw ConfigError.at("", `a config must be a JSON object, got ${show(raw)}`);
  const out = structuredClone(raw);
  for (const s of sets) {
    const eq = s.indexOf("=");
    if (eq <= 0) throw ConfigError.at("--set", `"${s}" is not path=value, e.g. --set rollout.k=8`);
    const path = s.slice(0, eq).trim(), value = coerceSet(path, s.slice(eq + 1));
    const parts = path.split(".");
    let obj = out;
    for (const [i, k] of parts.slice(0, -1).entries()) {
      if (obj[k] === undefined) obj[k] = {};
      if (!isObject(obj[k])) {
        throw ConfigError.at(
          parts.slice(0, i + 1).join("."),
          `must be an object to set ${path}, got ${show(obj[k])}`,
        );
      }
      obj = obj[k] as Record<string, unknown>;
    }
    obj[parts[parts.length - 1]] = value;
  }
  return out;
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
  let c = resolveSection(ROOT, withSets, "", issues) as unknown as RunConfig;
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
  const base = opts.source?.split(/[\\/]/).pop()?.replace(/\.json$/, "") ?? "";
  return {
    ...c,
    env: { ...c.env, difficulty: { ...getEnv(c.env.id).defaultDifficulty, ...c.env.difficulty } },
    rewards: {
      ...c.rewards,
      shaping: c.rewards.shaping ?? getEnv(c.env.id).rewardKnobs?.defaultShaping ?? null,
    },
    eval: { ...c.eval, temperature: evalTemperature(c) },
    run: { ...c.run, name: c.run.name || base.replace(/[^A-Za-z0-9._-]/g, "_") || "run" },
  };
}

/** Reads and validates a JSON config file (Deno): missing folders named in it are errors too. */
export async function loadConfigFile(
  path: string,
  sets: readonly string[] = [],
): Promise<RunConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    const why = e instanceof SyntaxError
      ? `not valid JSON: ${e.message}`
      : `cannot read it: ${(e as Error).message}`;
    throw ConfigError.at("", why, path);
  }
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

function typeText(s: FieldSpec<unknown>): string {
  const range = [
    s.min !== undefined && s.type !== "list"
      ? `${s.exclusive === "min" || s.exclusive === "both" ? ">" : "≥"} ${s.min}`
      : "",
    s.max !== undefined
      ? `${s.exclusive === "max" || s.exclusive === "both" ? "<" : "≤"} ${s.max}`
      : "",
  ].filter(Boolean).join(", ");
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
    : s.type;
  return base + (range ? ` (${range})` : "") + (s.nullable ? " | null" : "");
}

/** One row per field: path, type, default, effect, the paper's value. */
export function describeConfig(): FieldDoc[] {
  return fields().map(([path, s]) => ({
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
  const all = fields(), width = Math.max(...all.map(([p]) => p.length));
  return all.map(([path, s]) => {
    const v = JSON.stringify(getPath(c, path)), d = JSON.stringify(s.default);
    return `${path.padEnd(width)}  ${v}${v === d ? "" : `   (default ${d})`}`;
  }).join("\n");
}
