// The AT-GRPO trainer in Deno: an RlSession (session.ts: rollouts, group advantages, PPO-clip
// updates per policy) driven by runSession into a run directory, with Ctrl-C and SIGUSR1
// checkpointing and the config's warm start. A run directory holds config.json, metrics.jsonl,
// summary.log, rollouts/step-N.jsonl, checkpoints/step-N/ (keep-last-N) and best/; --resume
// continues bit-identically.

import { Gpu } from "../gpu/mod.ts";
import { denoFolder, joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { parseModelConfig } from "../model/config.ts";
import { initModel } from "../model/init.ts";
import { ByteTokenizer, loadTokenizer, type Tokenizer } from "../model/tokenizer.ts";
import { loadModel, type ModelWeights } from "../model/weights.ts";
import { SandboxPool } from "../sandbox/mod.ts";
import { loadCheckpoint } from "../train/checkpoint_dir.ts";
import { CheckpointMismatchError } from "../train/errors.ts";
import { loadPeftAdapter } from "../train/peft.ts";
import { configWarnings, formatConfig, presetPath, type RunConfig } from "./config.ts";
import { envForConfig } from "./env_for.ts";
import type { EvalResult } from "./evaluate.ts";
import { loadLatestRunCheckpoint, RunDir } from "./run_dir.ts";
import { RlSession, runSession, type SessionInit } from "./session.ts";

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

/** The config's warm start (warmStart.path), read from disk; undefined when unset. */
export async function loadWarmStart(cfg: RunConfig, base: ModelWeights): Promise<SessionInit["warmStart"]> {
  const path = cfg.warmStart.path;
  if (path === null) return undefined;
  if (cfg.warmStart.kind === "peft-adapter") return { kind: "peft-adapter", adapter: await loadPeftAdapter(denoFolder(path), base.config) };
  return { kind: "checkpoint", checkpoint: await loadCheckpoint(path, { base: base.config }) };
}

/** Fields a resumed run may change: where it is written, how long it runs and how often it saves or evaluates. */
const RESUME_MAY_CHANGE = new Set(["run.name", "run.outDir", "run.steps", "run.checkpointEvery", "run.keepLast", "run.saveRollouts", "eval.everySteps"]);

/** Leaf paths whose values differ between two resolved configs, with both values. */
export function configDifferences(a: unknown, b: unknown, path = ""): { path: string; was: unknown; now: unknown }[] {
  const isObj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);
  if (isObj(a) && isObj(b)) {
    return [...new Set([...Object.keys(a), ...Object.keys(b)])].flatMap((k) => configDifferences(a[k], b[k], path ? `${path}.${k}` : k));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [{ path, was: a, now: b }];
}

/**
 * A resume continues bit-identically only with the run's own settings: any difference outside
 * RESUME_MAY_CHANGE between the given config and the run's config.json is a CheckpointMismatchError.
 */
export async function checkResumeConfig(runDir: string, cfg: RunConfig): Promise<void> {
  const saved = JSON.parse(await Deno.readTextFile(joinPath(runDir, "config.json")));
  const diffs = configDifferences(saved, cfg).filter((d) => !RESUME_MAY_CHANGE.has(d.path));
  if (!diffs.length) return;
  const list = diffs.map((d) => `${d.path} (${JSON.stringify(d.was)} → ${JSON.stringify(d.now)})`).join(", ");
  throw new CheckpointMismatchError(
    runDir,
    `was trained with another config: ${list}. Resume with the run's own config (--config ${joinPath(runDir, "config.json")}, adding --set run.steps=N to extend it) or start a new run`,
  );
}

export async function train(cfg: RunConfig, opts: TrainOptions = {}): Promise<TrainSummary> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const env = envForConfig(cfg);
  const run = opts.resume ? await RunDir.open(opts.resume, log) : await RunDir.create(cfg, log);
  if (opts.resume) await checkResumeConfig(run.dir, cfg);
  for (const w of configWarnings(cfg)) run.log(`warning: ${w}`);
  if (!opts.resume) {
    // config.json: the resolved config as JSON (eval --config and scripts read it back);
    // config.txt: the same as a table, every field with its default where it differs.
    await writeFileAtomic(joinPath(run.dir, "config.json"), JSON.stringify(cfg, null, 2) + "\n");
    await writeFileAtomic(joinPath(run.dir, "config.txt"), formatConfig(cfg) + "\n");
  }
  const { weights, tokenizer } = await loadBase(cfg);
  const resume = opts.resume ? await loadLatestRunCheckpoint(run, weights) : undefined;
  const warmStart = resume ? undefined : await loadWarmStart(cfg, weights);
  const gpu = await Gpu.create();
  run.log(`adapter: ${gpu.describe()}`);
  const executor = env.toolAgents.length ? new SandboxPool() : undefined;
  let session: RlSession | null = null;
  let stop = false, saveNow = false;
  const onInt = () => (stop = true), onUsr1 = () => (saveNow = true);
  Deno.addSignalListener("SIGINT", onInt);
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGUSR1", onUsr1);
  const summary: TrainSummary = { runDir: run.dir, steps: 0, before: null, after: null, best: null };
  try {
    session = await RlSession.create(cfg, { gpu, weights, tokenizer, executor, resume, warmStart });
    if (warmStart) run.log(`warm start: ${cfg.warmStart.kind} ${cfg.warmStart.path}`);
    const s = await runSession(session, run, {
      stopRequested: () => stop,
      takeSaveRequest: () => {
        const v = saveNow;
        saveNow = false;
        return v;
      },
    });
    Object.assign(summary, { steps: s.steps, before: s.before, after: s.after, best: s.best });
    if (s.stopped) run.log(`interrupted: checkpoint written; resume with --resume ${run.dir}`);
  } finally {
    Deno.removeSignalListener("SIGINT", onInt);
    if (Deno.build.os !== "windows") Deno.removeSignalListener("SIGUSR1", onUsr1);
    await executor?.close();
    session?.destroy();
    gpu.destroy();
    await run.close(summary);
  }
  return summary;
}
