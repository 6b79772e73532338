// The GPU layer: adapter classification, named errors with the compiler's diagnostics,
// pipeline caching, replayable plans that create nothing, the buffer pool and readback.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import {
  classifyAdapter,
  Gpu,
  RecordingCache,
  registerShaders,
  setSubmitChunk,
  shaderSource,
  sizeClass,
} from "../../src/gpu/mod.ts";
import { noAdapterAdvice } from "../../src/gpu/errors.ts";
import { registerShaderTwins } from "../../src/gpu/shaders.ts";
import { createOps } from "../../src/ops/mod.ts";
import { SoftmaxParams } from "../../src/ops/softmax.ts";
import "../../src/model/sampling.ts"; // declares the Shape the lane sampler includes
import "../../src/model/model_kernels.ts"; // the attention's parameters and subgroup twins
import "../../src/train/losses.ts"; // the loss heads' parameters and subgroup twin

Deno.test("classifyAdapter: software rasterisers are CPU-class", () => {
  const base = { vendor: "", architecture: "", device: "", description: "", isFallback: false };
  assertEquals(
    classifyAdapter({ ...base, description: "llvmpipe (LLVM 15.0.6, 256 bits)" }),
    "cpu",
  );
  assertEquals(classifyAdapter({ ...base, vendor: "google", architecture: "swiftshader" }), "cpu");
  assertEquals(classifyAdapter({ ...base, isFallback: true }), "cpu");
  assertEquals(classifyAdapter({ ...base, vendor: "nvidia", architecture: "hopper" }), "gpu");
});

Deno.test("no-adapter advice names the package to install", () => {
  assert(noAdapterAdvice().includes("mesa-vulkan-drivers"));
});

Deno.test("sizeClass rounds up and never shrinks", () => {
  for (const n of [1, 15, 16, 17, 1000, 4096, 1 << 20, (1 << 20) + 1, 5_000_000]) {
    const s = sizeClass(n);
    assert(s >= n && s % 16 === 0, `sizeClass(${n}) = ${s}`);
  }
});

Deno.test("GPU layer on the real adapter", async (t) => {
  const gpu = await Gpu.create();
  try {
    await t.step("describe() names the adapter and its class", () => {
      const d = gpu.describe();
      assert(d.includes(`[${gpu.adapterClass}`), d);
    });

    await t.step("a copy within one buffer is a named error, not a silent WebGPU one", () => {
      const b = gpu.zeros(64, "one buffer"), other = gpu.zeros(64);
      try {
        const rec = gpu.recorder("copies");
        assertThrows(
          () =>
            rec.copy({ buffer: b, offset: 0, size: 64 }, { buffer: b, offset: 128, size: 64 }, 64),
          "KernelArgumentError",
          "within one buffer",
        );
        rec.copy(b, other, 64); // two buffers: fine
        rec.submit();
      } finally {
        b.destroy();
        other.destroy();
      }
    });

    await t.step("a WGSL error raises ShaderCompileError with the compiler's line", async () => {
      registerShaders({
        "bad.wgsl": "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }",
      });
      const err = await assertRejects(
        () => gpu.kernel({ shader: "bad", entry: "main", bindings: [] }),
        "ShaderCompileError",
      );
      assert(
        /f32|u32|float|abstract|type/i.test(err.message),
        `diagnostics should come from the compiler: ${err.message}`,
      );
    });

    await t.step(
      "`//! include NAME` lines take the named shader's text, once per shader",
      async () => {
        registerShaders({
          "inc_leaf.wgsl": "fn leaf() -> u32 { return 7u; }",
          "inc_mid.wgsl": "//! include inc_leaf\nfn mid() -> u32 { return leaf() + 1u; }",
          "inc_top.wgsl":
            "//! include inc_mid\n//! include inc_leaf\n//! include inc_mid\nfn top() -> u32 { return mid() + leaf(); }",
        });
        const src = await shaderSource("inc_top");
        assertEquals(src.match(/fn leaf\(/g)?.length, 1, src);
        assertEquals(src.match(/fn mid\(/g)?.length, 1, src);
        assert(!src.includes("//! include"), src);
        // The lane sampler is built this way: its shared core ends up in the module once.
        const lane = await shaderSource("sampling_lane");
        assertEquals(lane.match(/\nfn sampleRow\(/g)?.length, 1);
      },
    );

    await t.step(
      "a shader's twin swaps the includes it names, at any depth, after its enable directives",
      async () => {
        registerShaders({
          "twin_leaf.wgsl": "fn leaf() -> u32 { return 7u; }",
          "twin_leaf2.wgsl": "fn leaf() -> u32 { return 8u; }",
          "twin_mid.wgsl": "//! include twin_leaf\nfn mid() -> u32 { return leaf(); }",
          "twin_top.wgsl":
            "//! include twin_mid\n//! include twin_leaf\nfn top() -> u32 { return mid(); }",
        });
        registerShaderTwins({
          twin_top2: { base: "twin_top", swap: { twin_leaf: "twin_leaf2" }, enable: ["f16"] },
          twin_none: { base: "twin_top", swap: { twin_nothing: "twin_leaf2" } },
        });
        const src = await shaderSource("twin_top2");
        assert(src.startsWith("enable f16;\n"), src);
        assertEquals(src.match(/fn leaf\(/g)?.length, 1, src);
        assert(src.includes("return 8u") && !src.includes("return 7u"), src);
        assert((await shaderSource("twin_top")).includes("return 7u"), "the base is unchanged");
        // A swap that matches no include would make the twin its base: a named error.
        await assertRejects(() => shaderSource("twin_none"), "Error", "includes no twin_nothing");
        // The vec4 attention's subgroup twin (attention_kernels.ts): one reduce, the subgroup one.
        const sg = await shaderSource("attention4_sg");
        assert(
          sg.startsWith("enable subgroups;\n") && sg.includes("subgroupAdd("),
          "a subgroup twin",
        );
        assertEquals(sg.match(/\nfn reduce\(/g)?.length, 1);
        // The loss heads' twin (losses.ts) swaps their own reduction include: one mergeRow, the
        // subgroup one, and one Lane with the subgroup builtins.
        const loss = await shaderSource("losses_sg");
        assert(
          loss.startsWith("enable subgroups;\n") && loss.includes("subgroupMax("),
          "loss twin",
        );
        assertEquals(loss.match(/\nfn mergeRow\(/g)?.length, 1);
        assertEquals(loss.match(/@builtin\(subgroup_id\)/g)?.length, 1);
      },
    );

    await t.step("a missing entry point raises PipelineCreationError", async () => {
      await assertRejects(
        () =>
          gpu.kernel({
            shader: "softmax",
            entry: "no_such_entry",
            bindings: ["uniform", "read-only-storage", "storage"],
          }),
        "PipelineCreationError",
      );
    });

    await t.step("kernels built at once: each failure is its own, the others build", async () => {
      // Error scopes are one stack per device; concurrent builds must not catch each other's.
      const bindings = ["uniform", "read-only-storage", "storage"] as const;
      const got = await Promise.allSettled([
        gpu.kernel({ shader: "softmax", entry: "softmax", bindings, constants: { WG: 16 } }),
        gpu.kernel({ shader: "softmax", entry: "no_such_entry_2", bindings }),
        gpu.kernel({ shader: "bad", entry: "main", bindings: [] }),
        gpu.kernel({ shader: "softmax", entry: "log_softmax", bindings, constants: { WG: 16 } }),
      ]);
      assertEquals(got.map((r) => r.status), ["fulfilled", "rejected", "rejected", "fulfilled"]);
      const reason = (i: number) => ((got[i] as PromiseRejectedResult).reason as Error).name;
      assertEquals([reason(1), reason(2)], ["PipelineCreationError", "ShaderCompileError"]);
    });

    await t.step("a missing shader file is a clear error", async () => {
      await assertRejects(
        () => gpu.kernel({ shader: "does_not_exist", entry: "main", bindings: [] }),
        undefined,
        "not found",
      );
    });

    await t.step("pipelines are cached by shader, entry and constants", async () => {
      const spec = {
        shader: "softmax",
        entry: "softmax",
        bindings: ["uniform", "read-only-storage", "storage"] as const,
        constants: { WG: 64 },
      };
      const a = await gpu.kernel(spec);
      const before = gpu.pipelines.created;
      const b = await gpu.kernel({ ...spec, constants: { WG: 64 } });
      assert(a === b, "same spec must give the same kernel");
      assertEquals(gpu.pipelines.created, before);
      const c = await gpu.kernel({ ...spec, constants: { WG: 32 } });
      assert(
        c !== a && gpu.pipelines.created === before + 1,
        "other constants compile a new pipeline",
      );
    });

    await t.step("a plan replays many dispatches with no new pipelines", async () => {
      const ops = await createOps(gpu);
      const n = 1000;
      const x = gpu.upload(new Float32Array(n).fill(1));
      const created = gpu.pipelines.created;
      const rec = gpu.recorder("accumulate");
      // x += 1 three times per replay, all recorded into one encoder.
      const one = gpu.upload(new Float32Array([1]));
      for (let i = 0; i < 3; i++) {
        ops.elementwise.binaryInPlace(rec, { op: "add", n, broadcast: "scalar" }, x, one);
      }
      const plan = rec.finish();
      assertEquals(plan.dispatchCount, 3);
      for (let i = 0; i < 5; i++) plan.run();
      const got = await gpu.readFloat32(x, n);
      assertEquals(gpu.pipelines.created, created);
      assert(got.every((v) => v === 16), `expected 16 everywhere, got ${got[0]}`);
      plan.destroy();
      x.destroy();
      one.destroy();
    });

    await t.step(
      "a plan submitted a few dispatches at a time computes what one submission does",
      async () => {
        const ops = await createOps(gpu);
        const x = gpu.upload(new Float32Array([1, 2, 3, 4])), y = gpu.zeros(4);
        const rec = gpu.recorder("chunks");
        for (let i = 0; i < 7; i++) { // x = 2x + 1, seven times; copies split the passes
          ops.elementwise.unary(rec, "affine", 4, x, y, 2, 1);
          rec.copy(y, x, 16);
        }
        const plan = rec.finish();
        const results: number[][] = [];
        for (const chunk of [2, 3, Infinity]) {
          const prev = setSubmitChunk(chunk);
          try {
            gpu.write(x, new Float32Array([1, 2, 3, 4]));
            plan.run();
            results.push([...await gpu.readFloat32(x, 4)]);
          } finally {
            setSubmitChunk(prev);
          }
        }
        const want = [1, 2, 3, 4].map((v) => 128 * (v + 1) - 1);
        results.forEach((r) => assertEquals(r, want));
        assertThrows(() => setSubmitChunk(0), "KernelArgumentError", "positive integer");
        assertEquals(setSubmitChunk(null), null, "no override outside the A/B");
        plan.destroy();
        [x, y].forEach((b) => b.destroy());
      },
    );

    await t.step(
      "a written binding that overlaps another of its dispatch is a named error (browsers refuse it)",
      async () => {
        const ops = await createOps(gpu);
        const buf = gpu.zeros(128), y = gpu.zeros(64);
        const rec = gpu.recorder();
        const args = { op: "add", n: 64 } as const;
        const lo = { buffer: buf, offset: 0, size: 256 },
          hi = { buffer: buf, offset: 256, size: 256 };
        ops.elementwise.binary(rec, args, lo, y, hi); // disjoint ranges of one buffer: fine
        assertThrows(
          () => ops.elementwise.binary(rec, args, buf, y, hi), // the whole buffer read, half written
          "KernelArgumentError",
          "aliased writable bindings",
        );
        assertThrows(
          () =>
            ops.elementwise.binaryInPlace(rec, args, lo, { buffer: buf, offset: 128, size: 256 }),
          "KernelArgumentError",
          "overlaps",
        );
        rec.submit();
        [buf, y].forEach((b) => b.destroy());
      },
    );

    await t.step("dispatches with different uniforms share one arena in one submit", async () => {
      const ops = await createOps(gpu);
      const x = gpu.upload(new Float32Array([1, 2, 3, 4]));
      const y = gpu.zeros(4), z = gpu.zeros(4);
      const rec = gpu.recorder();
      ops.elementwise.unary(rec, "affine", 4, x, y, 2, 1); // y = 2x + 1
      ops.elementwise.unary(rec, "affine", 4, y, z, -1, 0); // z = −y
      rec.submit();
      assertEquals([...await gpu.readFloat32(z, 4)], [-3, -5, -7, -9]);
      [x, y, z].forEach((b) => b.destroy());
    });

    await t.step(
      "identical dispatches share a bind group and a uniform slot; others keep their own",
      async () => {
        const ops = await createOps(gpu);
        const x = gpu.upload(new Float32Array([1, 2, 3, 4]));
        const y = gpu.zeros(4);
        const rec = gpu.recorder();
        for (let i = 0; i < 4; i++) ops.elementwise.unary(rec, "affine", 4, x, y, 2, 1); // the same dispatch 4 times
        ops.elementwise.unary(rec, "affine", 4, x, y, 3, 0); // another uniform
        ops.elementwise.unary(rec, "affine", 4, y, x, 2, 1); // the first uniform, other buffers
        const plan = rec.finish();
        assertEquals(plan.dispatchCount, 6);
        assertEquals(plan.bindGroupCount, 3);
        const slot = gpu.device.limits.minUniformBufferOffsetAlignment;
        assert(
          plan.uniformBytes <= 2 * slot,
          `two distinct uniform blocks, ${plan.uniformBytes} arena bytes`,
        );
        plan.run();
        // y = 3x, then x = 2y + 1: the reused slots hold the right blocks.
        assertEquals([...await gpu.readFloat32(x, 4)], [7, 13, 19, 25]);
        plan.destroy();
        [x, y].forEach((b) => b.destroy());
      },
    );

    await t.step(
      "one-shot recordings share their label's arena and bind groups; queued ones keep their own uniforms",
      async () => {
        const ops = await createOps(gpu);
        const x = gpu.upload(new Float32Array([1, 2, 3, 4]));
        const ys = [gpu.zeros(4), gpu.zeros(4), gpu.zeros(4)];
        const dev = gpu.device, made = { n: 0 };
        const create = dev.createBindGroup.bind(dev);
        dev.createBindGroup = (d: GPUBindGroupDescriptor) => (made.n++, create(d));
        try {
          const step = (a: number, y: GPUBuffer) => {
            const rec = gpu.recorder("cache test");
            ops.elementwise.unary(rec, "affine", 4, x, y, a, 0); // y = a·x
            rec.submit();
          };
          // Four submissions before any is read: each must run with its own uniform, though all
          // write the label's one arena at offset 0.
          step(2, ys[0]);
          const first = made.n;
          step(3, ys[1]);
          step(5, ys[2]);
          assertEquals(made.n, first + 2, "one new group for each new output buffer");
          step(7, ys[0]); // the first step's bindings with another uniform: its group is kept
          assertEquals(made.n, first + 2, "the repeated bindings made no bind group");
          const got = await Promise.all(ys.map((y) => gpu.readFloat32(y, 4)));
          assertEquals(got.map((g) => [...g]), [[7, 14, 21, 28], [3, 6, 9, 12], [5, 10, 15, 20]]);
        } finally {
          dev.createBindGroup = create;
        }
        [x, ...ys].forEach((b) => b.destroy());
      },
    );

    await t.step("the recording cache keeps the most recently used groups", () => {
      const cache = new RecordingCache(gpu.device, 2);
      const made: string[] = [];
      const get = (k: string) => cache.group(k, () => (made.push(k), {} as GPUBindGroup));
      ["a", "b", "a", "c", "a", "b"].forEach(get);
      // c evicts b (a was used since); b then evicts c.
      assertEquals(made, ["a", "b", "c", "b"]);
      assertEquals(cache.size, 2);
      const small = cache.arena("l", 100), same = cache.arena("l", 4096);
      assert(small === same && small.size === 4096, "one 4 KiB arena for both");
      const big = cache.arena("l", 5000);
      assert(big !== small && big.size === 8192, "grown to the next power of two");
      const plan = cache.arena("plan:m", 10);
      cache.dropShared("m"); // a model's plans' arena, freed with the model
      assert(cache.arena("plan:m", 10) !== plan, "a dropped arena is not handed out again");
      cache.destroy();
    });

    await t.step("binding-count mismatches are KernelArgumentError", async () => {
      const k = await gpu.kernel({
        shader: "softmax",
        entry: "softmax",
        bindings: ["uniform", "read-only-storage", "storage"],
        constants: { WG: 64 },
      });
      const rec = gpu.recorder();
      assertThrows(
        () => rec.dispatch(k, [null], [1], SoftmaxParams.pack({ rows: 1, cols: 1 })),
        "KernelArgumentError",
      );
    });

    await t.step("the buffer pool recycles by size class", () => {
      const a = gpu.pool.acquire(1000);
      gpu.pool.release(a);
      const b = gpu.pool.acquire(1010);
      assert(a === b, "a released buffer of the same class is reused");
      const c = gpu.pool.acquire(1010);
      assert(c !== b, "a live buffer is never handed out twice");
      gpu.pool.release(b);
      gpu.pool.release(c);
    });

    await t.step("readback of a byte range", async () => {
      const buf = gpu.upload(new Float32Array([0, 1, 2, 3, 4, 5, 6, 7]));
      assertEquals([...await gpu.readFloat32({ buffer: buf, offset: 16, size: 16 })], [4, 5, 6, 7]);
      buf.destroy();
    });
  } finally {
    gpu.destroy();
  }
});

Deno.test("device loss is reported with a DeviceLostError", async () => {
  let seen: Error | null = null;
  const gpu = await Gpu.create({ onLost: (e) => (seen = e) });
  gpu.device.destroy();
  const err = await gpu.ctx.lost;
  assertEquals(err.name, "DeviceLostError");
  assert(err.message.includes("createGpu"), err.message);
  assert(seen !== null);
});
