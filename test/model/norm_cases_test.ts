// The RMSNorm cases (test/model/norm_cases.ts) on Deno's adapter; the browser's kernel worker
// runs the same cases on Chromium's.
import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { normCases } from "./norm_cases.ts";

Deno.test("RMSNorm kernels against float64: forward, Qwen3's pair and backward, both forms", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const c of normCases()) {
      await t.step(c.name, async () => {
        const ratio = await c.run(gpu);
        assert(ratio <= 1, `${ratio}× the tolerance`);
      });
    }
  } finally {
    gpu.destroy();
  }
});
