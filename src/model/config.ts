// Hugging Face config.json → a typed ModelConfig for the decoder-only families this engine
// implements: llama (also SmolLM/SmolLM2), qwen2 (Qwen2/Qwen2.5, q/k/v biases), qwen3
// (per-head q/k RMSNorm, explicit head_dim) and gpt2 (GPT2LMHeadModel: learned absolute
// positions, LayerNorm with bias, fused c_attn, gelu_new MLP with biases; parseGpt2). Anything that would make HF compute a different
// function than ours (rope scaling, sliding windows, MoE, another activation, ...) is refused
// with UnsupportedModelError naming the field: never a silently different model.

import { type Folder, readFolderText } from "../io/bytesource.ts";
import { InvalidConfigError, UnsupportedModelError } from "./errors.ts";

export type ModelType = "llama" | "qwen2" | "qwen3" | "gpt2";

/** The architecture as the engine needs it. HF field names are given per field. */
export interface ModelConfig {
  /** model_type */
  readonly modelType: ModelType;
  /** vocab_size: rows of the embedding and of lm_head (may exceed the tokenizer's vocabulary). */
  readonly vocabSize: number;
  /** hidden_size */
  readonly hiddenSize: number;
  /** intermediate_size: width of the SwiGLU MLP. */
  readonly intermediateSize: number;
  /** num_hidden_layers */
  readonly numLayers: number;
  /** num_attention_heads */
  readonly numHeads: number;
  /** num_key_value_heads (GQA; defaults to num_attention_heads) */
  readonly numKvHeads: number;
  /** head_dim: explicit, else hidden_size / num_attention_heads (qwen3: HF default 128). */
  readonly headDim: number;
  /** rms_norm_eps; for gpt2 layer_norm_epsilon (the eps of its LayerNorms). */
  readonly rmsNormEps: number;
  /** rope_theta (or rope_parameters.rope_theta); unused by gpt2 (learned positions). */
  readonly ropeTheta: number;
  /** tie_word_embeddings: logits use embed_tokens.weight; there is no lm_head.weight. */
  readonly tieWordEmbeddings: boolean;
  /** q/k/v projections have biases: always for qwen2; attention_bias for llama and qwen3. */
  readonly qkvBias: boolean;
  /** o_proj has a bias: attention_bias for llama and qwen3; never for qwen2. */
  readonly oBias: boolean;
  /** Per-head RMSNorm of q and k before RoPE (q_norm, k_norm): qwen3. */
  readonly qkNorm: boolean;
  /** max_position_embeddings (gpt2: n_positions, the rows of wpe) */
  readonly maxPositionEmbeddings: number;
  /** bos_token_id */
  readonly bosTokenId: number | null;
  /** eos_token_id, always as a list (HF allows a number or a list). */
  readonly eosTokenIds: readonly number[];
  /** pad_token_id */
  readonly padTokenId: number | null;
  /** torch_dtype (or dtype): the dtype the weights were saved in, e.g. "bfloat16". */
  readonly torchDtype: string | null;
  /** initializer_range: std of the normal init of weights. */
  readonly initializerRange: number;
}

/** HF class names per model type, for config.json "architectures". */
const ARCHITECTURES: Readonly<Record<ModelType, string>> = {
  llama: "LlamaForCausalLM",
  qwen2: "Qwen2ForCausalLM",
  qwen3: "Qwen3ForCausalLM",
  gpt2: "GPT2LMHeadModel",
};

/** HF defaults of the fields that have one, per model type (from the *Config classes). */
const DEFAULTS: Readonly<Record<ModelType, { maxPos: number; bos: number | null; eos: number[] }>> =
  {
    llama: { maxPos: 2048, bos: 1, eos: [2] },
    qwen2: { maxPos: 32768, bos: null, eos: [] },
    qwen3: { maxPos: 32768, bos: null, eos: [] },
    gpt2: { maxPos: 1024, bos: 50256, eos: [50256] },
  };

/** Knobs of related architectures that change the function computed; refused when set. */
const FOREIGN_KNOBS = [
  "attn_logit_softcapping",
  "final_logit_softcapping",
  "logits_scaling",
  "embedding_multiplier",
  "residual_multiplier",
  "attention_multiplier",
  "no_rope_layers",
];

const MOE_FIELDS = [
  "num_experts",
  "num_local_experts",
  "n_routed_experts",
  "num_experts_per_tok",
  "moe_intermediate_size",
];

type Json = Record<string, unknown>;

/** Parses and validates a config.json object. Throws UnsupportedModelError / InvalidConfigError. */
export function parseModelConfig(json: unknown): ModelConfig {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new InvalidConfigError("(root)", "config.json must be a JSON object");
  }
  const c = json as Json;
  const modelType = parseModelType(c.model_type);
  if (modelType === "gpt2") return parseGpt2(c);
  checkUnsupported(c);
  const numHeads = posInt(c, "num_attention_heads");
  const numKvHeads = c.num_key_value_heads == null ? numHeads : posInt(c, "num_key_value_heads");
  if (numHeads % numKvHeads !== 0) {
    throw new InvalidConfigError(
      "num_key_value_heads",
      `${numKvHeads} does not divide ` +
        `num_attention_heads ${numHeads}; grouped-query attention needs whole groups`,
    );
  }
  const attentionBias = optBool(c, "attention_bias", false);
  const d = DEFAULTS[modelType];
  return {
    modelType,
    vocabSize: posInt(c, "vocab_size"),
    hiddenSize: posInt(c, "hidden_size"),
    intermediateSize: posInt(c, "intermediate_size"),
    numLayers: posInt(c, "num_hidden_layers"),
    numHeads,
    numKvHeads,
    headDim: parseHeadDim(c, modelType, numHeads),
    rmsNormEps: posNum(c, "rms_norm_eps", 1e-6),
    ropeTheta: parseRopeTheta(c),
    tieWordEmbeddings: optBool(c, "tie_word_embeddings", false),
    qkvBias: modelType === "qwen2" ? true : attentionBias,
    oBias: modelType === "qwen2" ? false : attentionBias,
    qkNorm: modelType === "qwen3",
    maxPositionEmbeddings: c.max_position_embeddings == null
      ? d.maxPos
      : posInt(c, "max_position_embeddings"),
    bosTokenId: c.bos_token_id === undefined ? d.bos : optTokenId(c, "bos_token_id"),
    eosTokenIds: c.eos_token_id === undefined ? d.eos : tokenIdList(c, "eos_token_id"),
    padTokenId: optTokenId(c, "pad_token_id"),
    torchDtype: typeof c.torch_dtype === "string"
      ? c.torch_dtype
      : typeof c.dtype === "string"
      ? c.dtype
      : null,
    initializerRange: posNum(c, "initializer_range", 0.02),
  };
}

/**
 * GPT2Config (transformers configuration_gpt2.py) with its defaults: n_embd 768, n_layer 12,
 * n_head 12, n_inner 4·n_embd, n_positions 1024, layer_norm_epsilon 1e-5, activation_function
 * gelu_new, tie_word_embeddings true, bos = eos = 50256. What changes GPT-2's function beyond
 * that (another activation, unscaled or layer-scaled attention, cross-attention) is refused.
 */
function parseGpt2(c: Json): ModelConfig {
  const act = c.activation_function ?? "gelu_new";
  if (act !== "gelu_new") {
    throw new UnsupportedModelError(
      "activation_function",
      act,
      "Only gelu_new (GELU, tanh approximation) is implemented for gpt2.",
    );
  }
  if (c.scale_attn_weights === false) {
    throw new UnsupportedModelError(
      "scale_attn_weights",
      false,
      "Only attention scaled by 1/sqrt(head_dim) is implemented.",
    );
  }
  if (c.scale_attn_by_inverse_layer_idx === true) {
    throw new UnsupportedModelError(
      "scale_attn_by_inverse_layer_idx",
      true,
      "Per-layer attention scaling (Mistral-style GPT-2 variants) is not implemented.",
    );
  }
  if (c.add_cross_attention === true) {
    throw new UnsupportedModelError(
      "add_cross_attention",
      true,
      "Cross-attention (encoder-decoder GPT-2) is not implemented.",
    );
  }
  if (c.quantization_config != null) {
    throw new UnsupportedModelError(
      "quantization_config",
      c.quantization_config,
      "Quantized checkpoints are not implemented; use F32/F16/BF16 weights.",
    );
  }
  const int = (field: string, fallback: number) => c[field] == null ? fallback : posInt(c, field);
  const hidden = int("n_embd", 768);
  const numHeads = int("n_head", 12);
  if (hidden % numHeads !== 0) {
    throw new InvalidConfigError(
      "n_head",
      `${numHeads} does not divide n_embd ${hidden}; GPT-2 heads split n_embd evenly`,
    );
  }
  return {
    modelType: "gpt2",
    vocabSize: int("vocab_size", 50257),
    hiddenSize: hidden,
    intermediateSize: int("n_inner", 4 * hidden),
    numLayers: int("n_layer", 12),
    numHeads,
    numKvHeads: numHeads,
    headDim: hidden / numHeads,
    rmsNormEps: posNum(c, "layer_norm_epsilon", 1e-5),
    ropeTheta: 10000,
    tieWordEmbeddings: optBool(c, "tie_word_embeddings", true),
    qkvBias: true,
    oBias: true,
    qkNorm: false,
    maxPositionEmbeddings: int("n_positions", 1024),
    bosTokenId: c.bos_token_id === undefined ? 50256 : optTokenId(c, "bos_token_id"),
    eosTokenIds: c.eos_token_id === undefined ? [50256] : tokenIdList(c, "eos_token_id"),
    padTokenId: optTokenId(c, "pad_token_id"),
    torchDtype: typeof c.torch_dtype === "string"
      ? c.torch_dtype
      : typeof c.dtype === "string"
      ? c.dtype
      : null,
    initializerRange: posNum(c, "initializer_range", 0.02),
  };
}

function parseModelType(v: unknown): ModelType {
  if (v === "llama" || v === "qwen2" || v === "qwen3" || v === "gpt2") return v;
  if (typeof v === "string" && v.endsWith("_moe")) {
    throw new UnsupportedModelError(
      "model_type",
      v,
      "Mixture-of-experts models are not " +
        "implemented; use a dense llama, qwen2 or qwen3 checkpoint.",
    );
  }
  throw new UnsupportedModelError(
    "model_type",
    v,
    "Supported: llama (Llama, SmolLM, SmolLM2), " +
      "qwen2 (Qwen2, Qwen2.5), qwen3 (dense Qwen3), gpt2 (GPT-2, DistilGPT2). Other " +
      "architectures are not implemented.",
  );
}

/** Every field whose non-default value would change the computed function. */
function checkUnsupported(c: Json): void {
  const act = c.hidden_act ?? "silu";
  if (act !== "silu") {
    throw new UnsupportedModelError("hidden_act", act, "Only silu (SwiGLU MLP) is implemented.");
  }
  if (c.mlp_bias === true) {
    throw new UnsupportedModelError(
      "mlp_bias",
      true,
      "MLP biases are not implemented; use a " +
        "checkpoint with mlp_bias false.",
    );
  }
  checkRopeScaling("rope_scaling", c.rope_scaling);
  checkRopeScaling("rope_parameters", c.rope_parameters);
  if (c.partial_rotary_factor != null && c.partial_rotary_factor !== 1) {
    throw new UnsupportedModelError(
      "partial_rotary_factor",
      c.partial_rotary_factor,
      "Only full-width RoPE is implemented (partial_rotary_factor 1).",
    );
  }
  if (c.use_sliding_window === true) {
    throw new UnsupportedModelError(
      "use_sliding_window",
      true,
      "Sliding-window attention is not " +
        "implemented; set use_sliding_window false only if the model was trained without it.",
    );
  }
  if (Array.isArray(c.layer_types) && c.layer_types.some((t) => t !== "full_attention")) {
    throw new UnsupportedModelError(
      "layer_types",
      c.layer_types.find((t) => t !== "full_attention"),
      "Only full_attention layers are implemented (no sliding-window or linear attention layers).",
    );
  }
  for (const f of MOE_FIELDS) {
    if (typeof c[f] === "number" && (c[f] as number) > 0) {
      throw new UnsupportedModelError(
        f,
        c[f],
        "Mixture-of-experts layers are not implemented; " +
          "use a dense checkpoint.",
      );
    }
  }
  if (c.quantization_config != null) {
    throw new UnsupportedModelError(
      "quantization_config",
      c.quantization_config,
      "Quantized " +
        "checkpoints (GPTQ/AWQ/bitsandbytes) are not implemented; use F32/F16/BF16 weights.",
    );
  }
  for (const f of FOREIGN_KNOBS) {
    if (c[f] != null) {
      throw new UnsupportedModelError(
        f,
        c[f],
        "This knob belongs to another architecture " +
          "(Gemma/Granite/SmolLM3) and is not implemented.",
      );
    }
  }
}

function checkRopeScaling(field: string, v: unknown): void {
  if (v == null) return;
  const r = v as Json;
  const kind = r.rope_type ?? r.type ?? "default";
  if (kind === "default") return;
  const advice = kind === "llama3"
    ? "Llama 3.1/3.2 frequency scaling (rope_type llama3) is not implemented; "
    : `RoPE scaling of type "${kind}" is not implemented; `;
  throw new UnsupportedModelError(
    field,
    v,
    advice + "use a checkpoint whose config has " +
      "rope_scaling null (e.g. SmolLM2, Qwen2.5 without YaRN).",
  );
}

function parseRopeTheta(c: Json): number {
  const params = c.rope_parameters as Json | null | undefined;
  if (params != null && params.rope_theta != null) {
    return posNum(params, "rope_theta", 10000, "rope_parameters.rope_theta");
  }
  return posNum(c, "rope_theta", 10000);
}

function parseHeadDim(c: Json, modelType: ModelType, numHeads: number): number {
  let headDim: number;
  if (c.head_dim != null) {
    headDim = posInt(c, "head_dim");
  } else if (modelType === "qwen3") {
    headDim = 128; // Qwen3Config's default; real Qwen3 configs always state it
  } else {
    const hidden = posInt(c, "hidden_size");
    if (hidden % numHeads !== 0) {
      throw new InvalidConfigError(
        "head_dim",
        `absent and hidden_size ${hidden} is not a ` +
          `multiple of num_attention_heads ${numHeads}; state head_dim explicitly`,
      );
    }
    headDim = hidden / numHeads;
  }
  if (headDim % 2 !== 0) {
    throw new InvalidConfigError("head_dim", `${headDim} is odd; rotate-half RoPE needs pairs`);
  }
  return headDim;
}

function posInt(c: Json, field: string): number {
  const v = c[field];
  if (v === undefined) {
    throw new InvalidConfigError(
      field,
      "missing; HF's large-model defaults are never what a " +
        "checkpoint means, so state it (copy config.json from the checkpoint)",
    );
  }
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new InvalidConfigError(field, `${JSON.stringify(v)} is not a positive integer`);
  }
  return v;
}

function posNum(c: Json, field: string, fallback: number, label = field): number {
  const v = c[field];
  if (v == null) return fallback;
  if (typeof v !== "number" || !(v > 0) || !Number.isFinite(v)) {
    throw new InvalidConfigError(label, `${JSON.stringify(v)} is not a positive number`);
  }
  return v;
}

function optBool(c: Json, field: string, fallback: boolean): boolean {
  const v = c[field];
  if (v == null) return fallback;
  if (typeof v !== "boolean") {
    throw new InvalidConfigError(field, `${JSON.stringify(v)} is not true/false`);
  }
  return v;
}

function isTokenId(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

function optTokenId(c: Json, field: string): number | null {
  const v = c[field];
  if (v == null) return null;
  if (!isTokenId(v)) throw new InvalidConfigError(field, `${JSON.stringify(v)} is not a token id`);
  return v;
}

function tokenIdList(c: Json, field: string): number[] {
  const v = c[field];
  if (v == null) return [];
  if (isTokenId(v)) return [v];
  if (Array.isArray(v) && v.every(isTokenId)) return [...v];
  throw new InvalidConfigError(field, `${JSON.stringify(v)} is not a token id or a list of them`);
}

/**
 * The config.json object for `cfg` (what HF transformers loads). Fields of `base` (e.g. the
 * original config.json of a fine-tuned model) are kept unless `cfg` determines them.
 */
export function toHFConfig(cfg: ModelConfig, base: Readonly<Json> = {}): Json {
  if (cfg.modelType === "gpt2") return toGpt2Config(cfg, base);
  const out: Json = { ...base };
  out.architectures = [ARCHITECTURES[cfg.modelType]];
  out.model_type = cfg.modelType;
  Object.assign(out, {
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numLayers,
    num_attention_heads: cfg.numHeads,
    num_key_value_heads: cfg.numKvHeads,
    head_dim: cfg.headDim,
    hidden_act: "silu",
    rms_norm_eps: cfg.rmsNormEps,
    rope_theta: cfg.ropeTheta,
    rope_scaling: null,
    max_position_embeddings: cfg.maxPositionEmbeddings,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    bos_token_id: cfg.bosTokenId,
    eos_token_id: cfg.eosTokenIds.length === 1 ? cfg.eosTokenIds[0] : [...cfg.eosTokenIds],
    pad_token_id: cfg.padTokenId,
    initializer_range: cfg.initializerRange,
    torch_dtype: cfg.torchDtype,
  });
  delete out.rope_parameters;
  if (cfg.modelType === "qwen2") {
    if (!cfg.qkvBias || cfg.oBias) {
      throw new InvalidConfigError(
        "attention_bias",
        "qwen2 always has q/k/v biases and no " +
          "o_proj bias; use model_type llama for other bias layouts",
      );
    }
    out.use_sliding_window = false;
  } else {
    if (cfg.qkvBias !== cfg.oBias) {
      throw new InvalidConfigError(
        "attention_bias",
        `${cfg.modelType} has one attention_bias ` +
          "flag for q/k/v/o; q/k/v-only biases are qwen2's layout",
      );
    }
    out.attention_bias = cfg.qkvBias;
    if (cfg.modelType === "llama") out.mlp_bias = false;
  }
  if (cfg.qkNorm !== (cfg.modelType === "qwen3")) {
    throw new InvalidConfigError("model_type", "q/k RMSNorm exists exactly in qwen3");
  }
  return out;
}

/** GPT2Config's fields for `cfg` (GPT2LMHeadModel). */
function toGpt2Config(cfg: ModelConfig, base: Readonly<Json>): Json {
  if (
    cfg.numKvHeads !== cfg.numHeads || cfg.headDim * cfg.numHeads !== cfg.hiddenSize ||
    !cfg.qkvBias || !cfg.oBias || cfg.qkNorm
  ) {
    throw new InvalidConfigError(
      "model_type",
      "gpt2 has no grouped-query attention, head_dim = n_embd / n_head, q/k/v/o biases and no q/k norms",
    );
  }
  return {
    ...base,
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    vocab_size: cfg.vocabSize,
    n_embd: cfg.hiddenSize,
    n_layer: cfg.numLayers,
    n_head: cfg.numHeads,
    n_inner: cfg.intermediateSize === 4 * cfg.hiddenSize ? null : cfg.intermediateSize,
    n_positions: cfg.maxPositionEmbeddings,
    n_ctx: cfg.maxPositionEmbeddings,
    activation_function: "gelu_new",
    layer_norm_epsilon: cfg.rmsNormEps,
    scale_attn_weights: true,
    scale_attn_by_inverse_layer_idx: false,
    reorder_and_upcast_attn: false,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    bos_token_id: cfg.bosTokenId,
    eos_token_id: cfg.eosTokenIds.length === 1 ? cfg.eosTokenIds[0] : [...cfg.eosTokenIds],
    pad_token_id: cfg.padTokenId,
    initializer_range: cfg.initializerRange,
    torch_dtype: cfg.torchDtype,
  };
}

/** Reads and parses `config.json` from a model folder. */
export async function loadModelConfig(folder: Folder): Promise<ModelConfig> {
  const text = await readFolderText(folder, "config.json");
  if (text === null) {
    throw new InvalidConfigError(
      "(file)",
      `${folder.name} has no config.json; a model folder ` +
        "needs the HF config.json next to its weights",
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InvalidConfigError(
      "(file)",
      `${folder.name}/config.json is not valid JSON: ` +
        (e as Error).message,
    );
  }
  return parseModelConfig(json);
}
