// Seeded initialisation (determinism, HF-like statistics) and the HF folder writer (config,
// generation config, safetensors in each dtype, tokenizer files), read back through the loaders.

import assert from "node:assert/strict";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { denoFolder, writeFilesAtomic } from "../../src/io/deno_files.ts";
import { decode, encode } from "../../src/io/dtypes.ts";
import { SafetensorsCheckpoint } from "../../src/io/safetensors.ts";
import { loadModelConfig, parseModelConfig } from "../../src/model/config.ts";
import { hfFolderFiles, initModel, Rng } from "../../src/model/init.ts";
import { loadTokenizer } from "../../src/model/tokenizer.ts";
import { loadModel, slice } from "../../src/model/weights.ts";

const preset = async (name: string) =>
  parseModelConfig(
    JSON.parse(
      await Deno.readTextFile(new URL(`../../configs/models/${name}.json`, import.meta.url)),
    ),
  );

Deno.test("Rng: xoshiro128** outputs match an independent implementation", () => {
  // First outputs for seeds 0 and 42, from a separate Python transcription of
  // splitmix32 seeding + xoshiro128** (Blackman & Vigna).
  const expected: Record<number, number[]> = {
    0: [3809008728, 1133695204, 53579671, 2891528803, 139681546],
    42: [2837322924, 544945897, 479756282, 3500138142, 339756180],
  };
  for (const [seed, want] of Object.entries(expected)) {
    const r = new Rng(Number(seed));
    assert.deepEqual(want.map(() => r.nextU32()), want);
  }
});

Deno.test("Rng.normal has mean 0 and std 1", () => {
  const r = new Rng(1);
  const n = 200_000;
  let s = 0, ss = 0;
  for (let i = 0; i < n; i++) {
    const x = r.normal();
    s += x;
    ss += x * x;
  }
  assert.ok(Math.abs(s / n) < 0.01, `mean ${s / n}`);
  assert.ok(Math.abs(Math.sqrt(ss / n) - 1) < 0.01, `std ${Math.sqrt(ss / n)}`);
});

Deno.test("initModel: HF statistics — weights N(0, 0.02), norms 1, biases 0, pad row 0", async () => {
  const cfg = await preset("tiny-qwen2");
  const w = initModel(cfg);
  const v = w.layout.layerView(0);
  const gate = slice(w.data, v.gate!);
  const std = Math.sqrt(gate.reduce((a, x) => a + x * x, 0) / gate.length);
  assert.ok(Math.abs(std - 0.02) < 0.001, `gate std ${std}`);
  assert.ok(slice(w.data, v.inputNorm).every((x) => x === 1));
  assert.ok(slice(w.data, v.qBias!).every((x) => x === 0));
  const pad = cfg.padTokenId!;
  const embed = slice(w.data, w.layout.embed);
  assert.ok(embed.subarray(pad * 64, pad * 64 + 64).every((x) => x === 0));
  assert.ok(embed.subarray(0, 64).some((x) => x !== 0));
  // padding between tensors stays zero
  const end = v.qBias!.offset + v.qBias!.size;
  assert.ok(w.data.subarray(end, v.k!.offset).every((x) => x === 0));
});

Deno.test("initModel distribution uniform: the same std, bounded by √3·std, norms and biases as HF", async () => {
  const cfg = await preset("tiny-qwen2");
  const w = initModel(cfg, { distribution: "uniform", seed: 2 });
  const v = w.layout.layerView(0);
  const gate = slice(w.data, v.gate!);
  const std = Math.sqrt(gate.reduce((a, x) => a + x * x, 0) / gate.length);
  assert.ok(Math.abs(std - 0.02) < 0.001, `gate std ${std}`);
  const bound = Math.sqrt(3) * 0.02;
  assert.ok(gate.every((x) => Math.abs(x) <= bound * (1 + 1e-6)), "uniform draws stay in (−a, a)");
  assert.ok(gate.some((x) => Math.abs(x) > 0.9 * bound), "and fill it");
  assert.ok(slice(w.data, v.inputNorm).every((x) => x === 1));
  assert.ok(slice(w.data, v.qBias!).every((x) => x === 0));
  assert.deepEqual(w.data, initModel(cfg, { distribution: "uniform", seed: 2 }).data);
  assert.notDeepEqual(w.data, initModel(cfg, { seed: 2 }).data);
});

Deno.test("initModel is deterministic per (seed, tensor name) and options add noise", async () => {
  const cfg = await preset("tiny-llama");
  assert.deepEqual(initModel(cfg, { seed: 4 }).data, initModel(cfg, { seed: 4 }).data);
  const a = initModel(cfg, { seed: 4 }), b = initModel(cfg, { seed: 5 });
  assert.notDeepEqual(slice(a.data, a.layout.embed), slice(b.data, b.layout.embed));
  // Untying the head adds lm_head.weight without changing any other tensor's values.
  const untied = initModel({ ...cfg, tieWordEmbeddings: false }, { seed: 4 });
  for (const t of a.layout.tensors) {
    assert.deepEqual(slice(a.data, t), slice(untied.data, untied.layout.get(t.name)), t.name);
  }
  const noisy = initModel(await preset("tiny-qwen3"), { normNoise: 0.1, biasStd: 0.1 });
  const qn = slice(noisy.data, noisy.layout.layerView(0).qNorm!);
  assert.ok(
    qn.some((x) => x !== 1) && Math.abs(qn.reduce((s, x) => s + x, 0) / qn.length - 1) < 0.1,
  );
});

Deno.test("hfFolderFiles: a complete HF folder that loads back exactly (F32) and on disk", async () => {
  const w = initModel(await preset("tiny-qwen3"), { seed: 2, normNoise: 0.1 });
  const files = hfFolderFiles(w);
  assert.deepEqual([...files.keys()].sort(), [
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
  ]);
  const gen = JSON.parse(new TextDecoder().decode(files.get("generation_config.json")));
  assert.deepEqual(gen, { bos_token_id: 257, eos_token_id: [258, 260], pad_token_id: 256 });
  const dir = await Deno.makeTempDir();
  try {
    await writeFilesAtomic(dir, files);
    const back = await loadModel(denoFolder(dir));
    assert.deepEqual(back.config, w.config);
    assert.deepEqual(back.data, w.data);
    assert.equal((await loadTokenizer(denoFolder(dir))).kind, "byte");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hfFolderFiles: BF16 weights, torch_dtype, shards, no tokenizer for other vocabularies", async () => {
  const w = initModel(await preset("tiny-llama"), { seed: 1 });
  const files = hfFolderFiles(w, { dtype: "BF16", maxShardBytes: 40_000 });
  assert.ok(files.has("model.safetensors.index.json"));
  const folder = memoryFolder(files);
  assert.equal((await loadModelConfig(folder)).torchDtype, "bfloat16");
  const back = await loadModel(folder);
  assert.deepEqual(back.data, decode("BF16", encode("BF16", w.data)));
  const ckpt = await SafetensorsCheckpoint.open(folder);
  assert.equal(ckpt.info("model.norm.weight").dtype, "BF16");
  const other = initModel({ ...w.config, vocabSize: 300 });
  assert.ok(!hfFolderFiles(other).has("tokenizer.json"));
  assert.ok(hfFolderFiles(other, { tokenizer: "byte" }).has("tokenizer.json"));
});
