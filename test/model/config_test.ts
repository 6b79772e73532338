// config.json parsing: real checkpoints' configs, the presets, HF defaults, the round trip
// through toHFConfig, and one UnsupportedModelError / InvalidConfigError per refused field.

import assert from "node:assert/strict";
import { memoryFolder } from "../../src/io/bytesource.ts";
import {
  loadModelConfig,
  type ModelConfig,
  parseModelConfig,
  toHFConfig,
} from "../../src/model/config.ts";
import { InvalidConfigError, UnsupportedModelError } from "../../src/model/errors.ts";

const readJson = async (path: string) =>
  JSON.parse(await Deno.readTextFile(new URL(path, import.meta.url))) as Record<string, unknown>;
const fixture = (name: string) => readJson(`../fixtures/configs/${name}.json`);
const preset = (name: string) => readJson(`../../configs/models/${name}.json`);

Deno.test("SmolLM2-135M-Instruct (llama): GQA 9:3, tied, no biases", async () => {
  const c = parseModelConfig(await fixture("smollm2-135m-instruct"));
  assert.deepEqual(
    c,
    {
      modelType: "llama",
      vocabSize: 49152,
      hiddenSize: 576,
      intermediateSize: 1536,
      numLayers: 30,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      rmsNormEps: 1e-5,
      ropeTheta: 100000,
      tieWordEmbeddings: true,
      qkvBias: false,
      oBias: false,
      qkNorm: false,
      maxPositionEmbeddings: 8192,
      bosTokenId: 1,
      eosTokenIds: [2],
      padTokenId: 2,
      torchDtype: "bfloat16",
      initializerRange: 0.041666666666666664,
    } satisfies ModelConfig,
  );
});

Deno.test("Qwen2.5-0.5B-Instruct (qwen2): q/k/v biases, sliding window present but off", async () => {
  const c = parseModelConfig(await fixture("qwen2.5-0.5b-instruct"));
  assert.equal(c.modelType, "qwen2");
  assert.deepEqual([c.qkvBias, c.oBias, c.qkNorm, c.tieWordEmbeddings], [true, false, false, true]);
  assert.deepEqual([c.numHeads, c.numKvHeads, c.headDim], [14, 2, 64]);
  assert.deepEqual([c.ropeTheta, c.rmsNormEps, c.bosTokenId, c.eosTokenIds], [1e6, 1e-6, 151643, [
    151645,
  ]]);
  assert.equal(c.padTokenId, null);
});

Deno.test("Qwen3-0.6B (qwen3): explicit head_dim 128 ≠ hidden/heads 64, q/k norms", async () => {
  const c = parseModelConfig(await fixture("qwen3-0.6b"));
  assert.deepEqual([c.headDim, c.hiddenSize / c.numHeads], [128, 64]);
  assert.deepEqual([c.qkNorm, c.qkvBias, c.oBias], [true, false, false]);
});

Deno.test("presets parse and state what the engine expects", async () => {
  const llama = parseModelConfig(await preset("tiny-llama"));
  assert.deepEqual([
    llama.vocabSize % 4,
    llama.hiddenSize,
    llama.numLayers,
    llama.numHeads,
    llama.numKvHeads,
  ], [0, 64, 2, 4, 2]);
  assert.deepEqual(llama.eosTokenIds, [258, 260]);
  const qwen2 = parseModelConfig(await preset("tiny-qwen2"));
  assert.deepEqual([qwen2.qkvBias, qwen2.tieWordEmbeddings], [true, false]);
  const qwen3 = parseModelConfig(await preset("tiny-qwen3"));
  assert.deepEqual([qwen3.qkNorm, qwen3.headDim], [true, 32]);
  const small = parseModelConfig(await preset("small-30m"));
  for (const d of [small.vocabSize, small.hiddenSize, small.intermediateSize, small.headDim]) {
    assert.equal(d % 4, 0);
  }
  assert.equal(small.hiddenSize % 16, 0);
});

Deno.test("HF defaults: kv heads = heads, head_dim = hidden/heads (qwen3: 128), llama bos/eos 1/2", () => {
  const base = {
    vocab_size: 8,
    hidden_size: 32,
    intermediate_size: 16,
    num_hidden_layers: 1,
    num_attention_heads: 4,
  };
  const llama = parseModelConfig({ ...base, model_type: "llama" });
  assert.deepEqual(
    [llama.numKvHeads, llama.headDim, llama.rmsNormEps, llama.ropeTheta, llama.tieWordEmbeddings],
    [4, 8, 1e-6, 10000, false],
  );
  assert.deepEqual([llama.bosTokenId, llama.eosTokenIds, llama.maxPositionEmbeddings], [
    1,
    [2],
    2048,
  ]);
  assert.equal(parseModelConfig({ ...base, model_type: "qwen3" }).headDim, 128);
  const qwen2 = parseModelConfig({
    ...base,
    model_type: "qwen2",
    eos_token_id: [5, 6],
    dtype: "float16",
  });
  assert.deepEqual([qwen2.bosTokenId, qwen2.eosTokenIds, qwen2.torchDtype], [
    null,
    [5, 6],
    "float16",
  ]);
  // transformers v5 moves rope_theta into rope_parameters
  const v5 = parseModelConfig({
    ...base,
    model_type: "llama",
    rope_parameters: { rope_type: "default", rope_theta: 5e5 },
  });
  assert.equal(v5.ropeTheta, 5e5);
  // rope_scaling of type "default" is plain RoPE
  assert.equal(
    parseModelConfig({ ...base, model_type: "llama", rope_scaling: { rope_type: "default" } })
      .ropeTheta,
    10000,
  );
  // llama attention_bias puts biases on q, k, v and o (as LlamaAttention does)
  const biased = parseModelConfig({ ...base, model_type: "llama", attention_bias: true });
  assert.deepEqual([biased.qkvBias, biased.oBias], [true, true]);
});

Deno.test("toHFConfig → parseModelConfig is the identity, and keeps unrelated base fields", async () => {
  for (const name of ["smollm2-135m-instruct", "qwen2.5-0.5b-instruct", "qwen3-0.6b"]) {
    const raw = await fixture(name);
    const c = parseModelConfig(raw);
    const hf = toHFConfig(c, raw);
    assert.deepEqual(parseModelConfig(hf), c, name);
    assert.equal(hf.transformers_version, raw.transformers_version);
    assert.deepEqual(hf.architectures, raw.architectures);
  }
  const small = parseModelConfig(await preset("small-30m"));
  assert.deepEqual(parseModelConfig(JSON.parse(JSON.stringify(toHFConfig(small)))), small);
});

const BASE = {
  model_type: "llama",
  vocab_size: 8,
  hidden_size: 32,
  intermediate_size: 16,
  num_hidden_layers: 1,
  num_attention_heads: 4,
};

/** Each refused setting, and the field the error must name. */
const UNSUPPORTED: [string, Record<string, unknown>][] = [
  ["model_type", { model_type: "mistral" }],
  ["model_type", { model_type: "qwen3_moe" }],
  ["hidden_act", { hidden_act: "gelu" }],
  ["mlp_bias", { mlp_bias: true }],
  ["rope_scaling", { rope_scaling: { rope_type: "llama3", factor: 32 } }],
  ["rope_scaling", { rope_scaling: { type: "linear", factor: 2 } }],
  ["rope_scaling", { rope_scaling: { type: "yarn", factor: 4 } }],
  ["rope_parameters", { rope_parameters: { rope_type: "dynamic", rope_theta: 1e4 } }],
  ["partial_rotary_factor", { partial_rotary_factor: 0.5 }],
  ["use_sliding_window", { model_type: "qwen2", use_sliding_window: true, sliding_window: 4096 }],
  ["layer_types", { model_type: "qwen3", layer_types: ["full_attention", "sliding_attention"] }],
  ["num_experts", { model_type: "qwen2", num_experts: 8 }],
  ["num_local_experts", { num_local_experts: 8 }],
  ["num_experts_per_tok", { num_experts_per_tok: 2 }],
  ["quantization_config", { quantization_config: { quant_method: "gptq", bits: 4 } }],
  ["final_logit_softcapping", { final_logit_softcapping: 30 }],
];

for (const [field, patch] of UNSUPPORTED) {
  Deno.test(`UnsupportedModelError names ${field} (${JSON.stringify(patch).slice(0, 50)})`, () => {
    assert.throws(() => parseModelConfig({ ...BASE, ...patch }), (e: unknown) => {
      assert.ok(e instanceof UnsupportedModelError, String(e));
      assert.equal(e.name, "UnsupportedModelError");
      assert.equal(e.field, field);
      assert.ok(e.message.startsWith(`config.json: ${field} = `), e.message);
      return true;
    });
  });
}

Deno.test("Llama 3.2's llama3 rope scaling is refused with a message that says so", async () => {
  const raw = await fixture("llama-3.2-1b");
  assert.throws(() => parseModelConfig(raw), /rope_type llama3\) is not implemented/);
});

Deno.test("settings that are off or null are accepted (no false alarms)", () => {
  const ok = {
    ...BASE,
    use_sliding_window: false,
    sliding_window: 4096,
    rope_scaling: null,
    mlp_bias: false,
    num_experts_per_tok: null,
    quantization_config: null,
    partial_rotary_factor: 1.0,
    layer_types: ["full_attention"],
    pretraining_tp: 1,
    rope_interleaved: false,
  };
  assert.equal(parseModelConfig(ok).modelType, "llama");
});

const INVALID: [string, Record<string, unknown>][] = [
  ["hidden_size", { hidden_size: undefined }],
  ["vocab_size", { vocab_size: 0 }],
  ["num_hidden_layers", { num_hidden_layers: 1.5 }],
  ["num_key_value_heads", { num_key_value_heads: 3 }],
  ["head_dim", { hidden_size: 30 }],
  ["head_dim", { head_dim: 7 }],
  ["rms_norm_eps", { rms_norm_eps: -1 }],
  ["tie_word_embeddings", { tie_word_embeddings: "yes" }],
  ["eos_token_id", { eos_token_id: [1, "2"] }],
];

for (const [field, patch] of INVALID) {
  Deno.test(`InvalidConfigError names ${field} (${JSON.stringify(patch)})`, () => {
    assert.throws(() => parseModelConfig({ ...BASE, ...patch }), (e: unknown) => {
      assert.ok(e instanceof InvalidConfigError, String(e));
      assert.equal(e.field, field);
      return e.name === "InvalidConfigError";
    });
  });
}

Deno.test("toHFConfig refuses bias layouts its model_type cannot express", () => {
  const c = parseModelConfig({ ...BASE, model_type: "qwen2" });
  assert.throws(() => toHFConfig({ ...c, qkvBias: false }), InvalidConfigError);
  const l = parseModelConfig(BASE);
  assert.throws(() => toHFConfig({ ...l, qkvBias: true }), InvalidConfigError);
});

Deno.test("loadModelConfig reads a folder's config.json and names missing/bad files", async () => {
  const enc = new TextEncoder();
  const good = memoryFolder(new Map([["config.json", enc.encode(JSON.stringify(BASE))]]), "m");
  assert.equal((await loadModelConfig(good)).hiddenSize, 32);
  await assert.rejects(
    loadModelConfig(memoryFolder(new Map(), "empty")),
    /empty has no config.json/,
  );
  const bad = memoryFolder(new Map([["config.json", enc.encode("{")]]), "bad");
  await assert.rejects(loadModelConfig(bad), /bad\/config.json is not valid JSON/);
});
