// The scale bench's section on a tiny shape: every measurement present and sane, GPU bytes by
// kind consistent with the parameter count, and the PyTorch peer reported as skipped (with why)
// where no Python with torch runs it.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { benchScale } from "./scale_bench.ts";

Deno.test("scale bench: a tiny Qwen2 shape written as an HF folder, measured, no peer", async () => {
  const gpu = await Gpu.create();
  const dir = await Deno.makeTempDir({ prefix: "scale_bench_" });
  try {
    const r = await benchScale(gpu, {
      shapes: [{ name: "tiny", config: "configs/models/tiny-qwen2.json" }],
      batches: [1, 3],
      promptLen: 5,
      newTokens: 3,
      trainBatch: 2,
      trainLen: 8,
      modes: ["lora", "full"],
      rounds: 1,
      dir,
      python: "./no-such-python",
      profile: true,
      longContext: 140,
      // Rows split over 3 sampler workgroups (GPUs split large vocabularies): the B 1 decode is
      // also timed with one workgroup a row.
      sampler: { variant: "workgroup", rowChunks: 3 },
    }, () => {});
    const s = r.shapes[0];
    const names = [...Deno.readDirSync(`${dir}/tiny`)].map((e) => e.name).sort();
    assert(names.includes("config.json") && names.includes("model.safetensors"), `${names}`);
    assertEquals(s.weight_bytes, 4 * s.params);
    assertEquals(s.inference.map((x) => x.batch), [1, 3]);
    assert(r.dispatch_floor_us > 0, `dispatch floor ${r.dispatch_floor_us}`);
    for (const x of s.inference) {
      assert(x.prefill_tok_s > 0 && x.decode_tok_s > 0, JSON.stringify(x));
      // llvmpipe's decode forward is one fused dispatch (GPUs': ~9 a layer).
      assert(x.decode_forward_dispatches >= 1, JSON.stringify(x));
      assert(x.decode_dispatch_floor_tok_s > 0, JSON.stringify(x));
      assert(x.gpu_bytes_by_kind.params >= s.weight_bytes, JSON.stringify(x));
      assert(x.gpu_bytes_by_kind.kv_cache > 0 && x.gpu_bytes_by_kind.grads === 0);
      assertEquals(x.decode_ratio, null);
      // llvmpipe lists timestamp-query: the profile names the LM head's matmul among the kernels.
      assert(x.profile && x.profile.gpu_ms > 0 && x.profile.top.length > 0, JSON.stringify(x));
    }
    const [b1, b3] = s.inference;
    assertEquals([b1.sampler_chunks, b3.sampler_chunks], [3, undefined]);
    assert([32, 64, 128, 256].includes(b1.sampler_workgroup_size!), JSON.stringify(b1));
    for (
      const k of [
        "decode_tok_s_one_sampler_workgroup",
        "decode_tok_s_top_k_p",
        "decode_tok_s_top_k_p_one_sampler_workgroup",
        "sampler_split_gain",
        "sampler_split_gain_top_k_p",
      ] as const
    ) assert(b1[k]! > 0, `${k}: ${JSON.stringify(b1)}`);
    // Decode after 140-token prompts (two 128-position splits where the workgroup attention
    // runs; llvmpipe's lane kernel has none), split and not.
    assertEquals(s.long_context.map((x) => [x.batch, x.prompt_len]), [[1, 140], [4, 140]]);
    for (const x of s.long_context) {
      assert(x.decode_tok_s_split > 0 && x.decode_tok_s_one_workgroup > 0, JSON.stringify(x));
    }
    const [lora, full] = s.train;
    assertEquals([lora.mode, full.mode], ["lora", "full"]);
    for (const t of s.train) {
      assert(t.tok_s > 0 && t.create_s >= 0 && t.first_step_s > 0, JSON.stringify(t));
      // Random init: the first loss is about ln V (264 words).
      assert(Math.abs(t.losses[0] - Math.log(264)) < 0.5, `${t.losses}`);
      assert(
        t.profile && t.profile.top.some((k) => k.kernel.startsWith("matmul")),
        JSON.stringify(t),
      );
    }
    // Full fine-tuning keeps a gradient and two Adam moments per parameter; LoRA only for its adapters.
    assert(full.gpu_bytes_by_kind.grads >= s.weight_bytes, JSON.stringify(full.gpu_bytes_by_kind));
    assert(full.gpu_bytes_by_kind.optimizer >= 2 * s.weight_bytes);
    assert(
      lora.gpu_bytes_by_kind.grads < s.weight_bytes / 2,
      JSON.stringify(lora.gpu_bytes_by_kind),
    );
    assert(
      "skipped" in s.peer && s.peer.skipped.includes("./no-such-python"),
      JSON.stringify(s.peer),
    );
  } finally {
    gpu.destroy();
    await Deno.remove(dir, { recursive: true });
  }
});
