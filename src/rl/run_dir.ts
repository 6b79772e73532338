// A training run on disk: runs/<name>/<timestamp>/ with config.json, metrics.jsonl (one JSON
// object per step), summary.log, rollouts/step-N.jsonl (every sampled conversation with its
// reward and group), checkpoints/step-N/ (keep-last-N) and best/ — written atomically — and the
// glue between checkpoints and the run's policies for resume.

import { joinPath, writeFileAtomic } from "../io/deno_files.ts";
import type { ModelWeights } from "../model/weights.ts";
import { latestCheckpoint, loadCheckpoint, pruneCheckpoints, writeCheckpoint } from "../train/checkpoint_dir.ts";
import type { CheckpointContents } from "../train/checkpoint.ts";
import { CheckpointNotFoundError } from "../train/errors.ts";
import { fromPeftAdapter, toPeftAdapter } from "../train/lora_peft.ts";
import type { RunConfig } from "./config.ts";
import type { PolicyInit, PolicySet } from "./policies.ts";
import { loraConfigFor, type PolicyMap } from "./policy_map.ts";
import { LoraLayout } from "../model/lora.ts";
import type { Group } from "./rollout.ts";

const isTerminal = () => Deno.stdout.isTerminal();

export class RunDir {
  private metrics: Deno.FsFile;
  private summaryLines: string[] = [];

  private constructor(readonly dir: string, metrics: Deno.FsFile, private out: (s: string) => void) {
    this.metrics = metrics;
  }

  static async create(cfg: RunConfig, out: (s: string) => void): Promise<RunDir> {
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    const dir = joinPath(joinPath(cfg.run.outDir, cfg.run.name || "run"), stamp);
    await Deno.mkdir(joinPath(dir, "checkpoints"), { recursive: true });
    const f = await Deno.open(joinPath(dir, "metrics.jsonl"), { create: true, append: true });
    out(`run directory: ${dir}`);
    return new RunDir(dir, f, out);
  }

  static async open(dir: string, out: (s: string) => void): Promise<RunDir> {
    try {
      await Deno.stat(joinPath(dir, "config.json"));
    } catch {
      throw new CheckpointNotFoundError(dir, "is not a run directory (no config.json); pass the directory train printed");
    }
    const f = await Deno.open(joinPath(dir, "metrics.jsonl"), { create: true, append: true });
    out(`resuming run: ${dir}`);
    return new RunDir(dir, f, out);
  }

  get checkpoints(): string {
    return joinPath(this.dir, "checkpoints");
  }

  log(line: string) {
    this.summaryLines.push(`${new Date().toISOString()} ${line}`);
    this.out(line);
  }

  async metric(m: Record<string, unknown>) {
    await this.metrics.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
  }

  /** One progress line: a bar rewritten in place on a terminal, plain lines otherwise. */
  progress(step: number, total: number, m: Record<string, unknown>) {
    const sec = m.seconds as Record<string, number>;
    const ev = m.eval as { successRate: number } | undefined;
    const text = `step ${step}/${total} reward ${(m.reward as number).toFixed(3)} train-success ${((m.trainSuccess as number) * 100).toFixed(0)}%` +
      (ev ? ` held-out ${(ev.successRate * 100).toFixed(1)}%` : "") +
      ` rollout ${sec.rollout.toFixed(1)}s update ${sec.update.toFixed(1)}s`;
    if (isTerminal()) {
      const w = 20, done = Math.round((step / total) * w);
      Deno.stdout.writeSync(new TextEncoder().encode(`\r[${"#".repeat(done)}${".".repeat(w - done)}] ${text}`));
      if (step === total || ev) Deno.stdout.writeSync(new TextEncoder().encode("\n"));
    } else this.out(text);
    this.summaryLines.push(`${new Date().toISOString()} ${text}`);
  }

  async writeRollouts(step: number, groups: readonly Group[]) {
    const lines = groups.flatMap((g) =>
      g.samples.map((s) => JSON.stringify({ group: g.key, agent: s.agent, turn: s.turn, candidate: s.candidate, reward: s.reward, team: s.team, local: s.local, chosen: s.chosen, invalid: s.invalid ?? null, text: s.text }))
    );
    await Deno.mkdir(joinPath(this.dir, "rollouts"), { recursive: true });
    await writeFileAtomic(joinPath(joinPath(this.dir, "rollouts"), `step-${step}.jsonl`), lines.join("\n") + "\n");
  }

  async close(summary: unknown) {
    this.metrics.close();
    this.summaryLines.push(`summary: ${JSON.stringify(summary)}`);
    let old = "";
    try {
      old = await Deno.readTextFile(joinPath(this.dir, "summary.log"));
    } catch { /* first session of this run */ }
    await writeFileAtomic(joinPath(this.dir, "summary.log"), old + this.summaryLines.join("\n") + "\n");
  }
}

const adapterKey = (trainer: string, adapter: string) => `${trainer}.${adapter}`;

/** Writes checkpoints/<name> (or best/ for "best"), then keeps the last N step checkpoints. */
export async function saveRunCheckpoint(run: RunDir, name: string, step: number, cfg: RunConfig, p: PolicySet, best: unknown) {
  type Mutable<T> = { -readonly [K in keyof T]: T[K] };
  const adapters: Mutable<NonNullable<CheckpointContents["adapters"]>> = {};
  const models: Mutable<NonNullable<CheckpointContents["models"]>> = {};
  const optimizers: Mutable<NonNullable<CheckpointContents["optimizers"]>> = {};
  for (const [i, plan] of p.map.trainers.entries()) {
    const t = p.trainers[i];
    if (t.lora) {
      const data = (await t.readLora())!;
      plan.adapters.forEach((a, ai) => {
        adapters[adapterKey(plan.name, a)] = { adapter: toPeftAdapter(t.lora!.layout, data, ai, cfg.model.folder ?? cfg.model.preset ?? "base"), base: t.model.config };
      });
    } else models[plan.name] = { weights: await t.readWeights() };
    optimizers[plan.name] = await t.optimizerState();
  }
  const contents: CheckpointContents = { state: { step, rng: { seed: cfg.run.seed }, extra: { best: best as never } }, adapters, models, optimizers };
  if (name === "best") return await writeCheckpoint(joinPath(run.dir, "best"), contents);
  await writeCheckpoint(joinPath(run.checkpoints, name), contents);
  await pruneCheckpoints(run.checkpoints, cfg.run.keepLast);
}

/** The latest checkpoint of a run as policy init data plus a function restoring optimizers. */
export async function loadRunCheckpoint(run: RunDir, cfg: RunConfig, map: PolicyMap, base: ModelWeights) {
  const dir = await latestCheckpoint(run.checkpoints);
  if (!dir) throw new CheckpointNotFoundError(run.checkpoints, "holds no complete checkpoint to resume from");
  return await loadCheckpointInto(dir, cfg, map, base);
}

/** A checkpoint directory (checkpoints/step-N, best/) as policy init data + optimizer restore. */
export async function loadCheckpointInto(dir: string, cfg: RunConfig, map: PolicyMap, base: ModelWeights) {
  const ck = await loadCheckpoint(dir, { base: base.config });
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
    plan.adapters.forEach((a, ai) => fromPeftAdapter(layout, data, ai, ck.adapters[adapterKey(plan.name, a)], base.config));
    loraData.push(data);
  }
  const init: PolicyInit = { weights, loraData };
  const extra = ck.state.extra as { best?: { step: number; successRate: number } | null } | undefined;
  return {
    step: ck.state.step,
    best: extra?.best ?? null,
    init,
    restore(p: PolicySet) {
      map.trainers.forEach((plan, i) => p.trainers[i].restoreOptimizer(ck.optimizers[plan.name]));
    },
  };
}
