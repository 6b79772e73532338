// The trainer worker: owns the GPUDevice, the RlSession (src/rl/session.ts, the same engine as
// `deno task train`), the sandbox pool for tool agents' code, and the runs in OPFS. The page
// talks to it through comlink (TrainerService in protocol.ts); events go back through one proxied
// callback. Training is runSession's loop with a browser RunSink (StoreRunSink: metrics.jsonl and
// checkpoints in OPFS). Pause, stop and the teaching demos act between steps: the demos share the
// GPU model with training, so they run while the loop is paused, idle, or at the next step's end.
// A lost device is rebuilt and the run continues from its latest OPFS checkpoint.

import * as Comlink from "comlink";
import "../shaders.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { runtimeDescription } from "../../src/runtime.ts";
import { SandboxPool } from "../../src/sandbox/mod.ts";
import { parseConfig, type RunConfig } from "../../src/rl/config.ts";
import {
  type BestCheckpoint,
  RlSession,
  runSession,
  type RunSink,
  type SessionInit,
  type StepMetrics,
  type StepOutcome,
} from "../../src/rl/session.ts";
import { encodePrompt } from "../../src/rl/rollout.ts";
import { promptStyleFor } from "../../src/rl/generation.ts";
import { readCheckpoint } from "../../src/train/checkpoint.ts";
import type { CheckpointContents } from "../../src/train/checkpoint.ts";
import { loadPeftAdapter } from "../../src/train/peft.ts";
import { act, currentAgent } from "../../src/envs/api.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { buildEpisodeViews } from "../../src/browser/rollout_view.ts";
import { hasOpfs, opfsStore } from "../../src/browser/opfs_store.ts";
import {
  memoryStore,
  metricsUpTo,
  type ModelSourceSpec,
  newRunId,
  type RunMeta,
  RunStore,
  StoreRunSink,
} from "../../src/browser/run_store.ts";
import { zipFiles } from "../../src/browser/zip.ts";
import { describeSource, loadBaseModel, type LoadedBase } from "./model_source.ts";
import type {
  ErrorInfo,
  InitInfo,
  LocalModel,
  LogitsRequest,
  ModelInfo,
  Phase,
  RunState,
  StartRequest,
  Status,
  TrainerEvent,
  TrainerService,
  TttView,
} from "./protocol.ts";

const TTT_ID = "tic_tac_toe_v1";
/** Environments whose rollouts the viewer gets per step (board replays cost tool executions). */
const VIEW_ENVS = 4;

let emitFn: (e: TrainerEvent) => unknown = () => {};
const emit = (e: TrainerEvent) => {
  try {
    void Promise.resolve(emitFn(e)).catch(() => {});
  } catch { /* the page is gone */ }
};
const errorInfo = (e: unknown): ErrorInfo => ({
  name: (e as Error)?.name ?? "Error",
  message: (e as Error)?.message ?? String(e),
});
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let runs: RunStore;
let opfs = false;
let gpu: Gpu | null = null;
let session: RlSession | null = null;
let cfg: RunConfig | null = null;
let base: LoadedBase | null = null;
let baseSpec: ModelSourceSpec | null = null;
let baseInfo: ModelInfo | null = null;
let warmStart: SessionInit["warmStart"] = undefined;
let executor: SandboxPool | undefined;
let runId: string | null = null;
let state: RunState = "idle";
let pauseRequested = false, stopRequested = false;
/** Bumped whenever a session is replaced, so a stale loop's writes and events are dropped. */
let generation = 0;
let loopRunning = false;
let wake: (() => void) | null = null;
const jobs: (() => Promise<void>)[] = [];
let draining = false;

function setState(s: RunState, detail?: string) {
  state = s;
  emit({
    type: "state",
    state: s,
    runId,
    step: session?.step ?? 0,
    total: cfg?.run.steps ?? 0,
    detail,
  });
  if (!["loading", "running", "pausing", "stopping", "recovering"].includes(s)) setPhase("idle");
}

let phase: Phase = "idle";
let phaseTimer: ReturnType<typeof setInterval> | null = null;
let phasePipelines = -1;
const emitPhase = () => {
  phasePipelines = gpu?.pipelines.created ?? 0;
  emit({
    type: "phase",
    phase,
    step: session?.step ?? 0,
    total: cfg?.run.steps ?? 0,
    pipelines: phasePipelines,
  });
};
/** Reports a phase, then its pipeline count once a second while it changes (shaders compiling). */
function setPhase(p: Phase) {
  phase = p;
  emitPhase();
  if (p === "idle" && phaseTimer !== null) {
    clearInterval(phaseTimer);
    phaseTimer = null;
  } else if (p !== "idle" && phaseTimer === null) {
    phaseTimer = setInterval(
      () => (gpu?.pipelines.created ?? 0) !== phasePipelines && emitPhase(),
      1000,
    );
  }
}

async function drain() {
  if (draining) return;
  draining = true;
  try {
    while (jobs.length) await jobs.shift()!();
  } finally {
    draining = false;
  }
}

/** Runs `fn` on the GPU when training is not using it: now if idle or paused, else after the step. */
function gpuJob<T>(fn: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    jobs.push(async () => {
      try {
        resolve(await fn());
      } catch (e) {
        reject(e);
      }
    });
    if (!loopRunning) void drain();
    else if (state === "paused") wake?.();
  });
}

/** The generator (on the trained GPU model) and adapter an agent samples with. */
function agentModel(s: RlSession, agent: string) {
  const i = s.map.byAgent[agent];
  if (i === undefined) {
    throw Object.assign(
      new Error(
        `${s.env.id} has no agent "${agent}" (agents: ${Object.keys(s.map.byAgent).join(", ")})`,
      ),
      { name: "ArgumentError" },
    );
  }
  const p = s.map.policies[i];
  return { gen: s.policies.generators[p.trainer], adapter: p.adapter ?? undefined, policy: p };
}

/**
 * Logits of every position of `ids` on slot 0. The policies' models are training models, whose
 * forward computes all rows' logits (GpuModel refuses a subset), so ask for all: [n, V].
 */
async function allLogits(
  s: RlSession,
  agent: string,
  ids: readonly number[],
): Promise<{ logits: Float32Array; V: number }> {
  const pol = agentModel(s, agent), model = pol.gen.model;
  const rows = ids.map((token, pos) => ({ token, slot: 0, pos, adapter: pol.adapter }));
  return { logits: await model.forward(rows, rows.map((_, i) => i)), V: model.config.vocabSize };
}

function needSession(): RlSession {
  if (!session) {
    throw Object.assign(new Error("no model is loaded: start or resume a run first"), {
      name: "NoSessionError",
    });
  }
  return session;
}

async function ensureGpu(): Promise<Gpu> {
  gpu ??= await Gpu.create();
  return gpu;
}

// deno-lint-ignore require-await -- callers await it beside async teardown steps; kept a Promise for them
async function teardown() {
  generation++;
  try {
    session?.destroy();
  } catch { /* a lost device's buffers */ }
  session = null;
}

/** A RunSink that forwards to the store's sink only while its generation is current. */
function guardedSink(inner: StoreRunSink, gen: number): RunSink {
  const live = () => gen === generation;
  return {
    log: (l) => live() && inner.log(l),
    // `at` (ms since 1970): the charts' wall-clock axis.
    metric: async (m) => {
      if (live()) await inner.metric({ ...m, at: Date.now() });
    },
    progress: (s, t, m) => live() && inner.progress(s, t, m),
    writeRollouts: async () => {},
    saveCheckpoint: async (name: string, contents: CheckpointContents, keepLast: number) => {
      if (!live()) return;
      setPhase("saving");
      await inner.saveCheckpoint(name, contents, keepLast);
    },
  };
}

async function onStep(gen: number, { metrics: m, groups, stats, tasks }: StepOutcome) {
  if (gen !== generation || !session || !cfg) return;
  try {
    const episodes = await buildEpisodeViews(session.env, groups, stats, {
      step: m.step,
      tasks,
      executor,
      tokenizer: session.tokenizer,
      maxEnvs: VIEW_ENVS,
    });
    emit({ type: "rollouts", step: m.step, episodes });
  } catch (e) {
    emit({ type: "log", line: `rollout viewer: ${errorInfo(e).message}` });
  }
  await drain();
  if (pauseRequested && !stopRequested && gen === generation) {
    // Pausing checkpoints first, so a reload while paused resumes exactly here.
    await saveNow(gen);
    // The stored status first: the page lists runs when it hears the state, and a listing that
    // reads run.json while it is rewritten can miss the run.
    await runs.updateMeta(runId!, { status: "paused" });
    setState("paused");
    while (pauseRequested && !stopRequested && gen === generation) {
      await new Promise<void>((r) => (wake = r));
      wake = null;
      await drain();
    }
    if (gen === generation && !stopRequested) {
      await runs.updateMeta(runId!, { status: "running" });
      setState("running");
    }
  }
}

let currentSink: StoreRunSink | null = null;

async function saveNow(gen: number) {
  if (!session || !cfg || !currentSink || gen !== generation) return;
  await currentSink.saveCheckpoint(
    `step-${session.step}`,
    await session.checkpointContents(),
    cfg.run.keepLast,
  );
}

/** Runs the loop of the current session until it ends, stops, fails, or its device is lost. */
async function runLoop(previous: StepMetrics[]) {
  const gen = generation, s = session!, c = cfg!, id = runId!;
  const sink = new StoreRunSink(runs, id, previous, {
    log: (line) => gen === generation && emit({ type: "log", line }),
    metric: (m) => gen === generation && emit({ type: "metric", m }),
    progress: (step, total) =>
      gen === generation && emit({ type: "state", state, runId: id, step, total }),
    checkpoint: (info) => gen === generation && emit({ type: "checkpoint", runId: id, info }),
  });
  currentSink = sink;
  pauseRequested = false;
  stopRequested = false;
  loopRunning = true;
  setState("running");
  await runs.updateMeta(id, { status: "running" });
  const lost = gpu!.ctx.lost.then((err) => ({ lost: err }));
  s.onPhase = (p) => gen === generation && setPhase(p === "validate" ? "validating" : p);
  // A checkpoint after the first step (besides run.checkpointEvery), so a reload soon after the
  // start can resume; the metrics line of step 1 records it.
  let firstSaved = s.step > 0;
  const done = runSession(s, guardedSink(sink, gen), {
    stopRequested: () => stopRequested,
    takeSaveRequest: () => {
      if (firstSaved || s.step !== 1 || c.run.checkpointEvery === 1) return false;
      firstSaved = true;
      return "the first step (a reload can resume from it)";
    },
    onStep: (outcome) => onStep(gen, outcome),
  }).then((summary) => ({ summary }), (error) => ({ error }));
  const r = await Promise.race([done, lost]);
  loopRunning = false;
  if (gen !== generation) return;
  if ("summary" in r) {
    const stopped = r.summary.stopped;
    await runs.updateMeta(id, { status: stopped ? "stopped" : "finished" });
    emit({
      type: "log",
      line: stopped ? `stopped at step ${s.step}; checkpoint saved` : `finished ${s.step} steps`,
    });
    setState(stopped ? "stopped" : "finished");
    void drain();
    return;
  }
  // A failure: was the device lost underneath it? (The loss can surface first as a failed readback.)
  const lostErr = "lost" in r
    ? r.lost
    : await Promise.race([gpu!.ctx.lost, sleep(500).then(() => null)]);
  if (lostErr) {
    await recover(lostErr.message);
    return;
  }
  const err = errorInfo((r as { error: unknown }).error);
  await runs.updateMeta(id, { status: "failed" });
  emit({ type: "error", error: err });
  setState("failed", `${err.name}: ${err.message}`);
}

/** After a lost device: a new device, the session rebuilt from the latest OPFS checkpoint, the loop resumed. */
async function recover(message: string) {
  emit({ type: "device-lost", message });
  setState("recovering", message);
  await teardown();
  gpu = null;
  try {
    await ensureGpu();
    const id = runId!;
    const infos = (await runs.checkpoints(id)).filter((x) => x.name !== "best");
    const latest = infos[infos.length - 1];
    const resume = latest
      ? await readCheckpoint(runs.checkpointFolder(id, latest.name), { base: base!.weights.config })
      : undefined;
    session = await RlSession.create(cfg!, {
      gpu: gpu!,
      weights: base!.weights,
      tokenizer: base!.tokenizer,
      executor,
      resume,
      warmStart: resume ? undefined : warmStart,
    });
    const lines = metricsUpTo(await runs.readMetrics(id), session.step);
    emit({ type: "history", runId: id, lines });
    emit({
      type: "log",
      line: latest
        ? `device rebuilt on ${gpu!.describe()}; resumed from ${latest.name}`
        : `device rebuilt; no checkpoint yet, restarted from step 0`,
    });
    void runLoop(lines);
  } catch (e) {
    const err = errorInfo(e);
    emit({ type: "error", error: err });
    setState("failed", `${err.name}: ${err.message}`);
  }
}

function resolveConfig(raw: Record<string, unknown>): RunConfig {
  const c = parseConfig(raw);
  if (c.warmStart.path !== null && !c.warmStart.path.startsWith("upload:")) {
    throw Object.assign(
      new Error(
        `warmStart.path: "${c.warmStart.path}" is a path on disk, which a browser cannot read; upload a PEFT adapter instead, or set it to null`,
      ),
      { name: "ConfigError" },
    );
  }
  return c;
}

async function prepare(
  c: RunConfig,
  spec: ModelSourceSpec,
  local: LocalModel | undefined,
  id: string,
  uploaded: boolean,
) {
  setState("loading", `loading ${describeSource(spec)}`);
  setPhase("loading");
  await ensureGpu();
  base = await loadBaseModel(spec, c.run.seed, local);
  baseSpec = spec;
  const w = base.weights;
  let sum = 0;
  for (const v of w.data) sum += v;
  baseInfo = {
    label: base.label,
    params: w.layout.numParams,
    layers: w.config.numLayers,
    hidden: w.config.hiddenSize,
    vocab: w.config.vocabSize,
    tokenizer: base.tokenizer.kind,
    weightsSum: sum,
  };
  warmStart = uploaded
    ? {
      kind: "peft-adapter",
      adapter: await loadPeftAdapter(runs.runFolder(id, "warm_start"), base.weights.config),
    }
    : undefined;
  const env = getEnv(c.env.id);
  if (env.toolAgents.length && !executor) executor = new SandboxPool({ concurrency: 2 });
}

async function quiesce() {
  if (loopRunning) {
    throw Object.assign(new Error("a run is in progress: stop it first"), { name: "BusyError" });
  }
  while (draining) await sleep(10);
}

const service: TrainerService = {
  async init(onEvent) {
    emitFn = onEvent;
    opfs = hasOpfs();
    let store;
    try {
      store = opfs ? await opfsStore() : memoryStore("memory");
    } catch {
      opfs = false;
      store = memoryStore("memory");
    }
    runs = new RunStore(store);
    try {
      const g = await ensureGpu();
      return {
        runtime: runtimeDescription(),
        adapter: g.describe(),
        adapterClass: g.adapterClass,
        opfs,
        error: null,
      } satisfies InitInfo;
    } catch (e) {
      return {
        runtime: runtimeDescription(),
        adapter: null,
        adapterClass: null,
        opfs,
        error: errorInfo(e),
      };
    }
  },

  async start(req: StartRequest) {
    await quiesce();
    await teardown();
    const uploaded = !!req.warmStartAdapter;
    const raw = uploaded
      ? { ...req.config, warmStart: { path: "upload:warm_start", kind: "peft-adapter" } }
      : req.config;
    const c = resolveConfig(raw);
    const id = newRunId(c.run.name);
    runId = id;
    cfg = c;
    try {
      if (uploaded) {
        for (const [name, bytes] of Object.entries(req.warmStartAdapter!)) {
          await runs.writeRunFile(id, `warm_start/${name}`, bytes);
        }
      }
      await prepare(c, req.model, req.local, id, uploaded);
      const meta: RunMeta = {
        id,
        config: raw,
        model: req.model,
        warmStartUpload: uploaded,
        created: new Date().toISOString(),
        status: "running",
        steps: c.run.steps,
        adapter: gpu!.describe(),
      };
      await runs.writeMeta(meta);
      setPhase("compiling");
      session = await RlSession.create(c, {
        gpu: gpu!,
        weights: base!.weights,
        tokenizer: base!.tokenizer,
        executor,
        warmStart,
      });
      emit({
        type: "log",
        line: `run ${id}: ${c.env.id} ${c.level}, ${base!.label}, on ${gpu!.describe()}`,
      });
      emit({ type: "history", runId: id, lines: [] });
    } catch (e) {
      setState("failed", `${errorInfo(e).name}: ${errorInfo(e).message}`);
      throw e;
    }
    void runLoop([]);
    return { runId: id };
  },

  async resumeRun(id, local) {
    await quiesce();
    await teardown();
    const meta = await runs.readMeta(id);
    if (!meta) {
      throw Object.assign(new Error(`no run "${id}" in this browser's storage`), {
        name: "CheckpointNotFoundError",
      });
    }
    const c = resolveConfig(meta.config);
    runId = id;
    cfg = c;
    try {
      await prepare(c, meta.model, local, id, !!meta.warmStartUpload);
      const infos = (await runs.checkpoints(id)).filter((x) => x.name !== "best");
      const latest = infos[infos.length - 1];
      if (!latest) {
        throw Object.assign(new Error(`run "${id}" has no complete checkpoint to resume from`), {
          name: "CheckpointNotFoundError",
        });
      }
      const resume = await readCheckpoint(runs.checkpointFolder(id, latest.name), {
        base: base!.weights.config,
      });
      setPhase("compiling");
      session = await RlSession.create(c, {
        gpu: gpu!,
        weights: base!.weights,
        tokenizer: base!.tokenizer,
        executor,
        resume,
      });
      const lines = metricsUpTo(await runs.readMetrics(id), session.step);
      emit({ type: "history", runId: id, lines });
      emit({
        type: "log",
        line: `resumed ${id} from ${latest.name} (step ${session.step}) on ${gpu!.describe()}`,
      });
      const best = (resume.state.extra as { best?: BestCheckpoint } | undefined)?.best;
      if (best) {
        emit({
          type: "log",
          line: `best so far: ${(best.successRate * 100).toFixed(1)}% at step ${best.step}`,
        });
      }
      void runLoop(lines);
      return { runId: id, step: session.step };
    } catch (e) {
      setState("failed", `${errorInfo(e).name}: ${errorInfo(e).message}`);
      throw e;
    }
  },

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async pause() {
    if (!loopRunning) return;
    pauseRequested = true;
    setState("pausing", "pausing after this step");
  },

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async resume() {
    pauseRequested = false;
    wake?.();
  },

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async stop() {
    if (!loopRunning) return;
    stopRequested = true;
    setState("stopping", "stopping after this step (a checkpoint is written)");
    wake?.();
  },

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async status(): Promise<Status> {
    return {
      state,
      runId,
      step: session?.step ?? 0,
      total: cfg?.run.steps ?? 0,
      envId: session?.env.id ?? null,
      agents: session ? [...session.env.possibleAgents] : [],
      adapter: gpu?.describe() ?? null,
      model: baseSpec ? describeSource(baseSpec) : null,
      modelInfo: baseInfo,
      level: cfg?.level ?? null,
    };
  },

  listRuns: () => runs.listRuns(),
  async deleteRun(id) {
    if (id === runId && loopRunning) {
      throw Object.assign(new Error("this run is in progress: stop it first"), {
        name: "BusyError",
      });
    }
    await runs.deleteRun(id);
  },
  readMetrics: (id) => runs.readMetrics(id),

  async checkpointAdapters(id, name) {
    const files = await runs.checkpointFileMap(id, name);
    const names = new Set<string>();
    for (const p of files.keys()) {
      const m = p.match(/^adapters\/([^/]+)\//);
      if (m) names.add(m[1]);
    }
    return [...names];
  },

  async exportCheckpoint(id, name, what) {
    const files = await runs.checkpointFileMap(id, name);
    let out: Map<string, Uint8Array>, fileName: string;
    if (what === "checkpoint") {
      out = files;
      fileName = `${id}-${name}.zip`;
    } else if (what.startsWith("adapter:")) {
      const a = what.slice(8), prefix = `adapters/${a}/`;
      out = new Map(
        [...files].filter(([p]) => p.startsWith(prefix)).map((
          [p, b],
        ) => [p.slice(prefix.length), b]),
      );
      if (!out.size) {
        throw Object.assign(new Error(`checkpoint ${name} has no adapter "${a}"`), {
          name: "CheckpointNotFoundError",
        });
      }
      fileName = `${id}-${name}-${a}-peft.zip`;
    } else throw new TypeError(`unknown export "${what}"`);
    const bytes = zipFiles(out);
    return Comlink.transfer({ fileName, bytes }, [bytes.buffer]);
  },

  logits: (req: LogitsRequest) =>
    gpuJob(async () => {
      const s = needSession();
      const tok = s.tokenizer, pol = agentModel(s, req.agent);
      let ids: number[];
      if (req.text !== undefined) ids = tok.encode(req.text);
      else {
        const task = s.env.generate(s.cfg.env.testSeed + (req.task ?? 0), {
          split: "test",
          difficulty: s.cfg.env.difficulty,
        });
        let st = s.env.reset(task);
        // Step to the agent's first turn with the policies' own greedy moves, if it does not start.
        for (
          let guard = 0;
          guard < 8 && currentAgent(s.env, st) !== null && currentAgent(s.env, st) !== req.agent;
          guard++
        ) {
          const who = currentAgent(s.env, st)!, p = s.policies.agentPolicy(who);
          const [g] = await p.generator.generate([{
            prompt: encodePrompt(
              {
                env: s.env,
                tokenizer: tok,
                policyOf: (a) => s.policies.agentPolicy(a),
              },
              st,
              who,
              promptStyleFor(s.cfg.rollout.promptStyle, tok),
            ),
            maxNewTokens: s.cfg.rollout.maxNewTokens,
            stopIds: tok.stopIds,
            adapter: p.adapter,
            sampling: { temperature: 0 },
          }]);
          st = (await act(s.env, st, who, tok.decode(g.ids, { skipSpecialTokens: true }), executor))
            .state;
        }
        ids = encodePrompt(
          {
            env: s.env,
            tokenizer: tok,
            policyOf: (a) => s.policies.agentPolicy(a),
          },
          st,
          req.agent,
          promptStyleFor(s.cfg.rollout.promptStyle, tok),
        );
      }
      ids = [...ids, ...(req.appendIds ?? [])];
      const model = pol.gen.model;
      if (ids.length > model.maxLen) ids = ids.slice(ids.length - model.maxLen);
      const all = await allLogits(s, req.agent, ids);
      const logits = all.logits.slice((ids.length - 1) * all.V, ids.length * all.V);
      const top = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a]).slice(0, 64);
      const labels = Object.fromEntries(top.map((id) => [id, tok.decode([id])]));
      const policy = pol.policy;
      return Comlink.transfer({
        prompt: tok.decode(ids),
        promptIds: ids,
        logits,
        labels,
        agent: req.agent,
        adapter: `${policy.name}${policy.adapter === null ? " (full weights)" : " (LoRA adapter)"}`,
      }, [logits.buffer]);
    }),

  currentLogprobs: (agent, seqs) =>
    gpuJob(async () => {
      const s = needSession();
      const out: number[][] = [];
      for (const q of seqs) {
        const ids = [...q.promptIds, ...q.completionIds];
        const { logits, V } = await allLogits(s, agent, ids.slice(0, -1));
        // log softmax at each completion position (T = 1), read at the token that followed.
        const lp: number[] = [];
        for (let t = q.promptIds.length - 1; t < ids.length - 1; t++) {
          const row = logits.subarray(t * V, (t + 1) * V);
          let mx = -Infinity, z = 0;
          for (const v of row) mx = Math.max(mx, v);
          for (const v of row) z += Math.exp(v - mx);
          lp.push(row[ids[t + 1]] - mx - Math.log(z));
        }
        out.push(lp);
      }
      return out;
    }),

  tttNew: (humanPlays) => gpuJob(async () => await ttt.start(humanPlays)),
  tttMove: (cell) => gpuJob(async () => await ttt.move(cell)),

  // deno-lint-ignore require-await -- TrainerService methods are async across comlink
  async debugLoseDevice() {
    gpu?.device.destroy();
  },
};

/** Tic-tac-toe against the current policy (greedy), on an empty board. */
const ttt = {
  env: getEnv(TTT_ID),
  // deno-lint-ignore no-explicit-any
  st: null as any,
  human: "player_x",
  policy: "player_o",
  lastText: null as string | null,
  lastInvalid: null as string | null,
  note: "",

  view(): TttView {
    const over = currentAgent(this.env, this.st) === null;
    const w = this.st.winner as string | null;
    const result = !over
      ? `${currentAgent(this.env, this.st) === this.human ? "your" : "the policy's"} move`
      : this.st.forfeit
      ? `${this.st.forfeit === this.human ? "you" : "the policy"} forfeit${
        this.st.forfeit === this.human ? "" : "s"
      } (illegal or unreadable move)`
      : w === "draw"
      ? "draw"
      : `${(w === "x") === (this.human === "player_x") ? "you win" : "the policy wins"}`;
    return {
      board: this.env.render(this.st),
      human: this.human,
      policy: this.policy,
      lastPolicyText: this.lastText,
      lastPolicyInvalid: this.lastInvalid,
      over,
      result,
      note: this.note,
    };
  },

  async policyMoves() {
    const s = needSession();
    while (currentAgent(this.env, this.st) === this.policy) {
      const trained = s.env.id === TTT_ID;
      const pol = s.policies.agentPolicy(trained ? this.policy : s.env.possibleAgents[0]);
      const prompt = encodePrompt(
        { env: this.env, tokenizer: s.tokenizer, policyOf: () => pol },
        this.st,
        this.policy,
        promptStyleFor(s.cfg.rollout.promptStyle, s.tokenizer),
      );
      const [g] = await pol.generator.generate([{
        prompt,
        maxNewTokens: Math.min(32, s.cfg.rollout.maxNewTokens),
        stopIds: s.tokenizer.stopIds,
        adapter: pol.adapter,
        sampling: { temperature: 0 },
      }]);
      const text = s.tokenizer.decode(g.ids, { skipSpecialTokens: true });
      const r = await act(this.env, this.st, this.policy, text);
      this.lastText = text;
      this.lastInvalid = r.info.invalid ? `${r.info.invalid.code}: ${r.info.invalid.reason}` : null;
      this.st = r.state;
    }
  },

  async start(humanPlays: "player_x" | "player_o"): Promise<TttView> {
    const s = needSession();
    this.human = humanPlays;
    this.policy = humanPlays === "player_x" ? "player_o" : "player_x";
    this.st = this.env.reset({ opening: [], shaping: false });
    this.lastText = this.lastInvalid = null;
    this.note = s.env.id === TTT_ID
      ? `the policy is this run's ${s.cfg.level} tic-tac-toe policy at step ${s.step} (greedy)`
      : `this run trains ${s.env.id}: its policy (agent ${
        s.env.possibleAgents[0]
      }) has never been trained on tic-tac-toe; start a tic_tac_toe_v1 run to play a trained one`;
    await this.policyMoves();
    return this.view();
  },

  async move(cell: number): Promise<TttView> {
    if (!this.st) throw Object.assign(new Error("start a game first"), { name: "GameError" });
    if (currentAgent(this.env, this.st) !== this.human) return this.view();
    this.st = (await act(this.env, this.st, this.human, `#### ${cell + 1}`)).state;
    await this.policyMoves();
    return this.view();
  },
};

Comlink.expose(service);
