// The paper's table in miniature (docs/algorithm.md "Headline results"): for each task, the same base model
// (the task's warm start) and the same budget of training samples per method, trained and evaluated
// on the same held-out tasks:
//   single        one agent (L0 env variant), untrained
//   single_grpo   one agent + GRPO (L0, K candidates per turn, groups (env, turn))
//   mas           the multi-agent team, untrained (L1: one policy, roles by prompt)
//   mas_l1        MAS + AT-GRPO, one shared policy (L1)
//   mas_l2        MAS + AT-GRPO, one LoRA adapter per role on a frozen base (L2)
//   mas_l3        MAS + AT-GRPO, one full model per role (L3)
//   mas_l1_grpo   MAS + plain GRPO, one shared policy (L1): K whole trajectories per task, one
//                 group per task, every action credited with its trajectory's return (the
//                 paper's "no grouping (standard GRPO)" ablation of AT-GRPO's agent- and
//                 turn-wise groups and tree sampling); not run by default
//   mas_l1_agent_groups, mas_l1_turn_groups
//                 MAS + AT-GRPO at L1 with coarser groups (rewards.groupBy): an agent's
//                 candidates of every turn, or every agent's of a turn, pooled in one group
//                 per env (the paper's agent-wise-only and turn-wise-only ablations); not run
//                 by default
//   single_tool, single_tool_grpo
//                 the team's tool agent alone (L0, env.soloAgent "tool": its program's printed
//                 answer committed), untrained and + GRPO at the single agent's budget; not run
//                 by default
//   mas_l1_ppo    MAS + PPO with a critic and GAE instead of AT-GRPO's group baselines, one
//                 shared policy (L1), whole-trajectory rollouts (docs/ppo.md); not run by default
// plus the paper's Plan-Path ablations: the L2 run's two role adapters swapped at evaluation
// ("ablation"), and each role trained alone, then played as a team ("sa_team": the adapters of
// single_grpo, the plan agent alone, and single_tool_grpo, the tool agent alone, of the same seed,
// evaluated as the L2 team).
// Budget: a MAS step samples K candidates for each of its A agents' turns per environment; the
// single agent has one agent, so it gets A× the environments per step (A / turnsPerTeamTurn× for a
// variant that takes a turn for each role: search_solo_v1 gets the team's). The samples each run
// actually trained on are recorded beside its result (episodes end early when solved).
// Reported: held-out success after the last step (not the best step: choosing the best on the
// same held-out tasks would flatter every trained method), mean ± std over seeds, each seed's
// success, and exact McNemar p-values (experiment_stats.ts) against single_grpo and against mas on
// the per-task outcomes (every method plays the same held-out tasks, so results pair task by task).
// A trained method's learning rate (single_grpo's, L3's) may be swept first (spec.sweep), chosen on
// the training split only.
// Learning curves: trained runs validate every spec.evalEvery steps; step 0 of a curve is the
// untrained method's result of the same seed (single for single_grpo, mas for the MAS methods).

import type { Gpu } from "../gpu/mod.ts";
import { getEnv, soloAgentsOf, soloEnvFor } from "../envs/registry.ts";
import type { CodeExecutor } from "../envs/types.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { ModelWeights } from "../model/weights.ts";
import type { LoadedCheckpoint } from "../train/checkpoint.ts";
import { type Level, parseConfig, type RunConfig } from "./config.ts";
import type { EvalResult } from "./evaluate.ts";
import {
  type BootstrapDiff,
  bootstrapDiff,
  bySeed,
  DERIVED,
  type DerivedMethod,
  pairDifferences,
  pairSeeds,
  signedPoints,
} from "./experiment_compare.ts";
import { type PairedTest, pairedTest } from "./experiment_stats.ts";
import { RlSession } from "./session.ts";

/** The paper's table: what `experiment paper-table` runs without --methods. */
const TABLE_METHODS = ["single", "single_grpo", "mas", "mas_l1", "mas_l2", "mas_l3"] as const;
/** Run only when named in --methods: the other comparators and the ablations. */
const OPT_IN_METHODS = [
  "single_tool",
  "single_tool_grpo",
  "mas_l1_grpo",
  "mas_l1_agent_groups",
  "mas_l1_turn_groups",
  "mas_l1_ppo",
] as const;
export const METHODS = [...TABLE_METHODS, ...OPT_IN_METHODS] as const;
export type MethodId = typeof METHODS[number];
export const DEFAULT_METHODS: readonly MethodId[] = TABLE_METHODS;
const DERIVED_IDS: readonly DerivedMethod[] = Object.values(DERIVED);

export interface MethodSpec {
  readonly id: MethodId;
  readonly label: string;
  readonly level: Level;
  readonly train: boolean;
  /** A RunConfig fragment of the method itself, applied before the spec's methods[id]. */
  readonly config?: Record<string, unknown>;
}

/**
 * PPO with a critic, at the budget of AT-GRPO's L1: K whole trajectories per task (the same
 * samples per step as K candidates per agent turn), the settings of configs/*_L1_ppo.json.
 */
const PPO_FRAGMENT = {
  rollout: { mode: "independent" },
  update: {
    advantage: "gae",
    gae: { gamma: 1, lambda: 0.95, whiten: true },
    value: { coef: 0.1, clip: 0.2, lr: 0.01 },
  },
};

export const METHOD_SPECS: Readonly<Record<MethodId, MethodSpec>> = {
  single: { id: "single", label: "single agent", level: "L0", train: false },
  single_grpo: { id: "single_grpo", label: "single agent + GRPO", level: "L0", train: true },
  mas: { id: "mas", label: "MAS (untrained)", level: "L1", train: false },
  mas_l1: { id: "mas_l1", label: "MAS + AT-GRPO, shared (L1)", level: "L1", train: true },
  mas_l2: { id: "mas_l2", label: "MAS + AT-GRPO, per-role LoRA (L2)", level: "L2", train: true },
  mas_l3: { id: "mas_l3", label: "MAS + AT-GRPO, per-role full (L3)", level: "L3", train: true },
  // AT-GRPO's L1 with its groups and tree taken away: the same samples per step (K whole
  // trajectories per task against K candidates per agent turn), the same loss and settings.
  mas_l1_grpo: {
    id: "mas_l1_grpo",
    label: "MAS + plain GRPO, shared (L1)",
    level: "L1",
    train: true,
    config: { rollout: { mode: "independent" } },
  },
  // AT-GRPO's L1 with its tree and samples, its groups coarser: one baseline per (env, agent)
  // over every turn, or per (env, turn) over both agents.
  mas_l1_agent_groups: {
    id: "mas_l1_agent_groups",
    label: "MAS + AT-GRPO, agent-wise groups only (L1)",
    level: "L1",
    train: true,
    config: { rewards: { groupBy: "agent" } },
  },
  mas_l1_turn_groups: {
    id: "mas_l1_turn_groups",
    label: "MAS + AT-GRPO, turn-wise groups only (L1)",
    level: "L1",
    train: true,
    config: { rewards: { groupBy: "turn" } },
  },
  mas_l1_ppo: {
    id: "mas_l1_ppo",
    label: "MAS + PPO with critic, shared (L1)",
    level: "L1",
    train: true,
    config: PPO_FRAGMENT,
  },
  // The team's other role alone: the paper's "tool agent trained in SA, evaluated in SA".
  single_tool: {
    id: "single_tool",
    label: "tool agent alone",
    level: "L0",
    train: false,
    config: { env: { soloAgent: "tool" } },
  },
  single_tool_grpo: {
    id: "single_tool_grpo",
    label: "tool agent alone + GRPO",
    level: "L0",
    train: true,
    config: { env: { soloAgent: "tool" } },
  },
};

/** The role a single-agent method's agent plays alone (null: the env's default solo agent). */
export function soloAgentOf(method: MethodId): string | null {
  const env = METHOD_SPECS[method].config?.env as { soloAgent?: string } | undefined;
  return env?.soloAgent ?? null;
}

/** Whether a method can run on a task's env (an L0 method needs its single-agent variant). */
export function methodRunsOn(method: MethodId, envId: string): boolean {
  if (METHOD_SPECS[method].level !== "L0") return true;
  const agent = soloAgentOf(method);
  return agent === null ? hasSolo(envId) : soloAgentsOf(envId).includes(agent);
}

/** configs/experiments/paper_table.json: a base config and one override object per task. */
export interface ExperimentSpec {
  description?: string;
  /** RL steps of every trained method (overridable on the command line). */
  steps: number;
  seeds: number;
  /** Config fields shared by every task and method (a RunConfig fragment). */
  common: Record<string, unknown>;
  /** Task name → RunConfig fragment (env.id, model, difficulty...). */
  tasks: Record<string, Record<string, unknown>>;
  /** Method → RunConfig fragment applied last (e.g. a full-model learning rate for mas_l3). */
  methods?: Partial<Record<MethodId, Record<string, unknown>>>;
  /**
   * Trained runs validate on the held-out tasks every N steps (the learning curves) and after the
   * last step; default: after the last step only.
   */
  evalEvery?: number;
  /**
   * Learning-rate sweeps of trained methods (e.g. single_grpo, mas_l3), chosen on the training
   * split before a task's seeds run.
   */
  sweep?: Partial<Record<MethodId, LrSweepSpec>>;
}

/**
 * spec.sweep[method]: each lr trains the method on `seed` (same steps and budget); its final
 * policy plays `episodes` train-split tasks (numbered from env.testSeed, split "train"); the lr
 * with the highest train-split success (ties: the lower lr) trains every seed.
 */
export interface LrSweepSpec {
  lrs: number[];
  /** The seed the candidates train with (default: the first seed of the invocation). */
  seed?: number;
  /** Train-split tasks each candidate plays (default: the config's eval.episodes). */
  episodes?: number;
}

function merge(a: unknown, b: unknown): unknown {
  if (
    typeof a !== "object" || a === null || Array.isArray(a) || typeof b !== "object" ||
    b === null || Array.isArray(b)
  ) return b;
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? merge(out[k], v) : v;
  return out;
}

/**
 * The run config of (task, method, seed): same base, tasks and eval; level, mode and budget per
 * method. `extra` is a RunConfig fragment applied last (a swept learning rate, a run name).
 */
export function methodConfig(
  spec: ExperimentSpec,
  task: string,
  method: MethodId,
  seed: number,
  steps: number,
  outDir: string,
  extra: Record<string, unknown> = {},
): RunConfig {
  const t = spec.tasks[task];
  if (!t) {
    throw new RangeError(
      `unknown task "${task}"; the spec has ${Object.keys(spec.tasks).join(", ")}`,
    );
  }
  const m = METHOD_SPECS[method];
  const raw = merge(spec.common, t) as Record<string, unknown>;
  const env = raw.env as { id: string };
  const mas = getEnv(env.id);
  const rollout = (raw.rollout ?? {}) as { envsPerStep?: number };
  const envsPerStep = rollout.envsPerStep ?? 4;
  const overrides: Record<string, unknown> = {
    level: m.level,
    rollout: {
      mode: m.level === "L0" ? "single-agent" : "tree",
      envsPerStep: m.level === "L0"
        ? soloEnvsPerStep(env.id, soloAgentOf(method), envsPerStep, mas.possibleAgents.length)
        : envsPerStep,
    },
    update: { mode: m.level === "L3" ? "full" : "lora" },
    run: {
      steps: m.train ? steps : 0,
      seed,
      name: `${task}-${method}-seed${seed}`,
      outDir,
      checkpointEvery: 0,
      keepLast: 1,
      saveRollouts: false,
    },
    env: { trainSeed: 1_000_000 * (seed + 1) },
    // Trained runs get their step 0 from the untrained method of the same seed (same base, tasks).
    eval: { beforeTraining: !m.train, everySteps: spec.evalEvery ?? Math.max(1, steps) },
  };
  const withMethod = merge(merge(raw, overrides), m.config ?? {});
  return parseConfig(merge(merge(withMethod, spec.methods?.[method] ?? {}), extra));
}

/**
 * The single agent's environments per step for the team's `teamEnvs`: the same samples per step,
 * the single agent playing every one of the team's `agents` slots. A variant that already takes a
 * turn for each role (`turnsPerTeamTurn`, search_solo_v1's 2) fills them in its own turns, so it
 * gets `agents / turnsPerTeamTurn` × the environments (Search: the team's), not `agents` ×.
 */
export function soloEnvsPerStep(
  envId: string,
  agent: string | null,
  teamEnvs: number,
  agents: number,
): number {
  const solo = soloEnvFor(envId, agent ?? undefined);
  return Math.max(1, Math.round((teamEnvs * agents) / (solo.turnsPerTeamTurn ?? 1)));
}

/** A RunConfig fragment setting the optimizer's learning rate. */
export const lrFragment = (lr: number): Record<string, unknown> => ({
  update: { optimizer: { lr } },
});

export interface RunResult {
  task: string;
  method: MethodId | DerivedMethod;
  seed: number;
  successRate: number;
  /** Training samples (completions) the run used; 0 for untrained methods. */
  samples: number;
  steps: number;
  runDir: string | null;
  eval: Omit<EvalResult, "samples">;
  /** The learning rate the run trained at, where a sweep chose it. */
  lr?: number;
  /** Held-out success per validation step (trained runs; step 0 is the untrained method's). */
  curve?: CurvePoint[];
  /** Mean training reward per agent (over its turns) per RL step (trained runs). */
  rewardCurve?: RewardPoint[];
}

export interface CurvePoint {
  step: number;
  successRate: number;
}

export interface RewardPoint {
  step: number;
  byAgent: Record<string, number>;
}

export interface Aggregate {
  task: string;
  method: string;
  label: string;
  n: number;
  mean: number;
  std: number;
  samples: number;
  /** Each seed's held-out success, by seed. */
  perSeed: { seed: number; successRate: number }[];
  /** Exact McNemar p-value against single_grpo (null: this is single_grpo, or it did not run). */
  pVsSingleGrpo: number | null;
  /** Exact McNemar p-value against mas (null: this is mas, or it did not run). */
  pVsMas: number | null;
  /** The paired tests behind the p-values: b = tasks only this method solved, c = only the comparator. */
  tests: { single_grpo: PairedTest | null; mas: PairedTest | null };
  /**
   * This method's success minus the comparator's, with a 95% interval from a bootstrap over
   * seeds, then tasks (bootstrapDiff); null where the test is.
   */
  diffs: { single_grpo: BootstrapDiff | null; mas: BootstrapDiff | null };
}

const LABELS: Record<string, string> = {
  ...Object.fromEntries(METHODS.map((m) => [m, METHOD_SPECS[m].label])),
  ablation_swapped: "ablation: L2 role adapters swapped (the paper's, on Plan-Path)",
  ablation_sa_team: "ablation: each role trained alone (L0 + GRPO), played as the L2 team",
};

/**
 * The paired test of a method's runs against a comparator's on the per-task held-out outcomes:
 * seed s pairs with the comparator's seed s, or with its first seed where it has no seed s; all
 * (seed, task) pairs are pooled. Null where the comparator did not run or the tasks differ.
 */
export function compareRuns(rs: readonly RunResult[], cs: readonly RunResult[]): PairedTest | null {
  const pairs = comparablePairs(rs, cs);
  if (!pairs) return null;
  return pairedTest(
    pairs.map((p) => p.run.eval.successes),
    pairs.map((p) => p.other.eval.successes),
  );
}

/** compareRuns' pairs, or null where the comparator did not run or the tasks differ. */
function comparablePairs(rs: readonly RunResult[], cs: readonly RunResult[]) {
  if (!rs.length || !cs.length) return null;
  const pairs = pairSeeds(rs, cs);
  if (pairs.some((p) => p.run.eval.successes.length !== p.other.eval.successes.length)) return null;
  return pairs;
}

/** The bootstrap interval of the success difference over compareRuns' pairs (null likewise). */
export function diffRuns(rs: readonly RunResult[], cs: readonly RunResult[]): BootstrapDiff | null {
  const pairs = comparablePairs(rs, cs);
  if (!pairs || pairs.some((p) => !p.run.eval.successes.length)) return null;
  return bootstrapDiff(pairs.map(({ run, other }) => pairDifferences(run, other)));
}

/**
 * Per (task, method): mean and sample standard deviation (n − 1; 0 for one value) of the success
 * rates, each seed's, and the paired tests against single_grpo and mas of the same task.
 */
export function aggregate(results: readonly RunResult[]): Aggregate[] {
  const by = new Map<string, RunResult[]>();
  for (const r of results) {
    by.set(`${r.task}|${r.method}`, [...(by.get(`${r.task}|${r.method}`) ?? []), r]);
  }
  const test = (rs: RunResult[], vs: MethodId) =>
    rs[0].method === vs ? null : compareRuns(rs, by.get(`${rs[0].task}|${vs}`) ?? []);
  const diff = (rs: RunResult[], vs: MethodId) =>
    rs[0].method === vs ? null : diffRuns(rs, by.get(`${rs[0].task}|${vs}`) ?? []);
  return [...by.values()].map((rs) => {
    const xs = rs.map((r) => r.successRate), n = xs.length;
    const mean = xs.reduce((a, b) => a + b, 0) / n;
    const std = n > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1)) : 0;
    const tests = { single_grpo: test(rs, "single_grpo"), mas: test(rs, "mas") };
    return {
      task: rs[0].task,
      method: rs[0].method,
      label: LABELS[rs[0].method],
      n,
      mean,
      std,
      samples: rs.reduce((a, r) => a + r.samples, 0) / n,
      perSeed: bySeed(rs).map((r) => ({ seed: r.seed, successRate: r.successRate })),
      pVsSingleGrpo: tests.single_grpo?.p ?? null,
      pVsMas: tests.mas?.p ?? null,
      tests,
      diffs: { single_grpo: diff(rs, "single_grpo"), mas: diff(rs, "mas") },
    };
  });
}

/** Rows = methods, columns = tasks; cells "mean ± std" held-out success in %. */
export function markdownTable(aggs: readonly Aggregate[], tasks: readonly string[]): string {
  const methods = [...METHODS, ...DERIVED_IDS].filter((m) => aggs.some((a) => a.method === m));
  const cell = (t: string, m: string) => {
    const a = aggs.find((x) => x.task === t && x.method === m);
    return a ? `${(a.mean * 100).toFixed(1)} ± ${(a.std * 100).toFixed(1)}` : "—";
  };
  const head = `| method | ${tasks.join(" | ")} |`;
  const rule = `|---|${tasks.map(() => "---").join("|")}|`;
  const rows = methods.map((m) => `| ${LABELS[m]} | ${tasks.map((t) => cell(t, m)).join(" | ")} |`);
  return [head, rule, ...rows].join("\n");
}

const pct = (x: number) => (x * 100).toFixed(1);
const pCell = (t: PairedTest | null, d: BootstrapDiff | null) =>
  t
    ? `${t.p < 0.001 ? "<0.001" : t.p.toFixed(3)} (${t.b}:${t.c})${
      d ? `; ${signedPoints(d.mean)} [${signedPoints(d.lo)}, ${signedPoints(d.hi)}]` : ""
    }`
    : "—";

/**
 * Rows = (task, method): each seed's held-out success (%) and the paired tests' p-values against
 * single agent + GRPO and against the untrained MAS, with the discordant counts (this method
 * only : the comparator only).
 */
export function pairedTable(aggs: readonly Aggregate[], tasks: readonly string[]): string {
  const order: string[] = [...METHODS, ...DERIVED_IDS];
  const head =
    `| task | method | success per seed (%) | p vs ${LABELS.single_grpo} | p vs ${LABELS.mas} |`;
  const rows = tasks.flatMap((t) =>
    aggs.filter((a) => a.task === t).sort((a, b) =>
      order.indexOf(a.method) - order.indexOf(b.method)
    ).map((a) => {
      const seeds = a.perSeed.map((s) => `s${s.seed} ${pct(s.successRate)}`).join(", ");
      return `| ${t} | ${a.label} | ${seeds} | ${
        pCell(a.tests.single_grpo, a.diffs.single_grpo)
      } | ${pCell(a.tests.mas, a.diffs.mas)} |`;
    })
  );
  return [head, "|---|---|---|---|---|", ...rows].join("\n");
}

/** One learning-rate sweep: each candidate's train-split success and the lr chosen. */
export interface SweepRecord {
  task: string;
  method: MethodId;
  seed: number;
  split: "train";
  episodes: number;
  points: { lr: number; trainSuccess: number; runDir: string }[];
  /** Null until every candidate has been scored. */
  chosenLr: number | null;
}

/** The lr with the highest train-split success; ties go to the lower lr. */
export function chooseLr(points: readonly { lr: number; trainSuccess: number }[]): number {
  if (!points.length) throw new RangeError("chooseLr: no candidates");
  return [...points].sort((a, b) => b.trainSuccess - a.trainSuccess || a.lr - b.lr)[0].lr;
}

/** What runLrSweep needs from its host: training a candidate and scoring it on the train split. */
export interface SweepDeps<T> {
  /** Trains one candidate; `kept` is what the host keeps of it (the chosen one is returned). */
  train(cfg: RunConfig): Promise<{ runDir: string; kept: T }>;
  /** The trained run's final policy's success on `episodes` train-split tasks. */
  scoreOnTrain(cfg: RunConfig, runDir: string, episodes: number): Promise<number>;
  /** After each candidate (results.json is rewritten). */
  onPoint?(record: SweepRecord): Promise<void>;
}

/**
 * spec.sweep[method] (default single_grpo) for one task: trains the method at each lr on one
 * seed, scores each final policy on the train split, chooses the lr (chooseLr). Returns the
 * record and what the host kept of the run at the chosen lr (it may stand as that seed's result:
 * same config).
 */
export async function runLrSweep<T>(
  spec: ExperimentSpec,
  task: string,
  opts: { seed: number; steps: number; outDir: string; method?: MethodId },
  deps: SweepDeps<T>,
): Promise<{ record: SweepRecord; chosen: T }> {
  const method = opts.method ?? "single_grpo";
  if (!METHOD_SPECS[method].train) {
    throw new RangeError(`runLrSweep: ${method} does not train; only trained methods have an lr`);
  }
  const sw = spec.sweep?.[method];
  if (!sw?.lrs.length) throw new RangeError(`runLrSweep: the spec has no sweep.${method}.lrs`);
  const seed = sw.seed ?? opts.seed;
  const cfgFor = (lr: number) =>
    methodConfig(spec, task, method, seed, opts.steps, opts.outDir, {
      ...lrFragment(lr),
      run: { name: `${task}-${method}-lr${lr}-seed${seed}` },
    });
  const episodes = sw.episodes ?? cfgFor(sw.lrs[0]).eval.episodes;
  const record: SweepRecord = {
    task,
    method,
    seed,
    split: "train",
    episodes,
    points: [],
    chosenLr: null,
  };
  const kept = new Map<number, T>();
  for (const lr of sw.lrs) {
    const cfg = cfgFor(lr);
    const run = await deps.train(cfg);
    kept.set(lr, run.kept);
    record.points.push({
      lr,
      trainSuccess: await deps.scoreOnTrain(cfg, run.runDir, episodes),
      runDir: run.runDir,
    });
    await deps.onPoint?.(record);
  }
  record.chosenLr = chooseLr(record.points);
  return { record, chosen: kept.get(record.chosenLr)! };
}

/** Rows = (task, method, lr): the train-split success of each sweep candidate, the chosen marked. */
export function sweepTable(sweeps: readonly SweepRecord[]): string {
  const rows = sweeps.flatMap((s) =>
    s.points.map((p) =>
      `| ${s.task} | ${LABELS[s.method] ?? s.method} | ${p.lr} | ${
        pct(p.trainSuccess)
      } (${s.episodes} tasks, seed ${s.seed}) | ${p.lr === s.chosenLr ? "chosen" : ""} |`
    )
  );
  return [
    "| task | method | lr | train-split success (%) | |",
    "|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

/** The untrained method whose result is a trained method's step 0 (same base, same tasks). */
export const BASELINE_OF: Partial<Record<MethodId, MethodId>> = {
  single_grpo: "single",
  single_tool_grpo: "single_tool",
  mas_l1: "mas",
  mas_l2: "mas",
  mas_l3: "mas",
  mas_l1_grpo: "mas",
  mas_l1_agent_groups: "mas",
  mas_l1_turn_groups: "mas",
  mas_l1_ppo: "mas",
};

/**
 * A trained run's curves from its metrics.jsonl lines: held-out success at each step that
 * validated, and each agent's training reward per step (the mean over its turns).
 */
export function curvesFromMetrics(
  lines: readonly Record<string, unknown>[],
): { curve: CurvePoint[]; rewardCurve: RewardPoint[] } {
  const curve: CurvePoint[] = [], rewardCurve: RewardPoint[] = [];
  for (const m of lines) {
    const step = m.step as number;
    const ev = m.eval as { successRate?: number } | undefined;
    if (typeof ev?.successRate === "number") curve.push({ step, successRate: ev.successRate });
    const rba = m.rewardByAgent as Record<string, Record<string, number>> | undefined;
    if (rba) {
      const byAgent = Object.fromEntries(
        Object.entries(rba).map(([a, turns]) => {
          const vs = Object.values(turns);
          return [a, vs.reduce((s, v) => s + v, 0) / Math.max(1, vs.length)];
        }),
      );
      rewardCurve.push({ step, byAgent });
    }
  }
  return { curve, rewardCurve };
}

/** A curve with step 0 taken from the baseline's result where the run did not validate at step 0. */
export function withStepZero(
  curve: readonly CurvePoint[],
  baseline: RunResult | undefined,
): CurvePoint[] {
  if (!baseline || curve.some((p) => p.step === 0)) return [...curve];
  return [{ step: 0, successRate: baseline.successRate }, ...curve];
}

/**
 * Evaluation of a checkpoint's policies (or of the base when ck is undefined): held-out by
 * default; opts.split "train" plays train-split tasks (numbered from env.testSeed) instead.
 */
export async function evaluateWith(
  cfg: RunConfig,
  deps: { gpu: Gpu; weights: ModelWeights; tokenizer: Tokenizer; executor?: CodeExecutor },
  ck?: LoadedCheckpoint,
  opts: { split?: "train" | "test"; episodes?: number } = {},
): Promise<EvalResult> {
  const session = await RlSession.create(cfg, {
    ...deps,
    warmStart: ck ? { kind: "checkpoint", checkpoint: ck } : undefined,
  });
  try {
    return await session.evaluate(opts);
  } finally {
    session.destroy();
  }
}

/** Whether a task has a single-agent variant (L0 methods are skipped, with a note, where not). */
export function hasSolo(envId: string): boolean {
  try {
    soloEnvFor(envId);
    return true;
  } catch {
    return false;
  }
}

/** "seed 3", "seeds 0..2" or "seeds 0, 2, 5": the seeds a set of results covers. */
export function seedLabel(results: readonly RunResult[]): string {
  const seeds = [...new Set(results.map((r) => r.seed))].sort((a, b) => a - b);
  if (seeds.length === 1) return `seed ${seeds[0]}`;
  const contiguous = seeds.every((s, i) => i === 0 || s === seeds[i - 1] + 1);
  return contiguous ? `seeds ${seeds[0]}..${seeds[seeds.length - 1]}` : `seeds ${seeds.join(", ")}`;
}
