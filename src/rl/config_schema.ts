// The AT-GRPO run configuration's schema: every field of RunConfig declared once, with its
// type, default, range and effect (TRL grpo_config.py style), the paper's value beside it where
// the paper has one. config.ts parses and validates configs against it; `describeConfig` renders
// it as docs/config.md's reference table. Browser-safe.

import type { Difficulty } from "../envs/types.ts";
import * as Fields from "../io/config_fields.ts";
import type { BaseFieldType } from "../io/config_fields.ts";
import type { FloatDtype } from "../io/dtypes.ts";
import { LORA_MODULES, type LoraModule } from "../model/lora_layout.ts";
import { POLICY_LOSS_DEFAULTS } from "../train/losses.ts";
import { LOSS_AGG_MODES, type LossAggMode } from "../train/loss_rows.ts";
import type { ScheduleKind } from "../train/schedule.ts";
import type { TrainMode } from "../train/trainer.ts";
import { AGENT_GENERATION_KEYS, type AgentGenerationOverride } from "./generation.ts";

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
/**
 * What a tree rollout's group pools (within one env): agent-turn, AT-GRPO's (env, agent, turn);
 * agent, an agent's candidates of every turn; turn, every agent's candidates of a turn.
 */
export const GROUPINGS = ["agent-turn", "agent", "turn"] as const;
export type Grouping = typeof GROUPINGS[number];
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

// ---- schema -------------------------------------------------------------------------------

/** The field types of the run config: the shared ones (src/io/config_fields.ts) and its own. */
export type FieldType = BaseFieldType | "knobs" | "urls" | "agents";
/** One leaf of the config: how it parses, its default and what it does. */
export type FieldSpec<T> = Fields.FieldSpec<T, FieldType>;

const { int, num, bool, text, oneOf, listOf, strings, nullable } = Fields;
const knobs = (doc: string): FieldSpec<Difficulty> => ({ type: "knobs", default: {}, doc });
const urls = (doc: string): FieldSpec<Readonly<Record<string, string>>> => ({
  type: "urls",
  default: {},
  doc,
});
const agents = (doc: string): FieldSpec<Readonly<Record<string, AgentGenerationOverride>>> => ({
  type: "agents",
  default: {},
  doc,
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
    soloAgent: nullable(
      text(
        "",
        "Level L0 only: which of the team's roles works alone, where more than one can (the tool → plan games: " +
          "\"tool\", its program's printed answer committed; the paper's each-agent-trained-alone ablation). null: the " +
          "env's default single agent (the plan agent).",
      ),
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
    groupBy: oneOf(
      GROUPINGS,
      "agent-turn",
      "What a group of a tree rollout pools, always within one env: agent-turn, the K candidates of one agent at one turn " +
        "(AT-GRPO); agent, an agent's candidates of every turn (the paper's agent-wise-only ablation); turn, every agent's " +
        "candidates of one turn (turn-wise only). Independent rollouts group whole trajectories per env and take agent-turn.",
      { paper: "agent-turn" },
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
      "β of the k3 KL to the policy the run started from (the base or the warm start; src/rl/reference_policy.ts); > 0 keeps a frozen copy of each policy on the GPU (with the policy's own base: half floats where `update.halfBase` makes them so) and costs a reference forward per sample.",
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
export type RunConfig = Fields.ValueOf<typeof SCHEMA>;
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
