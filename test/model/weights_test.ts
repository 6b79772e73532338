// The flat parameter layout (names, shapes, 64-float alignment, layerView) and loading a
// safetensors folder into it, with every mismatch between config and checkpoint refused.

import assert from "node:assert/strict";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { decode, encode } from "../../src/io/dtypes.ts";
import {
  MissingTensorError,
  ShapeMismatchError,
  UnsupportedDtypeError,
} from "../../src/io/errors.ts";
import { encodeSafetensors, SafetensorsCheckpoint } from "../../src/io/safetensors.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { UnexpectedTensorError } from "../../src/model/errors.ts";
import { hfFolderFiles, initModel } from "../../src/model/init.ts";
import {
  checkCheckpoint,
  loadModel,
  loadWeights,
  PARAM_ALIGN_FLOATS,
  ParamLayout,
  slice,
  streamWeights,
  weightTensors,
} from "../../src/model/weights.ts";

const readJson = async (path: string) =>
  JSON.parse(await Deno.readTextFile(new URL(path, import.meta.url))) as Record<string, unknown>;
const configOf = async (path: string) => parseModelConfig(await readJson(path));

Deno.test("parameter counts of real models match their published sizes", async () => {
  // Published parameter counts: a check on every shape, bias and q/k norm in the layout.
  const expected: [string, number][] = [
    ["smollm2-135m-instruct", 134_515_008],
    ["qwen2.5-0.5b-instruct", 494_032_768],
    ["qwen3-0.6b", 596_049_920],
  ];
  for (const [name, n] of expected) {
    assert.equal(
      new ParamLayout(await configOf(`../fixtures/configs/${name}.json`)).numParams,
      n,
      name,
    );
  }
  const small = new ParamLayout(await configOf("../../configs/models/small-30m.json"));
  assert.ok(Math.abs(small.numParams - 30e6) < 0.5e6, `small-30m has ${small.numParams}`);
});

Deno.test("layout: every tensor 64-float aligned, in order, disjoint, inside totalFloats", async () => {
  for (const p of ["tiny-llama", "tiny-qwen2", "tiny-qwen3"]) {
    const layout = new ParamLayout(await configOf(`../../configs/models/${p}.json`));
    let end = 0;
    for (const t of layout.tensors) {
      assert.equal(t.offset % PARAM_ALIGN_FLOATS, 0, t.name);
      assert.ok(t.offset >= end, `${t.name} overlaps the previous tensor`);
      assert.equal(t.size, t.shape.reduce((a, b) => a * b, 1));
      end = t.offset + t.size;
    }
    assert.ok(end <= layout.totalFloats && layout.totalFloats - end < PARAM_ALIGN_FLOATS);
    assert.equal(layout.tensors[0].name, "model.embed_tokens.weight");
  }
});

Deno.test("tensor names and shapes per architecture (HF [out, in] layout)", async () => {
  const q3 = new ParamLayout(await configOf("../../configs/models/tiny-qwen3.json"));
  const names = q3.tensors.filter((t) => t.layer === 1).map((t) =>
    t.name.replace("model.layers.1.", "")
  );
  assert.deepEqual(names, [
    "input_layernorm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    "self_attn.o_proj.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
  ]);
  const v = q3.layerView(1);
  // head_dim 32 × 4 heads = 128 ≠ hidden 64: q and o are not square.
  assert.deepEqual([v.q!.shape, v.k!.shape, v.o.shape, v.qNorm?.shape], [[128, 64], [64, 64], [
    64,
    128,
  ], [32]]);
  assert.deepEqual([v.gate!.shape, v.down.shape], [[192, 64], [64, 192]]);
  assert.equal(q3.lmHead, q3.embed); // tied
  assert.ok(!q3.has("lm_head.weight"));
  const q2 = new ParamLayout(await configOf("../../configs/models/tiny-qwen2.json"));
  const v2 = q2.layerView(0);
  assert.deepEqual([v2.qBias?.shape, v2.kBias?.shape, v2.vBias?.shape, v2.oBias], [
    [64],
    [32],
    [32],
    null,
  ]);
  assert.equal(q2.lmHead.name, "lm_head.weight");
  assert.equal(q2.tensors.at(-1)!.name, "lm_head.weight");
  assert.throws(() => q2.layerView(2), RangeError);
});

Deno.test("slice gives views into the flat array at each tensor's offset", async () => {
  const w = initModel(await configOf("../../configs/models/tiny-llama.json"), { seed: 1 });
  const v = w.layout.layerView(0);
  const q = slice(w.data, v.q!);
  q[0] = 42;
  assert.equal(w.data[v.q!.offset], 42);
  assert.equal(q.length, 64 * 64);
});

const fixtureDir = (name: string) => new URL(`../fixtures/${name}`, import.meta.url).pathname;

Deno.test("loadModel reads the micro fixtures; streamWeights visits every tensor in order", async () => {
  const w = await loadModel(denoFolder(fixtureDir("micro-qwen3")));
  assert.equal(w.config.modelType, "qwen3");
  assert.equal(w.data.length, w.layout.totalFloats);
  const ckpt = await SafetensorsCheckpoint.open(denoFolder(fixtureDir("micro-qwen3")));
  const seen: string[] = [];
  await streamWeights(ckpt, w.layout, (t, data) => {
    seen.push(t.name);
    assert.deepEqual(data, slice(w.data, t));
  });
  assert.deepEqual(seen, w.layout.tensors.map((t) => t.name));
  ckpt.close();
});

/** Writes a model to an in-memory folder, optionally editing files first. */
async function roundTrip(
  raw: Record<string, unknown>,
  edit?: (files: Map<string, Uint8Array>) => void,
) {
  const files = hfFolderFiles(initModel(parseModelConfig(raw), { seed: 3, biasStd: 0.1 }));
  edit?.(files);
  return await loadModel(memoryFolder(files, "mem"));
}

const MICRO = await readJson("../fixtures/micro-llama/config.json");

Deno.test("a config that does not match the weights is refused, naming the tensor", async () => {
  const setConfig = (patch: Record<string, unknown>) => (files: Map<string, Uint8Array>) =>
    files.set("config.json", new TextEncoder().encode(JSON.stringify({ ...MICRO, ...patch })));
  await assert.rejects(
    roundTrip(MICRO, setConfig({ num_key_value_heads: 4 })),
    (e: ShapeMismatchError) =>
      e.name === "ShapeMismatchError" && e.tensor === "model.layers.0.self_attn.k_proj.weight" &&
      e.message.includes("[8, 16]") && e.message.includes("[16, 16]"),
  );
  await assert.rejects(
    roundTrip(MICRO, setConfig({ num_hidden_layers: 1 })),
    (e: UnexpectedTensorError) =>
      e.name === "UnexpectedTensorError" && e.tensors.every((t) => t.startsWith("model.layers.1.")),
  );
  await assert.rejects(
    roundTrip(MICRO, setConfig({ num_hidden_layers: 3 })),
    (e: MissingTensorError) =>
      e.name === "MissingTensorError" && e.tensor === "model.layers.2.input_layernorm.weight",
  );
  await assert.rejects(
    roundTrip(MICRO, setConfig({ attention_bias: false })),
    UnexpectedTensorError,
  );
  const tied = { ...MICRO, tie_word_embeddings: true };
  await assert.rejects(
    roundTrip(tied, setConfig({ tie_word_embeddings: false })),
    (e: MissingTensorError) =>
      e.tensor === "lm_head.weight" && e.message.includes("tie_word_embeddings true"),
  );
});

Deno.test("streamWeights refuses a mismatched checkpoint before handing out any tensor", async () => {
  const ref = initModel(parseModelConfig(MICRO), { seed: 2 });
  const ckpt = await SafetensorsCheckpoint.open(memoryFolder(hfFolderFiles(ref)));
  const other = new ParamLayout(parseModelConfig({ ...MICRO, intermediate_size: 20 }));
  const sink = () => assert.fail("no tensor may reach the sink");
  await assert.rejects(streamWeights(ckpt, other, sink), ShapeMismatchError);
});

Deno.test("tied config ignores a checkpoint's lm_head.weight and rotary buffers (as HF does)", async () => {
  const tied = { ...MICRO, tie_word_embeddings: true };
  const w = await roundTrip(tied, (files) => {
    const src = initModel(parseModelConfig(MICRO), { seed: 3 });
    const extra = [
      ...weightTensors(initModel(parseModelConfig(tied), { seed: 3, biasStd: 0.1 })),
      { name: "lm_head.weight", shape: [32, 16], data: slice(src.data, src.layout.lmHead) },
      {
        name: "model.layers.0.self_attn.rotary_emb.inv_freq",
        shape: [2],
        data: new Float32Array(2),
      },
    ];
    files.set("model.safetensors", encodeSafetensors(extra));
  });
  assert.equal(w.layout.lmHead, w.layout.embed);
});

Deno.test("F16/BF16 checkpoints load as the rounded values; non-float dtypes are refused", async () => {
  const ref = initModel(parseModelConfig(MICRO), { seed: 5, biasStd: 0.1 });
  for (const dtype of ["F16", "BF16"] as const) {
    const files = hfFolderFiles(ref, { dtype });
    const w = await loadModel(memoryFolder(files));
    for (const t of ref.layout.tensors) {
      assert.deepEqual(slice(w.data, t), decode(dtype, encode(dtype, slice(ref.data, t))), t.name);
    }
  }
  const tensors = weightTensors(ref);
  const bytes = encodeSafetensors(tensors);
  // Relabel one tensor's dtype as I32 (same width) in the header.
  const text = new TextDecoder().decode(bytes);
  const i = text.indexOf('"model.norm.weight":{"dtype":"F32"');
  const patched = new TextEncoder().encode(
    text.slice(0, i) + text.slice(i).replace('"F32"', '"I32"'),
  );
  const ckpt = await SafetensorsCheckpoint.open(
    memoryFolder(new Map([["model.safetensors", patched]]), "d"),
  );
  assert.throws(
    () => checkCheckpoint(ckpt, ref.layout),
    (e: UnsupportedDtypeError) =>
      e.name === "UnsupportedDtypeError" && e.tensor === "model.norm.weight",
  );
});

Deno.test("loadWeights fills a caller's buffer and checks its size", async () => {
  const ref = initModel(parseModelConfig(MICRO), { seed: 9 });
  const ckpt = await SafetensorsCheckpoint.open(memoryFolder(hfFolderFiles(ref)));
  const into = new Float32Array(ref.layout.totalFloats).fill(NaN);
  assert.equal(await loadWeights(ckpt, ref.layout, into), into);
  for (const t of ref.layout.tensors) assert.deepEqual(slice(into, t), slice(ref.data, t));
  await assert.rejects(loadWeights(ckpt, ref.layout, new Float32Array(3)), RangeError);
});
