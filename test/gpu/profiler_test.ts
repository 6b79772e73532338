// The kernel profiler: per-kernel GPU time from timestamp queries, with every dispatch of a plan
// accounted for, and results that do not change when profiling is on.

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { activeProfiler, GpuProfiler } from "../../src/gpu/profiler.ts";
import { createOps } from "../../src/ops/mod.ts";
import { seededValues } from "../../src/ops/reference.ts";

Deno.test("GpuProfiler times each kernel of a plan and leaves results unchanged", async (t) => {
  const gpu = await Gpu.create();
  if (!gpu.device.features.has("timestamp-query")) {
    await t.step("skipped: this adapter has no timestamp-query", () => {});
    gpu.destroy();
    return;
  }
  const ops = await createOps(gpu);
  const M = 96, K = 80, N = 72;
  const a = gpu.upload(seededValues(M * K, 1)), b = gpu.upload(seededValues(K * N, 2));
  const c1 = gpu.zeros(M * N), c2 = gpu.zeros(M * N);
  try {
    const record = (c: GPUBuffer) => {
      const rec = gpu.recorder();
      ops.matmul.encode(rec, { form: "nn", M, N, K }, a, b, c);
      ops.matmul.encode(rec, { form: "nn", M, N, K, beta: 1 }, a, b, c);
      rec.clear(c2); // a non-dispatch command between dispatches splits the timed batches
      return rec.finish();
    };
    const plain = record(c1);
    plain.run();
    const want = await gpu.readFloat32(c1, M * N);
    const p = new GpuProfiler(gpu.device);
    activeProfiler(p);
    try {
      const profiled = record(c2);
      // clear(c2) runs last in the plan, so run it and then the matmuls again into c2 without it.
      profiled.run();
      const rec = gpu.recorder();
      ops.matmul.encode(rec, { form: "nn", M, N, K }, a, b, c2);
      ops.matmul.encode(rec, { form: "nn", M, N, K, beta: 1 }, a, b, c2);
      rec.submit();
    } finally {
      activeProfiler(null);
    }
    const report = await p.report();
    const got = await gpu.readFloat32(c2, M * N);
    assert(got.every((x, i) => x === want[i]), "profiling changed the result");
    assertEquals(report.reduce((s, r) => s + r.calls, 0), 4, JSON.stringify(report));
    assert(report.every((r) => r.kernel.startsWith("matmul") && r.ms > 0), JSON.stringify(report));
    assert(Math.abs(report.reduce((s, r) => s + r.share, 0) - 1) < 1e-9);
  } finally {
    [a, b, c1, c2].forEach((x) => x.destroy());
    gpu.destroy();
  }
});
