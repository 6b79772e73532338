// Every kernel against its float64 CPU reference on the WebGPU adapter Deno finds.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { createModelOps, createOps } from "../../src/ops/mod.ts";
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

Deno.test("a model's ops: the matmuls and the elementwise add, nothing else compiled; another op is a named error", async () => {
  const gpu = await Gpu.create();
  try {
    const before = gpu.pipelines.created;
    const ops = await createModelOps(gpu, { matmulBuckets: ["vector"] });
    const model = gpu.pipelines.created - before;
    await createOps(gpu, { matmulBuckets: ["vector"] });
    // Unary 8, binary and in-place 5 each beyond add, softmax 2, reduce 9.
    assertEquals(
      gpu.pipelines.created - before - model,
      29,
      "createOps compiles what the model left out",
    );
    const x = gpu.upload(new Float32Array([1, 2, 3, 4])),
      y = gpu.upload(new Float32Array([10, 20, 30, 40]));
    const out = gpu.zeros(4);
    const rec = gpu.recorder("model ops");
    ops.elementwise.binary(rec, { op: "add", n: 4 }, x, y, out);
    ops.elementwise.binaryInPlace(rec, { op: "add", n: 4, broadcast: "scalar" }, out, x);
    rec.finish().run();
    assertEquals(Array.from(await gpu.readFloat32(out, 4)), [12, 23, 34, 45]);
    const rec2 = gpu.recorder("not compiled");
    assertThrows(
      () => ops.elementwise.unary(rec2, "exp", 4, x, out),
      "KernelArgumentError",
      'unary op "exp" was not compiled',
    );
    assertThrows(
      () => ops.elementwise.binaryInPlace(rec2, { op: "mul", n: 4 }, out, x),
      "KernelArgumentError",
      'binary op "mul" was not compiled',
    );
  } finally {
    gpu.destroy();
  }
});
