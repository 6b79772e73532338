// TrainerHost (web/app/trainer_host.ts), the browser trainer without its worker, driven under
// Deno's WebGPU with a memory store, the tiny-llama preset on one-turn 4×4 Plan-Path at L0, and
// a clock the test sets: a run's events, metrics and checkpoints in the store; demos asked for
// mid-step run at the step's end, in order; pause, resume and stop; a second host resuming from
// the stored checkpoint (a page reload); a lost device rebuilt from the factory with the run
// continuing from its latest checkpoint; the named errors of bad requests.

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { type DirStore, memoryStore, newRunId, RunStore } from "../../src/browser/run_store.ts";
import { unzipFiles } from "../../src/browser/zip.ts";
import type { CodeExecutor } from "../../src/envs/types.ts";
import type { RunState, TrainerEvent } from "../../web/app/protocol.ts";
import { type BaseModels, TrainerHost } from "../../web/app/trainer_host.ts";
import { resetTunedPicks } from "../../src/ops/tuned_picks.ts";
import { matmulPicks } from "../../src/ops/tuning.ts";

const PRESET = { kind: "preset", preset: "tiny-llama" } as const;
const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 6);

/** The app's preset loader (model_source.ts), minus Vite: configs/models/<preset>.json, fresh init. */
const models: BaseModels = {
  async load(spec, seed) {
    if (spec.kind !== "preset") throw new Error(`test loader: ${spec.kind}`);
    const json = await Deno.readTextFile(`configs/models/${spec.preset}.json`).catch(() => null);
    if (json === null) {
      throw Object.assign(new Error(`no preset "${spec.preset}"`), { name: "ModelSourceError" });
    }
    return {
      weights: initModel(parseModelConfig(JSON.parse(json)), { seed }),
      tokenizer: new ByteTokenizer(),
      label: models.describe(spec),
      folder: null,
    };
  },
  describe: (spec) => spec.kind === "preset" ? `preset ${spec.preset} (fresh init)` : spec.kind,
};

/** Plan-Path's tool agent is not used at L0; the stub proves the host made one executor. */
const tool: CodeExecutor = {
  run: () => Promise.resolve({ ok: true, stdout: "R\n", error: null, timedOut: false, ms: 0 }),
};

const config = (steps: number) => ({
  env: { id: "plan_path_v1", difficulty: { size: 4, wallDensity: 0.1, maxTurns: 1 } },
  level: "L0",
  rollout: {
    mode: "single-agent",
    k: 2,
    envsPerStep: 2,
    maxTurns: 1,
    maxPromptTokens: 128,
    maxNewTokens: 8,
  },
  update: {
    mode: "lora",
    miniBatchSize: 8,
    chunkRows: 160,
    lora: { rank: 4, alpha: 8 },
    schedule: { kind: "constant", warmupSteps: 0 },
  },
  eval: { everySteps: 100, episodes: 2, beforeTraining: false },
  run: { name: "t", steps, seed: 1, checkpointEvery: 0 },
});

/** Every event a host sent, a hook that sees each as it arrives, and waits on them. */
class Events {
  readonly list: TrainerEvent[] = [];
  /** Called synchronously inside the host's emit, as the page's callback would be. */
  hook: (e: TrainerEvent) => void = () => {};
  #waiters: { pred: (e: TrainerEvent) => boolean; resolve: (e: TrainerEvent) => void }[] = [];

  readonly on = (e: TrainerEvent) => {
    this.list.push(e);
    this.hook(e);
    for (const w of [...this.#waiters]) {
      if (w.pred(e)) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
  };

  /** The first event from index `from` on that matches, now or when it comes (or a timeout). */
  until(what: string, pred: (e: TrainerEvent) => boolean, from = 0, ms = 120_000) {
    const seen = this.list.slice(from).find(pred);
    if (seen) return Promise.resolve(seen);
    let timer: ReturnType<typeof setTimeout>;
    return Promise.race([
      new Promise<TrainerEvent>((resolve) => this.#waiters.push({ pred, resolve })),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  state(s: RunState, from = 0) {
    return this.until(`state ${s}`, (e) => e.type === "state" && e.state === s, from);
  }

  of<K extends TrainerEvent["type"]>(type: K, from = 0) {
    return this.list.slice(from).filter((e): e is Extract<TrainerEvent, { type: K }> =>
      e.type === type
    );
  }

  /** States in order from index `from`, repeats (progress reports) collapsed. */
  states(from = 0): RunState[] {
    return this.of("state", from).map((e) => e.state).filter((s, i, a) =>
      i === 0 || a[i - 1] !== s
    );
  }

  logs(from = 0) {
    return this.of("log", from).map((e) => e.line);
  }
}

function newHost(store: DirStore, createGpu: () => Promise<Gpu>, clock: { t: number }) {
  let sandboxes = 0;
  const host = new TrainerHost({
    createGpu,
    openStore: () => Promise.resolve({ store, persistent: false }),
    models,
    sandbox: () => (sandboxes++, tool),
    now: () => clock.t,
  });
  return { host, sandboxes: () => sandboxes };
}

const json = async (store: DirStore, path: string) =>
  JSON.parse(new TextDecoder().decode((await store.read(path))!));

/** log softmax of `logits` at `i`, in float64. */
function logSoftmaxAt(logits: Float32Array, i: number): number {
  let mx = -Infinity, z = 0;
  for (const v of logits) mx = Math.max(mx, v);
  for (const v of logits) z += Math.exp(v - mx);
  return logits[i] - mx - Math.log(z);
}

Deno.test("TrainerHost", async (t) => {
  const gpu = await Gpu.create();
  const store = memoryStore(), runs = new RunStore(store), clock = { t: T0 };
  let gpus = 0;
  const { host, sandboxes } = newHost(store, () => (gpus++, Promise.resolve(gpu)), clock);
  const ev = new Events();
  const weights = initModel(
    parseModelConfig(JSON.parse(await Deno.readTextFile("configs/models/tiny-llama.json"))),
    { seed: 1 },
  );
  let finishedRun = "";
  try {
    await t.step("before a run: init reports the device; requests get named errors", async () => {
      const info = await host.init(ev.on);
      assertEquals(
        [info.adapter, info.adapterClass, info.opfs, info.error],
        [gpu.describe(), gpu.adapterClass, false, null],
      );
      assertEquals(gpus, 1);
      assert(info.matmulPicks?.startsWith("matmul picks: built-in"), String(info.matmulPicks));
      await assertRejects(() => host.tuneKernels(), "NoSessionError", "start or resume a run");
      const st = await host.status();
      assertEquals([st.state, st.runId, st.step, st.modelInfo], ["idle", null, 0, null]);
      await assertRejects(() => host.logits({ agent: "plan", text: "a" }), "NoSessionError");
      await assertRejects(() => host.currentLogprobs("plan", []), "NoSessionError");
      await assertRejects(() => host.tttNew("player_x"), "NoSessionError");
      await assertRejects(() => host.tttMove(0), "GameError", "start a game first");
      await assertRejects(() => host.resumeRun("nope"), "CheckpointNotFoundError", 'no run "nope"');
      await assertRejects(
        () => host.start({ config: { ...config(1), level: "L9" }, model: PRESET }),
        "ConfigError",
      );
      await assertRejects(
        () =>
          host.start({
            config: { ...config(1), warmStart: { path: "/home/me/adapter", kind: "peft-adapter" } },
            model: PRESET,
          }),
        "ConfigError",
        "a browser cannot read",
      );
      assertEquals((await host.status()).state, "idle", "a bad config is refused before loading");
      const mark = ev.list.length;
      await assertRejects(
        () => host.start({ config: config(1), model: { kind: "preset", preset: "nope" } }),
        "ModelSourceError",
      );
      assertEquals(ev.states(mark), ["loading", "failed"]);
      assertEquals(ev.of("state", mark).at(-1)?.detail, 'ModelSourceError: no preset "nope"');
      assertEquals(await host.listRuns(), [], "nothing was stored");
    });

    await t.step(
      "a run: state, phases, metrics and checkpoints into the store; demos asked mid-step run after it, in order",
      async () => {
        const mark = ev.list.length, order: string[] = [];
        const tok = new ByteTokenizer(), promptIds = tok.encode("ab");
        let demos: Promise<unknown> | null = null, phase = "";
        ev.hook = (e) => {
          if (e.type === "metric") order.push(`metric ${e.m.step}`);
          // Phase changes only: a phase is reported again while its pipeline count rises.
          if (e.type !== "phase" || e.phase === phase) return;
          phase = e.phase;
          if (e.phase === "rollout") order.push(`rollout after ${e.step}`);
          if (demos || e.phase !== "rollout") return;
          // Asked during step 1's rollout: both wait for the step's end, then run in turn.
          demos = Promise.all([
            host.logits({ agent: "plan", text: "ab" }).then((r) => (order.push("logits"), r)),
            host.currentLogprobs("plan", [{ promptIds, completionIds: [97, 98] }])
              .then((r) => (order.push("logprobs"), r)),
          ]);
        };
        const { runId } = await host.start({ config: config(2), model: PRESET });
        assertEquals(runId, newRunId("t", new Date(T0)), "the run id from the injected clock");
        await ev.state("finished", mark);
        ev.hook = () => {};
        finishedRun = runId;
        const [logits, lps] = await demos! as [
          Awaited<ReturnType<TrainerHost["logits"]>>,
          number[][],
        ];

        assertEquals(ev.states(mark), ["loading", "running", "finished"]);
        assertEquals(
          order,
          ["rollout after 0", "metric 1", "logits", "logprobs", "rollout after 1", "metric 2"],
        );
        // The same weights (after step 1's update) scored both: "ab" then 97 ("a") agree.
        assertEquals(logits.promptIds, promptIds);
        assertEquals(logits.logits.length, 264);
        assertEquals(lps.map((l) => l.length), [2]);
        const want = logSoftmaxAt(logits.logits, 97);
        assert(Math.abs(lps[0][0] - want) < 1e-4, `log π(a | ab): ${lps[0][0]} vs ${want}`);

        const phases = ev.of("phase", mark).map((e) => e.phase);
        for (const p of ["loading", "compiling", "rollout", "update", "validating", "saving"]) {
          assert(phases.includes(p as never), `phase ${p} in ${phases}`);
        }
        assertEquals(phases.at(-1), "idle");
        assertEquals(ev.of("metric", mark).map((e) => [e.m.step, e.m.at]), [[1, T0], [2, T0]]);
        assertEquals(ev.of("rollouts", mark).map((e) => e.step), [1, 2]);
        assertEquals(ev.of("checkpoint", mark).map((e) => e.info.name), [
          "step-1",
          "best",
          "step-2",
        ]);
        const logs = ev.logs(mark);
        assertEquals(
          logs[0],
          `run ${runId}: plan_path_v1 L0, preset tiny-llama (fresh init), on ${gpu.describe()}`,
        );
        assertEquals(logs.at(-1), "finished 2 steps");

        // What the store holds: run.json, metrics.jsonl, the checkpoints (step-1 from the first step's save).
        const meta = await json(store, `runs/${runId}/run.json`);
        assertEquals(
          [meta.status, meta.created, meta.steps, meta.model],
          ["finished", new Date(T0).toISOString(), 2, PRESET],
        );
        const lines = await host.readMetrics(runId);
        assertEquals(lines.map((l) => l.step), [1, 2]);
        assertEquals(lines[0].checkpoint, {
          name: "step-1",
          requestedBy: "the first step (a reload can resume from it)",
        });
        const [info] = await host.listRuns();
        assertEquals(info.checkpoints.map((c) => c.name), ["step-1", "step-2", "best"]);
        assertEquals(info.latest, { name: "step-2", step: 2 });

        const st = await host.status();
        let sum = 0;
        for (const v of weights.data) sum += v;
        assertEquals(
          [st.state, st.runId, st.step, st.total, st.envId, st.agents, st.level, st.model],
          [
            "finished",
            runId,
            2,
            2,
            "plan_path_solo_v1",
            ["plan"],
            "L0",
            "preset tiny-llama (fresh init)",
          ],
        );
        assertEquals(st.modelInfo, {
          label: "preset tiny-llama (fresh init)",
          params: weights.layout.numParams,
          layers: 2,
          hidden: 64,
          vocab: 264,
          tokenizer: "byte",
          weightsSum: sum,
        });
        assertEquals([gpus, sandboxes()], [1, 1], "one device, one executor");
      },
    );

    await t.step("after a run: demos on the idle host, exports, and their errors", async () => {
      await assertRejects(() => host.logits({ agent: "nobody", text: "a" }), "ArgumentError");
      const game = await host.tttNew("player_x");
      assertEquals([game.human, game.policy, game.over, game.result, game.lastPolicyText], [
        "player_x",
        "player_o",
        false,
        "your move",
        null,
      ]);
      assert(game.note.includes("has never been trained on tic-tac-toe"), game.note);
      const after = await host.tttMove(4);
      assert(after.lastPolicyText !== null, "the policy answered the move");

      const files = await runs.checkpointFileMap(finishedRun, "step-2");
      const whole = await host.exportCheckpoint(finishedRun, "step-2", "checkpoint");
      assertEquals(whole.fileName, `${finishedRun}-step-2.zip`);
      assertEquals([...(await unzipFiles(whole.bytes)).keys()].sort(), [...files.keys()].sort());
      const adapters = await host.checkpointAdapters(finishedRun, "step-2");
      assertEquals(adapters.length, 1);
      const peft = await host.exportCheckpoint(finishedRun, "step-2", `adapter:${adapters[0]}`);
      assertEquals(peft.fileName, `${finishedRun}-step-2-${adapters[0]}-peft.zip`);
      assertEquals([...(await unzipFiles(peft.bytes)).keys()].sort(), [
        "adapter_config.json",
        "adapter_model.safetensors",
      ]);
      await assertRejects(
        () => host.exportCheckpoint(finishedRun, "step-2", "adapter:nobody"),
        "CheckpointNotFoundError",
      );
      await assertRejects(() => host.exportCheckpoint(finishedRun, "step-2", "weird"), "TypeError");

      // Kernel tuning at the finished run's products: kept in the store for later runs.
      const mark = ev.list.length;
      await assertRejects(() => host.tuneKernels({ variants: "(" }), "TuneRequestError");
      const tuned = await host.tuneKernels({ variants: "^r8c8_wg8x1$", minMs: 5 });
      assert(tuned.buckets.length > 0 && tuned.refused.length === 0, JSON.stringify(tuned));
      for (const b of tuned.buckets) assert(b.bestMs <= b.currentMs, JSON.stringify(b));
      assert(
        tuned.tunedFor.includes("decode at 1 and 4 rows, a 160-row LoRA update"),
        tuned.tunedFor,
      );
      const file = await json(store, "matmul_picks.json");
      assertEquals(file.entries.length, 1);
      assertEquals(
        Object.keys(file.entries[0].picks).sort(),
        tuned.buckets.map((b) => b.key).sort(),
      );
      for (const b of tuned.buckets) assertEquals(matmulPicks(gpu.ctx.info)[b.key], b.best);
      // The sampler's row split is tuned by default on GPUs only; on CPU adapters the lane
      // kernel samples tiny-llama's 264 words, which is never split, and the log says so.
      // So is the fused LoRA forward's column split (a LoRA run): asked for, on CPU adapters too.
      assertEquals(tuned.sampler === null, gpu.adapterClass === "cpu", JSON.stringify(tuned));
      assertEquals(tuned.lora === null, gpu.adapterClass === "cpu", JSON.stringify(tuned));
      assertEquals(tuned.attention === null, gpu.adapterClass === "cpu", JSON.stringify(tuned));
      assertEquals(tuned.loss === null, gpu.adapterClass === "cpu", JSON.stringify(tuned));
      if (tuned.sampler) {
        assertEquals(file.entries[0].samplerPicks, { "264": tuned.sampler.best });
      } else {
        const asked = await host.tuneKernels({
          variants: "^r8c8_wg8x1$",
          minMs: 5,
          sampler: "on",
          lora: "on",
          attention: "on",
          loss: "on",
        });
        assertEquals(asked.sampler, null);
        assert(ev.logs(mark).some((l) => l.includes("nothing to tune")), ev.logs(mark).join(" | "));
        assert(asked.lora !== null && asked.lora.rows.join() === "1,4", JSON.stringify(asked));
        const again = await json(store, "matmul_picks.json");
        assertEquals(again.entries[0].loraFusedTarget, asked.lora.best);
        // Decode attention at the rollout's longest context: a 128-token prompt and 8 new tokens.
        assertEquals(asked.attention?.context, 136, JSON.stringify(asked));
        assertEquals(again.entries[0].attentionSplit, asked.attention!.best);
        assertEquals(again.entries[0].lossPicks, { "264": asked.loss!.best });
      }
      assert(ev.logs(mark).some((l) => l.startsWith("tune nt:vector:")), ev.logs(mark).join(" | "));
      assert(
        ev.logs(mark).at(-1)?.includes("the next start or resume runs them"),
        ev.logs(mark).join(" | "),
      );
    });

    clock.t = T0 + 60_000;
    let pausedRun = "";
    await t.step(
      "pause after a step (checkpointed), a demo while paused, resume, stop after the next",
      async () => {
        const mark = ev.list.length;
        let stopIn = 0, busyTune: Promise<string> | null = null;
        ev.hook = (e) => {
          // Clicks that land mid-step: Pause during step 1's rollout, Stop during step `stopIn`'s.
          if (e.type !== "phase" || e.phase !== "rollout") return;
          if (e.step === 0) {
            busyTune = host.tuneKernels().then(() => "tuned", (err) => (err as Error).name);
            void host.pause();
          }
          if (e.step === stopIn - 1) void host.stop();
        };
        const { runId } = await host.start({ config: config(3), model: PRESET });
        pausedRun = runId;
        await ev.state("paused", mark);
        assertEquals(await busyTune, "BusyError", "no tuning while a run uses the GPU");
        assertEquals((await json(store, `runs/${runId}/run.json`)).status, "paused");
        assertEquals((await runs.checkpoints(runId)).map((c) => c.name), ["step-1"]);
        await assertRejects(() => host.start({ config: config(1), model: PRESET }), "BusyError");
        await assertRejects(() => host.deleteRun(runId), "BusyError");
        // A demo while paused runs at once, and the run stays paused at step 1.
        const [lp] = await host.currentLogprobs("plan", [{ promptIds: [97], completionIds: [98] }]);
        assert(lp.length === 1 && lp[0] < 0 && Number.isFinite(lp[0]), `log π ${lp}`);
        const st = await host.status();
        assertEquals([st.state, st.step], ["paused", 1]);

        stopIn = 2;
        const resumed = ev.list.length;
        await host.resume();
        await ev.state("stopped", resumed);
        assertEquals(ev.states(mark), [
          "loading",
          "running",
          "pausing",
          "paused",
          "running",
          "stopping",
          "stopped",
        ]);
        assertEquals(ev.logs(mark).at(-1), "stopped at step 2; checkpoint saved");
        assertEquals((await json(store, `runs/${runId}/run.json`)).status, "stopped");
        assertEquals((await host.readMetrics(runId)).map((l) => l.step), [1, 2]);
        assertEquals((await runs.checkpoints(runId)).map((c) => c.name), ["step-1", "step-2"]);
      },
    );
    ev.hook = () => {};

    await t.step("a new host (a reload) resumes the stopped run from its checkpoint", async () => {
      const other = newHost(store, () => Promise.resolve(gpu), clock), ev2 = new Events();
      resetTunedPicks(); // a reload starts a fresh worker: the picks come from the store
      const info = await other.host.init(ev2.on);
      assert(
        info.matmulPicks?.includes("tuned on this adapter") &&
          info.matmulPicks.includes("matmul_picks.json"),
        String(info.matmulPicks),
      );
      assertEquals(await other.host.resumeRun(pausedRun), { runId: pausedRun, step: 2 });
      const history = ev2.of("history");
      assertEquals(history.map((h) => h.lines.map((l) => l.step)), [[1, 2]]);
      assert(
        ev2.logs().includes(`resumed ${pausedRun} from step-2 (step 2) on ${gpu.describe()}`),
        ev2.logs().join(" | "),
      );
      await ev2.state("finished");
      assertEquals(ev2.of("metric").map((e) => e.m.step), [3]);
      assertEquals((await other.host.readMetrics(pausedRun)).map((l) => l.step), [1, 2, 3]);
      assertEquals((await json(store, `runs/${pausedRun}/run.json`)).status, "finished");
      assertEquals((await other.host.status()).step, 3);
    });

    clock.t = T0 + 120_000; // a new run id
    await t.step("Stop while loading: compiling ends, no step runs, nothing is saved", async () => {
      const mark = ev.list.length;
      ev.hook = (e) => {
        if (e.type === "phase" && e.phase === "compiling") void host.stop();
      };
      const { runId } = await host.start({ config: config(2), model: PRESET });
      await ev.state("stopped", mark);
      ev.hook = () => {};
      assertEquals(ev.states(mark), ["loading", "stopping", "stopped"]);
      assertEquals(ev.logs(mark).at(-1), "stopped before step 1; nothing ran");
      assertEquals(ev.of("metric", mark), []);
      assertEquals((await json(store, `runs/${runId}/run.json`)).status, "stopped");
      assertEquals(await host.readMetrics(runId), []);
      assertEquals(await runs.checkpoints(runId), []);
      // and the host is free again: the stopped run can be deleted
      await host.deleteRun(runId);
    });

    await t.step(
      "a run without a checkpoint cannot be resumed; a finished run is deleted",
      async () => {
        const id = "bare-run";
        await runs.writeMeta({
          id,
          config: config(1),
          model: PRESET,
          created: new Date(T0).toISOString(),
          status: "stopped",
          steps: 1,
        });
        const mark = ev.list.length;
        await assertRejects(
          () => host.resumeRun(id),
          "CheckpointNotFoundError",
          "has no complete checkpoint",
        );
        assertEquals(ev.states(mark), ["loading", "failed"]);
        await host.deleteRun(finishedRun);
        assertEquals((await host.listRuns()).map((r) => r.id).sort(), [id, pausedRun].sort());
      },
    );
  } finally {
    resetTunedPicks();
    gpu.device.destroy();
  }
});

Deno.test("TrainerHost: a lost device is rebuilt and the run goes on from its latest checkpoint", async () => {
  const store = memoryStore(), made: Gpu[] = [];
  const { host } = newHost(store, async () => {
    made.push(await Gpu.create());
    return made.at(-1)!;
  }, { t: T0 });
  const ev = new Events();
  try {
    await host.init(ev.on);
    // Lose the device as soon as step-1 is stored: step 2 runs on a destroyed device.
    ev.hook = (e) => {
      if (e.type === "checkpoint" && e.info.name === "step-1") made[0].device.destroy();
    };
    const { runId } = await host.start({ config: config(3), model: PRESET });
    await ev.state("finished");
    assertEquals(made.length, 2, "a second device from the factory");
    assertEquals(ev.of("device-lost").length, 1);
    assertEquals(ev.states(), ["loading", "running", "recovering", "running", "finished"]);
    const lost = ev.list.findIndex((e) => e.type === "device-lost");
    assertEquals(ev.of("history", lost).map((h) => h.lines.map((l) => l.step)), [[1]]);
    assert(
      ev.logs(lost).includes(`device rebuilt on ${made[1].describe()}; resumed from step-1`),
      ev.logs(lost).join(" | "),
    );
    assertEquals(ev.of("metric", lost).map((e) => e.m.step), [2, 3], "steps 2 and 3 after it");
    assertEquals((await host.readMetrics(runId)).map((l) => l.step), [1, 2, 3]);
    assertEquals(
      JSON.parse(new TextDecoder().decode((await store.read(`runs/${runId}/run.json`))!)).status,
      "finished",
    );
    assertEquals((await host.status()).adapter, made[1].describe());
  } finally {
    for (const g of made) g.device.destroy();
  }
});
