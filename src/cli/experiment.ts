// `deno task experiment paper-table [--tasks a,b] [--seeds N] [--steps N] [--methods ...]
// [--spec FILE] [--out DIR] [--json]`: the paper's table in miniature (src/rl/experiment.ts).
// Every (task, method, seed) run is a normal run directory under OUT; results.json is rewritten
// after each run (a long experiment stopped half-way keeps what it measured), table.md at the end.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { Gpu } from "../gpu/mod.ts";
import { getEnv } from "../envs/registry.ts";
import { joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { SandboxPool } from "../sandbox/mod.ts";
import { latestCheckpoint, loadCheckpoint } from "../train/checkpoint_dir.ts";
import { envForConfig } from "../rl/env_for.ts";
import {
  aggregate,
  evaluateWith,
  type ExperimentSpec,
  hasSolo,
  markdownTable,
  METHOD_SPECS,
  methodConfig,
  type MethodId,
  METHODS,
  type RunResult,
  swapRoleAdapters,
} from "../rl/experiment.ts";
import type { EvalResult } from "../rl/evaluate.ts";
import { loadBase, train } from "../rl/train.ts";

export const EXPERIMENT_CLI = defineCli({
  command: "deno task experiment paper-table",
  summary: "The paper's table in miniature: single agent vs MAS, untrained vs RL, per task, over seeds (README: Paper table).",
  flags: {
    tasks: { type: "string", metavar: "a,b", help: "tasks of the spec to run (default: all)" },
    methods: { type: "string", metavar: "a,b", help: `methods (default: all): ${METHODS.join(", ")}, ablation` },
    seeds: { type: "number", integer: true, min: 1, help: "seeds per method (default: the spec's)" },
    steps: { type: "number", integer: true, min: 1, help: "RL steps of trained methods (default: the spec's)" },
    spec: { type: "string", default: "configs/experiments/paper_table.json", metavar: "FILE", help: "experiment spec" },
    out: { type: "string", metavar: "DIR", help: "output folder (default runs/experiments/paper-table/<timestamp>)" },
    json: { type: "boolean", help: "last stdout line: the aggregated results as JSON" },
  },
});

const EXPERIMENTS = ["paper-table"];

function list(s: string | undefined, all: readonly string[], what: string): string[] {
  if (!s) return [...all];
  const xs = s.split(",").map((x) => x.trim()).filter(Boolean);
  for (const x of xs) if (!all.includes(x)) throw new UsageError(`--${what}: unknown "${x}"; choose from ${all.join(", ")}`);
  return xs;
}

const withoutSamples = (e: EvalResult): Omit<EvalResult, "samples"> => {
  const { samples: _, ...rest } = e;
  return rest;
};

async function trainedSamples(runDir: string): Promise<number> {
  const lines = (await Deno.readTextFile(joinPath(runDir, "metrics.jsonl"))).trim().split("\n");
  return lines.map((l) => JSON.parse(l)).reduce((a, m) => a + (m.samples ?? 0), 0);
}

if (import.meta.main) {
  const argv = [...Deno.args];
  const name = argv[0] && !argv[0].startsWith("-") ? argv.shift()! : undefined;
  const args = parseArgsOrExit(EXPERIMENT_CLI, argv);
  if (!name || !EXPERIMENTS.includes(name)) {
    console.error(`error: name the experiment first (one of ${EXPERIMENTS.join(", ")}), e.g. deno task experiment paper-table --tasks plan_path --seeds 1`);
    Deno.exit(2);
  }
  await runMain(async () => {
    const spec = JSON.parse(await Deno.readTextFile(args.spec)) as ExperimentSpec;
    const tasks = list(args.tasks, Object.keys(spec.tasks), "tasks");
    const methods = list(args.methods, [...METHODS, "ablation"], "methods");
    const seeds = args.seeds ?? spec.seeds, steps = args.steps ?? spec.steps;
    const out = args.out ?? `runs/experiments/paper-table/${new Date().toISOString().replace(/[:.]/g, "-")}`;
    await Deno.mkdir(out, { recursive: true });
    await writeFileAtomic(joinPath(out, "spec.json"), JSON.stringify(spec, null, 1) + "\n"); // what this run used
    console.log(`experiment paper-table: tasks ${tasks.join(", ")}; methods ${methods.join(", ")}; ${seeds} seed(s); ${steps} steps; output ${out}`);
    const results: RunResult[] = [];
    const notes: string[] = [];
    const save = () => writeFileAtomic(joinPath(out, "results.json"), JSON.stringify({ spec: args.spec, tasks, methods, seeds, steps, results, notes }, null, 1) + "\n");
    const gpu = await Gpu.create();
    try {
      for (const task of tasks) {
        const envId = (spec.tasks[task].env as { id: string }).id;
        for (let seed = 0; seed < seeds; seed++) {
          let l2Run: { dir: string; cfg: ReturnType<typeof methodConfig> } | null = null;
          for (const method of methods.filter((m) => m !== "ablation") as MethodId[]) {
            if (METHOD_SPECS[method].level === "L0" && !hasSolo(envId)) {
              if (seed === 0) notes.push(`${task}: no single-agent variant of ${envId}; ${method} skipped`);
              continue;
            }
            const cfg = methodConfig(spec, task, method, seed, steps, joinPath(out, "runs"));
            const t0 = performance.now();
            let r: RunResult;
            if (METHOD_SPECS[method].train) {
              const s = await train(cfg, { log: () => {} });
              r = { task, method, seed, successRate: s.after!.successRate, samples: await trainedSamples(s.runDir), steps: s.steps, runDir: s.runDir, eval: withoutSamples(s.after!) };
              if (method === "mas_l2") l2Run = { dir: s.runDir, cfg };
            } else {
              const { weights, tokenizer } = await loadBase(cfg);
              const env = envForConfig(cfg);
              const executor = env.toolAgents.length ? new SandboxPool() : undefined;
              try {
                const ev = await evaluateWith(cfg, { gpu, weights, tokenizer, executor });
                r = { task, method, seed, successRate: ev.successRate, samples: 0, steps: 0, runDir: null, eval: withoutSamples(ev) };
              } finally {
                await executor?.close();
              }
            }
            results.push(r);
            await save();
            console.log(`${task} ${method} seed ${seed}: held-out success ${(r.successRate * 100).toFixed(1)}% (${r.samples} training samples, ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
          }
          if (methods.includes("ablation")) {
            if (!l2Run) {
              if (seed === 0) notes.push(`${task}: ablation needs the mas_l2 method in the same invocation; skipped`);
              continue;
            }
            const roles = getEnv(envId).possibleAgents;
            if (roles.length !== 2) {
              if (seed === 0) notes.push(`${task}: ablation needs two roles (${envId} has ${roles.length}); skipped`);
              continue;
            }
            const { weights, tokenizer } = await loadBase(l2Run.cfg);
            const ckDir = await latestCheckpoint(joinPath(l2Run.dir, "checkpoints"));
            const ck = swapRoleAdapters(await loadCheckpoint(ckDir!, { base: weights.config }), l2Run.cfg);
            const executor = getEnv(envId).toolAgents.length ? new SandboxPool() : undefined;
            try {
              const ev = await evaluateWith(l2Run.cfg, { gpu, weights, tokenizer, executor }, ck);
              results.push({ task, method: "ablation_swapped", seed, successRate: ev.successRate, samples: 0, steps: 0, runDir: l2Run.dir, eval: withoutSamples(ev) });
              await save();
              console.log(`${task} ablation (L2 adapters swapped) seed ${seed}: held-out success ${(ev.successRate * 100).toFixed(1)}%`);
            } finally {
              await executor?.close();
            }
          }
        }
      }
    } finally {
      gpu.destroy();
    }
    const aggs = aggregate(results);
    const table = markdownTable(aggs, tasks);
    const md = [
      `Held-out success (%), mean ± std over ${seeds} seed(s); ${steps} RL steps per trained method; spec ${args.spec}.`,
      "",
      table,
      "",
      "Training samples per run (mean): " + aggs.filter((a) => a.samples > 0).map((a) => `${a.task}/${a.method} ${a.samples.toFixed(0)}`).join(", "),
      ...(notes.length ? ["", ...notes.map((n) => `- ${n}`)] : []),
    ].join("\n");
    await writeFileAtomic(joinPath(out, "table.md"), md + "\n");
    await save();
    console.log("\n" + md);
    if (args.json) console.log(JSON.stringify({ out, aggregates: aggs, notes }));
  });
}
