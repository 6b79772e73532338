// One AT-GRPO run, host-neutral: the same code trains in Deno (src/rl/train.ts, a run directory
// on disk) and in a browser tab's worker (web/, checkpoints in OPFS). A session owns the policies
// of a run; `trainStep()` is one RL step (sample E training tasks, roll out in tree or independent
// mode, group advantages keyed (env, agent, turn), one PPO-clip update per policy on the union of
// its agents' samples); `evaluate()` plays the held-out tasks; `checkpointContents()` is what a
// checkpoint holds. `runSession` is the loop both hosts share: validation before training and every
// N steps, best and periodic checkpoints through a RunSink, stop and save requests between steps.
// What it keeps of GRPO: group-normalised advantages, PPO clip + dual clip, token-mean; what it
// drops (as the paper): the KL term by default and any entropy bonus. With update.advantage "gae"
// the advantages come from a critic instead (critic.ts: a value head, per-token GAE).

import type { Gpu } from "../gpu/mod.ts";
import type { AnyEnvDefinition, CodeExecutor } from "../envs/types.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { ModelWeights } from "../model/weights.ts";
import { LoraLayout } from "../model/lora_layout.ts";
import type { CheckpointContents, LoadedCheckpoint } from "../train/checkpoint.ts";
import { fromPeftAdapter, toPeftAdapter } from "../train/lora_peft.ts";
import type { LoraAdapter } from "../train/peft.ts";
import type { TrainSequence } from "../train/trainer.ts";
import {
  buildGroups,
  expandTrajectories,
  filterGroups,
  flattenAdvantages,
  groupAdvantages,
  type GroupResult,
  type RewardStats,
  rewardStats,
  trajectoryMembers,
} from "./advantages.ts";
import { ConfigError, endpointOf, type RunConfig } from "./config.ts";
import { envForConfig } from "./env_for.ts";
import { promptStyleFor, trainGeneration } from "./generation.ts";
import { type EvalResult, evaluate } from "./evaluate.ts";
import { createPolicies, type PolicyInit, type PolicySet } from "./policies.ts";
import { ReferencePolicies } from "./reference_policy.ts";
import { loraConfigFor, type PolicyMap, policyMapFor, policyOf } from "./policy_map.ts";
import { type Group, rolloutIndependent, rolloutTree, type Sample } from "./rollout.ts";
import { type CriticItem, type CriticStats, gaeSequences } from "./critic.ts";
import { CheckpointMismatchError } from "../train/errors.ts";

/** Where a run's outputs go: a run directory (Deno), OPFS and the page (browser), memory (tests). */
export interface RunSink {
  log(line: string): void;
  /** One object per step (and step 0: the validation before training). */
  metric(m: StepMetrics): Promise<void>;
  progress(step: number, total: number, m: StepMetrics): void;
  /** `decode` turns a sample's prompt ids back into the text the agent saw. */
  writeRollouts(
    step: number,
    groups: readonly Group[],
    decode: (ids: number[]) => string,
  ): Promise<void>;
  /** Stores a checkpoint as `name` ("best" or "step-N"); step checkpoints beyond keepLast are dropped. */
  saveCheckpoint(name: string, contents: CheckpointContents, keepLast: number): Promise<void>;
}

/** A metrics line; see RlSession.trainStep for the fields. */
export type StepMetrics = Record<string, unknown> & { step: number };

/** One RL step's outcome: its metrics line, the rollout groups, their advantages and the tasks. */
/** What an RlSession is doing, for hosts that show progress. */
export type SessionPhase = "validate" | "rollout" | "update";

export interface StepOutcome {
  metrics: StepMetrics;
  groups: Group[];
  /** The groups as scored for the update: each member with its advantage. */
  stats: GroupResult<Sample>[];
  /** The step's training tasks, by env index (viewers replay boards from them). */
  tasks: unknown[];
}

export interface BestCheckpoint {
  step: number;
  successRate: number;
}

/** Everything a session starts from. */
export interface SessionInit {
  gpu: Gpu;
  /** The base model: a preset's init, an HF folder, or a warm-start folder. */
  weights: ModelWeights;
  tokenizer: Tokenizer;
  /** Runs tool agents' code; required when the environment has tool agents. */
  executor?: CodeExecutor;
  /** Continue from this checkpoint: weights, adapters, optimizer moments and the step. */
  resume?: LoadedCheckpoint;
  /** Start from trained weights (config warmStart): a run checkpoint or a PEFT adapter. */
  warmStart?: { kind: "checkpoint"; checkpoint: LoadedCheckpoint } | {
    kind: "peft-adapter";
    adapter: LoraAdapter;
  };
}

/** A sample as a training sequence: prompt + completion, loss on the completion only. */
export function toSequence(
  s: Sample,
  advantage: number,
  adapter: number | null,
): TrainSequence | null {
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

/** Whether a training sequence can move its policy: a non-zero advantage (the PPO loss's only signal). */
const hasSignal = (q: TrainSequence) =>
  (q.advantage ?? 0) !== 0 || (q.tokenAdvantages?.some((a) => a !== 0) ?? false);

/** The checkpoint name of a trainer's value head optimizer. */
const valueHeadKey = (trainer: string) => `${trainer}.value_head`;

/** Deterministic shuffle (mulberry32) so PPO mini-batches are the same on resume. */
export function shuffled<T>(xs: readonly T[], seed: number): T[] {
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

const adapterKey = (trainer: string, adapter: string) => `${trainer}.${adapter}`;

/** Policy init (weights, adapter data) from a checkpoint of a run with the same policy map. */
export function policyInitFromCheckpoint(
  ck: LoadedCheckpoint,
  cfg: RunConfig,
  map: PolicyMap,
  base: ModelWeights,
): PolicyInit {
  const weights: ModelWeights[] = [], loraData: (Float32Array | undefined)[] = [];
  for (const plan of map.trainers) {
    if (plan.mode === "full") {
      weights.push(ck.models[plan.name] ?? base);
      loraData.push(undefined);
      continue;
    }
    weights.push(base);
    const layout = new LoraLayout(base.config, loraConfigFor(cfg, plan)!);
    const data = new Float32Array(layout.totalFloats);
    plan.adapters.forEach((a, ai) => {
      const ad = ck.adapters[adapterKey(plan.name, a)];
      if (!ad) {
        throw ConfigError.at(
          "warmStart.path",
          `the checkpoint has no adapter "${adapterKey(plan.name, a)}" (it has ${
            Object.keys(ck.adapters).join(", ") || "none"
          }); it was written by a run with another level or env`,
        );
      }
      fromPeftAdapter(layout, data, ai, ad, base.config);
    });
    loraData.push(data);
  }
  return { weights, loraData };
}

/** Policy init with one PEFT adapter (e.g. from SFT) copied into every agent's adapter. */
export function policyInitFromPeft(
  adapter: LoraAdapter,
  cfg: RunConfig,
  map: PolicyMap,
  base: ModelWeights,
): PolicyInit {
  const loraData = map.trainers.map((plan) => {
    const layout = new LoraLayout(base.config, loraConfigFor(cfg, plan)!);
    const data = new Float32Array(layout.totalFloats);
    plan.adapters.forEach((_, ai) => fromPeftAdapter(layout, data, ai, adapter, base.config));
    return data;
  });
  return { weights: base, loraData };
}

export class RlSession {
  /** The last completed step (0 before training). */
  step: number;
  best: BestCheckpoint | null;
  /** Told when a phase of the loop begins (a page's progress line); never changes what runs. */
  onPhase: ((phase: SessionPhase) => void) | null = null;

  private constructor(
    readonly cfg: RunConfig,
    readonly env: AnyEnvDefinition,
    readonly map: PolicyMap,
    readonly policies: PolicySet,
    /** The frozen start of each policy, for the KL term (update.klCoef > 0); null without it. */
    readonly reference: ReferencePolicies | null,
    readonly tokenizer: Tokenizer,
    readonly executor: CodeExecutor | undefined,
    step: number,
    best: BestCheckpoint | null,
  ) {
    this.step = step;
    this.best = best;
  }

  static async create(cfg: RunConfig, init: SessionInit): Promise<RlSession> {
    const env = envForConfig(cfg);
    if (env.toolAgents.length && !init.executor) {
      throw new TypeError(
        `${env.id} has tool agents (${
          env.toolAgents.join(", ")
        }): pass an executor (SandboxPool) to run their code`,
      );
    }
    const map = policyMapFor(cfg);
    // The run's start: the base, or the warm start. A resume continues from its checkpoint, but
    // the KL reference stays the start.
    let startInit: PolicyInit = { weights: init.weights };
    if (init.warmStart?.kind === "checkpoint") {
      startInit = policyInitFromCheckpoint(init.warmStart.checkpoint, cfg, map, init.weights);
    } else if (init.warmStart?.kind === "peft-adapter") {
      if (cfg.update.mode !== "lora") {
        throw ConfigError.at(
          "warmStart.kind",
          `a PEFT adapter initialises LoRA adapters, but update.mode is "${cfg.update.mode}"`,
        );
      }
      startInit = policyInitFromPeft(init.warmStart.adapter, cfg, map, init.weights);
    }
    const policyInit = init.resume
      ? policyInitFromCheckpoint(init.resume, cfg, map, init.weights)
      : startInit;
    const agents = Object.keys(map.byAgent);
    if (
      cfg.run.steps > (init.resume?.state.step ?? 0) &&
      agents.every((a) => endpointOf(cfg, a) !== null)
    ) {
      throw ConfigError.at(
        "model.endpoint",
        `every agent (${
          agents.join(", ")
        }) samples from an endpoint, so nothing is left to train; ` +
          `evaluate with npx deno task eval, or name only the frozen partner in model.endpoints`,
      );
    }
    const policies = await createPolicies(init.gpu, cfg, map, policyInit, init.tokenizer);
    if (init.resume) {
      const ck = init.resume;
      try {
        map.trainers.forEach((plan, i) => {
          const t = policies.trainers[i];
          t.restoreOptimizer(ck.optimizers[plan.name]);
          if (!t.value) return;
          const head = ck.valueHeads[plan.name], opt = ck.optimizers[valueHeadKey(plan.name)];
          if (!head || !opt) {
            throw new CheckpointMismatchError(
              "resume",
              `the checkpoint has no value head for "${plan.name}" (a run with update.advantage "grpo" wrote it); resume it with its own config`,
            );
          }
          t.restoreValueHead(head, opt);
        });
      } catch (e) {
        policies.destroy();
        throw e;
      }
    }
    let reference: ReferencePolicies | null = null;
    try {
      if (cfg.update.klCoef > 0) {
        reference = await ReferencePolicies.create(init.gpu, cfg, policies, startInit);
      }
    } catch (e) {
      policies.destroy();
      throw e;
    }
    const extra = init.resume?.state.extra as { best?: BestCheckpoint | null } | undefined;
    return new RlSession(
      cfg,
      env,
      map,
      policies,
      reference,
      init.tokenizer,
      init.executor,
      init.resume?.state.step ?? 0,
      extra?.best ?? null,
    );
  }

  /** Tokens the policies' generators have produced so far (progress reports). */
  generatedTokens(): number {
    return this.policies.generators.reduce((n, g) => n + g.totals.tokens, 0);
  }

  /** Held-out evaluation with the current policies (greedy, or the config's temperature). */
  async evaluate(
    opts: { episodes?: number; temperature?: number; split?: "train" | "test" } = {},
  ): Promise<EvalResult> {
    this.onPhase?.("validate");
    return await evaluate(
      {
        env: this.env,
        tokenizer: this.tokenizer,
        policies: this.policies,
        executor: this.executor,
      },
      this.cfg,
      opts,
    );
  }

  /** One RL step (this.step + 1): rollouts, advantages, one PPO update per policy. */
  async trainStep(): Promise<StepOutcome> {
    const { cfg, env, policies } = this;
    const step = this.step + 1;
    const t0 = performance.now();
    this.onPhase?.("rollout");
    const tasks = Array.from(
      { length: cfg.rollout.envsPerStep },
      (_, e) =>
        env.generate(cfg.env.trainSeed + step * cfg.rollout.envsPerStep + e, {
          split: "train",
          difficulty: cfg.env.difficulty,
        }),
    );
    const deps = {
      env,
      tokenizer: this.tokenizer,
      policyOf: (a: string) => policies.agentPolicy(a),
      executor: this.executor,
    };
    const ro = {
      mode: cfg.rollout.mode === "independent" ? "independent" as const : "tree" as const,
      K: cfg.rollout.k,
      alpha: cfg.rewards.alpha,
      maxNewTokens: cfg.rollout.maxNewTokens,
      sampling: cfg.rollout.sampling,
      style: promptStyleFor(cfg.rollout.promptStyle, this.tokenizer),
      seed: cfg.run.seed,
      step,
      generationOf: (agent: string) => trainGeneration(cfg, agent),
      maxPromptTokens: cfg.rollout.maxPromptTokens,
      maxTurns: cfg.rollout.maxTurns,
      toolCredit: cfg.rewards.toolCredit,
    };
    const r = ro.mode === "independent"
      ? await rolloutIndependent(deps, tasks, ro)
      : await rolloutTree(deps, tasks, ro);
    const tRoll = performance.now();
    this.onPhase?.("update");
    const members = r.groups.flatMap((g) => g.samples);
    const adv = { normalize: cfg.rewards.normalize, eps: cfg.rewards.eps };
    const filter = { kind: cfg.rewards.filter, fraction: cfg.rewards.filterFraction };
    let groups: GroupResult<Sample>[], kept: GroupResult<Sample>[], stats: RewardStats;
    if (cfg.rollout.mode === "independent") {
      // Plain GRPO: a task's K trajectories are its group's members, scored by their returns.
      const g = groupAdvantages(buildGroups(trajectoryMembers(members), "independent"), adv);
      [groups, kept, stats] = [
        expandTrajectories(g),
        expandTrajectories(filterGroups(g, filter).kept),
        rewardStats(g),
      ];
    } else {
      groups = groupAdvantages(buildGroups(members, cfg.rollout.mode, cfg.rewards.groupBy), adv);
      [kept, stats] = [filterGroups(groups, filter).kept, rewardStats(groups)];
    }
    // Each policy trains on the union of its agents' samples; an endpoint agent's (a frozen
    // partner's) samples never enter the loss.
    const { perTrainer, tooLong, frozenSamples, critic } = await this.trainingSequences(
      members,
      kept,
    );
    const gae = cfg.update.advantage === "gae";
    const frozen = new Set(policies.endpointAgents);
    const updates: Record<string, unknown>[] = [];
    let skipped = 0, noSignal = 0;
    const idle: string[] = [];
    for (const [ti, rolled] of perTrainer.entries()) {
      // No sample with a learning signal (every advantage 0: zero-variance or filtered groups):
      // no optimizer step. AdamW would otherwise still move on its momentum and weight decay,
      // replaying the last step's direction with nothing new to learn from.
      if (!rolled.some(hasSignal)) {
        // A trainer whose every agent is an endpoint partner is frozen, not idle.
        const own = policies.map.policies.filter((p) => p.trainer === ti).flatMap((p) => p.agents);
        if (own.some((a) => !frozen.has(a))) idle.push(policies.map.trainers[ti].name);
        continue;
      }
      const seqs = this.reference ? await this.reference.score(ti, rolled) : rolled;
      for (let epoch = 0; epoch < cfg.update.ppoEpochs; epoch++) {
        const order = shuffled(seqs, cfg.run.seed * 1000003 + step * 31 + epoch);
        for (let i = 0; i < order.length; i += cfg.update.miniBatchSize) {
          const batch = order.slice(i, i + cfg.update.miniBatchSize);
          if (!batch.some(hasSignal)) {
            noSignal++;
            continue;
          }
          // Every update of RL step `step` takes the schedule's lr after step − 1 completed RL steps.
          const m = await policies.trainers[ti].step(batch, { scheduleStep: step - 1 });
          if (!m.optimizer.finite) skipped++;
          updates.push({
            trainer: policies.map.trainers[ti].name,
            ...m.loss,
            ...m.value,
            gradNorm: m.optimizer.gradNorm,
            lr: m.lr,
            finite: m.optimizer.finite,
          });
        }
      }
    }
    const tUpd = performance.now();
    this.step = step;
    const updateTokens = perTrainer.flat().reduce((s, q) => s + q.tokens.length, 0) *
      cfg.update.ppoEpochs;
    const metrics: StepMetrics = {
      step,
      trainSuccess: r.episodes.filter((e) => e.success).length / r.episodes.length,
      reward: stats.meanReward,
      rewardByAgent: Object.fromEntries(
        Object.entries(stats.byAgent).map(([a, s]) => [a, s.byTurn]),
      ),
      zeroVarianceGroups: stats.zeroVarianceFraction,
      groups: groups.length,
      keptGroups: kept.length,
      samples: members.length,
      tooLongSamples: tooLong,
      /** Samples of agents served by an endpoint (frozen partners), left out of the update. */
      endpointSamples: frozenSamples,
      clippedPrompts: r.clippedPrompts,
      /** Tool programs run, and tool candidates that shared an identical candidate's run. */
      toolRuns: r.toolRuns,
      skippedUpdates: skipped,
      /** Policies that took no optimizer step: none of their samples had a non-zero advantage. */
      idlePolicies: idle,
      /** Mini-batches skipped because every sample in them had advantage 0. */
      noSignalBatches: noSignal,
      updates,
      /** PPO's critic per policy (update.advantage "gae"): explained variance of the returns by the rollout-time values. */
      ...(gae ? { critic } : {}),
      generatedTokens: r.generatedTokens,
      rolloutTokensPerS: r.generatedTokens / ((tRoll - t0) / 1000),
      updateTokensPerS: updateTokens / Math.max(1e-9, (tUpd - tRoll) / 1000),
      seconds: {
        rollout: (tRoll - t0) / 1000,
        generate: r.seconds.generate,
        env: r.seconds.env,
        update: (tUpd - tRoll) / 1000,
      },
    };
    return { metrics, groups: r.groups, stats: groups, tasks };
  }

  /**
   * Each policy's training sequences from the step's samples (an endpoint agent's, a frozen
   * partner's, never enter the loss): GRPO's kept group members with their group advantages, or
   * under GAE every sample with the critic's per-token advantages, old values and returns.
   */
  private async trainingSequences(
    members: readonly Sample[],
    kept: readonly GroupResult<Sample>[],
  ) {
    const { cfg, policies } = this;
    const perTrainer: TrainSequence[][] = policies.trainers.map(() => []);
    const frozen = new Set(policies.endpointAgents);
    let tooLong = 0, frozenSamples = 0;
    const gae = cfg.update.advantage === "gae";
    // GRPO: the kept groups' members with their group advantages. GAE: every sample, in rollout
    // order (time order within a trajectory), for the critic to chain.
    const samples = gae
      ? members.map((member) => ({ member, advantage: 0 }))
      : flattenAdvantages(kept);
    const criticItems: CriticItem[][] = policies.trainers.map(() => []);
    for (const { member, advantage } of samples) {
      if (frozen.has(member.agent)) {
        frozenSamples++;
        continue;
      }
      const p = policyOf(policies.map, member.agent);
      let seq = toSequence(member, advantage, p.adapter);
      if (seq && seq.tokens.length > cfg.update.chunkRows) [seq, tooLong] = [null, tooLong + 1];
      if (gae) {
        const chain = JSON.stringify([member.env, member.candidate, member.agent]);
        criticItems[p.trainer].push({
          seq,
          chain,
          reward: cfg.rewards.alpha * member.team + member.local,
        });
      } else if (seq) perTrainer[p.trainer].push(seq);
    }
    const critic: Record<string, CriticStats> = {};
    if (gae) {
      const o = {
        gamma: cfg.update.gae.gamma,
        lambda: cfg.update.gae.lambda,
        whiten: cfg.update.gae.whiten,
      };
      for (const [ti, items] of criticItems.entries()) {
        if (!items.length) continue;
        const r = await gaeSequences(policies.trainers[ti], items, o);
        perTrainer[ti] = r.seqs;
        critic[policies.map.trainers[ti].name] = r.stats;
      }
    }
    return { perTrainer, tooLong, frozenSamples, critic };
  }

  /** What a checkpoint of this session holds: adapters (PEFT) or full weights, optimizer moments, step. */
  async checkpointContents(): Promise<CheckpointContents> {
    const { cfg, policies: p } = this;
    type Mutable<T> = { -readonly [K in keyof T]: T[K] };
    const adapters: Mutable<NonNullable<CheckpointContents["adapters"]>> = {};
    const models: Mutable<NonNullable<CheckpointContents["models"]>> = {};
    const optimizers: Mutable<NonNullable<CheckpointContents["optimizers"]>> = {};
    const valueHeads: Record<string, Float32Array> = {};
    for (const [i, plan] of p.map.trainers.entries()) {
      const t = p.trainers[i];
      if (t.lora) {
        const data = (await t.readLora())!;
        plan.adapters.forEach((a, ai) => {
          adapters[adapterKey(plan.name, a)] = {
            adapter: toPeftAdapter(
              t.lora!.layout,
              data,
              ai,
              cfg.model.folder ?? cfg.model.preset ?? "base",
            ),
            base: t.model.config,
          };
        });
      } else models[plan.name] = { weights: await t.readWeights() };
      optimizers[plan.name] = await t.optimizerState();
      const head = await t.valueHeadState();
      if (head) {
        valueHeads[plan.name] = head.params;
        optimizers[valueHeadKey(plan.name)] = head.optimizer;
      }
    }
    const state = {
      step: this.step,
      rng: { seed: cfg.run.seed },
      extra: { best: this.best as never },
    };
    return {
      state,
      adapters,
      models,
      optimizers,
      ...(Object.keys(valueHeads).length ? { valueHeads } : {}),
    };
  }

  destroy() {
    this.policies.destroy();
    this.reference?.destroy();
  }
}

/** Between-step requests from the host (Ctrl-C, SIGUSR1, a Stop or Pause button...). */
export interface LoopControl {
  /** Checked after every step: true ends the loop after a checkpoint. */
  stopRequested?(): boolean;
  /**
   * Checked after every step: true (or a string naming who asked, e.g. "SIGUSR1") writes a
   * checkpoint now (then the request should clear); the step's metrics line records it.
   */
  takeSaveRequest?(): boolean | string;
  /** Called after each step (live charts, rollout viewers). */
  onStep?(outcome: StepOutcome): void | Promise<void>;
}

export interface LoopSummary {
  steps: number;
  before: EvalResult | null;
  after: EvalResult | null;
  best: BestCheckpoint | null;
  stopped: boolean;
}

/** The run loop both hosts share: validation, steps, evaluation every N, best and periodic checkpoints. */
export async function runSession(
  s: RlSession,
  sink: RunSink,
  control: LoopControl = {},
): Promise<LoopSummary> {
  const { cfg } = s;
  const summary: LoopSummary = {
    steps: s.step,
    before: null,
    after: null,
    best: s.best,
    stopped: false,
  };
  const save = async (name: string) =>
    await sink.saveCheckpoint(name, await s.checkpointContents(), cfg.run.keepLast);
  if (s.step === 0 && cfg.eval.beforeTraining) {
    summary.before = await s.evaluate();
    await sink.metric({ step: 0, eval: summary.before });
    sink.log(`step 0: held-out success ${(summary.before.successRate * 100).toFixed(1)}%`);
  }
  while (s.step < cfg.run.steps) {
    const outcome = await s.trainStep();
    const { metrics: m, groups } = outcome;
    const step = s.step;
    if ((m.skippedUpdates as number) > 0) {
      sink.log(`step ${step}: non-finite gradient in ${m.skippedUpdates} update(s): skipped`);
    }
    const idle = m.idlePolicies as string[];
    if (idle.length) {
      sink.log(
        `step ${step}: no sample with a learning signal for ${
          idle.join(", ")
        } (every advantage 0): no update, skipped`,
      );
    }
    if (step % cfg.eval.everySteps === 0 || step === cfg.run.steps) {
      const ev = await s.evaluate();
      m.eval = ev;
      summary.after = ev;
      if (!s.best || ev.successRate > s.best.successRate) {
        s.best = { step, successRate: ev.successRate };
        summary.best = s.best;
        await save("best");
      }
    }
    // Requests that came in during the step are taken before its metrics line, which records them.
    const stop = control.stopRequested?.() ?? false;
    const request = control.takeSaveRequest?.() ?? false;
    const requestedBy = typeof request === "string" ? request : "request";
    if (request) m.checkpoint = { name: `step-${step}`, requestedBy };
    if (cfg.run.saveRollouts) {
      await sink.writeRollouts(step, groups, (ids) => s.tokenizer.decode(ids));
    }
    await sink.metric(m);
    sink.progress(step, cfg.run.steps, m);
    await control.onStep?.(outcome);
    summary.steps = step;
    const periodic = cfg.run.checkpointEvery > 0 && step % cfg.run.checkpointEvery === 0;
    if (periodic || step === cfg.run.steps || stop || request) await save(`step-${step}`);
    if (request) sink.log(`checkpoint step-${step} written (requested by ${requestedBy})`);
    if (stop) {
      summary.stopped = true;
      break;
    }
  }
  return summary;
}
