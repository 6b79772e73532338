// The decode cases (test/model/decode_cases.ts) on Deno's adapter; the browser's kernel worker
// runs the same cases on Chromium's.
import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { decodeCases } from "./decode_cases.ts";

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
