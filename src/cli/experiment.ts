// `deno task experiment paper-table [--tasks a,b] [--methods a,b] [--seeds N] [--first-seed K]
// [--steps N] [--no-sweep] [--spec FILE] [--out DIR] [--json]`: the paper's table in miniature
// (src/rl/experiment.ts), over seeds K..K+N−1. Every (task, method, seed) run is a normal run
// directory under OUT/runs; results.json is rewritten after each run (a long experiment stopped
// half-way keeps what it measured), curves_<task>.svg and rewards_<task>.svg after each task,
// table.md at the end. With the spec's sweep.<method> (single_grpo, mas_l3, ...), that method's
// learning rate is chosen per task on the training split first (the sweep's run at the chosen lr
// stands as its seed's result when that seed is among the invocation's seeds: the same config).

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { Gpu } from "../gpu/mod.ts";
import type { CodeExecutor } from "../envs/types.ts";
import { getEnv } from "../envs/registry.ts";
import { joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { writingTo } from "../io/errors.ts";
import { SandboxPool } from "../sandbox/mod.ts";
import type { LoadedCheckpoint } from "../train/checkpoint.ts";
import type { ModelWeights } from "../model/weights.ts";
import { latestCheckpoint, loadCheckpoint } from "../train/checkpoint_dir.ts";
import type { RunConfig } from "../rl/config.ts";
import { envForConfig } from "../rl/env_for.ts";
import {
  aggregate,
  BASELINE_OF,
  curvesFromMetrics,
  DEFAULT_METHODS,
  evaluateWith,
  type ExperimentSpec,
  lrFragment,
  markdownTable,
  METHOD_SPECS,
  methodConfig,
  type MethodId,
  methodRunsOn,
  METHODS,
  pairedTable,
  runLrSweep,
  type RunResult,
  seedLabel,
  soloAgentOf,
  type SweepRecord,
  sweepTable,
  withStepZero,
} from "../rl/experiment.ts";
import {
  ExperimentMergeError,
  keepMethods,
  mergeExperiments,
  type SavedExperiment,
} from "../rl/experiment_merge.ts";
import { swapRoleAdapters, teamOfSoloRuns } from "../rl/experiment_ablations.ts";
import { taskPlots } from "../rl/experiment_plots.ts";
import { COMPARE_CLI, compareCommand, readSaved } from "./experiment_compare.ts";
import { DERIVED, type DerivedMethod, resultMethod } from "../rl/experiment_compare.ts";
import type { EvalResult } from "../rl/evaluate.ts";
import { loadBase, train } from "../rl/train.ts";

export const EXPERIMENT_CLI = defineCli({
  command: "npx deno task experiment paper-table",
  summary:
    "The paper's table in miniature: single agent vs MAS, untrained vs RL, per task, over seeds, with paired tests and learning curves (docs/paper_table.md).",
  flags: {
    tasks: { type: "string", metavar: "a,b", help: "tasks of the spec to run (default: all)" },
    methods: {
      type: "string",
      metavar: "a,b",
      help: `methods: ${METHODS.join(", ")}, ablation, sa_team (default: all but ${
        METHODS.filter((m) => !DEFAULT_METHODS.includes(m)).join(", ")
      })`,
    },
    seeds: {
      type: "number",
      integer: true,
      min: 1,
      help: "seeds per method (default: the spec's)",
    },
    "first-seed": {
      type: "number",
      integer: true,
      min: 0,
      default: 0,
      metavar: "K",
      help: "run seeds K..K+N−1 (N: --seeds or the spec's seeds)",
    },
    steps: {
      type: "number",
      integer: true,
      min: 1,
      help: "RL steps of trained methods (default: the spec's)",
    },
    "no-sweep": {
      type: "boolean",
      help:
        "skip the spec's learning-rate sweeps (sweep.<method>, e.g. sweep.single_grpo: {lrs, seed, episodes}: each lr trains the method on one seed, the lr with the best train-split success trains every seed); the methods then train at their configured lr",
    },
    spec: {
      type: "string",
      default: "configs/experiments/paper_table.json",
      metavar: "FILE",
      help: "experiment spec (evalEvery: validate trained runs every N steps for the curves)",
    },
    out: {
      type: "string",
      metavar: "DIR",
      help:
        "output folder (default runs/experiments/paper-table/<timestamp>): results.json, table.md, curves_<task>.svg, rewards_<task>.svg, runs/",
    },
    json: {
      type: "boolean",
      help:
        "last stdout line: {out, aggregates (mean, std as fractions, perSeed, pVsSingleGrpo, pVsMas, tests, diffs: the bootstrap intervals), sweeps, notes} as JSON",
    },
  },
});

export const MERGE_CLI = defineCli({
  command: "npx deno task experiment merge",
  summary:
    "Several paper-table invocations (seeds run apart with --first-seed, on other machines or side by side) as one: results.json, table.md and plots over every seed, paired tests on the pooled seeds. Refuses a (task, method, seed) measured twice and runs of different budgets; DIR:m1+m2 takes only those methods from DIR (e.g. to replace a method measured again with its lr swept).",
  flags: {
    from: {
      type: "string",
      metavar: "DIR1,DIR2",
      help:
        "the invocations' output folders (each with its results.json); DIR:m1+m2 takes only methods m1 and m2 from DIR (required)",
    },
    out: {
      type: "string",
      metavar: "DIR",
      help:
        "the merged output folder: results.json, table.md, curves_<task>.svg, rewards_<task>.svg (required)",
    },
    json: {
      type: "boolean",
      help: "last stdout line: {out, mergedFrom, aggregates, sweeps, notes} as JSON",
    },
  },
});

const EXPERIMENTS = ["paper-table", "merge", "compare"];

function list(s: string | undefined, all: readonly string[], what: string): string[] {
  if (!s) return [...all];
  const xs = s.split(",").map((x) => x.trim()).filter(Boolean);
  for (const x of xs) {
    if (!all.includes(x)) {
      throw new UsageError(`--${what}: unknown "${x}"; choose from ${all.join(", ")}`);
    }
  }
  return xs;
}

const withoutSamples = (e: EvalResult): Omit<EvalResult, "samples"> => {
  const { samples: _, ...rest } = e;
  return rest;
};

async function readMetrics(runDir: string): Promise<Record<string, unknown>[]> {
  const text = (await Deno.readTextFile(joinPath(runDir, "metrics.jsonl"))).trim();
  return text ? text.split("\n").map((l) => JSON.parse(l)) : [];
}

/** Runs fn with a code sandbox where the config's env has tool agents, closing it after. */
async function withExecutor<T>(
  cfg: RunConfig,
  fn: (executor: CodeExecutor | undefined) => Promise<T>,
): Promise<T> {
  const executor = envForConfig(cfg).toolAgents.length
    ? new SandboxPool({ prewarm: true })
    : undefined;
  try {
    return await fn(executor);
  } finally {
    await executor?.close();
  }
}

/** A trained run: its held-out result after the last step, samples and curves from metrics.jsonl. */
async function trainedRun(
  cfg: RunConfig,
  task: string,
  method: MethodId,
  lr?: number,
): Promise<RunResult> {
  const s = await train(cfg, { log: () => {} });
  const metrics = await readMetrics(s.runDir);
  const samples = metrics.reduce((a, m) => a + ((m.samples as number | undefined) ?? 0), 0);
  const { curve, rewardCurve } = curvesFromMetrics(metrics);
  return {
    task,
    method,
    seed: cfg.run.seed,
    successRate: s.after!.successRate,
    samples,
    steps: s.steps,
    runDir: s.runDir,
    eval: withoutSamples(s.after!),
    ...(lr === undefined ? {} : { lr }),
    curve,
    rewardCurve,
  };
}

/** An untrained method: the base policies on the held-out tasks. */
async function untrainedRun(
  gpu: Gpu,
  cfg: RunConfig,
  task: string,
  method: MethodId,
): Promise<RunResult> {
  const ev = await evaluateFrom(gpu, cfg, () => Promise.resolve(undefined));
  return {
    task,
    method,
    seed: cfg.run.seed,
    successRate: ev.successRate,
    samples: 0,
    steps: 0,
    runDir: null,
    eval: withoutSamples(ev),
  };
}

/** A run's latest checkpoint, checked against the base model's shapes. */
async function runCheckpoint(runDir: string, base: ModelWeights): Promise<LoadedCheckpoint> {
  const ckDir = await latestCheckpoint(joinPath(runDir, "checkpoints"));
  if (!ckDir) throw new Error(`${runDir} has no checkpoint`);
  return await loadCheckpoint(ckDir, { base: base.config });
}

/** The policies of `cfg` started from `makeCk(base)` (the base model when null), evaluated. */
async function evaluateFrom(
  gpu: Gpu,
  cfg: RunConfig,
  makeCk: (base: ModelWeights) => Promise<LoadedCheckpoint | undefined>,
  opts: { split?: "train" | "test"; episodes?: number } = {},
): Promise<EvalResult> {
  const { weights, tokenizer } = await loadBase(cfg);
  const ck = await makeCk(weights);
  return await withExecutor(
    cfg,
    (executor) => evaluateWith(cfg, { gpu, weights, tokenizer, executor }, ck, opts),
  );
}

/** A trained run's final checkpoint evaluated on `episodes` train-split tasks (the sweep's score). */
async function trainSplitSuccess(
  gpu: Gpu,
  cfg: RunConfig,
  runDir: string,
  episodes: number,
): Promise<number> {
  const ev = await evaluateFrom(gpu, cfg, (base) => runCheckpoint(runDir, base), {
    split: "train",
    episodes,
  });
  return ev.successRate;
}

/** A derived result (DERIVED): a team evaluated from other runs' checkpoints, trained on nothing itself. */
function derivedResult(
  of: RunResult,
  method: DerivedMethod,
  ev: EvalResult,
  extra: Pick<RunResult, "samples" | "runDir">,
): RunResult {
  return {
    task: of.task,
    method,
    seed: of.seed,
    successRate: ev.successRate,
    steps: 0,
    eval: withoutSamples(ev),
    ...extra,
  };
}

/** The paper's ablation: the L2 run's final checkpoint with its two role adapters swapped. */
async function ablationRun(gpu: Gpu, l2: RunResult, cfg: RunConfig): Promise<RunResult> {
  const ev = await evaluateFrom(
    gpu,
    cfg,
    async (base) => swapRoleAdapters(await runCheckpoint(l2.runDir!, base), cfg),
  );
  return derivedResult(l2, "ablation_swapped", ev, { samples: 0, runDir: l2.runDir });
}

/**
 * The paper's "trained in single-agent mode, evaluated in the MAS" ablation: single_grpo's
 * adapter (the plan agent alone) and single_tool_grpo's (the tool agent alone) of one seed, played
 * as the L2 team (`cfg`: mas_l2's config of that seed). Its samples are both runs' together.
 */
async function saTeamRun(
  gpu: Gpu,
  solo: { plan: RunResult; tool: RunResult },
  cfg: RunConfig,
): Promise<RunResult> {
  const ev = await evaluateFrom(gpu, cfg, async (base) =>
    teamOfSoloRuns({
      plan: await runCheckpoint(solo.plan.runDir!, base),
      tool: await runCheckpoint(solo.tool.runDir!, base),
    }, cfg));
  return derivedResult(solo.plan, "ablation_sa_team", ev, {
    samples: solo.plan.samples + solo.tool.samples,
    runDir: null,
  });
}

/** What one invocation is doing: its settings, and what it has measured so far. */
interface Experiment {
  spec: ExperimentSpec;
  out: string;
  methods: string[];
  firstSeed: number;
  seeds: number;
  steps: number;
  sweep: boolean;
  gpu: Gpu;
  results: RunResult[];
  sweeps: SweepRecord[];
  notes: string[];
  save(): Promise<void>;
}

/** How the log names a derived result. */
const DERIVED_LOG: Record<DerivedMethod, string> = {
  ablation_swapped: "ablation (L2 adapters swapped)",
  ablation_sa_team: "ablation (roles trained alone, played as the team)",
};

/** Adds a result (a trained curve gets its step 0 from the untrained method of the same seed) and saves. */
async function record(x: Experiment, r: RunResult, t0: number) {
  const base = BASELINE_OF[r.method as MethodId];
  if (r.curve && base) {
    r.curve = withStepZero(
      r.curve,
      x.results.find((b) => b.task === r.task && b.method === base && b.seed === r.seed),
    );
  }
  x.results.push(r);
  await x.save();
  const what = DERIVED_LOG[r.method as DerivedMethod] ?? r.method;
  console.log(
    `${r.task} ${what} seed ${r.seed}: held-out success ${
      (r.successRate * 100).toFixed(1)
    }% (${r.samples} training samples${r.lr === undefined ? "" : `, lr ${r.lr}`}, ${
      ((performance.now() - t0) / 1000).toFixed(0)
    } s)`,
  );
}

/** spec.sweep[method] for one task; returns the chosen lr and the run that may stand for its seed. */
async function sweepTask(
  x: Experiment,
  task: string,
  method: MethodId,
): Promise<{ lr: number; run: RunResult; seed: number }> {
  const sweepsBefore = x.sweeps.length;
  const { record: rec, chosen } = await runLrSweep(x.spec, task, {
    seed: x.firstSeed,
    steps: x.steps,
    outDir: joinPath(x.out, "runs"),
    method,
  }, {
    train: async (cfg) => {
      const run = await trainedRun(cfg, task, method, cfg.update.optimizer.lr);
      return { runDir: run.runDir!, kept: run };
    },
    scoreOnTrain: (cfg, runDir, episodes) => trainSplitSuccess(x.gpu, cfg, runDir, episodes),
    onPoint: async (r) => {
      x.sweeps.splice(sweepsBefore, 1, r);
      await x.save();
      const p = r.points[r.points.length - 1];
      console.log(
        `${task} sweep ${method} lr ${p.lr} seed ${r.seed}: train-split success ${
          (p.trainSuccess * 100).toFixed(1)
        }% (${r.episodes} tasks)`,
      );
    },
  });
  x.sweeps.splice(sweepsBefore, 1, rec);
  await x.save();
  console.log(`${task} sweep: ${method} lr ${rec.chosenLr} chosen on the training split`);
  return { lr: rec.chosenLr!, run: chosen, seed: rec.seed };
}

/** One task: the sweep, every method of every seed, the ablation, then its plots. */
async function runTask(x: Experiment, task: string) {
  const envId = (x.spec.tasks[task].env as { id: string }).id;
  const own = x.methods.filter((m) => !(m in DERIVED)) as MethodId[];
  // Each trained method with a sweep in the spec (and, at L0, a single-agent variant) first.
  const swept = new Map<MethodId, { lr: number; run: RunResult; seed: number }>();
  for (const method of own) {
    const wanted = x.sweep && METHOD_SPECS[method].train && methodRunsOn(method, envId) &&
      (x.spec.sweep?.[method]?.lrs.length ?? 0) > 0;
    if (wanted) swept.set(method, await sweepTask(x, task, method));
  }
  for (let seed = x.firstSeed; seed < x.firstSeed + x.seeds; seed++) {
    let l2: { run: RunResult; cfg: RunConfig } | null = null;
    const ran = new Map<MethodId, RunResult>();
    for (const method of own) {
      if (!methodRunsOn(method, envId)) {
        if (seed === x.firstSeed) {
          const who = soloAgentOf(method);
          x.notes.push(
            `${task}: no single-agent variant of ${envId}${
              who === null ? "" : ` for its ${who} agent`
            }; ${method} skipped`,
          );
        }
        continue;
      }
      const sw = swept.get(method), lr = sw?.lr;
      const cfg = methodConfig(
        x.spec,
        task,
        method,
        seed,
        x.steps,
        joinPath(x.out, "runs"),
        lr === undefined ? {} : lrFragment(lr),
      );
      const t0 = performance.now();
      let r: RunResult;
      if (sw && sw.seed === seed) r = sw.run; // the sweep's run at the chosen lr: the same config
      else if (METHOD_SPECS[method].train) r = await trainedRun(cfg, task, method, lr);
      else r = await untrainedRun(x.gpu, cfg, task, method);
      if (method === "mas_l2") l2 = { run: r, cfg };
      ran.set(method, r);
      await record(x, r, t0);
    }
    if (x.methods.includes("sa_team")) {
      const plan = ran.get("single_grpo"), tool = ran.get("single_tool_grpo");
      if (!plan || !tool) {
        if (seed === x.firstSeed) {
          x.notes.push(
            `${task}: sa_team needs single_grpo and single_tool_grpo run in the same invocation; skipped`,
          );
        }
      } else {
        const cfg = methodConfig(x.spec, task, "mas_l2", seed, x.steps, joinPath(x.out, "runs"));
        const t0 = performance.now();
        await record(x, await saTeamRun(x.gpu, { plan, tool }, cfg), t0);
      }
    }
    if (!x.methods.includes("ablation")) continue;
    if (!l2) {
      if (seed === x.firstSeed) {
        x.notes.push(`${task}: ablation needs the mas_l2 method in the same invocation; skipped`);
      }
      continue;
    }
    const roles = getEnv(envId).possibleAgents;
    if (roles.length !== 2) {
      if (seed === x.firstSeed) {
        x.notes.push(`${task}: ablation needs two roles (${envId} has ${roles.length}); skipped`);
      }
      continue;
    }
    const t0 = performance.now();
    await record(x, await ablationRun(x.gpu, l2.run, l2.cfg), t0);
  }
  for (const p of await taskPlots(x.results, task)) {
    await writeFileAtomic(joinPath(x.out, p.name), p.svg);
  }
}

/** What table.md is made of: one invocation's (or several merged invocations') measurements. */
interface TableInput {
  results: readonly RunResult[];
  sweeps: readonly SweepRecord[];
  notes: readonly string[];
  steps: number;
  /** The spec file(s) the runs used. */
  spec: string;
}

/** table.md: the table, per-seed results and paired tests, the sweeps, samples, plots and notes. */
function tableMarkdown(x: TableInput, tasks: readonly string[], plots: readonly string[]): string {
  const aggs = aggregate(x.results);
  const nSeeds = new Set(x.results.map((r) => r.seed)).size;
  return [
    `Held-out success (%), mean ± std over ${nSeeds} seed(s) (${
      seedLabel(x.results)
    }); ${x.steps} RL steps per trained method; spec ${x.spec}.`,
    "",
    markdownTable(aggs, tasks),
    "",
    "Per seed, and paired tests: two-sided exact McNemar test on the per-task held-out outcomes, each seed against the comparator's same seed (its first seed where it has no such seed), all (seed, task) pairs pooled; (x:y) = tasks only this method solved : tasks only the comparator solved; then the difference in held-out success (points) with a 95% interval from a bootstrap over seeds, then tasks, which counts the spread between seeds that the pooled test leaves out.",
    "",
    pairedTable(aggs, tasks),
    ...(x.sweeps.length
      ? [
        "",
        "Learning rates chosen per task and method on the training split (the final policy of one seed on train-split tasks; ties: the lower lr):",
        "",
        sweepTable(x.sweeps),
      ]
      : []),
    "",
    "Training samples per run (mean): " +
    aggs.filter((a) => a.samples > 0).map((a) => `${a.task}/${a.method} ${a.samples.toFixed(0)}`)
      .join(", "),
    ...(plots.length ? ["", `Plots: ${plots.join(", ")}`] : []),
    ...(x.notes.length ? ["", ...x.notes.map((n) => `- ${n}`)] : []),
  ].join("\n");
}

/** The .svg files in a folder, sorted. */
async function svgsIn(out: string): Promise<string[]> {
  const plots: string[] = [];
  for await (const e of Deno.readDir(out)) {
    if (e.isFile && e.name.endsWith(".svg")) plots.push(e.name);
  }
  return plots.sort();
}

/**
 * `experiment merge --from A,B --out DIR`: invocations of paper-table run apart (seeds split with
 * --first-seed, on several machines or side by side) as one table: results.json, table.md and
 * the plots over every seed, with the paired tests recomputed on the pooled seeds.
 */
async function mergeCommand(args: { from?: string; out?: string; json?: boolean }) {
  if (!args.from) {
    throw new UsageError("merge: name the invocations' output folders with --from DIR1,DIR2");
  }
  if (!args.out) throw new UsageError("merge: name the merged output folder with --out DIR");
  const sources = args.from.split(",").map((d) => d.trim()).filter(Boolean);
  const saved: SavedExperiment[] = [];
  const specs: string[] = [];
  for (const source of sources) {
    // DIR:m1+m2 takes only those methods' runs and sweeps from DIR.
    const m = /^(.*):([a-z0-9_]+(?:\+[a-z0-9_]+)*)$/.exec(source);
    const dir = m ? m[1] : source;
    const s = await readSaved(dir, "merge");
    try {
      saved.push(
        m
          ? keepMethods(
            s,
            m[2].split("+").map(resultMethod),
            dir,
          )
          : s,
      );
    } catch (e) {
      if (e instanceof ExperimentMergeError) throw new UsageError(`merge: ${e.message}`);
      throw e;
    }
    if (s.spec && !specs.includes(s.spec)) specs.push(s.spec);
  }
  let merged: SavedExperiment;
  try {
    merged = mergeExperiments(saved, sources);
  } catch (e) {
    if (e instanceof ExperimentMergeError) throw new UsageError(`merge: ${e.message}`);
    throw e;
  }
  const out = args.out;
  await writingTo(out, () => Deno.mkdir(out, { recursive: true }));
  for (const task of merged.tasks) {
    for (const p of await taskPlots(merged.results, task)) {
      await writeFileAtomic(joinPath(out, p.name), p.svg);
    }
  }
  const aggregates = aggregate(merged.results);
  await writeFileAtomic(
    joinPath(out, "results.json"),
    JSON.stringify(
      { spec: specs.join(", "), mergedFrom: sources, ...merged, aggregates },
      null,
      1,
    ) +
      "\n",
  );
  const md = tableMarkdown(
    { ...merged, sweeps: merged.sweeps ?? [], notes: merged.notes ?? [], spec: specs.join(", ") },
    merged.tasks,
    await svgsIn(out),
  );
  await writeFileAtomic(
    joinPath(out, "table.md"),
    `Merged from ${sources.join(", ")}.\n\n` + md + "\n",
  );
  console.log("\n" + md);
  if (args.json) {
    console.log(
      JSON.stringify({
        out,
        mergedFrom: sources,
        aggregates,
        sweeps: merged.sweeps,
        notes: merged.notes,
      }),
    );
  }
}

if (import.meta.main) {
  const argv = [...Deno.args];
  const name = argv[0] && !argv[0].startsWith("-") ? argv.shift()! : undefined;
  if (name === "merge") {
    const margs = parseArgsOrExit(MERGE_CLI, argv);
    await runMain(() => mergeCommand(margs));
  }
  if (name === "compare") {
    const cargs = parseArgsOrExit(COMPARE_CLI, argv);
    await runMain(() => compareCommand(cargs));
  }
  const args = parseArgsOrExit(EXPERIMENT_CLI, argv);
  if (!name || !EXPERIMENTS.includes(name)) {
    console.error(
      `error: name the experiment first (one of ${
        EXPERIMENTS.join(", ")
      }), e.g. npx deno task experiment paper-table --tasks plan_path --seeds 1, experiment merge --from A,B --out DIR, or experiment compare --from DIR --a mas_l1 --b mas_l1_ppo`,
    );
    Deno.exit(2);
  }
  await runMain(async () => {
    const spec = JSON.parse(await Deno.readTextFile(args.spec)) as ExperimentSpec;
    const tasks = list(args.tasks, Object.keys(spec.tasks), "tasks");
    const methods = args.methods
      ? list(args.methods, [...METHODS, ...Object.keys(DERIVED)], "methods")
      : [...DEFAULT_METHODS, "ablation"];
    const seeds = args.seeds ?? spec.seeds,
      steps = args.steps ?? spec.steps,
      firstSeed = args.firstSeed;
    const out = args.out ??
      `runs/experiments/paper-table/${new Date().toISOString().replace(/[:.]/g, "-")}`;
    await writingTo(out, () => Deno.mkdir(out, { recursive: true }));
    await writeFileAtomic(joinPath(out, "spec.json"), JSON.stringify(spec, null, 1) + "\n"); // what this run used
    const sweep = !args.noSweep && Object.keys(spec.sweep ?? {}).length > 0;
    console.log(
      `experiment paper-table: tasks ${tasks.join(", ")}; methods ${
        methods.join(", ")
      }; seeds ${firstSeed}..${firstSeed + seeds - 1}; ${steps} steps; lr sweep ${
        sweep ? "on" : "off"
      }; output ${out}`,
    );
    const gpu = await Gpu.create();
    const x: Experiment = {
      spec,
      out,
      methods,
      firstSeed,
      seeds,
      steps,
      sweep,
      gpu,
      results: [],
      sweeps: [],
      notes: [],
      save: () =>
        writeFileAtomic(
          joinPath(out, "results.json"),
          JSON.stringify(
            {
              spec: args.spec,
              tasks,
              methods,
              firstSeed,
              seeds,
              steps,
              evalEvery: spec.evalEvery ?? null,
              sweep,
              results: x.results,
              sweeps: x.sweeps,
              aggregates: aggregate(x.results),
              notes: x.notes,
            },
            null,
            1,
          ) + "\n",
        ),
    };
    try {
      for (const task of tasks) await runTask(x, task);
    } finally {
      gpu.destroy();
    }
    const md = tableMarkdown({ ...x, spec: args.spec }, tasks, await svgsIn(out));
    await writeFileAtomic(joinPath(out, "table.md"), md + "\n");
    await x.save();
    console.log("\n" + md);
    if (args.json) {
      console.log(
        JSON.stringify({
          out,
          firstSeed,
          seeds,
          steps,
          aggregates: aggregate(x.results),
          sweeps: x.sweeps,
          notes: x.notes,
        }),
      );
    }
  });
}
