// A Web Worker that runs the kernel test set (test/ops/cases.ts) on the browser's WebGPU
// adapter; the page talks to it through comlink.
import * as Comlink from "comlink";
import "../shaders.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { createOps } from "../../src/ops/mod.ts";
import { type CaseResult, runKernelCases } from "../../test/ops/cases.ts";
import { samplingCases } from "../../test/model/sampling_cases.ts";
import { decodeCases, gpuClassCases } from "../../test/model/decode_cases.ts";
import { runtimeKind } from "../../src/runtime.ts";

const api = {
  async runKernels(thorough = false) {
    const gpu = await Gpu.create();
    try {
      const ops = await createOps(gpu);
      const results: CaseResult[] = await runKernelCases(gpu, ops, thorough);
      for (
        const [prefix, cases] of [["sampling", samplingCases()], ["decode", decodeCases()]] as const
      ) {
        for (const c of cases) {
          try {
            const ratio = await c.run(gpu);
            results.push({ name: `${prefix}: ${c.name}`, ratio, ok: ratio <= 1 });
          } catch (e) {
            results.push({
              name: `${prefix}: ${c.name}`,
              ratio: Infinity,
              ok: false,
              error: `${(e as Error).name}: ${(e as Error).message}`,
            });
          }
        }
      }
      // The GPU class's kernels on this adapter: what a laptop's browser runs (SwiftShader's
      // subgroups take the split-K picks' subgroup twins).
      const gpuClass = await Gpu.create({ adapterClass: "gpu" });
      try {
        for (const c of gpuClassCases()) {
          try {
            const ratio = await c.run(gpuClass);
            results.push({ name: `decode: ${c.name}`, ratio, ok: ratio <= 1 });
          } catch (e) {
            results.push({
              name: `decode: ${c.name}`,
              ratio: Infinity,
              ok: false,
              error: `${(e as Error).name}: ${(e as Error).message}`,
            });
          }
        }
      } finally {
        gpuClass.destroy();
      }
      // The switch that turns them off.
      const noSubgroups = await Gpu.create({ disableFeatures: ["subgroups"] });
      const subgroupsWhenDisabled = noSubgroups.subgroups;
      noSubgroups.destroy();
      return {
        runtime: runtimeKind(),
        adapter: gpu.describe(),
        subgroups: gpu.subgroups,
        subgroupsWhenDisabled,
        results,
      };
    } finally {
      gpu.destroy();
    }
  },
};

export type KernelWorkerApi = typeof api;
Comlink.expose(api);
