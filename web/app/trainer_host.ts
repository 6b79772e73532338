// The browser trainer behind TrainerService: owns the GPU, the RlSession (src/rl/session.ts, the
// same engine as `deno task train`), the sandbox pool for tool agents' code, and the stored runs.
// Training is runSession's loop with a browser RunSink (StoreRunSink: metrics.jsonl and
// checkpoints in a RunStore). Pause, stop and the teaching demos act between steps: the demos
// share the GPU model with training, so they wait in a JobQueue that is drained while the loop
// is paused, idle, or at the next step's end. A lost device is rebuilt from the GPU factory and
// the run continues from its latest stored checkpoint.
//
// Everything host-specific comes in through TrainerHostDeps, so the same class runs in the
// trainer worker (trainer_worker.ts: OPFS, bundled models, blob-Worker sandboxes) and in Deno's
// tests (memory store, a tiny preset, a device the test destroys).

import * as Comlink from "comlink";
import type { Gpu } from "../../src/gpu/mod.ts";
import { runtimeDescription } from "../../src/runtime.ts";
import type { RunConfig } from "../../src/rl/config.ts";
import {
  type BestCheckpoint,
  type RlSession,
  runSession,
  type RunSink,
  type SessionInit,
  type StepMetrics,
  type StepOutcome,
} from "../../src/rl/session.ts";
import type { CheckpointContents } from "../../src/train/checkpoint.ts";
import { loadPeftAdapter } from "../../src/train/peft.ts";
import type { CodeExecutor } from "../../src/envs/types.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { buildEpisodeViews } from "../../src/browser/rollout_view.ts";
import { JobQueue } from "../../src/browser/job_queue.ts";
import {
  type DirStore,
  metricsUpTo,
  type ModelSourceSpec,
  newRunId,
  type RunMeta,
  RunStore,
  StoreRunSink,
} from "../../src/browser/run_store.ts";
import { describeTunedPicks } from "../../src/ops/tuned_picks.ts";
import type { LoadedBase } from "./model_source.ts";
import { PhaseReporter } from "./phase_reporter.ts";
import { TUNE_HINT, tuneForRun, useStoredPicks } from "./kernel_tuning.ts";
import { completionLogprobs, promptLogits, TicTacToeDemo } from "./trainer_demos.ts";
import {
  describeBase,
  named,
  openSession,
  readLatestCheckpoint,
  resolveConfig,
} from "./run_loading.ts";
import { checkpointAdapterNames, checkpointZip } from "../../src/browser/checkpoint_export.ts";
import type {
  ErrorInfo,
  InitInfo,
  LocalModel,
  LogitsRequest,
  LogitsResult,
  ModelInfo,
  RunState,
  StartRequest,
  Status,
  TrainerEvent,
  TrainerService,
  TttView,
  TuneReport,
  TuneRequest,
} from "./protocol.ts";

/** Environments whose rollouts the viewer gets per step (board replays cost tool executions). */
const VIEW_ENVS = 4;
/** States in which the loop (or a load) is at work; any other reports the phase "idle". */
const BUSY: readonly RunState[] = ["loading", "running", "pausing", "stopping", "recovering"];

/** Where a run's base model comes from (model_source.ts in the app; a test's own loader). */
export interface BaseModels {
  load(spec: ModelSourceSpec, seed: number, local?: LocalModel): Promise<LoadedBase>;
  /** One line for the page: what the spec names. */
  describe(spec: ModelSourceSpec): string;
}

export interface TrainerHostDeps {
  /** A new GPU: at init, and again after each lost device. */
  createGpu(): Promise<Gpu>;
  /** The runs' storage (OPFS in the app); `persistent` false where it fell back to memory. */
  openStore(): Promise<{ store: DirStore; persistent: boolean }>;
  models: BaseModels;
  /** The executor of tool agents' code, made when the first run with a tool agent starts. */
  sandbox(): CodeExecutor;
  /** Wall clock, ms since 1970: run ids, run.json's `created`, the metrics' `at`. Date.now by default. */
  now?(): number;
}

const errorInfo = (e: unknown): ErrorInfo => ({
  name: (e as Error)?.name ?? "Error",
  message: (e as Error)?.message ?? String(e),
});
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class TrainerHost implements TrainerService {
  readonly #deps: TrainerHostDeps;
  readonly #now: () => number;
  #emitFn: (e: TrainerEvent) => unknown = () => {};
  #runs!: RunStore;
  #store!: DirStore;
  #opfs = false;
  #gpu: Gpu | null = null;
  #session: RlSession | null = null;
  #cfg: RunConfig | null = null;
  #base: LoadedBase | null = null;
  #baseSpec: ModelSourceSpec | null = null;
  #baseInfo: ModelInfo | null = null;
  #warmStart: SessionInit["warmStart"] = undefined;
  #executor: CodeExecutor | undefined;
  #runId: string | null = null;
  #state: RunState = "idle";
  #pauseRequested = false;
  #stopRequested = false;
  /** Bumped whenever a session is replaced, so a stale loop's writes and events are dropped. */
  #generation = 0;
  #loopRunning = false;
  /** A start or resume is loading the model and compiling: Stop is taken for after it. */
  #loading = false;
  #wake: (() => void) | null = null;
  readonly #jobs = new JobQueue();
  #currentSink: StoreRunSink | null = null;
  readonly #phase = new PhaseReporter((e) => this.#emit(e), () => ({
    step: this.#session?.step ?? 0,
    total: this.#cfg?.run.steps ?? 0,
    pipelines: this.#gpu?.pipelines.created ?? 0,
  }));
  readonly #ttt = new TicTacToeDemo(() => this.#needSession());

  constructor(deps: TrainerHostDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  #emit(e: TrainerEvent) {
    try {
      void Promise.resolve(this.#emitFn(e)).catch(() => {});
    } catch { /* the page is gone */ }
  }

  #setState(s: RunState, detail?: string) {
    this.#state = s;
    this.#emit({
      type: "state",
      state: s,
      runId: this.#runId,
      step: this.#session?.step ?? 0,
      total: this.#cfg?.run.steps ?? 0,
      detail,
    });
    if (!BUSY.includes(s)) this.#phase.set("idle");
  }

  /** Runs `fn` on the GPU when training is not using it: now if idle or paused, else after the step. */
  #gpuJob<T>(fn: () => Promise<T>): Promise<T> {
    const done = this.#jobs.push(fn);
    if (!this.#loopRunning) void this.#jobs.drain();
    else if (this.#state === "paused") this.#wake?.();
    return done;
  }

  #needSession(): RlSession {
    if (!this.#session) {
      throw named("NoSessionError", "no model is loaded: start or resume a run first");
    }
    return this.#session;
  }

  async #ensureGpu(): Promise<Gpu> {
    this.#gpu ??= await this.#deps.createGpu();
    return this.#gpu;
  }

  /** A start or resume begins loading: earlier requests are void, Stop counts from here. */
  #beginLoading() {
    this.#pauseRequested = false;
    this.#stopRequested = false;
    this.#loading = true;
  }

  #teardown() {
    this.#generation++;
    try {
      this.#session?.destroy();
    } catch { /* a lost device's buffers */ }
    this.#session = null;
  }

  /** A RunSink that forwards to the store's sink only while its generation is current. */
  #guardedSink(inner: StoreRunSink, gen: number): RunSink {
    const live = () => gen === this.#generation;
    return {
      log: (l) => live() && inner.log(l),
      // `at` (ms since 1970): the charts' wall-clock axis.
      metric: async (m) => {
        if (live()) await inner.metric({ ...m, at: this.#now() });
      },
      progress: (s, t, m) => live() && inner.progress(s, t, m),
      writeRollouts: async () => {},
      saveCheckpoint: async (name: string, contents: CheckpointContents, keepLast: number) => {
        if (!live()) return;
        this.#phase.set("saving");
        await inner.saveCheckpoint(name, contents, keepLast);
      },
    };
  }

  async #onStep(gen: number, { metrics: m, groups, stats, tasks }: StepOutcome) {
    if (gen !== this.#generation || !this.#session || !this.#cfg) return;
    try {
      const episodes = await buildEpisodeViews(this.#session.env, groups, stats, {
        step: m.step,
        tasks,
        executor: this.#executor,
        tokenizer: this.#session.tokenizer,
        maxEnvs: VIEW_ENVS,
      });
      this.#emit({ type: "rollouts", step: m.step, episodes });
    } catch (e) {
      this.#emit({ type: "log", line: `rollout viewer: ${errorInfo(e).message}` });
    }
    await this.#jobs.drain();
    const active = () => !this.#stopRequested && gen === this.#generation;
    if (this.#pauseRequested && active()) {
      // Pausing checkpoints first, so a reload while paused resumes exactly here.
      await this.#saveNow(gen);
      // The stored status first: the page lists runs when it hears the state, and a listing that
      // reads run.json while it is rewritten can miss the run.
      await this.#runs.updateMeta(this.#runId!, { status: "paused" });
      this.#setState("paused");
      while (this.#pauseRequested && active()) {
        await new Promise<void>((r) => (this.#wake = r));
        this.#wake = null;
        await this.#jobs.drain();
      }
      if (active()) {
        await this.#runs.updateMeta(this.#runId!, { status: "running" });
        this.#setState("running");
      }
    }
  }

  async #saveNow(gen: number) {
    const s = this.#session, c = this.#cfg, sink = this.#currentSink;
    if (!s || !c || !sink || gen !== this.#generation) return;
    await sink.saveCheckpoint(`step-${s.step}`, await s.checkpointContents(), c.run.keepLast);
  }

  /** Runs the loop of the current session until it ends, stops, fails, or its device is lost. */
  async #runLoop(previous: StepMetrics[]) {
    const gen = this.#generation, s = this.#session!, c = this.#cfg!, id = this.#runId!;
    const gpu = this.#gpu!;
    const live = () => gen === this.#generation;
    const sink = new StoreRunSink(this.#runs, id, previous, {
      log: (line) => live() && this.#emit({ type: "log", line }),
      metric: (m) => live() && this.#emit({ type: "metric", m }),
      progress: (step, total) =>
        live() && this.#emit({ type: "state", state: this.#state, runId: id, step, total }),
      checkpoint: (info) => live() && this.#emit({ type: "checkpoint", runId: id, info }),
    });
    this.#currentSink = sink;
    if (this.#stopRequested) {
      // Stopped while loading: nothing ran, nothing new to save.
      await this.#runs.updateMeta(id, { status: "stopped" });
      this.#emit({ type: "log", line: `stopped before step ${s.step + 1}; nothing ran` });
      this.#setState("stopped");
      void this.#jobs.drain();
      return;
    }
    this.#loopRunning = true;
    this.#setState("running");
    await this.#runs.updateMeta(id, { status: "running" });
    const lost = gpu.ctx.lost.then((err) => ({ lost: err }));
    s.onPhase = (p) => live() && this.#phase.set(p === "validate" ? "validating" : p);
    // A checkpoint after the first step (besides run.checkpointEvery), so a reload soon after the
    // start can resume; the metrics line of step 1 records it.
    let firstSaved = s.step > 0;
    const done = runSession(s, this.#guardedSink(sink, gen), {
      stopRequested: () => this.#stopRequested,
      takeSaveRequest: () => {
        if (firstSaved || s.step !== 1 || c.run.checkpointEvery === 1) return false;
        firstSaved = true;
        return "the first step (a reload can resume from it)";
      },
      onStep: (outcome) => this.#onStep(gen, outcome),
    }).then((summary) => ({ summary }), (error) => ({ error }));
    const r = await Promise.race([done, lost]);
    this.#loopRunning = false;
    if (!live()) return;
    if ("summary" in r) {
      const stopped = r.summary.stopped;
      await this.#runs.updateMeta(id, { status: stopped ? "stopped" : "finished" });
      this.#emit({
        type: "log",
        line: stopped ? `stopped at step ${s.step}; checkpoint saved` : `finished ${s.step} steps`,
      });
      this.#setState(stopped ? "stopped" : "finished");
      void this.#jobs.drain();
      return;
    }
    // A failure: was the device lost underneath it? (The loss can surface first as a failed readback.)
    const lostErr = "lost" in r
      ? r.lost
      : await Promise.race([gpu.ctx.lost, sleep(500).then(() => null)]);
    if (lostErr) {
      await this.#recover(lostErr.message);
      return;
    }
    const err = errorInfo((r as { error: unknown }).error);
    await this.#runs.updateMeta(id, { status: "failed" });
    this.#emit({ type: "error", error: err });
    this.#setState("failed", `${err.name}: ${err.message}`);
  }

  /** After a lost device: a new device, the session rebuilt from the latest checkpoint, the loop resumed. */
  async #recover(message: string) {
    this.#emit({ type: "device-lost", message });
    this.#setState("recovering", message);
    this.#teardown();
    this.#gpu = null;
    try {
      const gpu = await this.#ensureGpu(), id = this.#runId!, base = this.#base!;
      const latest = await readLatestCheckpoint(this.#runs, id, base);
      this.#session = await openSession(this.#cfg!, gpu, base, this.#executor, {
        resume: latest?.checkpoint,
        warmStart: this.#warmStart,
      });
      const lines = metricsUpTo(await this.#runs.readMetrics(id), this.#session.step);
      this.#emit({ type: "history", runId: id, lines });
      this.#emit({
        type: "log",
        line: latest
          ? `device rebuilt on ${gpu.describe()}; resumed from ${latest.name}`
          : `device rebuilt; no checkpoint yet, restarted from step 0`,
      });
      void this.#runLoop(lines);
    } catch (e) {
      const err = errorInfo(e);
      this.#emit({ type: "error", error: err });
      this.#setState("failed", `${err.name}: ${err.message}`);
    }
  }

  /** Loads the run's base model (and its uploaded warm start) and describes it for the page. */
  async #prepare(
    c: RunConfig,
    spec: ModelSourceSpec,
    local: LocalModel | undefined,
    id: string,
    uploaded: boolean,
  ) {
    this.#setState("loading", `loading ${this.#deps.models.describe(spec)}`);
    this.#phase.set("loading");
    await this.#ensureGpu();
    const base = this.#base = await this.#deps.models.load(spec, c.run.seed, local);
    this.#baseSpec = spec;
    this.#baseInfo = describeBase(base);
    this.#warmStart = uploaded
      ? {
        kind: "peft-adapter",
        adapter: await loadPeftAdapter(this.#runs.runFolder(id, "warm_start"), base.weights.config),
      }
      : undefined;
    const env = getEnv(c.env.id);
    if (env.toolAgents.length && !this.#executor) this.#executor = this.#deps.sandbox();
  }

  /** Refuses while a run is in progress; otherwise waits for a demo that is still running. */
  async #quiesce() {
    if (this.#loopRunning) throw named("BusyError", "a run is in progress: stop it first");
    await this.#jobs.idle();
  }

  async init(onEvent: (e: TrainerEvent) => void): Promise<InitInfo> {
    this.#emitFn = onEvent;
    const { store, persistent } = await this.#deps.openStore();
    this.#opfs = persistent;
    this.#store = store;
    this.#runs = new RunStore(store);
    await useStoredPicks(store, (line) => this.#emit({ type: "log", line }));
    try {
      const g = await this.#ensureGpu();
      return {
        runtime: runtimeDescription(),
        adapter: g.describe(),
        adapterClass: g.adapterClass,
        matmulPicks: describeTunedPicks(g.ctx.info, TUNE_HINT),
        opfs: this.#opfs,
        error: null,
      };
    } catch (e) {
      return {
        runtime: runtimeDescription(),
        adapter: null,
        adapterClass: null,
        matmulPicks: null,
        opfs: this.#opfs,
        error: errorInfo(e),
      };
    }
  }

  async tuneKernels(req: TuneRequest = {}): Promise<TuneReport> {
    if (BUSY.includes(this.#state)) {
      throw named("BusyError", "a run is in progress: pause or stop it, then tune");
    }
    const base = this.#base, config = this.#cfg;
    if (!base || !config) {
      throw named(
        "NoSessionError",
        "no model is loaded: start or resume a run first (the kernels are tuned at its model's products)",
      );
    }
    return await tuneForRun({
      gpu: await this.#ensureGpu(),
      base,
      config,
      store: this.#store,
      now: this.#now,
      log: (line) => this.#emit({ type: "log", line }),
      gpuJob: (fn) => this.#gpuJob(fn),
    }, req);
  }

  async start(req: StartRequest): Promise<{ runId: string }> {
    await this.#quiesce();
    this.#teardown();
    this.#beginLoading();
    const uploaded = !!req.warmStartAdapter;
    const raw = uploaded
      ? { ...req.config, warmStart: { path: "upload:warm_start", kind: "peft-adapter" } }
      : req.config;
    const c = resolveConfig(raw);
    const id = newRunId(c.run.name, new Date(this.#now()));
    this.#runId = id;
    this.#cfg = c;
    try {
      if (uploaded) {
        for (const [name, bytes] of Object.entries(req.warmStartAdapter!)) {
          await this.#runs.writeRunFile(id, `warm_start/${name}`, bytes);
        }
      }
      await this.#prepare(c, req.model, req.local, id, uploaded);
      const gpu = this.#gpu!, base = this.#base!;
      const meta: RunMeta = {
        id,
        config: raw,
        model: req.model,
        warmStartUpload: uploaded,
        created: new Date(this.#now()).toISOString(),
        status: "running",
        steps: c.run.steps,
        adapter: gpu.describe(),
      };
      await this.#runs.writeMeta(meta);
      this.#phase.set("compiling");
      this.#session = await openSession(c, gpu, base, this.#executor, {
        warmStart: this.#warmStart,
      });
      this.#emit({
        type: "log",
        line: `run ${id}: ${c.env.id} ${c.level}, ${base.label}, on ${gpu.describe()}`,
      });
      this.#emit({ type: "history", runId: id, lines: [] });
    } catch (e) {
      this.#loading = false;
      this.#setState("failed", `${errorInfo(e).name}: ${errorInfo(e).message}`);
      throw e;
    }
    this.#loading = false;
    void this.#runLoop([]);
    return { runId: id };
  }

  async resumeRun(id: string, local?: LocalModel): Promise<{ runId: string; step: number }> {
    await this.#quiesce();
    this.#teardown();
    this.#beginLoading();
    const meta = await this.#runs.readMeta(id);
    if (!meta) {
      throw named("CheckpointNotFoundError", `no run "${id}" in this browser's storage`);
    }
    const c = resolveConfig(meta.config);
    this.#runId = id;
    this.#cfg = c;
    try {
      await this.#prepare(c, meta.model, local, id, !!meta.warmStartUpload);
      const gpu = this.#gpu!, base = this.#base!;
      const latest = await readLatestCheckpoint(this.#runs, id, base);
      if (!latest) {
        throw named(
          "CheckpointNotFoundError",
          `run "${id}" has no complete checkpoint to resume from`,
        );
      }
      const resume = latest.checkpoint;
      this.#phase.set("compiling");
      const s = this.#session = await openSession(c, gpu, base, this.#executor, { resume });
      const lines = metricsUpTo(await this.#runs.readMetrics(id), s.step);
      this.#emit({ type: "history", runId: id, lines });
      this.#emit({
        type: "log",
        line: `resumed ${id} from ${latest.name} (step ${s.step}) on ${gpu.describe()}`,
      });
      const best = (resume.state.extra as { best?: BestCheckpoint } | undefined)?.best;
      if (best) {
        this.#emit({
          type: "log",
          line: `best so far: ${(best.successRate * 100).toFixed(1)}% at step ${best.step}`,
        });
      }
      this.#loading = false;
      void this.#runLoop(lines);
      return { runId: id, step: s.step };
    } catch (e) {
      this.#loading = false;
      this.#setState("failed", `${errorInfo(e).name}: ${errorInfo(e).message}`);
      throw e;
    }
  }

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async pause(): Promise<void> {
    if (!this.#loopRunning) return;
    this.#pauseRequested = true;
    this.#setState("pausing", "pausing after this step");
  }

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async resume(): Promise<void> {
    this.#pauseRequested = false;
    this.#wake?.();
  }

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async stop(): Promise<void> {
    if (this.#loading) {
      // Compiling cannot be cut short; the loop then ends before its first step.
      this.#stopRequested = true;
      this.#setState("stopping", "stopping once the GPU shaders are compiled; no step will run");
      return;
    }
    if (!this.#loopRunning) return;
    this.#stopRequested = true;
    this.#setState("stopping", "stopping after this step (a checkpoint is written)");
    this.#wake?.();
  }

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async status(): Promise<Status> {
    const s = this.#session;
    return {
      state: this.#state,
      runId: this.#runId,
      step: s?.step ?? 0,
      total: this.#cfg?.run.steps ?? 0,
      envId: s?.env.id ?? null,
      agents: s ? [...s.env.possibleAgents] : [],
      adapter: this.#gpu?.describe() ?? null,
      model: this.#baseSpec ? this.#deps.models.describe(this.#baseSpec) : null,
      modelInfo: this.#baseInfo,
      level: this.#cfg?.level ?? null,
    };
  }

  listRuns() {
    return this.#runs.listRuns();
  }

  async deleteRun(id: string): Promise<void> {
    if (id === this.#runId && this.#loopRunning) {
      throw named("BusyError", "this run is in progress: stop it first");
    }
    await this.#runs.deleteRun(id);
  }

  readMetrics(id: string): Promise<StepMetrics[]> {
    return this.#runs.readMetrics(id);
  }

  async checkpointAdapters(id: string, name: string): Promise<string[]> {
    return checkpointAdapterNames(await this.#runs.checkpointFileMap(id, name));
  }

  async exportCheckpoint(
    id: string,
    name: string,
    what: string,
  ): Promise<{ fileName: string; bytes: Uint8Array }> {
    const zip = checkpointZip(id, name, await this.#runs.checkpointFileMap(id, name), what);
    return Comlink.transfer(zip, [zip.bytes.buffer]);
  }

  logits(req: LogitsRequest): Promise<LogitsResult> {
    return this.#gpuJob(() => promptLogits(this.#needSession(), req, this.#executor));
  }

  currentLogprobs(
    agent: string,
    seqs: { promptIds: number[]; completionIds: number[] }[],
  ): Promise<number[][]> {
    return this.#gpuJob(() => completionLogprobs(this.#needSession(), agent, seqs));
  }

  tttNew(humanPlays: "player_x" | "player_o"): Promise<TttView> {
    return this.#gpuJob(() => this.#ttt.start(humanPlays));
  }

  tttMove(cell: number): Promise<TttView> {
    return this.#gpuJob(() => this.#ttt.move(cell));
  }

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async debugLoseDevice(): Promise<void> {
    this.#gpu?.device.destroy();
  }
}
