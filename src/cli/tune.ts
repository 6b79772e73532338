// `npx deno task tune`: measure the matmul variants on this device at a model's products and keep
// the fastest per form and shape bucket (src/ops/autotune.ts), and on GPUs how many workgroups
// sample a row of the model's vocabulary (src/model/sampler_tune.ts), how far the fused LoRA
// forward splits a group's columns (src/model/lora_tune.ts) and when decode attention splits over
// positions (src/model/attention_tune.ts) and how many lanes a loss head gives a row
// (src/train/loss_tune.ts), in the picks file every later run on this adapter reads
// (src/ops/tuned_picks.ts). Reads only the model's config.json.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { tunerTables } from "./tune_tables.ts";
import { Gpu } from "../gpu/mod.ts";
import { joinPath, writeFileAtomic } from "../io/deno_files.ts";
import type { AttentionTuneMode } from "../model/attention_tune.ts";
import { parseModelConfig } from "../model/config.ts";
import type { LoraTuneMode } from "../model/lora_tune.ts";
import type { SamplerTuneMode } from "../model/sampler_tune.ts";
import { matmulWorkload, tuneMatmuls } from "../ops/autotune.ts";
import {
  adapterKey,
  kernelSetId,
  parseTunedPicks,
  type TunedPicksEntry,
  tunedPicksPath,
  withEntry,
} from "../ops/tuned_picks.ts";
import { runKernelTuners } from "../train/kernel_tuners.ts";
import type { LossTuneMode } from "../train/loss_tune.ts";
import { defaultLogitRows } from "../train/trainer.ts";

export const TUNE_CLI = defineCli({
  command: "npx deno task tune",
  summary:
    "Time the matmul kernels on this device at a model's products, the sampler's row split at its vocabulary, the fused LoRA forward's column split, decode attention's split over positions and the loss heads' lanes, and keep the fastest for every later run on this adapter.",
  flags: {
    model: {
      type: "string",
      required: true,
      metavar: "DIR|config.json",
      help: "HF model folder (only its config.json is read) or a config.json (configs/models/)",
    },
    "decode-rows": {
      type: "string",
      default: "1,8,32",
      metavar: "1,8,32",
      help: "batch sizes generation runs at (rows of a decode step's products)",
    },
    "prefill-rows": {
      type: "string",
      metavar: "16,128",
      help:
        "prompt tokens prefilled at once (batch × prompt length, up to the chunk rows); none if unset",
    },
    "train-rows": {
      type: "number",
      integer: true,
      min: 0,
      default: 1024,
      help: "rows of a training chunk (B × T tokens); 0: inference only",
    },
    full: { type: "boolean", help: "full fine-tuning: the weight gradients too (LoRA: not)" },
    half: {
      type: "string",
      choices: ["auto", "on", "off"],
      default: "auto",
      metavar: "auto|on|off",
      help:
        "time the half-float twins of a frozen base (update.halfBase); auto: as a LoRA run's default, on GPU-class adapters without --full",
    },
    sampler: {
      type: "string",
      choices: ["auto", "on", "off"],
      default: "auto",
      metavar: "auto|on|off",
      help:
        "time the sampler at the decode rows: how many workgroups a row of the vocabulary is split over, and how many threads each (64, 128, 256 on GPUs); auto: on GPU-class adapters (CPU adapters never split a row unless tuned to)",
    },
    lora: {
      type: "string",
      choices: ["auto", "on", "off"],
      default: "auto",
      metavar: "auto|on|off",
      help:
        "time how many workgroups the fused LoRA forward fills before splitting a group's output columns, at the decode rows (rank 16 on every projection); auto: on GPU-class adapters, where the fused forward is the default",
    },
    attention: {
      type: "string",
      choices: ["auto", "on", "off"],
      default: "auto",
      metavar: "auto|on|off",
      help:
        "time decode attention at the decode rows over a long cache, one workgroup per (head, row) against the split over positions at spans of 128 to 1024: when to split; auto: on GPU-class adapters (CPU adapters run the lane kernel, never split)",
    },
    loss: {
      type: "string",
      choices: ["auto", "on", "off"],
      default: "auto",
      metavar: "auto|on|off",
      help:
        "time the loss heads' lanes a row (32 to 256) at the vocabulary and the trainer's logit rows (not with --train-rows 0); auto: on GPU-class adapters",
    },
    context: {
      type: "number",
      integer: true,
      min: 2,
      default: 2048,
      help:
        "cache positions each row attends to when timing decode attention (at most the model's)",
    },
    variants: {
      type: "string",
      metavar: "REGEX",
      help: "only variants whose names match (the current picks and the fallback always run)",
    },
    "min-ms": {
      type: "number",
      min: 1,
      default: 60,
      help: "wall time of each final timing per shape (screening takes a fifth)",
    },
    out: {
      type: "string",
      metavar: "FILE",
      help:
        "picks file to update (default $PETTINGLLMS_TUNED_PICKS, else ~/.cache/pettingllms-webgpu/matmul_picks.json)",
    },
    "dry-run": { type: "boolean", help: "measure and print; write nothing" },
    json: { type: "boolean", help: "last stdout line: the result as JSON" },
  },
});

async function readConfig(path: string) {
  let text: string;
  const file = path.endsWith(".json") ? path : joinPath(path, "config.json");
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new UsageError(`--model: cannot read ${file} (${(e as Error).message})`);
  }
  try {
    return parseModelConfig(JSON.parse(text));
  } catch (e) {
    throw new UsageError(`--model: ${file} is not a model config: ${(e as Error).message}`);
  }
}

function parseRows(flag: string, text: string): number[] {
  const rows = text.split(",").map((s) => Number(s.trim()));
  if (!rows.length || rows.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new UsageError(`--${flag} must be positive integers like 1,8,32 (got "${text}")`);
  }
  return rows;
}

if (import.meta.main) {
  const args = parseArgsOrExit(TUNE_CLI);
  await runMain(async () => {
    let variants: RegExp | undefined;
    try {
      variants = args.variants === undefined ? undefined : new RegExp(args.variants);
    } catch (e) {
      throw new UsageError(`--variants: ${(e as Error).message}`);
    }
    const decodeRows = parseRows("decode-rows", args.decodeRows);
    const prefillRows = args.prefillRows === undefined
      ? []
      : parseRows("prefill-rows", args.prefillRows);
    const cfg = await readConfig(args.model);
    const out = args.out ?? tunedPicksPath();
    if (!args.dryRun && out === null) {
      throw new UsageError(
        "no picks file: give --out FILE (PETTINGLLMS_TUNED_PICKS is off or there is no home directory)",
      );
    }
    const gpu = await Gpu.create();
    try {
      console.log(`adapter: ${gpu.describe()}`);
      const half = args.half === "on" ||
        (args.half === "auto" && gpu.adapterClass === "gpu" && !args.full);
      const logitRows = defaultLogitRows(
        args.trainRows,
        cfg.vocabSize,
        gpu.device.limits.maxStorageBufferBindingSize,
      );
      const workload = matmulWorkload(cfg, {
        decodeRows,
        prefillRows,
        trainRows: args.trainRows,
        logitRows,
        full: args.full,
        halfB: half,
      });
      console.log(
        `tuning ${workload.length} products of ${cfg.modelType} (hidden ${cfg.hiddenSize}, ${cfg.numLayers} layers, vocabulary ${cfg.vocabSize})${
          half ? ", the base in half floats" : ""
        }`,
      );
      const r = await tuneMatmuls(gpu, workload, {
        minMs: args.minMs,
        variants,
        log: (l) => console.log(l),
      });
      console.log("\n| bucket | built-in pick | ms a step | tuned pick | ms a step | speed-up |");
      console.log("|---|---|---|---|---|---|");
      for (const b of r.buckets) {
        console.log(
          `| ${b.key} | ${b.current} | ${b.currentMs.toFixed(3)} | ${b.best} | ${
            b.bestMs.toFixed(3)
          } | ${(b.currentMs / b.bestMs).toFixed(2)}× |`,
        );
      }
      if (r.refused.length) {
        console.log(`refused (wrong against the float64 reference): ${r.refused.join(", ")}`);
      }
      const tunedFor = `${args.model} (decode rows ${decodeRows.join(",")}${
        prefillRows.length ? `, prefill rows ${prefillRows.join(",")}` : ""
      }, train rows ${args.trainRows}${args.full ? ", full" : ""}${half ? ", half base" : ""})`;
      const matmulEntry = {
        adapter: adapterKey(gpu.ctx.info),
        kernels: kernelSetId(),
        picks: r.picks,
        tunedFor,
        date: new Date().toISOString(),
        buckets: r.buckets,
      };
      // The matmul picks are kept as soon as they are measured: a run stopped (or cut off by a
      // time limit) during the kernel tuners below keeps them, and the earlier picks of those.
      if (!args.dryRun) {
        await savePicks(out!, matmulEntry);
        console.log(`matmul picks written to ${out}; the kernel tuners next`);
      }
      const tuned = await runKernelTuners(gpu, {
        config: cfg,
        decodeRows,
        loraRank: args.full ? null : 16,
        context: args.context,
        logitRows: args.trainRows > 0 ? logitRows : 0,
        modes: {
          sampler: args.sampler as SamplerTuneMode,
          lora: args.lora as LoraTuneMode,
          attention: args.attention as AttentionTuneMode,
          loss: args.loss as LossTuneMode,
        },
        minMs: args.minMs,
        log: (l) => console.log(l),
      });
      for (const line of tunerTables(tuned)) console.log(line);
      console.log(`\n${(r.seconds + tuned.seconds).toFixed(1)} s`);
      const entry = { ...matmulEntry, date: new Date().toISOString(), ...tuned.entry };
      if (!args.dryRun) {
        await savePicks(out!, entry);
        console.log(`picks written to ${out}: later runs on this adapter use them`);
      }
      if (args.json) {
        console.log(
          JSON.stringify({
            ...entry,
            refused: r.refused,
            seconds: r.seconds,
            ...(tuned.sampler ? { sampler: tuned.sampler } : {}),
            ...(tuned.lora ? { lora: tuned.lora } : {}),
            ...(tuned.attention ? { attention: tuned.attention } : {}),
            ...(tuned.loss ? { loss: tuned.loss } : {}),
          }),
        );
      }
    } finally {
      gpu.destroy();
    }
  });
}

/** Writes `entry` into the picks file at `path` (withEntry: this adapter's entry replaced, per-kernel picks it lacks kept). */
async function savePicks(path: string, entry: TunedPicksEntry): Promise<void> {
  const existing = await Deno.readTextFile(path).then(
    (t) => parseTunedPicks(t, path),
    (e) => {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    },
  );
  const dir = path.slice(0, Math.max(0, path.lastIndexOf("/")));
  if (dir) await Deno.mkdir(dir, { recursive: true });
  await writeFileAtomic(path, JSON.stringify(withEntry(existing, entry), null, 2) + "\n");
}
