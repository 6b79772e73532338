// A training run on disk: runs/<name>/<timestamp>/ with config.json, metrics.jsonl (one JSON
// object per step), summary.log, rollouts/step-N.jsonl (every sampled conversation with its
// reward and group), checkpoints/step-N/ (keep-last-N) and best/ — written atomically — and the
// glue between checkpoints and the run's policies for resume.

import { joinPath, writeFileAtomic } from "../io/deno_files.ts";
import type { ModelWeights } from "../model/weights.ts";
import { latestCheckpoint, loadCheckpoint, pruneCheckpoints, writeCheckpoint } from "../train/checkpoint_dir.ts";
import type { CheckpointContents, LoadedCheckpoint } from "../train/checkpoint.ts";
import { CheckpointNotFoundError } from "../train/errors.ts";
import type { RunConfig } from "./config.ts";
import type { PolicyMap } from "./policy_map.ts";
import type { Group } from "./rollout.ts";
import { policyInitFromCheckpoint, type RunSink, type StepMetrics } from "./session.ts";

const isTerminal = () => Deno.stdout.isTerminal();

export class RunDir implements RunSink {
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

  async metric(m: StepMetrics) {
    await this.metrics.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
  }

  /** One progress line: a bar rewritten in place on a terminal, plain lines otherwise. */
  progress(step: number, total: number, m: StepMetrics) {
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

  /** One line per sample: what the agent saw (its prompt, as clipped, decoded), what it wrote and how it scored. */
  async writeRollouts(step: number, groups: readonly Group[], decode: (ids: number[]) => string) {
    const prompts = new Map<number[], string>();
    const promptOf = (ids: number[]) => prompts.get(ids) ?? prompts.set(ids, decode(ids)).get(ids)!;
    const lines = groups.flatMap((g) =>
      g.samples.map((s) => JSON.stringify({ group: g.key, agent: s.agent, turn: s.turn, candidate: s.candidate, reward: s.reward, team: s.team, local: s.local, chosen: s.chosen, invalid: s.invalid ?? null, prompt: promptOf(s.promptIds), text: s.text }))
    );
    await Deno.mkdir(joinPath(this.dir, "rollouts"), { recursive: true });
    await writeFileAtomic(joinPath(joinPath(this.dir, "rollouts"), `step-${step}.jsonl`), lines.join("\n") + "\n");
  }

  async saveCheckpoint(name: string, contents: CheckpointContents, keepLast: number) {
    if (name === "best") return await writeCheckpoint(joinPath(this.dir, "best"), contents);
    await writeCheckpoint(joinPath(this.checkpoints, name), contents);
    await pruneCheckpoints(this.checkpoints, keepLast);
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

/** A checkpoint directory (checkpoints/step-N, best/) of a run with this config, as policy init data. */
export async function loadCheckpointInto(dir: string, cfg: RunConfig, map: PolicyMap, base: ModelWeights) {
  const ck = await loadCheckpoint(dir, { base: base.config });
  return { checkpoint: ck, init: policyInitFromCheckpoint(ck, cfg, map, base) };
}

/** The latest complete step checkpoint of a run directory. */
export async function loadLatestRunCheckpoint(run: RunDir, base: ModelWeights): Promise<LoadedCheckpoint> {
  const dir = await latestCheckpoint(run.checkpoints);
  if (!dir) throw new CheckpointNotFoundError(run.checkpoints, "holds no complete checkpoint to resume from");
  return await loadCheckpoint(dir, { base: base.config });
}
