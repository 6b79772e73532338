// The page: the run form, controls, live charts, rollout viewer, teaching demos and the runs
// stored in this browser. Everything heavy happens in the trainer worker (trainer_worker.ts),
// reached through comlink; this module only draws and forwards clicks.

import * as Comlink from "comlink";
import { metricsToCsv, metricsToJsonl } from "../../src/browser/metrics_export.ts";
import { unzipFiles } from "../../src/browser/zip.ts";
import type { RunInfo } from "../../src/browser/run_store.ts";
import type { StepMetrics } from "../../src/rl/session.ts";
import { Dashboard } from "./charts.ts";
import { ConfigForm } from "./config_form.ts";
import { GrpoExplainer } from "./grpo_explainer.ts";
import type { InitInfo, LogitsRequest, RunState, Status, TrainerEvent, TrainerService } from "./protocol.ts";
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
}
const probe: AppProbe = {
  ready: false, init: null, state: "idle", runId: null, step: 0, total: 0, resumedFrom: null, charts: {}, rolloutSteps: [], evals: [], errors: [], deviceLost: 0, log: [], status: null,
};
(globalThis as unknown as { __app: AppProbe }).__app = probe;

function banner(kind: "error" | "warn" | "info", title: string, body: string) {
  const b = $("#banner");
  b.className = `banner ${kind}`;
  b.hidden = false;
  b.replaceChildren();
  const h = document.createElement("b");
  h.textContent = title;
  const p = document.createElement("div");
  p.textContent = body;
  b.append(h, p);
}

function log(line: string) {
  probe.log.push(line);
  const box = $("#log");
  const d = document.createElement("div");
  d.textContent = `${new Date().toLocaleTimeString()} ${line}`;
  box.prepend(d);
}

function download(name: string, data: BlobPart, type = "application/octet-stream") {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const NO_WEBGPU_HELP = "Training runs on WebGPU, which this browser does not offer here. Use a recent Chrome, Edge or " +
  "Chromium (113+), or Firefox 141+ / Safari 26+; on Linux start Chromium with --enable-unsafe-webgpu " +
  "(and --enable-features=Vulkan); open the page from https:// or http://127.0.0.1 (WebGPU needs a secure context). " +
  "chrome://gpu shows whether WebGPU is blocked. The runs stored in this browser can still be downloaded below.";

async function main() {
  const dashboard = new Dashboard($("#charts"));
  const viewer = new RolloutViewer($("#viewer"));
  let form: ConfigForm;
  const stateEl = $("#state");
  const buttons = {
    start: $<HTMLButtonElement>("#btn-start"), pause: $<HTMLButtonElement>("#btn-pause"),
    resume: $<HTMLButtonElement>("#btn-resume"), stop: $<HTMLButtonElement>("#btn-stop"),
  };
  let state: RunState = "idle";
  let recovering = false;
  let formOk = false;
  let gpuOk = false;
  const syncButtons = () => {
    const live = ["loading", "running", "pausing", "paused", "stopping", "recovering"].includes(state);
    buttons.start.disabled = live || !formOk || !gpuOk;
    buttons.pause.disabled = state !== "running";
    buttons.resume.disabled = state !== "paused" && state !== "pausing";
    buttons.stop.disabled = !["running", "paused", "pausing"].includes(state);
    document.querySelectorAll<HTMLButtonElement>(".run-resume").forEach((b) => (b.disabled = live || !gpuOk));
  };
  form = new ConfigForm($("#form"), (v) => {
    formOk = v.errors.length === 0;
    syncButtons();
  });

  // No WebGPU on the page: say so before starting anything.
  const hasGpu = typeof (navigator as { gpu?: unknown }).gpu === "object" && (navigator as { gpu?: unknown }).gpu !== null;
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
        stateEl.textContent = `${e.state}${e.runId ? ` · ${e.runId}` : ""} · step ${e.step}/${e.total}${e.detail ? ` · ${e.detail}` : ""}`;
        $("#progress").style.width = e.total ? `${(100 * e.step) / e.total}%` : "0";
        syncButtons();
        if (recovering && e.state === "running") {
          recovering = false;
          banner("info", "Recovered from the lost GPU device", "A new device was created and training continues from the last checkpoint (see the log).");
        }
        if (["stopped", "finished", "failed", "paused"].includes(e.state)) void refreshRuns();
        void refreshStatus();
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
          if (e.m.step > 0) log(`step ${e.m.step}: held-out success ${(ev.successRate * 100).toFixed(1)}%`);
        }
        break;
      }
      case "history":
        dashboard.reset(e.lines);
        probe.charts = dashboard.counts();
        probe.evals = e.lines.filter((l) => l.eval).map((l) => ({ step: l.step, successRate: (l.eval as { successRate: number }).successRate }));
        viewer.clear();
        break;
      case "rollouts":
        viewer.add(e.step, e.episodes);
        probe.rolloutSteps.push(e.step);
        break;
      case "checkpoint":
        log(`checkpoint ${e.info.name} (step ${e.info.step}) saved to ${probe.init?.opfs ? "OPFS" : "memory"}`);
        break;
      case "device-lost":
        probe.deviceLost++;
        recovering = true;
        banner("warn", "The GPU device was lost", `${e.message} Rebuilding it and resuming from the last checkpoint…`);
        break;
      case "error":
        probe.errors.push(`${e.error.name}: ${e.error.message}`);
        banner("error", e.error.name, e.error.message);
        break;
    }
  };
  const init = await api.init(Comlink.proxy(onEvent));
  probe.init = init;
  gpuOk = hasGpu && init.adapter !== null;
  if (!hasGpu || init.error?.name === "NoWebGPUError" || !init.adapter) {
    banner("error", "No WebGPU here", `${init.error ? `${init.error.message}\n` : ""}${NO_WEBGPU_HELP}`);
    $("#adapter").textContent = "no WebGPU adapter";
  } else {
    $("#adapter").textContent = `WebGPU adapter: ${init.adapter} — in a Web Worker${init.adapterClass === "cpu" ? " (a software adapter: correct but slow)" : ""}`;
  }
  $("#storage").textContent = init.opfs ? "checkpoints: this browser's origin-private file system (OPFS), kept across reloads"
    : "checkpoints: memory only (this browser offers no OPFS here): lost on reload; download them";

  const explainer = new GrpoExplainer($("#grpo"), (agent, seqs) => api.currentLogprobs(agent, seqs));
  viewer.onGroups = (eps) => explainer.update(eps);
  const sampling = new SamplingExplorer($("#sampling"), (r) => api.logits(r));
  new TicTacToePlay($("#ttt"), { tttNew: (h) => api.tttNew(h), tttMove: (c) => api.tttMove(c) });

  async function refreshStatus() {
    const s = await api.status();
    sampling.setAgents(s.agents);
    probe.status = s;
    const mi = s.modelInfo;
    const size = mi ? ` · ${mi.params.toLocaleString("en-US")} parameters (${mi.layers} layers × ${mi.hidden}, vocabulary ${mi.vocab}) · ${mi.tokenizer === "hf" ? "HF tokenizer (transformers.js)" : "byte tokenizer"}` : "";
    $("#model-line").textContent = s.model ? `model: ${s.model}${size}${s.level ? ` · level ${s.level}` : ""}${s.envId ? ` · env ${s.envId}` : ""}` : "";
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
        const isZip = f.name.toLowerCase().endsWith(".zip") || (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 3 && bytes[3] === 4);
        if (isZip) for (const [p, b] of await unzipFiles(bytes)) put(`${f.name}/${p}`, b);
        else put(f.name, bytes);
      }
      if (!files.length) return void (note.textContent = "");
      const found = [...dirs].filter(([, m]) => m["adapter_config.json"] && m["adapter_model.safetensors"]);
      if (!found.length) throw new Error("a PEFT adapter is adapter_config.json + adapter_model.safetensors (or a .zip of them)");
      if (found.length > 1) {
        // A whole checkpoint holds one adapter per agent: which one would be a guess.
        throw new Error(`these files hold ${found.length} PEFT adapters (${found.map(([d]) => d || "(loose files)").join(", ")}): ` +
          `upload one of them (a run's "download PEFT adapters" gives one ZIP per agent)`);
      }
      const map = found[0][1];
      warmAdapter = { "adapter_config.json": map["adapter_config.json"], "adapter_model.safetensors": map["adapter_model.safetensors"] };
      note.textContent = "every agent's LoRA adapter starts from this PEFT adapter";
    } catch (e) {
      note.textContent = `${(e as Error).message}`;
    }
  });

  buttons.start.addEventListener("click", async () => {
    const v = form.value;
    $("#banner").hidden = true;
    try {
      const local = v.model.kind === "local" ? (form.localHandle ? { handle: form.localHandle } : { files: form.localFiles ?? [] }) : undefined;
      probe.resumedFrom = null;
      probe.rolloutSteps = [];
      dashboard.reset([]);
      viewer.clear();
      explainer.setTemperature(v.parsed?.rollout.sampling.temperature ?? 1);
      await api.start({ config: v.config, model: v.model, local, warmStartAdapter: warmAdapter });
      void refreshRuns();
    } catch (e) {
      probe.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
      banner("error", (e as Error).name, (e as Error).message);
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
        if (!form.localFiles?.length && !form.localHandle) throw Object.assign(new Error(`pick the folder of "${r.model.name}" in the form (model: local folder), then resume`), { name: "ModelSourceError" });
        local = form.localHandle ? { handle: form.localHandle } : { files: form.localFiles! };
      }
      probe.rolloutSteps = [];
      const res = await api.resumeRun(r.id, local);
      probe.resumedFrom = res.step;
    } catch (e) {
      probe.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
      banner("error", (e as Error).name, (e as Error).message);
    }
  }

  async function exportMetrics(r: RunInfo, kind: "jsonl" | "csv") {
    const lines: StepMetrics[] = await api.readMetrics(r.id);
    if (kind === "jsonl") download(`${r.id}-metrics.jsonl`, metricsToJsonl(lines), "application/x-ndjson");
    else download(`${r.id}-metrics.csv`, metricsToCsv(lines), "text/csv");
  }

  // Calls overlap (run start, pause, delete...) and the worker may answer an older listing last:
  // only the newest call draws, so a stale listing never replaces a fresher one.
  let runsListing = 0;
  async function refreshRuns() {
    const call = ++runsListing;
    const runs = await api.listRuns();
    if (call !== runsListing) return;
    const box = $("#runs");
    box.replaceChildren();
    if (!runs.length) {
      box.textContent = "No runs stored in this browser yet.";
      return;
    }
    for (const r of runs) {
      const row = document.createElement("div");
      row.className = "run";
      row.dataset.run = r.id;
      const cfg = r.config as { env?: { id?: string }; level?: string };
      const title = document.createElement("div");
      title.innerHTML = `<b></b> <span class="muted"></span>`;
      title.querySelector("b")!.textContent = r.id;
      title.querySelector("span")!.textContent = ` ${cfg.env?.id ?? "?"} ${cfg.level ?? ""} · ${r.status} · checkpoint step ${r.latest?.step ?? "none"} of ${r.steps}`;
      const actions = document.createElement("div");
      actions.className = "row";
      const btn = (label: string, cls: string, fn: () => unknown) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = `small ${cls}`;
        b.textContent = label;
        b.addEventListener("click", () => void fn());
        actions.append(b);
        return b;
      };
      if (r.latest && r.latest.step < r.steps) btn(`resume from step ${r.latest.step}`, "run-resume", () => resumeRun(r));
      const ckSel = document.createElement("select");
      for (const c of r.checkpoints) ckSel.add(new Option(`${c.name} (step ${c.step})`, c.name));
      if (r.checkpoints.length) {
        actions.append(ckSel);
        btn("download checkpoint (.zip)", "", async () => {
          const { fileName, bytes } = await api.exportCheckpoint(r.id, ckSel.value, "checkpoint");
          download(fileName, bytes as Uint8Array<ArrayBuffer>, "application/zip");
        });
        btn("download PEFT adapters", "", async () => {
          for (const a of await api.checkpointAdapters(r.id, ckSel.value)) {
            const { fileName, bytes } = await api.exportCheckpoint(r.id, ckSel.value, `adapter:${a}`);
            download(fileName, bytes as Uint8Array<ArrayBuffer>, "application/zip");
          }
        });
      }
      btn("metrics .jsonl", "", () => exportMetrics(r, "jsonl"));
      btn("metrics .csv", "", () => exportMetrics(r, "csv"));
      btn("delete", "danger", async () => {
        if (!confirm(`Delete run ${r.id} and its checkpoints from this browser?`)) return;
        await api.deleteRun(r.id);
        await refreshRuns();
      });
      row.append(title, actions);
      box.append(row);
    }
    syncButtons();
    const interrupted = runs.find((r) => (r.status === "running" || r.status === "paused") && r.latest && r.latest.step < r.steps && r.id !== probe.runId);
    if (interrupted && state === "idle" && gpuOk) {
      banner("info", "A run was interrupted", `${interrupted.id} stopped at its step-${interrupted.latest!.step} checkpoint when the page closed. Resume it from "Runs in this browser" below.`);
    }
  }

  await refreshRuns();
  syncButtons();
  probe.ready = true;
}

main().catch((e) => {
  probe.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
  banner("error", (e as Error).name, (e as Error).message);
});
