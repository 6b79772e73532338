// pettingllms-webgpu as a library: the AT-GRPO trainer, evaluation, the environments, the
// sandbox, and the WebGPU model engine (forward, generation, training), for scripts and the
// web app. Deno-only pieces (run directories, files) are marked; the rest also runs in browsers.

// AT-GRPO
export { train, type TrainOptions, type TrainSummary } from "./rl/train.ts"; // Deno
export {
  type LoopControl,
  RlSession,
  runSession,
  type RunSink,
  type SessionInit,
  type StepMetrics,
} from "./rl/session.ts";
export { envForConfig } from "./rl/env_for.ts";
export { type EvalResult, evaluate } from "./rl/evaluate.ts";
export { metricScalars } from "./rl/metric_scalars.ts";
export { newWandbRunId, type WandbOptions, WandbRun } from "./rl/wandb.ts";
export {
  crc32c,
  eventRecord,
  eventsFileName,
  fileVersionRecord,
  type TfEvent,
  tfRecord,
} from "./io/tfevents.ts";
export {
  defaultConfig,
  describeConfig,
  loadConfigFile,
  parseConfig,
  type RunConfig,
} from "./rl/config.ts";
export {
  buildGroups,
  filterGroups,
  groupAdvantages,
  mixReward,
  rewardStats,
} from "./rl/advantages.ts";
export { buildPolicyMap, policyMapFor } from "./rl/policy_map.ts";
export {
  rolloutIndependent,
  type RolloutOptions,
  type RolloutResult,
  rolloutTree,
} from "./rl/rollout.ts";
export { EndpointError, type EndpointOptions, EndpointSampler } from "./rl/endpoint.ts";

// The model server (OpenAI-compatible API; docs/serve.md)
export { BatchQueue, type BatchQueueOptions } from "./serve/batcher.ts";
export { ApiError, openAiHandler, type ServerModel } from "./serve/openai.ts";
export { createModelServer, type ModelServer, startServer } from "./serve/server.ts"; // startServer: Deno

// Environments and the sandbox
export { envIds, ENVS, getEnv, soloEnvFor } from "./envs/registry.ts";
export type {
  AnyEnvDefinition,
  CodeExecutor,
  EnvDefinition,
  EnvState,
  Prompt,
} from "./envs/types.ts";
export { runJs, SandboxPool } from "./sandbox/mod.ts";

// The engine
export { Gpu } from "./gpu/mod.ts";
export { createOps } from "./ops/mod.ts";
export { type ModelConfig, parseModelConfig } from "./model/config.ts";
export { loadModel, type ModelWeights, type ModelWeights64 } from "./model/weights.ts";
export { hfFolderFiles, initModel } from "./model/init.ts";
export { ByteTokenizer, loadTokenizer, type Tokenizer } from "./model/tokenizer.ts";
export { GpuModel } from "./model/gpu_model.ts";
export type { GpuModelOptions, ModelRow } from "./model/gpu_model_options.ts";
export { type GenerateRequest, type GenerateResult, Generator } from "./model/generate.ts";
export { LoraAdapters } from "./model/lora.ts";
export { LoraLayout, mergeLora, mergeLoraFloat64 } from "./model/lora_layout.ts";
export { ModelTrainer, type TrainerOptions, type TrainSequence } from "./train/trainer.ts";
