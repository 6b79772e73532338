// Every kernel against its float64 CPU reference on the WebGPU adapter Deno finds.

import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { createOps } from "../../src/ops/mod.ts";
import { kernelCases } from "./cases.ts";

Deno.test("kernels match their float64 references", async (t) => {
  const gpu = await Gpu.create();
  const ops = await createOps(gpu);
  try {
    for (const c of kernelCases(true)) {
      await t.step(c.name, async () => {
        const ratio = await c.run(gpu, ops);
        assert(ratio <= 1, `${c.name}: error is ${ratio.toFixed(2)}× the tolerance`);
      });
    }
  } finally {
    gpu.destroy();
  }
});
