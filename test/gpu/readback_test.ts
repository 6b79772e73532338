// Readback: the bytes of every read are those the GPU wrote before it, whether read early (Deno)
// or after the promise, through reused staging buffers, concurrently and at awkward sizes.

import { assert, assertEquals } from "../assert.ts";
import { Gpu, Readback, readbackFor } from "../../src/gpu/mod.ts";
import { isDeno } from "../../src/runtime.ts";

// Each invocation runs a dependent loop long enough that the GPU is still busy when the
// readback is requested; out[i] = f(i, round) computed the same way on the CPU below.
const SHADER = /* wgsl */ `
struct P { n: u32, round: u32, iters: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x >= p.n) { return; }
  var x = g.x * 2654435761u + p.round;
  for (var i = 0u; i < p.iters; i++) { x = x * 1664525u + 1013904223u; }
  out[g.x] = x;
}`;

function expected(i: number, round: number, iters: number): number {
  let x = (Math.imul(i, 2654435761) + round) >>> 0;
  for (let k = 0; k < iters; k++) x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
  return x;
}

Deno.test("readback returns what the GPU wrote before it", async (t) => {
  const gpu = await Gpu.create();
  const device = gpu.device;
  const n = 4099, iters = 2000;
  const module = device.createShaderModule({ code: SHADER });
  const pipe = device.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
  const out = gpu.zeros(n, "out");
  const params = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  const bind = device.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: params } }, {
      binding: 1,
      resource: { buffer: out },
    }],
  });
  const fill = (round: number) => {
    gpu.write(params, new Uint32Array([n, round, iters, 0]));
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    device.queue.submit([enc.finish()]);
  };
  const check = (got: Uint32Array, round: number, from = 0) => {
    for (let i = 0; i < got.length; i++) {
      if (got[i] !== expected(from + i, round, iters)) {
        throw new Error(
          `round ${round}: out[${from + i}] = ${got[i]}, want ${expected(from + i, round, iters)}`,
        );
      }
    }
  };
  try {
    await t.step("rounds through reused staging buffers never see a stale round", async () => {
      for (let round = 1; round <= 6; round++) {
        fill(round);
        check(new Uint32Array(await gpu.read(out, n * 4)), round);
        fill(round + 100); // a small read of the next round, into another size class
        check(
          new Uint32Array(await gpu.read({ buffer: out, offset: 40, size: 12 })),
          round + 100,
          10,
        );
      }
    });

    await t.step("concurrent reads of different ranges each get their own bytes", async () => {
      fill(7);
      const ranges = [[0, 1], [1, 63], [64, 1000], [2000, 2099], [4096, 3]];
      const got = await Promise.all(
        ranges.map(([at, len]) => gpu.read({ buffer: out, offset: at * 4, size: len * 4 })),
      );
      got.forEach((bytes, k) => check(new Uint32Array(bytes), 7, ranges[k][0]));
    });

    await t.step("sync() resolves after the work submitted before it", async () => {
      const rb = readbackFor(device);
      const before = rb.stats.early + rb.stats.awaited;
      fill(8);
      await gpu.sync();
      check(new Uint32Array(await gpu.read(out, n * 4)), 8);
      if (rb.earlyReads) assertEquals(rb.stats.early + rb.stats.awaited, before + 2);
    });

    await t.step(
      "in Deno the reads are early (no 10 ms promise wait); the awaited path gives the same bytes",
      async () => {
        const rb = readbackFor(device);
        assertEquals(rb.earlyReads, isDeno());
        if (isDeno()) {
          assert(rb.stats.early > 0 && rb.stats.awaited === 0, JSON.stringify(rb.stats));
        }
        const plain = new Readback(device, false);
        fill(9);
        const a = new Uint32Array(await plain.read(out, 0, n * 4));
        check(a, 9);
        assertEquals(plain.stats, { early: 0, awaited: 1 });
        plain.destroy();
      },
    );
  } finally {
    params.destroy();
    out.destroy();
    gpu.destroy();
  }
});

Deno.test("a loop of early reads still lets timers and signal listeners run (the event loop turns)", async () => {
  // Early reads resolve without a macrotask, so a decode loop of them alone would never let
  // the event loop turn: setInterval (train's heartbeat) and Deno.addSignalListener (Ctrl-C)
  // callbacks would wait until the loop ends. Readback yields a turn every so often.
  const gpu = await Gpu.create();
  try {
    const rb = readbackFor(gpu.device);
    const src = gpu.zeros(64, "src");
    let fired = 0;
    const timer = setInterval(() => fired++, 20);
    const t0 = performance.now();
    let reads = 0;
    try {
      while (performance.now() - t0 < 600) {
        await rb.read(src, 0, 256);
        reads++;
      }
    } finally {
      clearInterval(timer);
    }
    assert(reads > 10, `only ${reads} reads`);
    // 600 ms at a 20 ms interval: 30 ticks if the loop turned freely; at least a turn per
    // EVENT_LOOP_TURN_MS (100 ms) lets about 6 through.
    assert(fired >= 3, `the interval fired ${fired} times in 600 ms of reads (${reads} reads)`);
    src.destroy();
  } finally {
    gpu.destroy();
  }
});
