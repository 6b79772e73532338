// "Runs in this browser": every run stored in OPFS with its status, resume, downloads, delete,
// and "Compare" (its curves drawn behind the current run's). A run still marked running or
// paused that no worker is training was interrupted (a reload, a closed tab): the panel says so,
// and offers to resume it from its latest checkpoint in the banner.

import type { RunInfo } from "../../src/browser/run_store.ts";
import type { StepMetrics } from "../../src/rl/session.ts";
import { metricsToCsv, metricsToJsonl } from "../../src/browser/metrics_export.ts";
import type { TrainerService } from "./protocol.ts";

type Api = Pick<
  TrainerService,
  "listRuns" | "readMetrics" | "exportCheckpoint" | "checkpointAdapters" | "deleteRun"
>;

export interface RunsPanelHost {
  /** The run the worker is training (or has loaded) now. */
  liveRunId(): string | null;
  /** Buttons that start work are enabled. */
  canStart(): boolean;
  /** Nothing is running in the worker (an interrupted run may be offered). */
  idle(): boolean;
  resume(r: RunInfo): Promise<void>;
  banner(
    kind: "info",
    title: string,
    body: string,
    action?: { label: string; className: string; run: string; onClick: () => void },
  ): void;
  /** The runs whose curves are overlaid changed. */
  compare(runs: { id: string; label: string; lines: StepMetrics[] }[]): void;
}

export function download(name: string, data: BlobPart, type = "application/octet-stream") {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A run's short name: task, level and when it started. */
export function runLabel(r: RunInfo): string {
  const cfg = r.config as { env?: { id?: string }; level?: string };
  const task = (cfg.env?.id ?? "?").replace(/_v\d+$/, "").replaceAll("_", " ");
  const when = new Date(r.created);
  return `${task} ${cfg.level ?? ""} · ${
    isNaN(when.getTime())
      ? r.created
      : when.toLocaleString([], { dateStyle: "short", timeStyle: "short" })
  }`;
}

/** Stored as running or paused, but no worker has it: the page was closed or reloaded. */
const interrupted = (r: RunInfo, live: string | null) =>
  (r.status === "running" || r.status === "paused") && r.id !== live;

export class RunsPanel {
  private listing = 0;
  private first = true;
  private readonly compared = new Set<string>();
  runs: RunInfo[] = [];

  constructor(
    private readonly box: HTMLElement,
    private readonly api: Api,
    private readonly host: RunsPanelHost,
  ) {}

  /** Calls overlap (start, pause, delete...): only the newest listing draws. */
  async refresh() {
    const call = ++this.listing;
    const runs = await this.api.listRuns();
    if (call !== this.listing) return;
    this.runs = runs;
    this.box.replaceChildren();
    if (!runs.length) {
      this.first = false;
      this.box.textContent = "No runs stored in this browser yet.";
      return;
    }
    // On opening the page, the newest stored run's curves are shown (dashed) until a run starts.
    if (this.first && !this.host.liveRunId()) this.compared.add(runs[0].id);
    this.first = false;
    for (const r of runs) this.box.append(this.row(r));
    this.offer();
    void this.pushCompare();
  }

  syncButtons() {
    this.box.querySelectorAll<HTMLButtonElement>(".run-resume").forEach((
      b,
    ) => (b.disabled = !this.host.canStart()));
    document.querySelectorAll<HTMLButtonElement>(".banner .run-resume").forEach((
      b,
    ) => (b.disabled = !this.host.canStart()));
  }

  private row(r: RunInfo): HTMLElement {
    const live = this.host.liveRunId();
    const row = document.createElement("div");
    row.className = "run";
    row.dataset.run = r.id;
    const title = document.createElement("div");
    const b = document.createElement("b");
    b.textContent = runLabel(r);
    const status = document.createElement("span");
    status.className = "muted";
    // A paused run keeps "paused" (its checkpoint is where it stopped); a running one lost its step.
    const lost = interrupted(r, live) && r.status === "running";
    status.textContent =
      ` · ${r.id === live ? "this run, " : ""}${lost ? "interrupted" : r.status} · ` +
      (r.latest
        ? `checkpoint at step ${r.latest.step} of ${r.steps}`
        : lost
        ? `no checkpoint yet (stopped before step 1 finished)`
        : `no checkpoint`);
    const id = document.createElement("div");
    id.className = "muted run-id";
    id.textContent = r.id;
    title.append(b, status, id);
    const actions = document.createElement("div");
    actions.className = "row";
    const btn = (label: string, cls: string, fn: () => unknown) => {
      const x = document.createElement("button");
      x.type = "button";
      x.className = `small ${cls}`;
      x.textContent = label;
      x.addEventListener("click", () => void fn());
      actions.append(x);
      return x;
    };
    if (r.latest && r.latest.step < r.steps && r.id !== live) {
      btn(`Resume from step ${r.latest.step}`, "run-resume", () => this.resume(r));
    }
    if (r.id !== live) {
      const cmp = document.createElement("label");
      cmp.className = "check";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.className = "run-compare";
      box.checked = this.compared.has(r.id);
      box.addEventListener("change", () => {
        if (box.checked) this.compared.add(r.id);
        else this.compared.delete(r.id);
        void this.pushCompare();
      });
      cmp.append(box, " Compare curves");
      actions.append(cmp);
    }
    if (r.checkpoints.length) {
      const ckSel = document.createElement("select");
      ckSel.setAttribute("aria-label", "Checkpoint");
      for (const c of r.checkpoints) ckSel.add(new Option(`${c.name} (step ${c.step})`, c.name));
      actions.append(ckSel);
      btn("Download checkpoint (.zip)", "", async () => {
        const { fileName, bytes } = await this.api.exportCheckpoint(
          r.id,
          ckSel.value,
          "checkpoint",
        );
        download(fileName, bytes as Uint8Array<ArrayBuffer>, "application/zip");
      });
      btn("Download PEFT adapters", "", async () => {
        for (const a of await this.api.checkpointAdapters(r.id, ckSel.value)) {
          const { fileName, bytes } = await this.api.exportCheckpoint(
            r.id,
            ckSel.value,
            `adapter:${a}`,
          );
          download(fileName, bytes as Uint8Array<ArrayBuffer>, "application/zip");
        }
      });
    }
    btn(
      "Metrics .jsonl",
      "",
      async () =>
        download(
          `${r.id}-metrics.jsonl`,
          metricsToJsonl(await this.api.readMetrics(r.id)),
          "application/x-ndjson",
        ),
    );
    btn(
      "Metrics .csv",
      "",
      async () =>
        download(`${r.id}-metrics.csv`, metricsToCsv(await this.api.readMetrics(r.id)), "text/csv"),
    );
    btn("Delete", "danger", async () => {
      if (!confirm(`Delete the run "${runLabel(r)}" and its checkpoints from this browser?`)) {
        return;
      }
      await this.api.deleteRun(r.id);
      this.compared.delete(r.id);
      await this.refresh();
    });
    row.append(title, actions);
    return row;
  }

  /** A resumed run is the live one again: no longer drawn dashed behind itself. */
  private async resume(r: RunInfo) {
    this.compared.delete(r.id);
    await this.pushCompare();
    await this.host.resume(r);
  }

  /** Adds a run to the comparison (the previous run, when a new one starts: its curves stay in view). */
  compareRun(id: string) {
    this.compared.add(id);
  }

  /** The newest interrupted run, offered in the banner. */
  private offer() {
    if (!this.host.idle()) return;
    const r = this.runs.find((x) => interrupted(x, this.host.liveRunId()));
    if (!r) return;
    if (r.latest && r.latest.step < r.steps) {
      this.host.banner(
        "info",
        "A run was interrupted",
        `"${
          runLabel(r)
        }" (${r.id}) stopped when the page closed. Its last checkpoint, ${r.latest.name}, is at step ${r.latest.step} of ${r.steps}.`,
        {
          label: `Resume the interrupted run from step ${r.latest.step}`,
          className: "run-resume offer-resume",
          run: r.id,
          onClick: () => void this.resume(r),
        },
      );
    } else if (!r.latest) {
      this.host.banner(
        "info",
        "A run was interrupted before its first checkpoint",
        `"${
          runLabel(r)
        }" (${r.id}) stopped before its first step finished, so there is nothing to resume: start it again.`,
      );
    }
    this.syncButtons();
  }

  private async pushCompare() {
    const out = [];
    for (const id of this.compared) {
      const r = this.runs.find((x) => x.id === id);
      if (r && id !== this.host.liveRunId()) {
        out.push({ id, label: runLabel(r), lines: await this.api.readMetrics(id) });
      }
    }
    this.host.compare(out);
  }
}
