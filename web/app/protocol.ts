// What the page and the trainer worker say to each other (comlink): one TrainerService interface,
// events through one proxied callback, errors as { name, message } (told apart by name, never
// instanceof: they cross a worker boundary).

import type { EpisodeView } from "../../src/browser/rollout_view.ts";
import type { CheckpointInfo, ModelSourceSpec, RunInfo } from "../../src/browser/run_store.ts";
import type { StepMetrics } from "../../src/rl/session.ts";
import type { Rendered } from "../../src/envs/types.ts";
import type { TunedBucket } from "../../src/ops/autotune.ts";
import type { AttentionTuneMode } from "../../src/model/attention_tune.ts";
import type { LoraTuneMode } from "../../src/model/lora_tune.ts";
import type { LossTuneMode } from "../../src/train/loss_tune.ts";
import type { SamplerTuneMode } from "../../src/model/sampler_tune.ts";
import type {
  TunedAttentionSplit,
  TunedLoraFused,
  TunedLoss,
  TunedSampler,
} from "../../src/ops/tuned_picks.ts";

export type RunState =
  | "idle"
  | "loading"
  | "running"
  | "pausing"
  | "paused"
  | "stopping"
  | "stopped"
  | "finished"
  | "failed"
  | "recovering";

/**
 * What the worker is doing, as it does it: reading the model's files, building the GPU side of
 * the policies (buffers; pipelines compile on first use, so their count keeps rising during the
 * first validation and step), validating on held-out tasks, sampling rollouts, the PPO update,
 * writing a checkpoint. "idle" once the loop waits (paused, stopped, finished, failed).
 */
export type Phase =
  | "loading"
  | "compiling"
  | "validating"
  | "rollout"
  | "update"
  | "saving"
  | "idle";
export const PHASE_LABELS: Record<Phase, string> = {
  loading: "Loading the model",
  compiling: "Preparing the GPU",
  validating: "Validating on held-out tasks",
  rollout: "Sampling rollouts",
  update: "Updating the policy",
  saving: "Saving a checkpoint",
  idle: "Idle",
};

export interface ErrorInfo {
  name: string;
  message: string;
}

/** Files of a model picked on the page (input type=file webkitdirectory, or a directory handle). */
export type LocalModel = { files: File[] } | { handle: FileSystemDirectoryHandle };

export interface StartRequest {
  /** parseConfig input (the form's JSON); the worker validates it again. */
  config: Record<string, unknown>;
  model: ModelSourceSpec;
  /** For model.kind "local": the picked files. */
  local?: LocalModel;
  /** A PEFT adapter (adapter_config.json + adapter_model.safetensors) to warm start every agent's adapter. */
  warmStartAdapter?: Record<string, Uint8Array>;
}

export type TrainerEvent =
  | {
    type: "state";
    state: RunState;
    runId: string | null;
    step: number;
    total: number;
    detail?: string;
  }
  /** `pipelines`: GPU compute pipelines compiled so far in this worker (a real count, rising while shaders compile). */
  | { type: "phase"; phase: Phase; step: number; total: number; pipelines: number }
  | { type: "log"; line: string }
  | { type: "metric"; m: StepMetrics }
  | { type: "history"; runId: string; lines: StepMetrics[] }
  | { type: "rollouts"; step: number; episodes: EpisodeView[] }
  | { type: "checkpoint"; runId: string; info: CheckpointInfo }
  | { type: "device-lost"; message: string }
  | { type: "error"; error: ErrorInfo };

/** What the loaded base model is (the page shows it; tests compare it with the files they served). */
export interface ModelInfo {
  /** describeSource of the run's model spec. */
  label: string;
  /** Base-model parameters (every tensor of the checkpoint the config asks for). */
  params: number;
  layers: number;
  hidden: number;
  vocab: number;
  /** "hf": tokenizer.json through transformers.js; "byte": the built-in byte tokenizer. */
  tokenizer: "hf" | "byte";
  /** Σ of every base weight as loaded (float32, summed in float64): a checksum of what was read. */
  weightsSum: number;
}

export interface Status {
  state: RunState;
  runId: string | null;
  step: number;
  total: number;
  envId: string | null;
  agents: string[];
  adapter: string | null;
  model: string | null;
  modelInfo: ModelInfo | null;
  level: string | null;
}

export interface InitInfo {
  runtime: string;
  /** The adapter line (vendor / architecture / description, class), or null with `error`. */
  adapter: string | null;
  adapterClass: "cpu" | "gpu" | null;
  /** Where the matmul picks come from: built-in, or tuned on this adapter (describeTunedPicks). */
  matmulPicks: string | null;
  opfs: boolean;
  error: ErrorInfo | null;
}

export interface LogitsRequest {
  /** Agent whose policy (adapter) scores the prompt. */
  agent: string;
  /** Held-out task index (test split, from env.testSeed) whose first observation is the prompt. */
  task?: number;
  /** Prompt text instead of an observation; `appendIds` extends either. */
  text?: string;
  appendIds?: number[];
}

export interface LogitsResult {
  prompt: string;
  promptIds: number[];
  /** The next-token logits, full vocabulary. */
  logits: Float32Array;
  /** Token texts of the highest-logit ids (the order is the same at every temperature). */
  labels: Record<number, string>;
  agent: string;
  adapter: string;
}

export interface TttView {
  board: Rendered;
  human: string;
  policy: string;
  /** The policy's last message and whether it was a legal move. */
  lastPolicyText: string | null;
  lastPolicyInvalid: string | null;
  over: boolean;
  result: string;
  note: string;
}

/** What tuneKernels measures; by default the last started run's generation and update. */
export interface TuneRequest {
  /** Only variants whose names match this regular expression (the built-in picks always run). */
  variants?: string;
  /** Wall time of each final timing per product (ms). */
  minMs?: number;
  /**
   * Time the sampler's row split at the model's vocabulary (src/model/sampler_tune.ts); "auto"
   * (default): on GPU-class adapters.
   */
  sampler?: SamplerTuneMode;
  /**
   * Time the fused LoRA forward's column split at the run's rank (src/model/lora_tune.ts; LoRA
   * runs only); "auto" (default): on GPU-class adapters.
   */
  lora?: LoraTuneMode;
  /**
   * Time decode attention split over positions at the rollout's longest context
   * (src/model/attention_tune.ts); "auto" (default): on GPU-class adapters.
   */
  attention?: AttentionTuneMode;
  /**
   * Time the loss heads' lanes a row at the update's logit rows (src/train/loss_tune.ts); "auto"
   * (default): on GPU-class adapters.
   */
  loss?: LossTuneMode;
}

/** What tuneKernels found: per bucket the built-in pick and the tuned one, ms a step each. */
export interface TuneReport {
  buckets: TunedBucket[];
  /** The sampler's split at the model's vocabulary, where it was tuned. */
  sampler: TunedSampler | null;
  /** The fused LoRA forward's target, where it was tuned. */
  lora: TunedLoraFused | null;
  /** When decode attention splits over positions, where it was tuned. */
  attention: TunedAttentionSplit | null;
  /** The loss heads' lanes a row at the model's vocabulary, where it was tuned. */
  loss: TunedLoss | null;
  /** Variants that computed a wrong product on this device (never picked). */
  refused: string[];
  seconds: number;
  tunedFor: string;
}

export interface TrainerService {
  init(onEvent: (e: TrainerEvent) => void): Promise<InitInfo>;
  start(req: StartRequest): Promise<{ runId: string }>;
  /** Continue a stored run from its latest checkpoint (local models must be picked again). */
  resumeRun(runId: string, local?: LocalModel): Promise<{ runId: string; step: number }>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
  status(): Promise<Status>;
  listRuns(): Promise<RunInfo[]>;
  deleteRun(runId: string): Promise<void>;
  readMetrics(runId: string): Promise<StepMetrics[]>;
  /** A checkpoint as a ZIP (what: "checkpoint"), or one agent adapter as a PEFT ZIP (what: "adapter:<name>"). */
  exportCheckpoint(
    runId: string,
    name: string,
    what: string,
  ): Promise<{ fileName: string; bytes: Uint8Array }>;
  /** Adapters in a checkpoint (names for the PEFT download menu). */
  checkpointAdapters(runId: string, name: string): Promise<string[]>;
  logits(req: LogitsRequest): Promise<LogitsResult>;
  /** log π of each candidate's completion under the current policy (after the step's update). */
  currentLogprobs(
    agent: string,
    seqs: { promptIds: number[]; completionIds: number[] }[],
  ): Promise<number[][]>;
  tttNew(humanPlays: "player_x" | "player_o"): Promise<TttView>;
  tttMove(cell: number): Promise<TttView>;
  /**
   * Times the matmul kernels on this GPU at the loaded run's products (its model, rollout batch
   * and update chunk) and keeps the fastest in storage: later starts and resumes on this
   * adapter run them. Refused while a run is in progress (BusyError) or before any run has
   * loaded a model (NoSessionError).
   */
  tuneKernels(req?: TuneRequest): Promise<TuneReport>;
  /** Tests: destroys the GPUDevice as a driver reset would. */
  debugLoseDevice(): Promise<void>;
}
