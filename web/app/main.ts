// The page: the sticky run bar, the run form, live charts, rollout viewer, teaching demos and the
// runs stored in this browser. Everything heavy happens in the trainer worker (trainer_worker.ts),
// reached through comlink; this module only wires the parts together and forwards clicks.

import * as Comlink from "comlink";
import { unzipFiles } from "../../src/browser/zip.ts";
import type { RunInfo } from "../../src/browser/run_store.ts";
import { Dashboard } from "./charts.ts";
import { ChartControls } from "./chart_controls.ts";
import { DemoGate } from "./demo_gate.ts";
import { BUSY, RunBar } from "./run_bar.ts";
import { RunsPanel } from "./runs_panel.ts";
import { ConfigForm } from "./config_form.ts";
import { GrpoExplainer } from "./grpo_explainer.ts";
import type {
  InitInfo,
  LogitsRequest,
  Phase,
  RunState,
  Status,
  TrainerEvent,
  TrainerService,
  TuneReport,
} from "./protocol.ts";
import { RolloutViewer } from "./rollout_viewer.ts";
import { SamplingExplorer } from "./sampling_explorer.ts";
import { TicTacToePlay } from "./tic_tac_toe_play.ts";

const $ = <T extends HTMLElement = HTMLElement>(sel: string) => document.querySelector<T>(sel)!;

/** What the end-to-end tests read. */
interface AppProbe {
  ready: boolean;
  init: InitInfo | null;
  state: RunState;
  runId: string | null;
  /** The worker's current phase; each phase as first reported (ms since the page loaded) with the pipelines compiled by its end. */
  phase: Phase;
  phases: { phase: Phase; at: number; pipelines: number }[];
  /** Stored runs drawn dashed in the charts. */
  overlays: string[];
  step: number;
  total: number;
  resumedFrom: number | null;
  charts: Record<string, number>;
  rolloutSteps: number[];
  evals: { step: number; successRate: number }[];
  errors: string[];
  deviceLost: number;
  log: string[];
  /** The worker's last status (model loaded, agents). */
  status: Status | null;
  /** The last kernel tuning's report. */
  tune: TuneReport | null;
}
const probe: AppProbe = {
  ready: false,
  init: null,
  state: "idle",
  runId: null,
  phase: "idle",
  phases: [],
  overlays: [],
  step: 0,
  total: 0,
  resumedFrom: null,
  charts: {},
  rolloutSteps: [],
  evals: [],
  errors: [],
  deviceLost: 0,
  log: [],
  status: null,
  tune: null,
};
(globalThis as unknown as { __app: AppProbe }).__app = probe;

type BannerAction = { label: string; className: string; run: string; onClick: () => void };
function banner(
  kind: "error" | "warn" | "info",
  title: string,
  body: string,
  action?: BannerAction,
) {
  const b = $("#banner");
  b.className = `banner ${kind}`;
  b.hidden = false;
  b.replaceChildren();
  const h = document.createElement("b");
  h.textContent = title;
  const p = document.createElement("div");
  p.textContent = body;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "small banner-close";
  close.textContent = "Dismiss";
  close.addEventListener("click", () => (b.hidden = true));
  b.append(close, h, p);
  if (action) {
    const a = document.createElement("button");
    a.type = "button";
    a.className = `primary ${action.className}`;
    a.dataset.run = action.run;
    a.textContent = action.label;
    a.addEventListener("click", action.onClick);
    b.append(a);
  }
}

function log(line: string) {
  probe.log.push(line);
  const box = $("#log");
  const d = document.createElement("div");
  d.textContent = `${new Date().toLocaleTimeString()} ${line}`;
  box.prepend(d);
}

const NO_WEBGPU_HELP =
  "Training runs on WebGPU, which this browser does not offer here. Use a recent Chrome, Edge or " +
  "Chromium (113+), or Firefox 141+ / Safari 26+; on Linux start Chromium with --enable-unsafe-webgpu " +
  "(and --enable-features=Vulkan); open the page from https:// or http://127.0.0.1 (WebGPU needs a secure context). " +
  "chrome://gpu shows whether WebGPU is blocked. The runs stored in this browser can still be downloaded below.";

async function main() {
  const dashboard = new Dashboard($("#charts"));
  const viewer = new RolloutViewer($("#viewer"));
  const bar = new RunBar($("#runbar"));
  const buttons = bar.buttons;
  let state: RunState = "idle";
  let recovering = false;
  let formOk = false;
  let gpuOk = false;
  let runs: RunsPanel | null = null;
  const refreshRuns = async () => await runs?.refresh();
  const syncButtons = () => {
    buttons.start.disabled = bar.live || !formOk || !gpuOk;
    buttons.start.title = !gpuOk
      ? "This browser offers no WebGPU here (see the message above)"
      : !formOk
      ? "Fix the settings marked in red first"
      : "";
    buttons.pause.disabled = state !== "running";
    buttons.resume.disabled = state !== "paused" && state !== "pausing";
    // Stop while loading takes effect once compiling ends (no step runs); Pause waits for a step.
    buttons.stop.disabled = !["loading", "running", "paused", "pausing"].includes(state);
    runs?.syncButtons();
  };
  const form = new ConfigForm($("#form"), (v) => {
    formOk = v.errors.length === 0;
    if (v.parsed) dashboard.setTotal(v.parsed.run.steps);
    syncButtons();
  });
  setUpGuideAndTeaching();
  // Closing the tab mid-step loses the work since the last checkpoint: the browser asks first.
  addEventListener("beforeunload", (ev) => {
    if (!BUSY.includes(state)) return;
    ev.preventDefault();
    (ev as { returnValue: unknown }).returnValue = "";
  });

  // No WebGPU on the page: say so before starting anything.
  const hasGpu = typeof (navigator as { gpu?: unknown }).gpu === "object" &&
    (navigator as { gpu?: unknown }).gpu !== null;
  const worker = new Worker(new URL("./trainer_worker.ts", import.meta.url), { type: "module" });
  const api = Comlink.wrap<TrainerService>(worker);
  // For tests and the curious: what a driver reset does to training (see the device-lost path).
  // Tests also read the policy's next-token logits (what the sampling explorer draws) as numbers.
  (globalThis as unknown as { __appDebug: unknown }).__appDebug = {
    loseDevice: () => api.debugLoseDevice(),
    logits: async (req: LogitsRequest) => {
      const r = await api.logits(req);
      return { ...r, logits: Array.from(r.logits) };
    },
    status: () => api.status(),
    readMetrics: (runId: string) => api.readMetrics(runId),
  };

  const onEvent = (e: TrainerEvent) => {
    switch (e.type) {
      case "state":
        state = e.state;
        probe.state = e.state;
        probe.runId = e.runId;
        probe.step = e.step;
        probe.total = e.total;
        bar.onState(e.state, e.step, e.total);
        syncButtons();
        if (recovering && e.state === "running") {
          recovering = false;
          banner(
            "info",
            "Recovered from the lost GPU device",
            "A new device was created and training continues from the last checkpoint (see the log).",
          );
        }
        if (["stopped", "finished", "failed", "paused"].includes(e.state)) void refreshRuns();
        void refreshStatus();
        break;
      case "phase":
        probe.phase = e.phase;
        if (probe.phases[probe.phases.length - 1]?.phase !== e.phase) {
          probe.phases.push({ phase: e.phase, at: performance.now(), pipelines: e.pipelines });
        } else probe.phases[probe.phases.length - 1].pipelines = e.pipelines;
        bar.onPhase(e.phase, e.pipelines);
        break;
      case "log":
        log(e.line);
        break;
      case "metric": {
        dashboard.add(e.m);
        probe.charts = dashboard.counts();
        const ev = e.m.eval as { successRate: number } | undefined;
        if (ev) {
          probe.evals.push({ step: e.m.step, successRate: ev.successRate });
          if (e.m.step > 0) {
            log(`step ${e.m.step}: held-out success ${(ev.successRate * 100).toFixed(1)}%`);
          }
        }
        break;
      }
      case "history":
        dashboard.reset(e.lines, probe.total);
        probe.charts = dashboard.counts();
        probe.evals = e.lines.filter((l) => l.eval).map((l) => ({
          step: l.step,
          successRate: (l.eval as { successRate: number }).successRate,
        }));
        viewer.clear();
        break;
      case "rollouts":
        viewer.add(e.step, e.episodes);
        probe.rolloutSteps.push(e.step);
        break;
      case "checkpoint":
        log(
          `checkpoint ${e.info.name} (step ${e.info.step}) saved to ${
            probe.init?.opfs ? "OPFS" : "memory"
          }`,
        );
        void refreshRuns();
        break;
      case "device-lost":
        probe.deviceLost++;
        recovering = true;
        banner(
          "warn",
          "The GPU device was lost",
          `${e.message} Rebuilding it and resuming from the last checkpoint…`,
        );
        break;
      case "error":
        probe.errors.push(`${e.error.name}: ${e.error.message}`);
        banner("error", errorTitle(e.error.name), e.error.message);
        break;
    }
  };
  const init = await api.init(Comlink.proxy(onEvent));
  probe.init = init;
  gpuOk = hasGpu && init.adapter !== null;
  if (!hasGpu || init.error?.name === "NoWebGPUError" || !init.adapter) {
    banner(
      "error",
      "No WebGPU here",
      `${init.error ? `${init.error.message}\n` : ""}${NO_WEBGPU_HELP}`,
    );
    $("#adapter").textContent = "GPU: no WebGPU adapter";
  } else {
    $("#adapter").textContent = `GPU: ${init.adapter} (in a Web Worker)`;
    if (init.adapterClass === "cpu") {
      log(
        "this browser's WebGPU runs on the CPU (a software adapter): correct, but training is slow",
      );
    }
  }
  $("#picks-line").textContent = init.matmulPicks ?? "";
  $("#tune").addEventListener("click", () => void tuneKernels());
  $("#storage").textContent = init.opfs
    ? "Checkpoints: kept in this browser (origin-private file system) across reloads."
    : "Checkpoints: in memory only (this browser offers no private file system here): lost on reload, so download them.";

  const explainer = new GrpoExplainer(
    $("#grpo"),
    (agent, seqs) => api.currentLogprobs(agent, seqs),
  );
  viewer.onGroups = (eps) => explainer.update(eps);
  const sampling = new SamplingExplorer($("#sampling"), (r) => api.logits(r));
  new TicTacToePlay($("#ttt"), { tttNew: (h) => api.tttNew(h), tttMove: (c) => api.tttMove(c) });
  const demos = new DemoGate($(".demos"));
  new ChartControls($("#chart-controls"), dashboard);
  runs = new RunsPanel($("#runs"), api, {
    liveRunId: () => probe.runId,
    canStart: () => !bar.live && gpuOk,
    idle: () => !bar.live,
    resume: resumeRun,
    banner,
    compare: (rs) => {
      dashboard.setOverlays(rs);
      probe.overlays = rs.map((r) => r.id);
    },
  });

  async function refreshStatus() {
    const s = await api.status();
    sampling.setAgents(s.agents);
    demos.update(s);
    probe.status = s;
    const mi = s.modelInfo;
    const size = mi
      ? ` · ${
        mi.params.toLocaleString("en-US")
      } parameters (${mi.layers} layers × ${mi.hidden}, vocabulary ${mi.vocab}) · ${
        mi.tokenizer === "hf" ? "HF tokenizer (transformers.js)" : "byte tokenizer"
      }`
      : "";
    // Tuning measures the loaded run's products, and not while a run uses the GPU.
    $<HTMLButtonElement>("#tune").disabled = !gpuOk || !mi || BUSY.includes(s.state) || tuning;
    $("#model-line").textContent = s.model
      ? `Model: ${s.model}${size}${s.level ? ` · level ${s.level}` : ""}${
        s.envId ? ` · env ${s.envId}` : ""
      }`
      : "";
  }

  let tuning = false;
  async function tuneKernels() {
    tuning = true;
    $<HTMLButtonElement>("#tune").disabled = true;
    $("#tune-note").textContent = "tuning… (a minute or more; the log shows each bucket)";
    try {
      const r = await api.tuneKernels();
      probe.tune = r;
      // The sampler (GPUs) is one more row: its workgroups a row and their size, built-in and tuned.
      const pick = (p: { rowChunks: number; workgroupSize: number }) =>
        `${p.rowChunks} workgroup${p.rowChunks > 1 ? "s" : ""} of ${p.workgroupSize} threads a row`;
      const split = (p: { rowHeads: number; minSpan: number }) =>
        p.rowHeads === 0
          ? "never split"
          : `split up to ${p.rowHeads} rows × heads, ${p.minSpan} positions a split`;
      const lines = [
        ...r.buckets,
        ...(r.sampler
          ? [{
            ...r.sampler,
            key: `sampler (${r.sampler.vocab} words)`,
            current: pick(r.sampler.current),
            best: pick(r.sampler.best),
          }]
          : []),
        // And the fused LoRA forward (LoRA runs on GPUs): workgroups a dispatch before it splits.
        ...(r.lora
          ? [{
            ...r.lora,
            key: `fused LoRA (rank ${r.lora.rank})`,
            current: `${r.lora.current} workgroups a dispatch`,
            best: `${r.lora.best} workgroups a dispatch`,
          }]
          : []),
        // And decode attention (GPUs): when it splits over positions, at the rollout's context.
        ...(r.attention
          ? [{
            ...r.attention,
            key: `decode attention (${r.attention.context} positions)`,
            current: split(r.attention.current),
            best: split(r.attention.best),
          }]
          : []),
        // And the loss heads (GPUs): lanes a row at the model's vocabulary.
        ...(r.loss
          ? [{
            ...r.loss,
            key: `loss heads (${r.loss.vocab} words)`,
            current: `${r.loss.current} lanes a row`,
            best: `${r.loss.best} lanes a row`,
          }]
          : []),
      ];
      const rows = lines.map((b) => {
        const tr = document.createElement("tr");
        for (
          const v of [
            b.key,
            b.current,
            `${b.currentMs.toFixed(2)} ms`,
            b.best,
            `${b.bestMs.toFixed(2)} ms`,
            `${(b.currentMs / b.bestMs).toFixed(2)}×`,
          ]
        ) {
          const td = document.createElement("td");
          td.textContent = v;
          tr.append(td);
        }
        return tr;
      });
      const head = document.createElement("tr");
      for (const h of ["bucket", "built-in", "a step", "tuned", "a step", "speed-up"]) {
        const th = document.createElement("th");
        th.textContent = h;
        head.append(th);
      }
      $("#tune-table").replaceChildren(head, ...rows);
      $<HTMLDetailsElement>("#tune-result").hidden = false;
      $("#tune-note").textContent = `done in ${
        r.seconds.toFixed(0)
      } s: the next start or resume runs the tuned kernels`;
      $("#picks-line").textContent = `matmul picks: tuned on this GPU for ${r.tunedFor}`;
    } catch (e) {
      const err = e as Error;
      $("#tune-note").textContent = "";
      banner("error", errorTitle(err.name), err.message);
    } finally {
      tuning = false;
      await refreshStatus();
    }
  }

  let warmAdapter: Record<string, Uint8Array> | undefined;
  $<HTMLInputElement>("#f-adapter").addEventListener("change", async (ev) => {
    const files = [...((ev.target as HTMLInputElement).files ?? [])];
    warmAdapter = undefined;
    const note = $("#adapter-note");
    try {
      // Files by folder: loose files picked together share one; a ZIP's entries keep theirs.
      const dirs = new Map<string, Record<string, Uint8Array>>();
      const put = (path: string, bytes: Uint8Array) => {
        const i = path.lastIndexOf("/"), dir = path.slice(0, Math.max(0, i));
        if (!dirs.has(dir)) dirs.set(dir, {});
        dirs.get(dir)![path.slice(i + 1)] = bytes;
      };
      for (const f of files) {
        const bytes = new Uint8Array(await f.arrayBuffer());
        // A ZIP by its name or its first bytes (a download saved without the extension).
        const isZip = f.name.toLowerCase().endsWith(".zip") ||
          (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 3 && bytes[3] === 4);
        if (isZip) { for (const [p, b] of await unzipFiles(bytes)) put(`${f.name}/${p}`, b); }
        else put(f.name, bytes);
      }
      if (!files.length) return void (note.textContent = "");
      const found = [...dirs].filter(([, m]) =>
        m["adapter_config.json"] && m["adapter_model.safetensors"]
      );
      if (!found.length) {
        throw new Error(
          "a PEFT adapter is adapter_config.json + adapter_model.safetensors (or a .zip of them)",
        );
      }
      if (found.length > 1) {
        // A whole checkpoint holds one adapter per agent: which one would be a guess.
        throw new Error(
          `these files hold ${found.length} PEFT adapters (${
            found.map(([d]) => d || "(loose files)").join(", ")
          }): ` +
            `upload one of them (a run's "download PEFT adapters" gives one ZIP per agent)`,
        );
      }
      const map = found[0][1];
      warmAdapter = {
        "adapter_config.json": map["adapter_config.json"],
        "adapter_model.safetensors": map["adapter_model.safetensors"],
      };
      note.textContent = "every agent's LoRA adapter starts from this PEFT adapter";
    } catch (e) {
      note.textContent = `${(e as Error).message}`;
    }
  });

  buttons.start.addEventListener("click", async () => {
    const v = form.value;
    $("#banner").hidden = true;
    try {
      const local = v.model.kind === "local"
        ? (form.localHandle ? { handle: form.localHandle } : { files: form.localFiles ?? [] })
        : undefined;
      // The previous run's curves stay in view, dashed, behind the new one.
      if (probe.runId) runs!.compareRun(probe.runId);
      probe.resumedFrom = null;
      probe.rolloutSteps = [];
      probe.phases = [];
      bar.begin();
      dashboard.reset([], v.parsed?.run.steps ?? 0);
      viewer.clear();
      explainer.setTemperature(v.parsed?.rollout.sampling.temperature ?? 1);
      await api.start({ config: v.config, model: v.model, local, warmStartAdapter: warmAdapter });
      void refreshRuns();
    } catch (e) {
      probe.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
      banner("error", errorTitle((e as Error).name), (e as Error).message);
    }
  });
  buttons.pause.addEventListener("click", () => void api.pause());
  buttons.resume.addEventListener("click", () => void api.resume());
  buttons.stop.addEventListener("click", () => void api.stop());

  async function resumeRun(r: RunInfo) {
    $("#banner").hidden = true;
    try {
      let local;
      if (r.model.kind === "local") {
        if (!form.localFiles?.length && !form.localHandle) {
          throw Object.assign(
            new Error(
              `pick the folder of "${r.model.name}" in the form (model: local folder), then resume`,
            ),
            { name: "ModelSourceError" },
          );
        }
        local = form.localHandle ? { handle: form.localHandle } : { files: form.localFiles! };
      }
      probe.rolloutSteps = [];
      probe.phases = [];
      bar.begin();
      const res = await api.resumeRun(r.id, local);
      probe.resumedFrom = res.step;
    } catch (e) {
      probe.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
      banner("error", errorTitle((e as Error).name), (e as Error).message);
    }
  }

  await refreshRuns();
  syncButtons();
  probe.ready = true;
}

/**
 * The first visit opens "What you are watching"; later visits keep it closed. Teaching mode puts
 * the GRPO explainer and the sampling explorer first, open (remembered across visits).
 */
function setUpGuideAndTeaching() {
  const store = globalThis.localStorage;
  const guide = $<HTMLDetailsElement>("#guide");
  if (!store?.getItem("guide-seen")) guide.open = true;
  store?.setItem("guide-seen", "1");
  const btn = $<HTMLButtonElement>("#btn-teach");
  const set = (on: boolean) => {
    document.body.classList.toggle("teaching", on);
    btn.setAttribute("aria-pressed", String(on));
    if (on) {
      document.querySelectorAll<HTMLDetailsElement>(".demos details").forEach((
        d,
        i,
      ) => (d.open = i < 2));
    }
    store?.setItem("teaching", on ? "1" : "");
  };
  set(store?.getItem("teaching") === "1");
  btn.addEventListener("click", () => set(!document.body.classList.contains("teaching")));
}

/** An error's name as a heading: "ConfigError" → "Config error". */
function errorTitle(name: string): string {
  const words = name.replace(/Error$/, "").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
  return words ? `${words[0].toUpperCase()}${words.slice(1)} error` : "Error";
}

main().catch((e) => {
  probe.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
  banner("error", errorTitle((e as Error).name), (e as Error).message);
});
