// The LM head in row chunks (TrainerOptions.logitRows): a micro-batch whose logits are computed,
// turned into their gradient and back-propagated 64 rows at a time trains exactly as one that
// holds all its rows' logits at once — same metrics, same updated weights (up to the float
// rounding of summing the head's weight gradient in pieces) — with a logits buffer of 64 rows,
// for the cross-entropy and the policy loss, full and LoRA, and with PPO's value head reading the
// same final hidden state. defaultLogitRows sizes the chunks for 151936-word vocabularies.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { referenceLogprobs } from "../../src/model/reference.ts";
import type { ModelWeights } from "../../src/model/weights.ts";
import type { PolicyLossMetrics } from "../../src/train/losses.ts";
import { reducedConfig } from "../rl/hf_chat_fixtures.ts";
import { seededValues } from "../../src/ops/reference.ts";
import {
  defaultLogitRows,
  ModelTrainer,
  type StepMetrics,
  type TrainerOptions,
  type TrainSequence,
} from "../../src/train/trainer.ts";

async function tiny(): Promise<ModelWeights> {
  const json = JSON.parse(
    await Deno.readTextFile(new URL("../../configs/models/tiny-qwen2.json", import.meta.url)),
  );
  return initModel(parseModelConfig(json), { seed: 3, std: 0.3 });
}

/** 5 sequences, 203 rows: head chunks of 64, 64, 64 and 11 rows. */
function sequences(w: ModelWeights, withValues: boolean): TrainSequence[] {
  const lens = [37, 41, 45, 39, 41];
  return lens.map((n, i) => {
    const tokens = Array.from(seededValues(n, 10 + i, 0, 256), (x) => Math.floor(x));
    const old = referenceLogprobs(w, tokens);
    const m = n - 1;
    return {
      tokens,
      adapter: 0,
      weights: Array.from({ length: m }, (_, t) => (t < 5 ? 0 : 1)),
      advantage: i % 2 ? 1 : -0.7,
      oldLogp: Array.from(old, (x, t) => x + [0, 0.3, -0.3][t % 3]),
      ...(withValues
        ? {
          oldValues: Array.from({ length: m }, (_, t) => 0.1 * (t % 5)),
          returns: Array.from({ length: m }, (_, t) => (t % 2 ? 1 : -1)),
        }
        : {}),
    };
  });
}

const base = (mode: "full" | "lora"): TrainerOptions => ({
  mode,
  lora: { rank: 4, alpha: 8, targets: ["q", "v", "gate", "down"], adapters: ["a0"] },
  // eps 1: AdamW's update is ≈ lr · g for these small gradients, so the weights compare the
  // gradients themselves (with eps 1e-8 it is ≈ lr · sign(g), and rounding flips near-zero ones).
  optimizer: { weightDecay: 0, maxGradNorm: 1, eps: 1 },
  schedule: { kind: "constant", lr: 1e-2, warmupSteps: 0 },
  loss: { kind: "cross-entropy" },
  chunkRows: 256,
  slots: 8,
  maxLen: 64,
});

const maxAbsDiff = (a: Float32Array, b: Float32Array) =>
  a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

async function twoSteps(gpu: Gpu, w: ModelWeights, o: TrainerOptions, seqs: TrainSequence[]) {
  const tr = await ModelTrainer.create(gpu, w, o);
  try {
    const steps: StepMetrics[] = [await tr.step(seqs), await tr.step(seqs)];
    const params = o.mode === "lora" ? (await tr.readLora())! : (await tr.readWeights()).data;
    return {
      steps,
      params,
      logitsBytes: tr.model.logitsBuffer.size,
      logitRows: tr.model.logitRows,
    };
  } finally {
    tr.destroy();
  }
}

const CASES: {
  name: string;
  o: (m: "full" | "lora") => Partial<TrainerOptions>;
  values?: boolean;
}[] = [
  { name: "cross-entropy", o: () => ({}) },
  { name: "policy loss", o: () => ({ loss: { kind: "policy" } }) },
  {
    name: "policy loss with a value head",
    o: () => ({ loss: { kind: "policy" }, valueHead: { coef: 0.5, clip: 0.2 } }),
    values: true,
  },
];

Deno.test("LM head in 64-row chunks trains as the whole micro-batch at once", async (t) => {
  const gpu = await Gpu.create();
  try {
    const w = await tiny();
    const V = w.config.vocabSize;
    for (const mode of ["full", "lora"] as const) {
      for (const c of CASES) {
        await t.step(`${mode}: ${c.name}`, async () => {
          const seqs = sequences(w, c.values ?? false);
          const o = { ...base(mode), ...c.o(mode) };
          const whole = await twoSteps(gpu, w, o, seqs);
          const chunked = await twoSteps(gpu, w, { ...o, logitRows: 64 }, seqs);
          assertEquals(whole.logitRows, 256);
          assertEquals(whole.logitsBytes, 256 * V * 4);
          assertEquals(chunked.logitRows, 64);
          assertEquals(chunked.logitsBytes, 64 * V * 4);
          for (let s = 0; s < 2; s++) {
            const a = whole.steps[s], b = chunked.steps[s];
            for (const [k, x] of Object.entries(a.loss)) {
              const y = (b.loss as unknown as Record<string, number>)[k];
              assert(
                Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(x)),
                `step ${s + 1} ${k}: ${x} whole, ${y} chunked`,
              );
            }
            const g = a.optimizer.gradNorm, h = b.optimizer.gradNorm;
            assert(Math.abs(g - h) <= 1e-5 * g, `step ${s + 1} grad norm ${g} vs ${h}`);
            if (a.value) {
              assert(
                Math.abs(a.value.valueLoss - b.value!.valueLoss) <= 1e-5,
                `value loss ${a.value.valueLoss} vs ${b.value!.valueLoss}`,
              );
            }
          }
          const d = maxAbsDiff(whole.params, chunked.params);
          // Two steps move full-mode weights by ~1e-3; the chunked run's differ by < 1e-7.
          assert(d < 2e-7, `${mode} ${c.name}: weights differ by ${d} after two steps`);
        });
      }
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("a full-vocabulary update whose micro-batch's logits exceed one binding runs in head chunks", async () => {
  // 300 rows × 151936 logits = 174 MiB: over llvmpipe's (and many browsers') 128 MiB binding,
  // which failed every such update with a GpuLimitError before the head was chunked.
  const gpu = await Gpu.create();
  try {
    const w = initModel(await reducedConfig("qwen2.5-0.5b"), { seed: 2 });
    const V = w.config.vocabSize;
    const tokens = Array.from({ length: 300 }, (_, t) => (t * 7919 + 13) % V);
    const seq: TrainSequence = {
      tokens,
      adapter: 0,
      weights: tokens.slice(1).map((_, t) => (t < 100 ? 0 : 1)),
      advantage: 1,
      oldLogp: tokens.slice(1).map(() => -Math.log(V) + 0.05),
    };
    const o: TrainerOptions = {
      ...base("lora"),
      loss: { kind: "policy" },
      chunkRows: 320,
      maxLen: 320,
      slots: 1,
    };
    const metrics = [];
    for (const logitRows of [undefined, 64]) {
      const tr = await ModelTrainer.create(gpu, w, { ...o, logitRows });
      try {
        const maxBinding = gpu.device.limits.maxStorageBufferBindingSize;
        assert(tr.model.logitRows * V * 4 <= maxBinding, `${tr.model.logitRows} rows of logits`);
        metrics.push((await tr.step([seq])).loss);
      } finally {
        tr.destroy();
      }
    }
    const [a, b] = metrics as PolicyLossMetrics[];
    assert(Number.isFinite(a.loss) && Math.abs(a.loss - b.loss) <= 1e-5, `${a.loss} vs ${b.loss}`);
    assert(Math.abs(a.entropy - b.entropy) <= 1e-4, `entropy ${a.entropy} vs ${b.entropy}`);
    assert(a.entropy > 11 && a.entropy < Math.log(V) + 1e-3, `entropy ${a.entropy}`);
  } finally {
    gpu.destroy();
  }
});

Deno.test("defaultLogitRows: all rows for a small vocabulary, 64-row multiples within 256 MiB and one binding for a large one", () => {
  assertEquals(defaultLogitRows(1536, 264, 2 ** 31), 1536);
  assertEquals(defaultLogitRows(1536, 151936, 2 ** 31), 384); // 256 MiB: 441 rows
  assertEquals(defaultLogitRows(1536, 151936, 2 ** 27), 192); // a 128 MiB binding: 220 rows
  assertEquals(defaultLogitRows(300, 151936, 2 ** 31), 300); // all fit
  assertEquals(defaultLogitRows(1536, 4_000_000, 2 ** 27), 64); // never below 64
});

Deno.test("GpuModel: logitRows below chunkRows must be a multiple of 64; more logits than it is a named error", async () => {
  const gpu = await Gpu.create();
  try {
    const w = await tiny();
    const make = (logitRows: number) =>
      GpuModel.create(gpu, w, { slots: 2, maxLen: 64, chunkRows: 256, logitRows, training: true });
    let err: unknown = null;
    await make(100).catch((e) => (err = e));
    assert(err instanceof Error && err.name === "KernelArgumentError", String(err));
    assert((err as Error).message.includes("multiple of 64"), (err as Error).message);
    const m = await make(64);
    try {
      const rec = gpu.recorder();
      assertThrows(() => m.encodeForward(rec, 100, 100), "KernelArgumentError", "encodeHeadRows");
      assertThrows(() => m.encodeHeadRows(rec, 0, 65), "KernelArgumentError", "at most 64 rows");
      assertThrows(() => m.encodeHeadRows(rec, 200, 64), "KernelArgumentError", "256-row chunk");
    } finally {
      m.destroy();
    }
  } finally {
    gpu.destroy();
  }
});
