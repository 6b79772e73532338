// `npx deno task bench`: the benchmarks, each measured beside a peer in the same run, printed as
// one JSON object on the last line of stdout (progress goes to stderr).
//   --lab         time every matmul variant and print the picks for src/ops/tuning.ts
//   --variants RE the lab times only the variants whose names match (with the fallback)
//   --model-shapes  the lab times a real model's training and prefill GEMMs instead
//   --half        the lab also times each variant with B as half floats (frozen weights)
//   --quick       smaller shapes (a smoke run)
//   --only NAMES  comma-separated sections: matmul, inference, train, rl, sandbox, scale
//                 (scale, real model sizes, runs by default only on a GPU-class adapter)

import { Gpu } from "../../src/gpu/mod.ts";
import { runtimeDescription } from "../../src/runtime.ts";
import { cpuPeak } from "./cpu_peak.ts";
import { compareWithTfjs, runLab } from "./matmul_lab.ts";
import { round } from "./timing.ts";
import { describeTunedPicks } from "../../src/ops/tuned_picks.ts";
import { benchInference } from "./inference_bench.ts";
import { benchTrain } from "./train_bench.ts";
import { benchRl } from "./rl_bench.ts";
import { benchScale, SCALE_QUICK_SHAPES, SCALE_SHAPES, type ScaleShape } from "./scale_bench.ts";
import {
  defineCli,
  parseArgs,
  parseArgsOrExit,
  runMain,
  UsageError,
} from "../../src/cli/cli_args.ts";

export const BENCH_SECTIONS = ["matmul", "inference", "train", "rl", "sandbox", "scale"] as const;

export const BENCH_CLI = defineCli({
  command: "npx deno task bench",
  summary:
    "Benchmarks, each beside a peer in the same run: one JSON object on the last line of stdout (progress on stderr).",
  flags: {
    lab: {
      type: "boolean",
      help: "time every matmul variant and print the picks for src/ops/tuning.ts",
    },
    variants: {
      type: "string",
      metavar: "REGEX",
      help: "matmul --lab: time only the variants whose names match (and the fallback)",
    },
    "model-shapes": {
      type: "boolean",
      help:
        "matmul --lab: Qwen2.5-0.5B's training and prefill GEMMs (1024 and 512 rows, LM head) instead of the square and skinny set",
    },
    half: {
      type: "boolean",
      help:
        "matmul --lab: also time each variant's half-B twin (weights as half floats) on the A·Bᵀ and A·B shapes, and with --model-shapes at decode rows too",
    },
    quick: { type: "boolean", help: "smaller shapes (a smoke run)" },
    shapes: {
      type: "string",
      metavar: "NAMES",
      help: "scale: the shapes to measure (default all: smollm2-135m,qwen2.5-0.5b,qwen3-0.6b)",
    },
    "half-base": {
      type: "boolean",
      help:
        "scale: our models with the frozen base in half floats (inference and the LoRA trainer; full training stays f32)",
    },
    profile: {
      type: "boolean",
      help:
        "scale: also the top kernels by GPU time of one generate and one train step (timestamp-query)",
    },
    "long-context": {
      type: "string",
      metavar: "TOKENS",
      help:
        "scale: also decode at batch 1 and 4 after prompts of TOKENS tokens, the attention split over positions and not",
    },
    only: {
      type: "string",
      metavar: BENCH_SECTIONS.join(","),
      help:
        "comma-separated sections to run (default all; scale, real model sizes with PyTorch beside, only on a GPU-class adapter unless named)",
    },
  },
});

/** The flags, with --only's names checked: an unknown section is a UsageError naming the valid ones. */
export function parseBenchArgs(argv: readonly string[]) {
  const a = parseArgs(BENCH_CLI, argv);
  const only = a.only === undefined ? null : a.only.split(",").map((s) => s.trim()).filter(Boolean);
  if (only) {
    if (only.length === 0) {
      throw new UsageError(`--only needs at least one of ${BENCH_SECTIONS.join(", ")}`);
    }
    const bad = only.filter((s) => !(BENCH_SECTIONS as readonly string[]).includes(s));
    if (bad.length) {
      throw new UsageError(
        `--only ${a.only}: no section named ${bad.join(", ")} (the sections: ${
          BENCH_SECTIONS.join(", ")
        })`,
      );
    }
  }
  let shapes: ScaleShape[] | null = null;
  if (a.shapes !== undefined) {
    const names = a.shapes.split(",").map((s) => s.trim()).filter(Boolean);
    const known = [...SCALE_SHAPES, ...SCALE_QUICK_SHAPES];
    const bad = names.filter((n) => !known.some((k) => k.name === n));
    if (bad.length || names.length === 0) {
      throw new UsageError(
        `--shapes ${a.shapes}: no shape named ${bad.join(", ") || "(none)"} (the shapes: ${
          known.map((k) => k.name).join(", ")
        })`,
      );
    }
    shapes = names.map((n) => known.find((k) => k.name === n)!);
  }
  let variants: RegExp | undefined;
  if (a.variants !== undefined) {
    try {
      variants = new RegExp(a.variants);
    } catch (e) {
      throw new UsageError(
        `--variants ${a.variants}: not a regular expression (${(e as Error).message})`,
      );
    }
  }
  let longContext: number | undefined;
  if (a.longContext !== undefined) {
    longContext = Number(a.longContext);
    if (!Number.isInteger(longContext) || longContext < 1) {
      throw new UsageError(`--long-context ${a.longContext}: a positive whole number of tokens`);
    }
  }
  const modelShapes = a.modelShapes, half = a.half;
  if ((variants || modelShapes || half) && !a.lab) {
    throw new UsageError(
      "--variants, --model-shapes and --half choose what the matmul lab times: add --lab",
    );
  }
  return {
    help: a.help,
    lab: a.lab,
    quick: a.quick,
    profile: a.profile,
    halfBase: a.halfBase,
    longContext,
    shapes,
    only,
    variants,
    modelShapes,
    half,
  };
}

const started = performance.now();
const log = (s: string) =>
  console.error(`[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${s}`);

async function matmulSection(
  gpu: Gpu,
  lab: boolean,
  quick: boolean,
  select: { variants?: RegExp; modelShapes?: boolean; half?: boolean } = {},
) {
  const o = {
    lab,
    quick,
    ...select,
    squares: quick ? [256, 512] : [256, 512, 1024, 2048],
    skinnyM: quick ? [1, 8] : [1, 8, 16, 32],
    skinnyKN: quick ? 512 : 1024,
    minMs: quick ? 150 : 400,
  };
  const peak = gpu.adapterClass === "cpu" ? await cpuPeak() : null;
  let labResult;
  if (lab) {
    labResult = await runLab(gpu, { ...o, squares: o.squares.filter((n) => n <= 1024) }, log);
    // On stderr too, so a run stopped during the comparison below still leaves the lab's result.
    log(`lab result ${JSON.stringify(labResult)}`);
  }
  const comparison = await compareWithTfjs(
    gpu,
    o,
    labResult?.picks,
    log,
  );
  const at1024 = comparison.rows.filter((r) => r.shape.endsWith("1024x1024x1024"));
  return {
    cpu_peak: peak,
    fraction_of_cpu_peak_at_1024: peak
      ? Object.fromEntries(at1024.map((r) => [r.shape, round(r.gflops / peak.gflops, 3)]))
      : null,
    ...comparison,
    lab: labResult ?? null,
  };
}

async function sandboxSection() {
  const mod = await import("./sandbox_bench.ts").catch(() => null);
  if (!mod) return { skipped: "test/bench/sandbox_bench.ts not present" };
  return await mod.benchSandbox();
}

if (import.meta.main) {
  const args = parseArgsOrExit(BENCH_CLI, Deno.args, parseBenchArgs);
  const want = (s: string) => !args.only || args.only.includes(s);
  // errors as one plain line (exit 1), not Deno's coloured uncaught-error report
  await runMain(async () => {
    const gpu = await Gpu.create();
    log(gpu.describe());
    log(describeTunedPicks(gpu.ctx.info));
    const result: Record<string, unknown> = {
      date: new Date().toISOString(),
      runtime: runtimeDescription(),
      adapter: gpu.describe(),
      adapter_class: gpu.adapterClass,
      matmul_picks: describeTunedPicks(gpu.ctx.info),
    };
    if (want("matmul")) result.matmul = await matmulSection(gpu, args.lab, args.quick, args);
    if (want("inference")) {
      result.inference = await benchInference(gpu, {
        presets: args.quick ? ["tiny-llama"] : ["tiny-llama", "small-30m"],
        batches: args.quick ? [1, 8] : [1, 8, 32],
        promptLen: args.quick ? 16 : 64,
        newTokens: args.quick ? 8 : 32,
        rounds: args.quick ? 1 : 5, // medians of 5 (this shared machine swings between rounds)
      }, log);
    }
    if (want("train")) {
      result.train = await benchTrain(gpu, {
        presets: args.quick ? ["tiny-llama"] : ["tiny-llama", "small-30m"],
        modes: ["full", "lora"],
        // small-30m is ~30 s a step at 8×64 on llvmpipe: 4×32 keeps the section to minutes.
        batch: 4,
        seqLen: args.quick ? 16 : 32,
        steps: 3,
      }, log);
    }
    if (want("rl")) {
      result.rl = await benchRl(gpu, { steps: args.quick ? 1 : 3, envsPerStep: 4, k: 4 }, log);
    }
    if (want("sandbox")) result.sandbox = await sandboxSection();
    if (args.only?.includes("scale") || (!args.only && gpu.adapterClass === "gpu")) {
      result.scale = await benchScale(gpu, {
        shapes: args.shapes ?? (args.quick ? SCALE_QUICK_SHAPES : SCALE_SHAPES),
        batches: args.quick ? [1, 4] : [1, 8, 32],
        promptLen: args.quick ? 8 : 64,
        newTokens: args.quick ? 4 : 32,
        trainBatch: args.quick ? 2 : 8,
        trainLen: args.quick ? 16 : 128,
        modes: ["lora", "full"],
        rounds: args.quick ? 1 : 3,
        dir: "runs/bench_scale",
        profile: args.profile,
        halfBase: args.halfBase,
        longContext: args.longContext,
      }, log);
    } else if (!args.only) {
      log("scale: skipped on a CPU adapter (name it: --only scale [--quick])");
    }
    console.log(JSON.stringify(result));
    gpu.destroy();
  });
}
