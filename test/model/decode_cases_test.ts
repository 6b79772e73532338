// The decode cases (test/model/decode_cases.ts) on Deno's adapter; the browser's kernel worker
// runs the same cases on Chromium's.
import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { decodeCases, gpuClassCases, gpuClassDenoCases } from "./decode_cases.ts";

Deno.test("decode cases", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const c of decodeCases()) {
      await t.step(c.name, async () => {
        const ratio = await c.run(gpu);
        assert(ratio <= 1, `${ratio}× the tolerance`);
      });
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("decode cases of the GPU class's kernels, on this adapter", async (t) => {
  const gpu = await Gpu.create({ adapterClass: "gpu" });
  try {
    for (const c of [...gpuClassCases(), ...gpuClassDenoCases()]) {
      await t.step(c.name, async () => {
        const ratio = await c.run(gpu);
        assert(ratio <= 1, `${ratio}× the tolerance`);
      });
    }
  } finally {
    gpu.destroy();
  }
});
