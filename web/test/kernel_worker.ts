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
import { lossCases } from "../../test/train/loss_cases.ts";
import { runtimeKind } from "../../src/runtime.ts";

/** The sampling cases also run at 256 threads a workgroup (names containing one of these). */
const WIDE_SAMPLER_CASES = [
  "top-k then top-p V=5003 B=37 (ties at thresholds)",
  "top-p V=5003 B=37 (ties at thresholds)",
  "repetition penalty with every warper V=5003",
  "V=152064",
];

/** Cases in flight at once: their pipelines compile side by side. */
const CONCURRENCY = 4;

const api = {
  /**
   * `only`: run just the cases whose reported name contains it (kernels.html?only=TEXT, for
   * working on a kernel; the suite runs them all).
   */
  async runKernels(thorough = false, only = "") {
    /** The cases whose reported name (prefix + name) contains `only`, run on `on`. */
    const run = <C extends { name: string; run(g: Gpu): Promise<number> }>(
      cases: C[],
      prefix: string,
      on: Gpu,
    ) =>
      runCases(
        cases.filter((c) => (prefix + c.name).includes(only)),
        (c) => c.run(on),
        CONCURRENCY,
        prefix,
      );
    const gpu = await Gpu.create();
    try {
      const ops = await createOps(gpu);
      const results: CaseResult[] = await runCases(
        // Without the texture forms: llvmpipe's paths, tested in Deno's suite; SwiftShader never
        // takes them (and they were ~40% of this page's time).
        kernelCases(thorough, gpu.subgroups, false).filter((c) => c.name.includes(only)),
        (c) => c.run(gpu, ops),
        CONCURRENCY,
      );
      results.push(...await run(samplingCases(), "sampling: ", gpu));
      results.push(...await run(decodeCases().filter((c) => !c.textures), "decode: ", gpu));
      results.push(...await run(normCases(), "norm: ", gpu));
      // The loss heads: SwiftShader's subgroups take their subgroup twin (losses_sg).
      results.push(...await run(lossCases(), "loss: ", gpu));
      // The GPU class's kernels on this adapter: what a laptop's browser runs (SwiftShader's
      // subgroups take the subgroup twins).
      const gpuClass = await Gpu.create({ adapterClass: "gpu" });
      try {
        results.push(...await run(gpuClassCases(), "decode: ", gpuClass));
        // Rows of a 152k vocabulary split over 32 workgroups and merged (sample_chunks,
        // sample_merge): GPUs' default there, compiled by Chrome's WGSL compiler too.
        results.push(
          ...await run(
            samplingCases().filter((c) => c.name.includes("V=152064")),
            "sampling (split rows): ",
            gpuClass,
          ),
        );
      } finally {
        gpuClass.destroy();
      }
      // The sampler at 256 threads a workgroup, a row in one workgroup and split 5 ways: the
      // sampler's tuner may pick either on a GPU (src/model/sampler_tune.ts), and llvmpipe takes
      // ~14 minutes to compile them, so they are checked here, where Chrome's compiler also sees
      // them. The cases with ties at the top-k/top-p thresholds, every warper, and the 152k
      // vocabulary's (all 66 cases passed at both on 2026-11-28; 5 minutes of this page).
      for (const rowChunks of [1, 5]) {
        const options = { variant: "workgroup", workgroupSize: 256, rowChunks } as const;
        const prefix = `sampling (256 threads${rowChunks > 1 ? `, split ${rowChunks}` : ""}): `;
        results.push(
          ...await runCases(
            samplingCases().filter((c) =>
              WIDE_SAMPLER_CASES.some((w) => c.name.includes(w)) &&
              (prefix + c.name).includes(only)
            ),
            (c) => c.run(gpu, options),
            CONCURRENCY,
            prefix,
          ),
        );
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
