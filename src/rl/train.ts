// The AT-GRPO trainer in Deno: an RlSession (session.ts: rollouts, group advantages, PPO-clip
// updates per policy) driven by runSession into a run directory, with the config's warm start.
// A run directory holds config.json, metrics.jsonl, summary.log (appended as the run goes),
// rollouts/step-N.jsonl, checkpoints/step-N/ (keep-last-N), best/, run.lock (one process per
// run: run_lock.ts), events.out.tfevents.* (TensorBoard scalars) and, with logging.wandb, the W&B
// run (wandb/run.json: its id); --resume continues bit-identically. Signals: SIGINT/SIGTERM finish
// the step, checkpoint and stop (a second one stops at once); SIGUSR1/SIGUSR2 checkpoint after the
// step.

import { hubFolder } from "../model/hub.ts";
import { formatByteTally, tallyBuffers } from "../gpu/memory.ts";
import { describeTunedPicks } from "../ops/tuned_picks.ts";
import { Gpu } from "../gpu/mod.ts";
import { denoFolder, joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { parseModelConfig } from "../model/config.ts";
import { initModel } from "../model/init.ts";
import { ByteTokenizer, loadTokenizer, type Tokenizer } from "../model/tokenizer.ts";
import { loadModel, type ModelWeights } from "../model/weights.ts";
import { SandboxPool } from "../sandbox/mod.ts";
import { loadCheckpoint } from "../train/checkpoint_dir.ts";
import { CheckpointMismatchError, CheckpointNotFoundError } from "../train/errors.ts";
import { loadPeftAdapter } from "../train/peft.ts";
import {
  configWarnings,
  formatConfig,
  loadConfigFile,
  presetPath,
  type RunConfig,
} from "./config.ts";
import { envForConfig } from "./env_for.ts";
import type { EvalResult } from "./evaluate.ts";
import { loadLatestRunCheckpoint, RunDir } from "./run_dir.ts";
import { RlSession, runSession, type SessionInit } from "./session.ts";

export interface TrainOptions {
  /** Continue a run directory from its latest checkpoint. */
  resume?: string;
  /** Progress lines (default: console.log). */
  log?: (line: string) => void;
  /**
   * Stop at once when this parent process (pid, read at start-up) ends: the CLI passes its
   * Deno.ppid; a library caller owns its process and leaves it unset.
   */
  watchParent?: number;
  /** The W&B API key for logging.wandb (default: WANDB_API_KEY); sent to W&B only, never written. */
  wandbApiKey?: string;
}

/** An environment variable, or undefined (also without --allow-env). */
function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined;
  }
}

export interface TrainSummary {
  runDir: string;
  steps: number;
  before: EvalResult | null;
  after: EvalResult | null;
  best: { step: number; successRate: number } | null;
  /** The signal that stopped the run after its checkpoint (SIGINT, SIGTERM), if one did. */
  stoppedBy?: "SIGINT" | "SIGTERM";
}

/** The run's base model and tokenizer: a preset's fresh init, model.folder, or model.hub read from the Hub. */
export async function loadBase(
  cfg: RunConfig,
): Promise<{ weights: ModelWeights; tokenizer: Tokenizer }> {
  const preset = presetPath(cfg);
  if (preset) {
    const json = JSON.parse(await Deno.readTextFile(preset));
    return {
      weights: initModel(parseModelConfig(json), { seed: cfg.run.seed }),
      tokenizer: new ByteTokenizer(),
    };
  }
  const folder = cfg.model.folder !== null
    ? denoFolder(cfg.model.folder)
    : hubFolder(cfg.model.hub!, {
      revision: cfg.model.revision,
      endpoint: Deno.env.get("HF_ENDPOINT"),
      token: Deno.env.get("HF_TOKEN"),
    });
  const weights = await loadModel(folder);
  return { weights, tokenizer: await loadTokenizer(folder, { config: weights.config }) };
}

/** The config's warm start (warmStart.path), read from disk; undefined when unset. */
export async function loadWarmStart(
  cfg: RunConfig,
  base: ModelWeights,
): Promise<SessionInit["warmStart"]> {
  const path = cfg.warmStart.path;
  if (path === null) return undefined;
  if (cfg.warmStart.kind === "peft-adapter") {
    return { kind: "peft-adapter", adapter: await loadPeftAdapter(denoFolder(path), base.config) };
  }
  return { kind: "checkpoint", checkpoint: await loadCheckpoint(path, { base: base.config }) };
}

/** Fields a resumed run may change: where it is written, how long it runs and how often it saves or evaluates. */
const RESUME_MAY_CHANGE = new Set([
  "run.name",
  "run.outDir",
  "run.steps",
  "run.checkpointEvery",
  "run.keepLast",
  "run.saveRollouts",
  "eval.everySteps",
  "logging.tensorboard",
  "logging.wandb.project",
  "logging.wandb.entity",
  "logging.wandb.name",
  "logging.wandb.mode",
  "logging.wandb.baseUrl",
]);

/** Leaf paths whose values differ between two resolved configs, with both values. */
export function configDifferences(
  a: unknown,
  b: unknown,
  path = "",
): { path: string; was: unknown; now: unknown }[] {
  const isObj = (x: unknown): x is Record<string, unknown> =>
    typeof x === "object" && x !== null && !Array.isArray(x);
  if (isObj(a) && isObj(b)) {
    return [...new Set([...Object.keys(a), ...Object.keys(b)])].flatMap((k) =>
      configDifferences(a[k], b[k], path ? `${path}.${k}` : k)
    );
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [{ path, was: a, now: b }];
}

/**
 * A resume continues bit-identically only with the run's own settings: any difference outside
 * RESUME_MAY_CHANGE between the given config and the run's config.json is a CheckpointMismatchError.
 * The allowed differences (overrides: run length, saving, evaluation) are returned.
 */
export async function checkResumeConfig(
  runDir: string,
  cfg: RunConfig,
): Promise<ConfigDifference[]> {
  const saved = JSON.parse(await Deno.readTextFile(joinPath(runDir, "config.json")));
  const all = configDifferences(saved, cfg);
  const diffs = all.filter((d) => !RESUME_MAY_CHANGE.has(d.path));
  if (!diffs.length) return all;
  throw new CheckpointMismatchError(
    runDir,
    `was trained with another config: ${
      formatDifferences(diffs)
    }. Resume with the run's own config (--resume ${runDir} alone, adding --set run.steps=N to extend it) or start a new run`,
  );
}

export type ConfigDifference = ReturnType<typeof configDifferences>[number];

/** "run.steps (12 → 20), eval.everySteps (6 → 4)" */
export function formatDifferences(diffs: readonly ConfigDifference[]): string {
  return diffs.map((d) => `${d.path} (${JSON.stringify(d.was)} → ${JSON.stringify(d.now)})`).join(
    ", ",
  );
}

/**
 * The config a `--resume RUN_DIR` continues with: the run's stored config.json, with `sets`
 * (`path=value` overrides, e.g. run.steps=20) applied on top.
 */
export async function resumeConfig(
  runDir: string,
  sets: readonly string[] = [],
): Promise<RunConfig> {
  const path = joinPath(runDir, "config.json");
  try {
    await Deno.stat(path);
  } catch {
    throw new CheckpointNotFoundError(
      runDir,
      "is not a run directory (no config.json); pass the directory train printed",
    );
  }
  return await loadConfigFile(path, sets);
}

/** Names of the signals train handles, and what they do. */
const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;
const SAVE_SIGNALS = ["SIGUSR1", "SIGUSR2"] as const;
type StopSignal = typeof STOP_SIGNALS[number];
type SaveSignal = typeof SAVE_SIGNALS[number];

/** The exit code of a run stopped by a signal after its checkpoint: 128 + the signal's number. */
export const SIGNAL_EXIT: Record<StopSignal, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Deno (≥ 2.9.2) starts its inspector on 127.0.0.1:9229 when a process gets SIGUSR1, with no
 * way to opt out; a save request must not leave a debugger port open, so it is closed as soon as
 * it appears (within a few ms).
 */
async function closeSignalInspector(): Promise<boolean> {
  const inspector = await import("node:inspector");
  for (let i = 0; i < 100; i++) {
    if (inspector.url()) {
      inspector.close();
      return true;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return false;
}

/** How often a phase that has run this long says it is still going. */
export const HEARTBEAT_MS = 60_000;

/**
 * Logs a line every `everyMs` while one phase of the loop (validation, rollout, update) lasts,
 * with the tokens generated in it so far: a real model's validation or rollout can take many
 * minutes before its step line. Returns the stop function.
 */
export function phaseHeartbeat(
  session: RlSession,
  log: (line: string) => void,
  everyMs = HEARTBEAT_MS,
): () => void {
  let phase = "", since = performance.now(), tokens0 = 0;
  const prev = session.onPhase;
  session.onPhase = (p) => {
    phase = p;
    since = performance.now();
    tokens0 = session.generatedTokens();
    prev?.(p);
  };
  const timer = setInterval(() => {
    const secs = (performance.now() - since) / 1000;
    if (!phase || secs * 1000 < everyMs) return;
    const what = phase === "validate" ? "validation" : phase;
    const step = phase === "validate" ? session.step : session.step + 1;
    const whole = Math.round(secs), min = Math.floor(whole / 60), sec = whole % 60;
    const n = session.generatedTokens() - tokens0;
    log(
      `step ${step} ${what}: ${min} min ${sec} s so far` +
        (phase === "update" ? "" : `, ${n} tokens generated (${(n / secs).toFixed(0)} tok/s)`),
    );
  }, everyMs);
  return () => {
    clearInterval(timer);
    session.onPhase = prev;
  };
}

/** A stop signal repeated within this time is the same one delivered twice, not a second Ctrl-C. */
const REPEAT_WINDOW_MS = 500;

/** How long between checks that the process that started train is still there. */
const PARENT_POLL_MS = 500;

export async function train(cfg: RunConfig, opts: TrainOptions = {}): Promise<TrainSummary> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const env = envForConfig(cfg);
  // A resume locks its run directory before anything else; a new run's directory is made only
  // once the model has loaded, so a bad model leaves nothing behind.
  let run: RunDir | null = opts.resume ? await RunDir.open(opts.resume, log) : null;
  let gpu: Gpu | null = null, executor: SandboxPool | undefined, session: RlSession | null = null;
  let heartbeat: (() => void) | null = null;
  const summary: TrainSummary = {
    runDir: run?.dir ?? "",
    steps: 0,
    before: null,
    after: null,
    best: null,
  };
  let status = "failed";
  const stopSignals: StopSignal[] = [];
  const saveRequests: SaveSignal[] = [];
  let firstStopAt = 0;
  // The last step whose end checked for a stop: a stop signal now takes effect at the end of the
  // next one (a signal during step N's validation or metrics still finishes step N; one during
  // its checkpoint write, after the check, finishes step N + 1).
  let stopCheckedAt = 0;
  const listeners: [Deno.Signal, () => void][] = [];
  let parentWatch: ReturnType<typeof setInterval> | undefined;
  // The trainer must not outlive the process that started it (e.g. a `deno task` wrapper killed
  // with SIGKILL), from start-up on (loading and compiling take seconds): when it is gone, stop
  // at once, as on a second Ctrl-C.
  if (Deno.build.os !== "windows" && opts.watchParent && opts.watchParent > 1) {
    const parent = opts.watchParent;
    parentWatch = setInterval(() => {
      if (Deno.ppid === parent) return;
      const during = session ? `step ${session.step + 1}` : "start-up";
      if (run) {
        run.log(
          `the parent process (${parent}) ended: stopping now without a checkpoint; --resume ${run.dir} continues from the last one`,
        );
        run.abandon(`stopped at once: parent process ${parent} ended during ${during}`);
      }
      Deno.exit(1);
    }, PARENT_POLL_MS);
    Deno.unrefTimer(parentWatch);
  }
  try {
    const overrides = run ? (await checkResumeConfig(run.dir, cfg)) : [];
    const { weights, tokenizer } = await loadBase(cfg);
    const resume = run ? await loadLatestRunCheckpoint(run, weights) : undefined;
    const warmStart = resume ? undefined : await loadWarmStart(cfg, weights);
    if (!run) {
      run = await RunDir.create(cfg, log);
      summary.runDir = run.dir;
    }
    for (const w of configWarnings(cfg)) run.log(`warning: ${w}`);
    if (resume) {
      await run.startAt(resume.state.step);
      run.log(`resumed from checkpoint step-${resume.state.step}`);
      summary.before = await stepZeroEval(run.dir);
    }
    // TensorBoard and W&B (config logging), from the step this session starts at.
    await run.startLogging(cfg, resume?.state.step ?? 0, {
      wandbApiKey: opts.wandbApiKey ?? envVar("WANDB_API_KEY"),
      wandbBaseUrl: envVar("WANDB_BASE_URL"),
    });
    if (!opts.resume || overrides.length) {
      // config.json: the resolved config as JSON (eval --config and scripts read it back, a later
      // --resume continues with it); config.txt: the same as a table, every field with its
      // default where it differs. A resume's overrides are written back, so they stay in force.
      if (overrides.length) run.log(`resume overrides: ${formatDifferences(overrides)}`);
      const steps = overrides.find((d) => d.path === "run.steps");
      if (steps && cfg.update.schedule.kind !== "constant") {
        run.log(
          `note: the ${cfg.update.schedule.kind} lr schedule now spans ${cfg.run.steps} steps instead of ${steps.was}, so the lr of the steps still to run differs from the original plan`,
        );
      }
      await writeFileAtomic(joinPath(run.dir, "config.json"), JSON.stringify(cfg, null, 2) + "\n");
      await writeFileAtomic(joinPath(run.dir, "config.txt"), formatConfig(cfg) + "\n");
    }
    gpu = await Gpu.create();
    run.log(`adapter: ${gpu.describe()}`);
    run.log(describeTunedPicks(gpu.ctx.info));
    // prewarm: a tool run takes a sandbox process started while the model generated (34 → 19 ms
    // a short run on the 2-core EPYC).
    executor = env.toolAgents.length ? new SandboxPool({ prewarm: true }) : undefined;
    const g = gpu;
    const made = await tallyBuffers(
      g.device,
      () => RlSession.create(cfg, { gpu: g, weights, tokenizer, executor, resume, warmStart }),
    );
    session = made.value;
    // What the setup allocated on the GPU, by kind: which setting to shrink when memory is short.
    run.log(`GPU memory after setup: ${formatByteTally(made.bytes)}`);
    if (warmStart) run.log(`warm start: ${cfg.warmStart.kind} ${cfg.warmStart.path}`);
    const r = run, s = session;
    stopCheckedAt = s.step;
    const unix = Deno.build.os !== "windows";
    for (const sig of STOP_SIGNALS) {
      if (sig === "SIGTERM" && !unix) continue;
      const on = () => {
        // A terminal's Ctrl-C reaches this process twice under `deno task` (from the terminal, to
        // the whole process group, and forwarded by the wrapper): a repeat within a moment is one.
        if (stopSignals.length && performance.now() - firstStopAt < REPEAT_WINDOW_MS) return;
        if (!stopSignals.length) firstStopAt = performance.now();
        stopSignals.push(sig);
        if (stopSignals.length === 1) {
          r.log(
            `${sig}: finishing step ${
              stopCheckedAt + 1
            }, then a checkpoint and exit (${sig} again stops at once, losing that step)`,
          );
          return;
        }
        r.log(
          `${sig} again: stopping now without a checkpoint; --resume ${r.dir} continues from the last one`,
        );
        r.abandon(`stopped at once by a second ${sig} during step ${stopCheckedAt + 1}`);
        Deno.exit(SIGNAL_EXIT[sig]);
      };
      Deno.addSignalListener(sig, on);
      listeners.push([sig, on]);
    }
    for (const sig of unix ? SAVE_SIGNALS : []) {
      const on = () => {
        saveRequests.push(sig);
        r.log(`${sig}: a checkpoint will be written after step ${stopCheckedAt + 1}`);
        if (sig === "SIGUSR1") {
          closeSignalInspector().then((closed) =>
            closed &&
            r.log(
              "SIGUSR1: closed the inspector Deno opens on this signal (use SIGUSR2 to avoid it)",
            )
          );
        }
      };
      Deno.addSignalListener(sig, on);
      listeners.push([sig, on]);
    }
    heartbeat = phaseHeartbeat(session, (line) => r.log(line));
    const loop = await runSession(session, run, {
      stopRequested: () => {
        stopCheckedAt = s.step;
        return stopSignals.length > 0;
      },
      takeSaveRequest: () => saveRequests.splice(0).join("+") || false,
    });
    Object.assign(summary, { steps: loop.steps, after: loop.after ?? null, best: loop.best });
    if (loop.before) summary.before = loop.before;
    if (loop.stopped) {
      summary.stoppedBy = stopSignals[0];
      status = `stopped by ${stopSignals[0]} after step ${loop.steps}`;
      run.log(
        `interrupted: checkpoint step-${loop.steps} written; resume with --resume ${run.dir}`,
      );
    } else status = "completed";
  } catch (e) {
    status = `failed: ${(e as Error).name}: ${(e as Error).message}`;
    throw e;
  } finally {
    heartbeat?.();
    clearInterval(parentWatch);
    for (const [sig, on] of listeners) Deno.removeSignalListener(sig, on);
    await executor?.close();
    if (session) summary.steps = session.step;
    session?.destroy();
    gpu?.destroy();
    await run?.close({ status, ...summary });
  }
  return summary;
}

/** The validation before training of a run directory (its metrics.jsonl step-0 line), if any. */
async function stepZeroEval(dir: string): Promise<EvalResult | null> {
  const text = await Deno.readTextFile(joinPath(dir, "metrics.jsonl")).catch(() => "");
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    const m = JSON.parse(line);
    if (m.step === 0 && m.eval) return m.eval as EvalResult;
  }
  return null;
}
