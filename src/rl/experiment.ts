// The paper's table in miniature (PAPER.md "Headline results"): for each task, the same base model
// (the task's warm start) and the same budget of training samples per method, trained and evaluated
// on the same held-out tasks:
//   single        one agent (L0 env variant), untrained
//   single_grpo   one agent + GRPO (L0, K candidates per turn, groups (env, turn))
//   mas           the multi-agent team, untrained (L1: one policy, roles by prompt)
//   mas_l1        MAS + AT-GRPO, one shared policy (L1)
//   mas_l2        MAS + AT-GRPO, one LoRA adapter per role on a frozen base (L2)
//   mas_l3        MAS + AT-GRPO, one full model per role (L3)
// plus the paper's Plan-Path ablation: the L2 run's two role adapters swapped at evaluation.
// Budget: a MAS step samples K candidates for each of its A agents' turns per environment; the
// single agent has one agent, so it gets A× the environments per step. The samples each run
// actually trained on are recorded beside its result (episodes end early when solved).
// Reported: held-out success after the last step (not the best step: choosing the best on the
// same held-out tasks would flatter every trained method), mean ± std over seeds.

import type { Gpu } from "../gpu/mod.ts";
import { getEnv, soloEnvFor } from "../envs/registry.ts";
import type { CodeExecutor } from "../envs/types.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { ModelWeights } from "../model/weights.ts";
import type { LoadedCheckpoint } from "../train/checkpoint.ts";
import { type Level, parseConfig, type RunConfig } from "./config.ts";
import type { EvalResult } from "./evaluate.ts";
import { policyMapFor } from "./policy_map.ts";
import { RlSession } from "./session.ts";

export const METHODS = ["single", "single_grpo", "mas", "mas_l1", "mas_l2", "mas_l3"] as const;
export type MethodId = typeof METHODS[number];

export interface MethodSpec {
  readonly id: MethodId;
  readonly label: string;
  readonly level: Level;
  readonly train: boolean;
}

export const METHOD_SPECS: Readonly<Record<MethodId, MethodSpec>> = {
  single: { id: "single", label: "single agent", level: "L0", train: false },
  single_grpo: { id: "single_grpo", label: "single agent + GRPO", level: "L0", train: true },
  mas: { id: "mas", label: "MAS (untrained)", level: "L1", train: false },
  mas_l1: { id: "mas_l1", label: "MAS + AT-GRPO, shared (L1)", level: "L1", train: true },
  mas_l2: { id: "mas_l2", label: "MAS + AT-GRPO, per-role LoRA (L2)", level: "L2", train: true },
  mas_l3: { id: "mas_l3", label: "MAS + AT-GRPO, per-role full (L3)", level: "L3", train: true },
};

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
}

function merge(a: unknown, b: unknown): unknown {
  if (typeof a !== "object" || a === null || Array.isArray(a) || typeof b !== "object" || b === null || Array.isArray(b)) return b;
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? merge(out[k], v) : v;
  return out;
}

/** The run config of (task, method, seed): same base, tasks and eval; level, mode and budget per method. */
export function methodConfig(spec: ExperimentSpec, task: string, method: MethodId, seed: number, steps: number, outDir: string): RunConfig {
  const t = spec.tasks[task];
  if (!t) throw new RangeError(`unknown task "${task}"; the spec has ${Object.keys(spec.tasks).join(", ")}`);
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
      // Same samples per step: the single agent plays every one of the team's agent slots.
      envsPerStep: m.level === "L0" ? envsPerStep * mas.possibleAgents.length : envsPerStep,
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
    eval: { beforeTraining: !m.train, everySteps: Math.max(1, steps) },
  };
  return parseConfig(merge(merge(raw, overrides), spec.methods?.[method] ?? {}));
}

export interface RunResult {
  task: string;
  method: MethodId | "ablation_swapped";
  seed: number;
  successRate: number;
  /** Training samples (completions) the run used; 0 for untrained methods. */
  samples: number;
  steps: number;
  runDir: string | null;
  eval: Omit<EvalResult, "samples">;
}

export interface Aggregate {
  task: string;
  method: string;
  label: string;
  n: number;
  mean: number;
  std: number;
  samples: number;
}

const LABELS: Record<string, string> = {
  ...Object.fromEntries(METHODS.map((m) => [m, METHOD_SPECS[m].label])),
  ablation_swapped: "ablation: L2 role adapters swapped (the paper's, on Plan-Path)",
};

/** Mean and sample standard deviation (n − 1; 0 for one value) of the success rates per (task, method). */
export function aggregate(results: readonly RunResult[]): Aggregate[] {
  const by = new Map<string, RunResult[]>();
  for (const r of results) by.set(`${r.task}|${r.method}`, [...(by.get(`${r.task}|${r.method}`) ?? []), r]);
  return [...by.values()].map((rs) => {
    const xs = rs.map((r) => r.successRate), n = xs.length;
    const mean = xs.reduce((a, b) => a + b, 0) / n;
    const std = n > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1)) : 0;
    return { task: rs[0].task, method: rs[0].method, label: LABELS[rs[0].method], n, mean, std, samples: rs.reduce((a, r) => a + r.samples, 0) / n };
  });
}

/** Rows = methods, columns = tasks; cells "mean ± std" held-out success in %. */
export function markdownTable(aggs: readonly Aggregate[], tasks: readonly string[]): string {
  const methods = [...METHODS, "ablation_swapped"].filter((m) => aggs.some((a) => a.method === m));
  const cell = (t: string, m: string) => {
    const a = aggs.find((x) => x.task === t && x.method === m);
    return a ? `${(a.mean * 100).toFixed(1)} ± ${(a.std * 100).toFixed(1)}` : "—";
  };
  const head = `| method | ${tasks.join(" | ")} |`;
  const rule = `|---|${tasks.map(() => "---").join("|")}|`;
  const rows = methods.map((m) => `| ${LABELS[m]} | ${tasks.map((t) => cell(t, m)).join(" | ")} |`);
  return [head, rule, ...rows].join("\n");
}

/** A checkpoint with two role adapters exchanged (the paper's "role policies swapped" ablation). */
export function swapRoleAdapters(ck: LoadedCheckpoint, cfg: RunConfig): LoadedCheckpoint {
  const map = policyMapFor(cfg);
  if (map.level !== "L2" || map.trainers.length !== 1 || map.trainers[0].adapters.length !== 2) {
    throw new RangeError(`the swap ablation needs an L2 run with exactly two role adapters (got ${map.level}, ${map.trainers.map((t) => t.adapters.join("+")).join(", ")})`);
  }
  const [t] = map.trainers, [a, b] = t.adapters;
  const adapters = { ...ck.adapters, [`${t.name}.${a}`]: ck.adapters[`${t.name}.${b}`], [`${t.name}.${b}`]: ck.adapters[`${t.name}.${a}`] };
  return { ...ck, adapters };
}

/** Held-out evaluation of a checkpoint's policies (or of the base when ck is undefined). */
export async function evaluateWith(
  cfg: RunConfig,
  deps: { gpu: Gpu; weights: ModelWeights; tokenizer: Tokenizer; executor?: CodeExecutor },
  ck?: LoadedCheckpoint,
): Promise<EvalResult> {
  const session = await RlSession.create(cfg, { ...deps, warmStart: ck ? { kind: "checkpoint", checkpoint: ck } : undefined });
  try {
    return await session.evaluate();
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
