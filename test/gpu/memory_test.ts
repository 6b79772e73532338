// GPU bytes by kind (src/gpu/memory.ts): buffers created while a function runs are summed by
// their labels' kind, and the tally reads as one line, largest kind first.

import { assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { formatBytes, formatByteTally, tallyBuffers } from "../../src/gpu/memory.ts";

Deno.test("tallyBuffers sums the buffers created inside by label kind; the device is left as it was", async () => {
  const gpu = await Gpu.create();
  try {
    const made: GPUBuffer[] = [];
    const { bytes } = await tallyBuffers(gpu.device, () => {
      made.push(gpu.zeros(1024, "kcache0"), gpu.zeros(256, "logits"), gpu.zeros(64, "xf"));
      return Promise.resolve();
    });
    assertEquals(bytes.kv_cache, 4096);
    assertEquals(bytes.logits, 1024);
    assertEquals(bytes.activations, 256);
    assertEquals(bytes.params, 0);
    made.push(gpu.zeros(16, "kcache1")); // after: not counted
    assertEquals(bytes.kv_cache, 4096);
    made.forEach((b) => b.destroy());
  } finally {
    gpu.destroy();
  }
});

Deno.test("formatByteTally: the total, then each non-zero kind largest first, in fitting units", () => {
  assertEquals(formatBytes(3 * 2 ** 30), "3.00 GiB");
  assertEquals(formatBytes(233 * 2 ** 20), "233 MiB");
  assertEquals(formatBytes(1.5 * 2 ** 20), "1.5 MiB");
  assertEquals(formatBytes(2048), "2.0 KiB");
  assertEquals(
    formatByteTally({ params: 2 ** 30, kv_cache: 3 * 2 ** 30, logits: 2 ** 29, grads: 0 }),
    "4.50 GiB (KV cache 3.00 GiB, params 1.00 GiB, logits 512 MiB)",
  );
});
