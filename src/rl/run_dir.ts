// A training run on disk: runs/<name>/<timestamp>/ with config.json, metrics.jsonl (one JSON
// object per step), summary.log, rollouts/step-N.jsonl (every sampled conversation with its
// reward and group), checkpoints/step-N/ (keep-last-N) and best/ — written atomically — and the
// glue between checkpoints and the run's policies for resume.

import { joinPath, writeFileAtomic } from "../io/deno_files.ts";
import { writeFailure, writingTo } from "../io/errors.ts";
import type { ModelWeights } from "../model/weights.ts";
import {
  latestCheckpoint,
  loadCheckpoint,
  pruneCheckpoints,
  recoverInterrupted,
  writeCheckpoint,
} from "../train/checkpoint_dir.ts";
import type { CheckpointContents, LoadedCheckpoint } from "../train/checkpoint.ts";
import { CheckpointNotFoundError } from "../train/errors.ts";
import type { RunConfig } from "./config.ts";
import type { PolicyMap } from "./policy_map.ts";
import type { Group } from "./rollout.ts";
import { eventRecord, eventsFileName, fileVersionRecord } from "../io/tfevents.ts";
import { metricScalars } from "./metric_scalars.ts";
import { RunLock } from "./run_lock.ts";
import { newWandbRunId, WandbRun } from "./wandb.ts";
import { policyInitFromCheckpoint, type RunSink, type StepMetrics } from "./session.ts";

const isTerminal = () => Deno.stdout.isTerminal();
const enc = new TextEncoder();

/**
 * Keeps a metrics.jsonl (or W&B's offline wandb-history.jsonl: stepKey "_step") to its lines of
 * steps ≤ upToStep, rewritten atomically (a no-op when nothing is past it).
 */
export async function trimMetrics(
  path: string,
  upToStep: number,
  stepKey = "step",
): Promise<number> {
  let text = "";
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return 0;
    throw e;
  }
  const lines = text.split("\n").filter((l) => l.trim());
  // A line cut short by a kill mid-write is no step either.
  const keep = lines.filter((l) => {
    try {
      return (JSON.parse(l) as Record<string, number>)[stepKey] <= upToStep;
    } catch {
      return false;
    }
  });
  if (keep.length !== lines.length || (text && !text.endsWith("\n"))) {
    await writeFileAtomic(path, keep.map((l) => l + "\n").join(""));
  }
  return lines.length - keep.length;
}

/** Where W&B credentials and server come from besides the config (train reads the environment). */
export interface LoggingEnv {
  /** WANDB_API_KEY: only ever sent to the server, never written or logged. */
  wandbApiKey?: string;
  /** WANDB_BASE_URL, used when logging.wandb.baseUrl is null. */
  wandbBaseUrl?: string;
}

/** What RunDir keeps of a W&B run across resumes (wandb/run.json): never the API key. */
interface WandbRunFile {
  id: string;
}

export class RunDir implements RunSink {
  private metrics: Deno.FsFile | null = null;
  private summary: Deno.FsFile | null = null;
  /** events.out.tfevents.* (logging.tensorboard). */
  private tfevents: Deno.FsFile | null = null;
  private wandb: WandbRun | null = null;

  private constructor(
    readonly dir: string,
    private lock: RunLock,
    private out: (s: string) => void,
  ) {}

  /** A new run directory, locked, with an empty metrics.jsonl. */
  static async create(
    cfg: RunConfig,
    out: (s: string) => void,
    now = new Date(),
  ): Promise<RunDir> {
    const stamp = now.toISOString().replace(/[:.]/g, "-");
    const parent = joinPath(cfg.run.outDir, cfg.run.name || "run");
    // A run directory that cannot be made names its path and what to do (NotWritableError, DiskFullError).
    await writingTo(parent, () => Deno.mkdir(parent, { recursive: true }));
    // Made exclusively: runs started in the same millisecond (a sweep's, or a test's pair) each
    // get their own directory, "<stamp>", "<stamp>-2", ..., instead of sharing one.
    let dir = joinPath(parent, stamp);
    for (let n = 2;; n++) {
      try {
        await Deno.mkdir(dir);
        break;
      } catch (e) {
        if (!(e instanceof Deno.errors.AlreadyExists)) throw writeFailure(e, dir);
        dir = joinPath(parent, `${stamp}-${n}`);
      }
    }
    await writingTo(dir, () => Deno.mkdir(joinPath(dir, "checkpoints")));
    const run = new RunDir(dir, await writingTo(dir, () => RunLock.acquire(dir)), out);
    await run.startAt(0);
    out(`run directory: ${dir}`);
    return run;
  }

  /**
   * An existing run directory, locked against a second process (RunDirLockedError). Call
   * startAt(step) with the checkpoint's step before writing metrics.
   */
  static async open(dir: string, out: (s: string) => void): Promise<RunDir> {
    try {
      await Deno.stat(joinPath(dir, "config.json"));
    } catch {
      throw new CheckpointNotFoundError(
        dir,
        "is not a run directory (no config.json); pass the directory train printed",
      );
    }
    const run = new RunDir(dir, await writingTo(dir, () => RunLock.acquire(dir)), out);
    out(`resuming run: ${dir}`);
    if (run.lock.stale) {
      run.log(
        `took over the lock of process ${run.lock.stale.pid} (started ${run.lock.stale.started}), which ended without releasing it`,
      );
    }
    // A process killed while writing a checkpoint (or best/) left its half-written folder: removed
    // (or, for a folder set aside to be replaced, put back) now that this process holds the lock.
    for (const root of [run.checkpoints, dir]) {
      const done = await writingTo(root, () => recoverInterrupted(root));
      if (done.length) run.log(`${root}: after an interrupted write, ${done.join(", ")}`);
    }
    return run;
  }

  /**
   * Opens metrics.jsonl for the steps after `step`: lines of later steps (logged after the
   * checkpoint a resume starts from, and redone now) are cut first, atomically.
   */
  async startAt(step: number) {
    const path = joinPath(this.dir, "metrics.jsonl");
    const cut = await trimMetrics(path, step);
    if (cut) {
      this.log(
        `metrics.jsonl: dropped ${cut} line(s) after step ${step} (the checkpoint this resume starts from); those steps are redone`,
      );
    }
    this.metrics = await writingTo(path, () => Deno.open(path, { create: true, append: true }));
  }

  /**
   * The run's scalar logs from `step` on (0: a new run; a resume: its checkpoint's step): a new
   * TensorBoard events file (after a resume it starts with a SessionLog START at step + 1, so
   * TensorBoard drops the first session's steps that are redone) and the W&B run (wandb/run.json
   * keeps its id, so a resume continues the same W&B run). Call after startAt.
   */
  async startLogging(cfg: RunConfig, step: number, env: LoggingEnv = {}) {
    const wall = Date.now() / 1000;
    if (cfg.logging.tensorboard) {
      let host = "localhost";
      try {
        host = Deno.hostname().replace(/[^A-Za-z0-9._-]/g, "_") || host;
      } catch { /* no --allow-sys: a generic host name */ }
      let path = "";
      for (let n = 0; !this.tfevents; n++) {
        path = joinPath(this.dir, eventsFileName(wall, host, Deno.pid, n));
        try {
          this.tfevents = await Deno.open(path, { createNew: true, write: true });
        } catch (e) {
          if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
        }
      }
      await this.writeAll(this.tfevents!, fileVersionRecord(wall));
      if (step > 0) {
        await this.writeAll(
          this.tfevents!,
          eventRecord({ wallTime: wall, step: step + 1, sessionStart: true }),
        );
      }
    }
    const w = cfg.logging.wandb;
    if (w.project === null || w.mode === "disabled") return;
    const wdir = joinPath(this.dir, "wandb");
    await Deno.mkdir(wdir, { recursive: true });
    const idFile = joinPath(wdir, "run.json");
    let saved: WandbRunFile | null = null;
    try {
      saved = JSON.parse(await Deno.readTextFile(idFile)) as WandbRunFile;
    } catch { /* a new W&B run */ }
    const id = saved?.id ?? newWandbRunId();
    if (!saved) await writeFileAtomic(idFile, JSON.stringify({ id } satisfies WandbRunFile) + "\n");
    if (w.mode === "offline" && step > 0) {
      await trimMetrics(joinPath(wdir, "wandb-history.jsonl"), step, "_step");
    }
    this.wandb = await WandbRun.start({
      project: w.project,
      entity: w.entity,
      name: w.name ?? `${cfg.run.name}/${this.dir.split(/[\\/]/).pop()}`,
      runId: id,
      mode: w.mode,
      baseUrl: w.baseUrl ?? env.wandbBaseUrl ?? "https://api.wandb.ai",
      apiKey: env.wandbApiKey,
      config: cfg as unknown as Record<string, unknown>,
      warn: (line) => this.log(`warning: ${line}`),
      writeOffline: async (file, text, append) => {
        const path = joinPath(wdir, file);
        if (append) await Deno.writeTextFile(path, text, { append: true });
        else await writeFileAtomic(path, text);
      },
    });
    if (this.wandb.enabled) {
      this.log(w.mode === "offline" ? `W&B (offline): ${wdir}` : `W&B: ${this.wandb.url}`);
    }
  }

  private async writeAll(f: Deno.FsFile, bytes: Uint8Array) {
    for (let done = 0; done < bytes.length;) done += await f.write(bytes.subarray(done));
  }

  get checkpoints(): string {
    return joinPath(this.dir, "checkpoints");
  }

  /** A line in summary.log, appended at once (so it survives a crash), then on the console. */
  log(line: string) {
    this.appendSummary(line);
    this.out(line);
  }

  private appendSummary(line: string) {
    try {
      this.summary ??= Deno.openSync(joinPath(this.dir, "summary.log"), {
        create: true,
        append: true,
      });
      this.summary.writeSync(enc.encode(`${new Date().toISOString()} ${line}\n`));
    } catch (e) {
      // summary.log is a record, not the run: a full disk shows up where the run writes next.
      this.out(
        `warning: could not append to ${joinPath(this.dir, "summary.log")}: ${
          (e as Error).message
        }`,
      );
    }
  }

  async metric(m: StepMetrics) {
    if (!this.metrics) throw new Error("RunDir.metric before startAt");
    const path = joinPath(this.dir, "metrics.jsonl"), f = this.metrics;
    await writingTo(path, () => this.writeAll(f, enc.encode(JSON.stringify(m) + "\n")));
    if (!this.tfevents && !this.wandb) return;
    const scalars = metricScalars(m);
    if (this.tfevents) {
      await this.writeAll(
        this.tfevents,
        eventRecord({ wallTime: Date.now() / 1000, step: m.step, scalars }),
      );
    }
    // In the background: a slow or unreachable W&B server never holds up a step.
    void this.wandb?.log(m.step, scalars);
  }

  /** One progress line: a bar rewritten in place on a terminal, plain lines otherwise. */
  progress(step: number, total: number, m: StepMetrics) {
    const sec = m.seconds as Record<string, number>;
    const ev = m.eval as { successRate: number } | undefined;
    const text =
      `step ${step}/${total} reward ${(m.reward as number).toFixed(3)} train-success ${
        ((m.trainSuccess as number) * 100).toFixed(0)
      }%` +
      (ev ? ` held-out ${(ev.successRate * 100).toFixed(1)}%` : "") +
      ` rollout ${sec.rollout.toFixed(1)}s update ${sec.update.toFixed(1)}s`;
    // In summary.log before on the console: what a person saw is on disk.
    this.appendSummary(text);
    if (isTerminal()) {
      const w = 20, done = Math.round((step / total) * w);
      Deno.stdout.writeSync(
        new TextEncoder().encode(`\r[${"#".repeat(done)}${".".repeat(w - done)}] ${text}`),
      );
      if (step === total || ev) Deno.stdout.writeSync(new TextEncoder().encode("\n"));
    } else this.out(text);
  }

  /** One line per sample: what the agent saw (its prompt, as clipped, decoded), what it wrote and how it scored. */
  async writeRollouts(step: number, groups: readonly Group[], decode: (ids: number[]) => string) {
    const prompts = new Map<number[], string>();
    const promptOf = (ids: number[]) => prompts.get(ids) ?? prompts.set(ids, decode(ids)).get(ids)!;
    const lines = groups.flatMap((g) =>
      g.samples.map((s) =>
        JSON.stringify({
          group: g.key,
          agent: s.agent,
          turn: s.turn,
          candidate: s.candidate,
          reward: s.reward,
          team: s.team,
          local: s.local,
          chosen: s.chosen,
          invalid: s.invalid ?? null,
          prompt: promptOf(s.promptIds),
          text: s.text,
        })
      )
    );
    await writingTo(
      joinPath(this.dir, "rollouts"),
      () => Deno.mkdir(joinPath(this.dir, "rollouts"), { recursive: true }),
    );
    await writeFileAtomic(
      joinPath(joinPath(this.dir, "rollouts"), `step-${step}.jsonl`),
      lines.join("\n") + "\n",
    );
  }

  async saveCheckpoint(name: string, contents: CheckpointContents, keepLast: number) {
    if (name === "best") return await writeCheckpoint(joinPath(this.dir, "best"), contents);
    await writeCheckpoint(joinPath(this.checkpoints, name), contents);
    await pruneCheckpoints(this.checkpoints, keepLast);
  }

  /** For an exit on the spot (a second Ctrl-C): the summary line, files closed, lock released, synchronously. */
  abandon(status: string) {
    this.appendSummary(`summary: ${JSON.stringify({ status, runDir: this.dir })}`);
    this.metrics?.close();
    this.summary?.close();
    this.tfevents?.close();
    this.metrics = this.summary = this.tfevents = null;
    this.lock.releaseSync();
  }

  /** The closing summary line of this session (whole-run figures), then the lock is released. */
  async close(summary: unknown) {
    try {
      // What W&B has not taken yet goes now; a failure only warns (into summary.log).
      const status = String((summary as { status?: unknown } | null)?.status ?? "");
      await this.wandb?.finish(
        status === "completed"
          ? 0
          : status.includes("SIGINT")
          ? 130
          : status.includes("SIGTERM")
          ? 143
          : 1,
      );
      this.appendSummary(`summary: ${JSON.stringify(summary)}`);
    } finally {
      this.metrics?.close();
      this.summary?.close();
      this.tfevents?.close();
      this.metrics = this.summary = this.tfevents = null;
      this.wandb = null;
      await this.lock.release();
    }
  }
}

/** A checkpoint directory (checkpoints/step-N, best/) of a run with this config, as policy init data. */
export async function loadCheckpointInto(
  dir: string,
  cfg: RunConfig,
  map: PolicyMap,
  base: ModelWeights,
) {
  const ck = await loadCheckpoint(dir, { base: base.config });
  return { checkpoint: ck, init: policyInitFromCheckpoint(ck, cfg, map, base) };
}

/** The latest complete step checkpoint of a run directory. */
export async function loadLatestRunCheckpoint(
  run: RunDir,
  base: ModelWeights,
): Promise<LoadedCheckpoint> {
  const dir = await latestCheckpoint(run.checkpoints);
  if (!dir) {
    throw new CheckpointNotFoundError(
      run.checkpoints,
      "holds no complete checkpoint to resume from",
    );
  }
  return await loadCheckpoint(dir, { base: base.config });
}
