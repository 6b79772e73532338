// The AT-GRPO train loop (Deno). Per step: sample E training tasks, roll out (tree or
// independent), score groups keyed (env, agent, turn) and compute advantages, then update each
// policy on the union of its agents' samples with the PPO-clip loss (old log-probs from rollout
// time). What it keeps of GRPO: group-normalised advantages, PPO clip + dual clip, token-mean;
// what it drops (as the paper): the KL term by default and any entropy bonus.
// A run directory holds config.json, metrics.jsonl, summary.log, rollouts/step-N.jsonl,
// checkpoints/step-N/ (keep-last-N) and best/; --resume continues bit-identically.

import { Gpu } from "../gpu/mod.ts";
import { getEnv } from "../envs/registry.ts";
import type { AnyEnvDefinition } from "../envs/types.ts";
import { denoFolder, joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { parseModelConfig } from "../model/config.ts";
import { initModel } from "../model/init.ts";
import { ByteTokenizer, loadTokenizer, type Tokenizer } from "../model/tokenizer.ts";
import { loadModel, type ModelWeights } from "../model/weights.ts";
import { SandboxPool } from "../sandbox/mod.ts";
import type { TrainSequence } from "../train/trainer.ts";
import { buildGroups, filterGroups, flattenAdvantages, groupAdvantages, rewardStats } from "./advantages.ts";
import { ConfigError, configWarnings, formatConfig, presetPath, type RunConfig } from "./config.ts";
import { evaluate, type EvalResult } from "./evaluate.ts";
import { createPolicies, type PolicySet } from "./policies.ts";
import { policyMapFor, policyOf } from "./policy_map.ts";
import { rolloutIndependent, rolloutTree, type Sample } from "./rollout.ts";
import { loadRunCheckpoint, saveRunCheckpoint, RunDir } from "./run_dir.ts";

export interface TrainOptions {
  /** Continue a run directory from its latest checkpoint. */
  resume?: string;
  /** Progress lines (default: console.log). */
  log?: (line: string) => void;
}

export interface TrainSummary {
  runDir: string;
  steps: number;
  before: EvalResult | null;
  after: EvalResult | null;
  best: { step: number; successRate: number } | null;
}

export async function loadBase(cfg: RunConfig): Promise<{ weights: ModelWeights; tokenizer: Tokenizer }> {
  const preset = presetPath(cfg);
  if (preset) {
    const json = JSON.parse(await Deno.readTextFile(preset));
    return { weights: initModel(parseModelConfig(json), { seed: cfg.run.seed }), tokenizer: new ByteTokenizer() };
  }
  const folder = denoFolder(cfg.model.folder!);
  const weights = await loadModel(folder);
  return { weights, tokenizer: await loadTokenizer(folder, { config: weights.config }) };
}

/** A sample as a training sequence: prompt + completion, loss on the completion only. */
export function toSequence(s: Sample, advantage: number, adapter: number | null): TrainSequence | null {
  if (!s.completionIds.length) return null;
  const P = s.promptIds.length, C = s.completionIds.length;
  return {
    tokens: [...s.promptIds, ...s.completionIds],
    adapter: adapter ?? undefined,
    weights: [...new Array(P - 1).fill(0), ...new Array(C).fill(1)],
    oldLogp: [...new Array(P - 1).fill(0), ...s.oldLogp],
    advantage,
  };
}

/** Deterministic shuffle (mulberry32) so PPO mini-batches are the same on resume. */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const a = [...xs];
  let t = seed >>> 0;
  for (let i = a.length - 1; i > 0; i--) {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r ^= r + Math.imul(r ^ (r >>> 7), 61 | r);
    const j = (((r ^ (r >>> 14)) >>> 0) / 4294967296 * (i + 1)) | 0;
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

interface StepContext {
  cfg: RunConfig;
  env: AnyEnvDefinition;
  tokenizer: Tokenizer;
  policies: PolicySet;
  executor?: SandboxPool;
}

/** One RL step: rollouts, advantages, one PPO update per policy. Returns the metrics line. */
async function rlStep(ctx: StepContext, step: number, run: RunDir): Promise<Record<string, unknown>> {
  const { cfg, env, policies } = ctx;
  const t0 = performance.now();
  const tasks = Array.from({ length: cfg.rollout.envsPerStep }, (_, e) =>
    env.generate(cfg.env.trainSeed + step * cfg.rollout.envsPerStep + e, { split: "train", difficulty: cfg.env.difficulty }));
  const deps = { env, tokenizer: ctx.tokenizer, policyOf: (a: string) => policies.agentPolicy(a), executor: ctx.executor };
  const ro = {
    mode: cfg.rollout.mode === "independent" ? "independent" as const : "tree" as const,
    K: cfg.rollout.k, alpha: cfg.rewards.alpha, maxNewTokens: cfg.rollout.maxNewTokens,
    sampling: cfg.rollout.sampling, style: cfg.rollout.promptStyle, seed: cfg.run.seed, step,
  };
  const r = ro.mode === "independent" ? await rolloutIndependent(deps, tasks, ro) : await rolloutTree(deps, tasks, ro);
  const tRoll = performance.now();
  const members = r.groups.flatMap((g) => g.samples.map((s) => ({ ...s, env: s.env, agent: s.agent, turn: s.turn })));
  const groups = groupAdvantages(buildGroups(members, cfg.rollout.mode), { normalize: cfg.rewards.normalize, eps: cfg.rewards.eps });
  const { kept } = filterGroups(groups, { kind: cfg.rewards.filter, fraction: cfg.rewards.filterFraction });
  const stats = rewardStats(groups);
  // Each policy trains on the union of its agents' samples.
  const perTrainer: TrainSequence[][] = policies.trainers.map(() => []);
  for (const { member, advantage } of flattenAdvantages(kept)) {
    const p = policyOf(policies.map, member.agent);
    const seq = toSequence(member, advantage, p.adapter);
    if (seq && seq.tokens.length <= cfg.update.chunkRows) perTrainer[p.trainer].push(seq);
  }
  const updates: Record<string, unknown>[] = [];
  for (const [ti, seqs] of perTrainer.entries()) {
    if (!seqs.length) continue;
    for (let epoch = 0; epoch < cfg.update.ppoEpochs; epoch++) {
      const order = shuffled(seqs, cfg.run.seed * 1000003 + step * 31 + epoch);
      for (let i = 0; i < order.length; i += cfg.update.miniBatchSize) {
        const m = await policies.trainers[ti].step(order.slice(i, i + cfg.update.miniBatchSize));
        if (!m.optimizer.finite) run.log(`step ${step}: non-finite gradient in ${policies.map.trainers[ti].name}: update skipped`);
        updates.push({ trainer: policies.map.trainers[ti].name, ...m.loss, gradNorm: m.optimizer.gradNorm, lr: m.lr, finite: m.optimizer.finite });
      }
    }
  }
  const tUpd = performance.now();
  if (cfg.run.saveRollouts) await run.writeRollouts(step, r.groups);
  return {
    step,
    trainSuccess: r.episodes.filter((e) => e.success).length / r.episodes.length,
    reward: stats.meanReward,
    rewardByAgent: Object.fromEntries(Object.entries(stats.byAgent).map(([a, s]) => [a, s.byTurn])),
    zeroVarianceGroups: stats.zeroVarianceFraction,
    groups: groups.length,
    keptGroups: kept.length,
    samples: members.length,
    updates,
    generatedTokens: r.generatedTokens,
    rolloutTokensPerS: r.generatedTokens / ((tRoll - t0) / 1000),
    seconds: { rollout: (tRoll - t0) / 1000, generate: r.seconds.generate, env: r.seconds.env, update: (tUpd - tRoll) / 1000 },
  };
}

export async function train(cfg: RunConfig, opts: TrainOptions = {}): Promise<TrainSummary> {
  if (cfg.rollout.mode === "single-agent") {
    // L0 needs each environment's single-agent variant (one agent answering without the tool
    // turn); the envs do not have one yet, and running tree mode instead would be L1 in disguise.
    throw ConfigError.at("rollout.mode", `"single-agent" (level L0) is not implemented yet: the environments have no single-agent variant; use L1 (one shared policy) as the single-policy baseline`);
  }
  const log = opts.log ?? ((s: string) => console.log(s));
  const env = getEnv(cfg.env.id);
  const run = opts.resume ? await RunDir.open(opts.resume, log) : await RunDir.create(cfg, log);
  for (const w of configWarnings(cfg)) run.log(`warning: ${w}`);
  if (!opts.resume) await writeFileAtomic(joinPath(run.dir, "config.json"), formatConfig(cfg) + "\n");
  const { weights, tokenizer } = await loadBase(cfg);
  const gpu = await Gpu.create();
  run.log(`adapter: ${gpu.describe()}`);
  const map = policyMapFor(cfg);
  const resumed = opts.resume ? await loadRunCheckpoint(run, cfg, map, weights) : null;
  const policies = await createPolicies(gpu, cfg, map, resumed?.init ?? { weights });
  if (resumed) resumed.restore(policies);
  const executor = env.toolAgents.length ? new SandboxPool() : undefined;
  const ctx: StepContext = { cfg, env, tokenizer, policies, executor };
  let stop = false, saveNow = false;
  const onInt = () => (stop = true), onUsr1 = () => (saveNow = true);
  Deno.addSignalListener("SIGINT", onInt);
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGUSR1", onUsr1);
  const summary: TrainSummary = { runDir: run.dir, steps: 0, before: null, after: null, best: resumed?.best ?? null };
  try {
    const start = resumed ? resumed.step + 1 : 1;
    if (!resumed && cfg.eval.beforeTraining) {
      summary.before = await evaluate({ env, tokenizer, policies, executor }, cfg);
      await run.metric({ step: 0, eval: summary.before });
      run.log(`step 0: held-out success ${(summary.before.successRate * 100).toFixed(1)}%`);
    }
    for (let step = start; step <= cfg.run.steps && !stop; step++) {
      const m = await rlStep(ctx, step, run);
      if (step % cfg.eval.everySteps === 0 || step === cfg.run.steps) {
        const ev = await evaluate({ env, tokenizer, policies, executor }, cfg);
        m.eval = ev;
        summary.after = ev;
        if (!summary.best || ev.successRate > summary.best.successRate) {
          summary.best = { step, successRate: ev.successRate };
          await saveRunCheckpoint(run, "best", step, cfg, policies, summary.best);
        }
      }
      await run.metric(m);
      run.progress(step, cfg.run.steps, m);
      summary.steps = step;
      if (step % cfg.run.checkpointEvery === 0 || step === cfg.run.steps || stop || saveNow) {
        await saveRunCheckpoint(run, `step-${step}`, step, cfg, policies, summary.best);
        saveNow = false;
      }
    }
    if (stop) run.log(`interrupted: checkpoint written; resume with --resume ${run.dir}`);
  } finally {
    Deno.removeSignalListener("SIGINT", onInt);
    if (Deno.build.os !== "windows") Deno.removeSignalListener("SIGUSR1", onUsr1);
    await executor?.close();
    policies.destroy();
    gpu.destroy();
    await run.close(summary);
  }
  return summary;
}
