// The float64 reference against transformers itself: for each micro model (Llama, Qwen2, Qwen3,
// GPT-2), the logits of LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM / GPT2LMHeadModel
// in float64 with eager attention, the greedy tokens of model.generate, and the logits with the
// fixture's LoRA adapter (micro-NAME/peft/, in PEFT's format) loaded by
// PeftModel.from_pretrained. The goldens (micro-NAME/hf_logits.json) are written by
// test/fixtures/hf_golden.py; the adapters by make_fixtures.ts, checked here to be current.

import { assert, assertEquals, maxAbsDiff } from "../assert.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { mergeLoraFloat64 } from "../../src/model/lora_layout.ts";
import { referenceForward, referenceGreedy } from "../../src/model/reference.ts";
import { loadModel } from "../../src/model/weights.ts";
import { microAdapter } from "../fixtures/make_fixtures.ts";

const CLASSES: Record<string, string> = {
  "micro-llama": "LlamaForCausalLM",
  "micro-qwen2": "Qwen2ForCausalLM",
  "micro-qwen3": "Qwen3ForCausalLM",
  "micro-gpt2": "GPT2LMHeadModel",
};

interface HfGolden {
  model_class: string;
  ids: number[];
  shape: [number, number];
  logits: number[];
  greedy_prompt: number[];
  greedy: number[];
  transformers_version: string;
  peft_logits: number[];
  peft_version: string;
  /** The Llama family: the same with its float32 islands in float64 (see below). */
  logits_f64?: number[];
  peft_logits_f64?: number[];
}

// transformers' Llama family computes its RMSNorms, the eager softmax and the rotary embedding in
// float32 even in a float64 model, so its float64 logits carry float32 rounding; the reference
// is float64 throughout. hf_golden.py also records both with exactly those three done in float64
// (transformers' code otherwise untouched): those must match to 1e-12, the shipped ones to F32.
const F32 = 1e-5;

for (const [name, modelClass] of Object.entries(CLASSES)) {
  const dir = new URL(`../fixtures/${name}`, import.meta.url).pathname;
  Deno.test(`${name} = transformers' ${modelClass} in float64 (logits to 1e-12, generate), and with its PEFT adapter`, async () => {
    const w = await loadModel(denoFolder(dir));
    const hf = JSON.parse(await Deno.readTextFile(`${dir}/hf_logits.json`)) as HfGolden;
    assertEquals(hf.model_class, modelClass);
    assertEquals(hf.shape, [hf.ids.length, w.config.vocabSize]);
    const { logits } = referenceForward(w, hf.ids);
    const islands = !!hf.logits_f64;
    assertEquals(
      islands,
      w.config.modelType !== "gpt2",
      "float64-island logits exactly for the Llama family",
    );
    const d = maxAbsDiff(logits, hf.logits_f64 ?? hf.logits);
    assert(d < 1e-12, `transformers ${hf.transformers_version} float64 logits differ by ${d}`);
    if (islands) {
      const d32 = maxAbsDiff(logits, hf.logits);
      assert(d32 < F32, `with transformers' float32 islands: ${d32}`);
      assert(
        d32 > 1e6 * d,
        "the float32 islands move the logits (else logits_f64 is not what it says)",
      );
    }
    assert(
      maxAbsDiff(logits, new Float64Array(logits.length)) > 0.5,
      "logits are not trivially small",
    );
    assertEquals(
      referenceGreedy(w, hf.greedy_prompt, hf.greedy.length),
      hf.greedy,
      "greedy = model.generate",
    );

    // The adapter PEFT loaded is the one make_fixtures.ts makes today.
    const { layout, data, files } = microAdapter(w, name);
    for (const [file, bytes] of files) {
      assertEquals(
        await Deno.readFile(`${dir}/peft/${file}`),
        bytes,
        `peft/${file} is stale: run deno run -A test/fixtures/make_fixtures.ts, then hf_golden.py`,
      );
    }
    const merged = referenceForward(mergeLoraFloat64(w, layout, data, 0), hf.ids).logits;
    assert(maxAbsDiff(merged, logits) > 1e-2, "the fixture's adapter changes the logits");
    const dp = maxAbsDiff(merged, hf.peft_logits_f64 ?? hf.peft_logits);
    assert(dp < 1e-12, `transformers + peft ${hf.peft_version} float64 logits differ by ${dp}`);
    assert(maxAbsDiff(merged, hf.peft_logits) < (islands ? F32 : 1e-12), "peft, float32 islands");
  });
}
