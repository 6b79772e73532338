// A Web Worker that runs the kernel test set (test/ops/cases.ts) on the browser's WebGPU
// adapter; the page talks to it through comlink.
import * as Comlink from "comlink";
import "../shaders.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { createOps } from "../../src/ops/mod.ts";
import { type CaseResult, kernelCases, runCases } from "../../test/ops/cases.ts";
import { samplingCases } from "../../test/model/sampling_cases.ts";
import { decodeCases, gpuClassCases } from "../../test/model/decode_cases.ts";
import { normCases } from "../../test/model/norm_cases.ts";
import { runtimeKind } from "../../src/runtime.ts";

/** Cases in flight at once: their pipelines compile side by side. */
const CONCURRENCY = 4;

const api = {
  /**
   * `only`: run just the cases whose reported name contains it (kernels.html?only=TEXT, for
   * working on a kernel; the suite runs them all).
   */
  async runKernels(thorough = false, only = "") {
    const keep = <C extends { name: string }>(cases: C[], prefix = "") =>
      cases.filter((c) => (prefix + c.name).includes(only));
    const gpu = await Gpu.create();
    try {
      const ops = await createOps(gpu);
      const results: CaseResult[] = await runCases(
        keep(kernelCases(thorough, gpu.subgroups)),
        (c) => c.run(gpu, ops),
        CONCURRENCY,
      );
      results.push(
        ...await runCases(
          keep(samplingCases(), "sampling: "),
          (c) => c.run(gpu),
          CONCURRENCY,
          "sampling: ",
        ),
      );
      results.push(
        ...await runCases(
          keep(decodeCases(), "decode: "),
          (c) => c.run(gpu),
          CONCURRENCY,
          "decode: ",
        ),
      );
      results.push(
        ...await runCases(keep(normCases(), "norm: "), (c) => c.run(gpu), CONCURRENCY, "norm: "),
      );
      // The GPU class's kernels on this adapter: what a laptop's browser runs (SwiftShader's
      // subgroups take the split-K picks' subgroup twins).
      const gpuClass = await Gpu.create({ adapterClass: "gpu" });
      try {
        results.push(
          ...await runCases(
            keep(gpuClassCases(), "decode: "),
            (c) => c.run(gpuClass),
            CONCURRENCY,
            "decode: ",
          ),
        );
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
