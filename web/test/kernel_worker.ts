// A Web Worker that runs the kernel test set (test/ops/cases.ts) on the browser's WebGPU
// adapter; the page talks to it through comlink.
import * as Comlink from "comlink";
import "../shaders.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { createOps } from "../../src/ops/mod.ts";
import { runKernelCases } from "../../test/ops/cases.ts";
import { runtimeKind } from "../../src/runtime.ts";

const api = {
  async runKernels(thorough = false) {
    const gpu = await Gpu.create();
    try {
      const ops = await createOps(gpu);
      const results = await runKernelCases(gpu, ops, thorough);
      return { runtime: runtimeKind(), adapter: gpu.describe(), results };
    } finally {
      gpu.destroy();
    }
  },
};

export type KernelWorkerApi = typeof api;
Comlink.expose(api);
