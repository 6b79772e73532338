// The GPT-2 family end to end: config.json parsing, checkpoints with and without the
// `transformer.` prefix (Conv1D weights [in, out] on disk), the float64 reference against the
// independent numpy implementation (test/fixtures/micro-gpt2; transformers' own in
// hf_golden_test.ts), the GPT-2 kernels (LayerNorm with bias, gelu_new, wpe) against float64,
// the GPU forward / KV-cache decode / greedy generation against the reference, finite-difference
// checks of the full and LoRA (c_attn, c_proj, c_fc) backward, and PEFT adapters with GPT-2's
// module names.

import { assert, assertEquals, maxAbsDiff } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { encodeSafetensors, SafetensorsCheckpoint } from "../../src/io/safetensors.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { ModelBackward } from "../../src/model/backward.ts";
import { backwardStep } from "./backward_step.ts";
import { Generator } from "../../src/model/generate.ts";
import { Gpt2Kernels } from "../../src/model/gpt2_kernels.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import type { ModelRow } from "../../src/model/gpu_model_options.ts";
import { hfFolderFiles, initModel, Rng } from "../../src/model/init.ts";
import { LoraAdapters } from "../../src/model/lora.ts";
import { LoraLayout, mergeLora } from "../../src/model/lora_layout.ts";
import {
  geluNew,
  geluNewGrad,
  layerNorm,
  layerNormBackward,
  referenceForward,
  referenceGreedy,
  referenceLogprobs,
} from "../../src/model/reference.ts";
import { loadModel, type ModelWeights, weightTensors } from "../../src/model/weights.ts";
import { seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import { fromPeftAdapter, toPeftAdapter } from "../../src/train/lora_peft.ts";
import { loadPeftAdapter, peftAdapterFiles } from "../../src/train/peft.ts";
import { microGpt2Adapter } from "../fixtures/make_fixtures.ts";

const fixture = new URL("../fixtures/micro-gpt2", import.meta.url).pathname;

async function tinyGpt2(seed = 3): Promise<ModelWeights> {
  const json = JSON.parse(
    await Deno.readTextFile(new URL("../../configs/models/tiny-gpt2.json", import.meta.url)),
  );
  // Larger than HF's 0.02 so attention is far from uniform; noisy LayerNorm weights and biases.
  return initModel(parseModelConfig(json), { seed, std: 0.25, biasStd: 0.2, normNoise: 0.3 });
}

Deno.test("gpt2 config: GPT2Config fields and defaults; knobs that change the function are refused", () => {
  const c = parseModelConfig({ model_type: "gpt2" });
  assertEquals(
    [c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.headDim, c.intermediateSize],
    [50257, 768, 12, 12, 64, 3072],
  );
  assertEquals([
    c.maxPositionEmbeddings,
    c.rmsNormEps,
    c.tieWordEmbeddings,
    c.bosTokenId,
    c.eosTokenIds,
  ], [1024, 1e-5, true, 50256, [50256]]);
  for (
    const bad of [{ activation_function: "relu" }, { scale_attn_weights: false }, {
      scale_attn_by_inverse_layer_idx: true,
    }, { add_cross_attention: true }]
  ) {
    let name = "";
    try {
      parseModelConfig({ model_type: "gpt2", ...bad });
    } catch (e) {
      name = (e as Error).name;
    }
    assertEquals(name, "UnsupportedModelError", JSON.stringify(bad));
  }
});

Deno.test("micro-gpt2: reference logits match the independent numpy GPT2LMHeadModel to 1e-12", async () => {
  const w = await loadModel(denoFolder(fixture));
  const golden = JSON.parse(await Deno.readTextFile(`${fixture}/numpy_logits.json`));
  const { logits } = referenceForward(w, golden.ids);
  assert(
    maxAbsDiff(logits, golden.logits) < 1e-12,
    `max diff ${maxAbsDiff(logits, golden.logits)}`,
  );
  assert(
    maxAbsDiff(logits, new Float64Array(logits.length)) > 0.5,
    "logits are not trivially small",
  );
  // transformers' GPT2LMHeadModel and PEFT: test/model/hf_golden_test.ts.
});

Deno.test("gpt2 checkpoints: Conv1D weights are [in, out] on disk; names without transformer. load the same", async () => {
  const w = await loadModel(denoFolder(fixture));
  const ckpt = await SafetensorsCheckpoint.open(denoFolder(fixture));
  try {
    assertEquals(ckpt.info("transformer.h.0.attn.c_attn.weight").shape, [16, 48]);
    assertEquals(ckpt.info("transformer.h.1.mlp.c_fc.weight").shape, [16, 24]);
    assertEquals(ckpt.info("transformer.h.1.mlp.c_proj.weight").shape, [24, 16]);
    assertEquals(ckpt.info("transformer.wpe.weight").shape, [16, 16]);
    assert(!ckpt.has("lm_head.weight"), "tied head: no lm_head.weight");
  } finally {
    ckpt.close();
  }
  assertEquals(w.layout.layerView(0).qkv!.shape, [48, 16]);
  // GPT2Model-style names (openai-community/gpt2's model.safetensors), plus the old mask buffers.
  const tensors = weightTensors(w).map((t) => ({
    ...t,
    name: t.name.replace(/^transformer\./, ""),
  }));
  tensors.push({ name: "h.0.attn.bias", shape: [1, 1, 16, 16], data: new Float32Array(256) });
  const files = new Map([...hfFolderFiles(w)].filter(([n]) => n !== "model.safetensors"));
  files.set("model.safetensors", encodeSafetensors(tensors));
  const bare = await loadModel(memoryFolder(files, "bare-gpt2"));
  assertEquals(bare.data, w.data);
  // And saving writes what was loaded.
  const again = await loadModel(memoryFolder(hfFolderFiles(w), "again"));
  assertEquals(again.data, w.data);
});

Deno.test("gpt2 kernels against float64: LayerNorm with bias (forward, dx, dw, db), gelu_new (forward, backward), wpe add", async () => {
  const gpu = await Gpu.create();
  try {
    const k = await Gpt2Kernels.create(gpu);
    for (const [rows, cols] of [[5, 16], [70, 48], [3, 7]]) {
      const x = seededValues(rows * cols, 1, -2, 3),
        w = seededValues(cols, 2, 0.5, 1.5),
        b = seededValues(cols, 3);
      const dy = seededValues(rows * cols, 4), dx0 = seededValues(rows * cols, 5);
      const dw0 = seededValues(cols, 6), db0 = seededValues(cols, 7);
      const eps = 1e-5;
      const [X, W, B, DY, DX, DW, DB] = [x, w, b, dy, dx0, dw0, db0].map((a) => gpu.upload(a));
      const out = gpu.zeros(rows * cols), mean = gpu.zeros(rows), rstd = gpu.zeros(rows);
      const rec = gpu.recorder();
      k.layernorm(rec, rows, cols, eps, X, W, B, out, mean, rstd);
      k.layernormBwd(rec, rows, cols, DY, X, W, mean, rstd, DX, true, { dw: DW, db: DB });
      rec.submit();
      const wantOut = new Float64Array(rows * cols), wantDx = Float64Array.from(dx0);
      const wantDw = Float64Array.from(dw0), wantDb = Float64Array.from(db0);
      for (let r = 0; r < rows; r++) {
        const xr = x.subarray(r * cols, (r + 1) * cols),
          dyr = dy.subarray(r * cols, (r + 1) * cols);
        wantOut.set(layerNorm(xr, w, b, eps), r * cols);
        const g = layerNormBackward(xr, w, dyr, eps);
        for (let c = 0; c < cols; c++) {
          wantDx[r * cols + c] += g.dx[c];
          wantDw[c] += g.dw[c];
          wantDb[c] += g.db[c];
        }
      }
      const check = async (buf: GPUBuffer, want: Float64Array, what: string) => {
        const got = await gpu.readFloat32(buf, want.length);
        const ratio = toleranceRatio(got, want, 1e-5, 1e-4);
        assert(ratio <= 1, `${rows}×${cols} ${what}: ${ratio.toFixed(2)}× the tolerance`);
      };
      await check(out, wantOut, "layernorm");
      await check(DX, wantDx, "dx (accumulated)");
      await check(DW, wantDw, "dw");
      await check(DB, wantDb, "db");
      // dx overwritten (no accumulate, no weight gradients)
      const rec2 = gpu.recorder();
      k.layernormBwd(rec2, rows, cols, DY, X, W, mean, rstd, DX, false, null);
      rec2.submit();
      await check(DX, wantDx.map((v, i) => v - dx0[i]), "dx");
      for (const buf of [X, W, B, DY, DX, DW, DB, out, mean, rstd]) buf.destroy();
    }
    // gelu_new over a wide range (tanh saturates: no NaN from exp overflow)
    const n = 1000;
    const x = Float32Array.from({ length: n }, (_, i) => -30 + 60 * i / (n - 1));
    x.set(seededValues(200, 9, -3, 3), 0);
    const dout = seededValues(n, 10);
    const [X, DO] = [x, dout].map((a) => gpu.upload(a));
    const out = gpu.zeros(n), dx = gpu.zeros(n);
    const rec = gpu.recorder();
    k.gelu(rec, n, X, out);
    k.geluBwd(rec, n, DO, X, dx);
    rec.submit();
    const g = await gpu.readFloat32(out, n), d = await gpu.readFloat32(dx, n);
    assert(toleranceRatio(g, Array.from(x, geluNew), 1e-6, 1e-5) <= 1, "gelu_new");
    assert(
      toleranceRatio(d, Array.from(x, (v, i) => dout[i] * geluNewGrad(v)), 1e-6, 1e-5) <= 1,
      "gelu_new backward",
    );
    // geluNewGrad itself against central differences
    for (const v of [-4, -1.3, -0.2, 0, 0.7, 2.5]) {
      const fd = (geluNew(v + 1e-6) - geluNew(v - 1e-6)) / 2e-6;
      assert(Math.abs(fd - geluNewGrad(v)) < 1e-8, `gelu_new'(${v})`);
    }
    // wpe: x[r] += wpe[pos of r]
    const rows = 6, cols = 8, P = 10;
    const wpe = seededValues(P * cols, 11), x0 = seededValues(rows * cols, 12);
    const meta = Uint32Array.from([0, 3, 1, 0, 0, 9, 2, 3, 1, 1, 0, 4]);
    const [WPE, XP] = [wpe, x0].map((a) => gpu.upload(a));
    const M = gpu.upload(new Float32Array(meta.buffer));
    const rec3 = gpu.recorder();
    k.addPosEmbed(rec3, rows, cols, M, WPE, XP);
    rec3.submit();
    const got = await gpu.readFloat32(XP, rows * cols);
    const want = Float64Array.from(
      x0,
      (v, i) => v + wpe[meta[2 * Math.floor(i / cols) + 1] * cols + (i % cols)],
    );
    assert(maxAbsDiff(got, want) < 1e-6, "add_pos_embed");
  } finally {
    gpu.destroy();
  }
});

const PROMPT = [257, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 3, 200, 258];

Deno.test("gpt2 on the GPU: forward, KV-cache decode and greedy generation match the float64 reference", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const dtype of ["F32", "BF16"] as const) {
      await t.step(
        `tiny-gpt2 ${dtype}: logits at every position, both attention kernels`,
        async () => {
          const w = await loadModel(
            memoryFolder(hfFolderFiles(await tinyGpt2(7), { dtype }), `gpt2-${dtype}`),
          );
          const attentionVariant = dtype === "F32" ? "lane" : "workgroup";
          const model = await GpuModel.create(gpu, w, {
            slots: 2,
            maxLen: 64,
            chunkRows: 7,
            attentionVariant,
          });
          try {
            const rows: ModelRow[] = PROMPT.map((token, pos) => ({ token, slot: 1, pos }));
            const got = await model.forward(rows, rows.map((_, i) => i));
            const r = toleranceRatio(got, referenceForward(w, PROMPT).logits, 2e-4, 1e-3);
            assert(r <= 1, `logits differ by ${r.toFixed(2)}× the tolerance`);
          } finally {
            model.destroy();
          }
        },
      );
    }

    await t.step(
      "KV-cache decode equals full recomputation; micro-gpt2 from its folder",
      async () => {
        for (const w of [await tinyGpt2(7), await loadModel(denoFolder(fixture))]) {
          const model = await GpuModel.create(gpu, w, { slots: 3, maxLen: 16 });
          try {
            const ids = PROMPT.slice(0, 12).map((t) => t % w.config.vocabSize);
            const prompt = ids.slice(0, 5), rest = ids.slice(5);
            await model.forward(prompt.map((token, pos) => ({ token, slot: 2, pos })), []);
            const full = referenceForward(w, ids).logits, V = w.config.vocabSize;
            for (let i = 0; i < rest.length; i++) {
              const row = await model.forward(
                [{ token: rest[i], slot: 2, pos: prompt.length + i }],
                [0],
              );
              const p = prompt.length + i;
              const r = toleranceRatio(row, full.subarray(p * V, (p + 1) * V), 2e-4, 1e-3);
              assert(r <= 1, `step ${i}: ${r.toFixed(2)}× tolerance`);
            }
          } finally {
            model.destroy();
          }
        }
      },
    );

    await t.step(
      "batched greedy generation equals the reference's greedy; positions past n_positions are refused",
      async () => {
        const w = await tinyGpt2(12);
        const model = await GpuModel.create(gpu, w, { slots: 3, maxLen: 32 });
        const gen = await Generator.create(model);
        try {
          const prompts = [[257, 72, 105, 33], [257, 10, 20, 30, 40, 50, 60], [257, 99]];
          const got = await gen.generate(
            prompts.map((prompt) => ({ prompt, maxNewTokens: 8, sampling: { temperature: 0 } })),
          );
          prompts.forEach((p, i) =>
            assertEquals(got[i].ids, referenceGreedy(w, p, 8), `prompt ${i}`)
          );
        } finally {
          model.destroy();
        }
        const micro = await loadModel(denoFolder(fixture)); // n_positions 16
        let name = "";
        try {
          (await GpuModel.create(gpu, micro, { slots: 1, maxLen: 17 })).destroy();
        } catch (e) {
          name = (e as Error).name;
        }
        assertEquals(name, "KernelArgumentError", "a cache longer than wpe");
      },
    );
  } finally {
    gpu.destroy();
  }
});

const SEQS = [[257, 72, 101, 108, 108, 111], [257, 40, 33, 200, 40]];

function batchRows(): ModelRow[] {
  const rows: ModelRow[] = [];
  for (let p = 0; p < Math.max(...SEQS.map((s) => s.length)); p++) {
    SEQS.forEach((s, slot) => p < s.length && rows.push({ token: s[p], slot, pos: p }));
  }
  return rows;
}

/** L = Σ G ⊙ logits over the rows, in float64. */
function cpuLoss(w: ModelWeights, rows: ModelRow[], G: Float32Array): number {
  const V = w.config.vocabSize;
  const perSeq = SEQS.map((s) => referenceForward(w, s).logits);
  let L = 0;
  rows.forEach((r, i) => {
    for (let v = 0; v < V; v++) L += G[i * V + v] * perSeq[r.slot][r.pos * V + v];
  });
  return L;
}

/** Central difference of cpuLoss in data[at] (which `w` or a model derived by `derive` reads). */
function fd(data: Float32Array, at: number, loss: () => number): number {
  const orig = data[at], h = 1e-3 * Math.max(1, Math.abs(orig));
  data[at] = orig + h;
  const hi = data[at], lp = loss();
  data[at] = orig - h;
  const lo = data[at], lm = loss();
  data[at] = orig;
  return (lp - lm) / (hi - lo);
}

Deno.test("gpt2 backward matches finite differences of the float64 reference (every tensor; LoRA on c_attn, c_proj, c_fc)", async (t) => {
  const gpu = await Gpu.create();
  try {
    const rows = batchRows(), N = rows.length;
    await t.step(
      "full fine-tuning: every parameter tensor, wpe and the tied head included",
      async () => {
        const w = await tinyGpt2();
        const V = w.config.vocabSize, C = w.config.hiddenSize;
        const model = await GpuModel.create(gpu, w, {
          slots: 2,
          maxLen: 16,
          chunkRows: N,
          training: true,
        });
        const bwd = await ModelBackward.create(model);
        try {
          const G = seededValues(N * V, 11);
          const dlogits = gpu.upload(G);
          backwardStep(gpu, model, bwd, rows, dlogits);
          const rng = new Rng(5), failures: string[] = [];
          for (const tensor of w.layout.tensors) {
            const grad = await gpu.readFloat32(bwd.grads.ref(tensor), tensor.size);
            const scale = grad.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
            assert(scale > 0, `${tensor.name}: zero gradient`);
            let probes = [0, 1, 2].map(() => Math.floor(rng.uniform() * tensor.size));
            if (tensor.role === "embed") {
              const toks = [...new Set(SEQS.flat())];
              probes = [0, 1, 2].map((i) =>
                toks[(i * 5) % toks.length] * C + Math.floor(rng.uniform() * C)
              );
            } else if (tensor.role === "pos_embed") {
              probes = [0, 3, 5].map((p) => p * C + Math.floor(rng.uniform() * C)); // used positions
            }
            for (const i of probes) {
              const want = fd(w.data, tensor.offset + i, () => cpuLoss(w, rows, G));
              if (Math.abs(grad[i] - want) > 2e-3 * scale + 1e-5) {
                failures.push(
                  `${tensor.name}[${i}]: gpu ${grad[i].toExponential(4)} vs fd ${
                    want.toExponential(4)
                  } (scale ${scale.toExponential(2)})`,
                );
              }
            }
          }
          assert(failures.length === 0, `gradient mismatches:\n${failures.join("\n")}`);
          dlogits.destroy();
        } finally {
          bwd.destroy();
          model.destroy();
        }
      },
    );

    await t.step(
      "LoRA on qkv (c_attn), o (attn.c_proj), up (c_fc), down (mlp.c_proj): dA and dB",
      async () => {
        const w = await tinyGpt2();
        const V = w.config.vocabSize;
        // "all" of either family: the Llama-only modules are skipped for gpt2.
        const layout = new LoraLayout(w.config, {
          rank: 4,
          alpha: 8,
          targets: ["q", "k", "v", "o", "gate", "up", "down", "qkv"],
          adapters: ["a"],
        });
        assertEquals([...new Set(layout.entries.map((e) => e.module))], ["o", "up", "down", "qkv"]);
        const data = layout.init(3, 0.2);
        const model = await GpuModel.create(gpu, w, {
          slots: 2,
          maxLen: 16,
          chunkRows: N,
          training: true,
        });
        const lora = await LoraAdapters.create(gpu, layout, N, data);
        model.attachLora(lora);
        const bwd = await ModelBackward.create(model, { trainable: () => false });
        try {
          const G = seededValues(N * V, 13);
          const dlogits = gpu.upload(G);
          const rowsA = rows.map((r) => ({ ...r, adapter: 0 }));
          backwardStep(gpu, model, bwd, rowsA, dlogits);
          const logits = await gpu.readFloat32(model.logitsBuffer, N * V);
          const merged = mergeLora(w, layout, data, 0);
          const perSeq = SEQS.map((s) => referenceForward(merged, s).logits);
          const want = Float64Array.from(
            rows.flatMap((r) => Array.from(perSeq[r.slot].subarray(r.pos * V, (r.pos + 1) * V))),
          );
          assert(
            toleranceRatio(logits, want, 2e-4, 1e-3) <= 1,
            "LoRA forward = merged weights' reference",
          );
          const grads = await gpu.readFloat32(lora.grads, layout.totalFloats);
          const rng = new Rng(9), failures: string[] = [];
          for (const e of layout.entries) {
            const { A, B } = layout.slices(data, e, 0);
            for (const [name, view, off] of [["A", A, e.offsetA], ["B", B, e.offsetB]] as const) {
              const g = grads.subarray(off, off + view.length);
              const scale = g.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
              for (let k = 0; k < 2; k++) {
                const i = Math.floor(rng.uniform() * view.length);
                const want = fd(
                  data,
                  off + i,
                  () => cpuLoss(mergeLora(w, layout, data, 0), rows, G),
                );
                if (Math.abs(g[i] - want) > 2e-3 * scale + 1e-5) {
                  failures.push(
                    `layer ${e.layer} ${e.module} ${name}[${i}]: gpu ${
                      g[i].toExponential(4)
                    } vs fd ${want.toExponential(4)}`,
                  );
                }
              }
            }
          }
          assert(failures.length === 0, `LoRA gradient mismatches:\n${failures.join("\n")}`);
          dlogits.destroy();
        } finally {
          bwd.destroy();
          lora.destroy();
          model.destroy();
        }
      },
    );
  } finally {
    gpu.destroy();
  }
});

Deno.test("gpt2 PEFT adapters: GPT2LMHeadModel module names, fan_in_fan_out, target_modules; round trip", async () => {
  const w = await loadModel(denoFolder(fixture));
  // The shipped fixture's adapter: rank 2 on c_attn, attn.c_proj, c_fc and mlp.c_proj.
  const { layout, data, files } = microGpt2Adapter(w);
  const cfg = JSON.parse(new TextDecoder().decode(files.get("adapter_config.json")!));
  assertEquals(cfg.fan_in_fan_out, true);
  assertEquals(cfg.target_modules, ["c_attn", "c_fc", "c_proj"]);
  const folder = memoryFolder(files, "adapter");
  const ckpt = await SafetensorsCheckpoint.open(folder, "adapter_model.safetensors");
  try {
    assertEquals(ckpt.info("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight").shape, [
      2,
      16,
    ]);
    assertEquals(ckpt.info("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight").shape, [
      48,
      2,
    ]);
    assertEquals(ckpt.info("base_model.model.transformer.h.1.attn.c_proj.lora_B.weight").shape, [
      16,
      2,
    ]);
    assertEquals(ckpt.info("base_model.model.transformer.h.1.mlp.c_fc.lora_B.weight").shape, [
      24,
      2,
    ]);
    assertEquals(ckpt.info("base_model.model.transformer.h.1.mlp.c_proj.lora_A.weight").shape, [
      2,
      24,
    ]);
    assertEquals(ckpt.names().length, 2 * 4 * 2);
  } finally {
    ckpt.close();
  }
  const back = new Float32Array(layout.totalFloats);
  fromPeftAdapter(layout, back, 0, await loadPeftAdapter(folder, w.config), w.config);
  assertEquals(back, data);
  // Only attn's c_proj: PEFT's suffix match needs its path, since "c_proj" would take mlp's too.
  const attnOnly = new LoraLayout(w.config, { rank: 2, alpha: 4, targets: ["o"], adapters: ["x"] });
  const f2 = peftAdapterFiles(toPeftAdapter(attnOnly, attnOnly.init(2, 0.1), 0, "m"), w.config);
  assertEquals(
    JSON.parse(new TextDecoder().decode(f2.get("adapter_config.json")!)).target_modules,
    ["attn.c_proj"],
  );
  const loaded = await loadPeftAdapter(memoryFolder(f2, "a2"), w.config);
  assertEquals(loaded.settings.targetModules, ["attn.c_proj"]);
});

Deno.test("gpt2 LayerNorm: the bias shifts and the weight scales the normalized row (reference)", () => {
  const x = [1, 2, 3, 6];
  const y = layerNorm(x, [1, 1, 1, 1], [0, 0, 0, 0], 0);
  assert(Math.abs(y.reduce((a, b) => a + b, 0)) < 1e-12, "zero mean");
  assert(Math.abs(y.reduce((a, b) => a + b * b, 0) / 4 - 1) < 1e-12, "unit variance (biased)");
  const z = layerNorm(x, [2, 2, 2, 2], [0.5, 0.5, 0.5, 0.5], 0);
  z.forEach((v, i) => assert(Math.abs(v - (2 * y[i] + 0.5)) < 1e-12));
});

Deno.test("deno task logprobs / generate take a GPT-2 folder: the reference's log-probs and greedy tokens", async () => {
  const run = async (file: string, args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL(`../../${file}`, import.meta.url).pathname, ...args],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assertEquals(out.code, 0, text + new TextDecoder().decode(out.stderr));
    return JSON.parse(text.trim().split("\n").at(-1)!);
  };
  const w = await loadModel(denoFolder(fixture));
  const ids = [1, 5, 9, 3, 31, 0];
  const lp =
    (await run("src/cli/logprobs.ts", ["--model", fixture, "--ids", ids.join(","), "--json"]))
      .logprobs as number[];
  const want = referenceLogprobs(w, ids);
  assert(maxAbsDiff(lp, want) < 1e-4, `logprobs differ by ${maxAbsDiff(lp, want)}`);
  const gen = await run("src/cli/generate.ts", [
    "--model",
    fixture,
    "--ids",
    "1,5,9",
    "--max-new-tokens",
    "8",
    "--temperature",
    "0",
    "--json",
  ]);
  assertEquals(gen.ids, referenceGreedy(w, [1, 5, 9], 8));
});
