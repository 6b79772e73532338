// Runs kept in a browser's origin-private file system (OPFS), host-neutral over a small
// directory-store interface so the same code is tested in Deno against memory. One run:
//
//   runs/<id>/run.json            what started it: raw config, model source, created, status
//             metrics.jsonl       one JSON object per step (step 0: validation before training)
//             checkpoints/step-N/ checkpoint.ts's folder layout (keep-last-N)
//             best/               best held-out success so far
//
// OPFS has no atomic directory rename, so a checkpoint is complete when its manifest
// (checkpoint.json, written last by checkpointFiles' order) is present and every listed file has
// its recorded size; readCheckpoint checks exactly that, and `latestCheckpoint` skips folders
// that fail it. `StoreRunSink` is the RunSink a browser RlSession writes to.

import type { ByteSource, Folder } from "../io/bytesource.ts";
import { bytesSource } from "../io/bytesource.ts";
import type { Group } from "../rl/rollout.ts";
import type { RunSink, StepMetrics } from "../rl/session.ts";
import { type CheckpointContents, checkpointFiles, checkpointStep } from "../train/checkpoint.ts";

/** A directory tree of files addressed by "/"-separated relative paths. */
export interface DirStore {
  readonly name: string;
  /** Writes (replaces) a file, creating parent directories; a reader sees all of it or none. */
  write(path: string, bytes: Uint8Array): Promise<void>;
  /** The file's bytes, or null when it does not exist. */
  read(path: string): Promise<Uint8Array | null>;
  /** Random access to a file, or null when it does not exist. */
  source(path: string): Promise<ByteSource | null>;
  /** Entries of a directory (empty when it does not exist). */
  list(dir: string): Promise<{ name: string; kind: "file" | "dir" }[]>;
  /** Removes a file or a directory with everything in it; no error when absent. */
  remove(path: string): Promise<void>;
}

/** A DirStore in memory (tests; a fallback where OPFS is unavailable, e.g. private windows). */
export function memoryStore(name = "<memory>"): DirStore & { files: Map<string, Uint8Array> } {
  const files = new Map<string, Uint8Array>();
  const norm = (p: string) => p.split("/").filter(Boolean).join("/");
  return {
    name,
    files,
    write(path, bytes) {
      files.set(norm(path), bytes.slice());
      return Promise.resolve();
    },
    read(path) {
      return Promise.resolve(files.get(norm(path))?.slice() ?? null);
    },
    source(path) {
      const b = files.get(norm(path));
      return Promise.resolve(b ? bytesSource(b, `${name}/${norm(path)}`) : null);
    },
    list(dir) {
      const prefix = norm(dir) ? `${norm(dir)}/` : "";
      const out = new Map<string, "file" | "dir">();
      for (const k of files.keys()) {
        if (!k.startsWith(prefix)) continue;
        const rest = k.slice(prefix.length).split("/");
        out.set(rest[0], rest.length > 1 ? "dir" : "file");
      }
      return Promise.resolve([...out].map(([n, kind]) => ({ name: n, kind })));
    },
    remove(path) {
      const p = norm(path);
      for (const k of [...files.keys()]) if (k === p || k.startsWith(`${p}/`)) files.delete(k);
      return Promise.resolve();
    },
  };
}

/** The files under `dir` of a store as a Folder (what readCheckpoint and loadModel read). */
export function storeFolder(store: DirStore, dir: string): Folder {
  return { name: `${store.name}/${dir}`, open: (file) => store.source(`${dir}/${file}`) };
}

/** Where a run's model came from, enough to load it again after a reload. */
export type ModelSourceSpec =
  | { kind: "preset"; preset: string }
  | { kind: "builtin"; id: string }
  /** `endpoint`: the Hub's base URL (a mirror or a local server), absent for https://huggingface.co. */
  | { kind: "hub"; id: string; revision?: string; endpoint?: string }
  | { kind: "local"; name: string };

export interface RunMeta {
  id: string;
  /** The config as the form produced it (parseConfig input), resolved again on resume. */
  config: Record<string, unknown>;
  model: ModelSourceSpec;
  /** PEFT adapter uploaded as the warm start, stored under the run as warm_start/. */
  warmStartUpload?: boolean;
  created: string;
  status: "running" | "paused" | "stopped" | "finished" | "failed";
  /** Steps the run is set to make (config run.steps). */
  steps: number;
  adapter?: string;
}

export interface CheckpointInfo {
  name: string;
  step: number;
}

export interface RunInfo extends RunMeta {
  checkpoints: CheckpointInfo[];
  /** The latest complete step checkpoint: where a resume starts. */
  latest: CheckpointInfo | null;
}

const enc = new TextEncoder(), dec = new TextDecoder();
const RUNS = "runs";

/** A run id that sorts by time and is a valid folder name. */
export function newRunId(name: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[:.]/g, "-").replace(/Z$/, "");
  return `${(name || "run").replace(/[^A-Za-z0-9._-]/g, "_")}-${stamp}`;
}

export class RunStore {
  constructor(readonly store: DirStore) {}

  private dir(id: string) {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(id)) throw new TypeError(`"${id}" is not a run id`);
    return `${RUNS}/${id}`;
  }

  async writeMeta(meta: RunMeta): Promise<void> {
    await this.store.write(
      `${this.dir(meta.id)}/run.json`,
      enc.encode(JSON.stringify(meta, null, 2) + "\n"),
    );
  }

  async readMeta(id: string): Promise<RunMeta | null> {
    const b = await this.store.read(`${this.dir(id)}/run.json`);
    return b ? JSON.parse(dec.decode(b)) as RunMeta : null;
  }

  async updateMeta(id: string, patch: Partial<RunMeta>): Promise<void> {
    const m = await this.readMeta(id);
    if (m) await this.writeMeta({ ...m, ...patch });
  }

  /** Every run with its complete checkpoints, newest first. */
  async listRuns(): Promise<RunInfo[]> {
    const out: RunInfo[] = [];
    for (const e of await this.store.list(RUNS)) {
      if (e.kind !== "dir") continue;
      // A read can fail while the file is being replaced (Chromium: NotReadableError once the
      // snapshot is stale), so one failure is retried before the run is taken as unreadable.
      const meta = await this.readMeta(e.name).catch(() => this.readMeta(e.name)).catch(() => null);
      if (!meta) continue;
      const checkpoints = await this.checkpoints(e.name);
      const steps = checkpoints.filter((c) => c.name !== "best");
      out.push({ ...meta, checkpoints, latest: steps.length ? steps[steps.length - 1] : null });
    }
    return out.sort((a, b) => b.created.localeCompare(a.created));
  }

  /** Complete checkpoints of a run (step-N by step, then best), each validated by its manifest. */
  async checkpoints(id: string): Promise<CheckpointInfo[]> {
    const found: CheckpointInfo[] = [];
    for (const e of await this.store.list(`${this.dir(id)}/checkpoints`)) {
      if (e.kind !== "dir" || !/^step-\d+$/.test(e.name)) continue;
      const step = await this.validStep(`${this.dir(id)}/checkpoints/${e.name}`);
      if (step !== null) found.push({ name: e.name, step });
    }
    found.sort((a, b) => a.step - b.step);
    const best = await this.validStep(`${this.dir(id)}/best`);
    if (best !== null) found.push({ name: "best", step: best });
    return found;
  }

  private async validStep(dir: string): Promise<number | null> {
    try {
      return await checkpointStep(storeFolder(this.store, dir));
    } catch {
      return null; // missing or half-written: not a checkpoint
    }
  }

  /** The folder of a checkpoint ("best" or "step-N"). */
  checkpointFolder(id: string, name: string): Folder {
    return storeFolder(this.store, this.checkpointPath(id, name));
  }

  checkpointPath(id: string, name: string): string {
    if (name === "best") return `${this.dir(id)}/best`;
    if (!/^step-\d+$/.test(name)) {
      throw new TypeError(`"${name}" is not a checkpoint name (best or step-N)`);
    }
    return `${this.dir(id)}/checkpoints/${name}`;
  }

  /** Every file of a checkpoint, by path inside it (for downloads). */
  async checkpointFileMap(id: string, name: string): Promise<Map<string, Uint8Array>> {
    const root = this.checkpointPath(id, name), out = new Map<string, Uint8Array>();
    const walk = async (rel: string) => {
      for (const e of await this.store.list(rel ? `${root}/${rel}` : root)) {
        const p = rel ? `${rel}/${e.name}` : e.name;
        if (e.kind === "dir") await walk(p);
        else out.set(p, (await this.store.read(`${root}/${p}`))!);
      }
    };
    await walk("");
    return out;
  }

  /**
   * Writes a checkpoint: the old folder of that name goes first, the manifest last. Step
   * checkpoints beyond `keepLast` (oldest first) are removed afterwards.
   */
  async saveCheckpoint(
    id: string,
    name: string,
    files: ReadonlyMap<string, Uint8Array>,
    keepLast: number,
  ): Promise<void> {
    const root = this.checkpointPath(id, name);
    await this.store.remove(root);
    const manifest = [...files].filter(([p]) => p === "checkpoint.json");
    for (const [p, b] of files) {
      if (p !== "checkpoint.json") await this.store.write(`${root}/${p}`, b);
    }
    for (const [p, b] of manifest) await this.store.write(`${root}/${p}`, b);
    if (name === "best") return;
    const steps = (await this.store.list(`${this.dir(id)}/checkpoints`))
      .filter((e) => e.kind === "dir" && /^step-\d+$/.test(e.name))
      .map((e) => ({ name: e.name, step: Number(e.name.slice(5)) }))
      .sort((a, b) => a.step - b.step);
    for (const old of steps.slice(0, Math.max(0, steps.length - keepLast))) {
      await this.store.remove(`${this.dir(id)}/checkpoints/${old.name}`);
    }
  }

  async writeMetrics(id: string, lines: readonly StepMetrics[]): Promise<void> {
    await this.store.write(
      `${this.dir(id)}/metrics.jsonl`,
      enc.encode(lines.map((l) => JSON.stringify(l) + "\n").join("")),
    );
  }

  async readMetrics(id: string): Promise<StepMetrics[]> {
    const b = await this.store.read(`${this.dir(id)}/metrics.jsonl`);
    if (!b) return [];
    return dec.decode(b).split("\n").filter((l) => l.trim()).map((l) =>
      JSON.parse(l) as StepMetrics
    );
  }

  /** Files stored with a run outside checkpoints (e.g. warm_start/ for an uploaded adapter). */
  async writeRunFile(id: string, path: string, bytes: Uint8Array): Promise<void> {
    await this.store.write(`${this.dir(id)}/${path}`, bytes);
  }

  runFolder(id: string, sub: string): Folder {
    return storeFolder(this.store, `${this.dir(id)}/${sub}`);
  }

  async deleteRun(id: string): Promise<void> {
    await this.store.remove(this.dir(id));
  }
}

/** What the sink tells its host besides writing files. */
export interface SinkEvents {
  log?(line: string): void;
  metric?(m: StepMetrics): void;
  progress?(step: number, total: number, m: StepMetrics): void;
  checkpoint?(info: CheckpointInfo): void;
}

/**
 * The browser RunSink: metrics.jsonl and checkpoints in a RunStore (OPFS), everything also
 * reported to the page. Metrics are rewritten whole each step (a few KB): OPFS has no append
 * that survives a crash mid-write, and a resume drops lines past its checkpoint anyway.
 */
export class StoreRunSink implements RunSink {
  readonly metrics: StepMetrics[];

  constructor(
    readonly runs: RunStore,
    readonly id: string,
    previous: readonly StepMetrics[] = [],
    private events: SinkEvents = {},
  ) {
    this.metrics = [...previous];
  }

  log(line: string) {
    this.events.log?.(line);
  }

  async metric(m: StepMetrics) {
    // A resumed run redoes steps after its checkpoint: their old lines are replaced.
    const keep = this.metrics.filter((x) => x.step < m.step);
    this.metrics.length = 0;
    this.metrics.push(...keep, m);
    await this.runs.writeMetrics(this.id, this.metrics);
    this.events.metric?.(m);
  }

  progress(step: number, total: number, m: StepMetrics) {
    this.events.progress?.(step, total, m);
  }

  async writeRollouts(_step: number, _groups: readonly Group[]) {
    // Rollouts go to the page's viewer (onStep); OPFS keeps checkpoints and metrics only.
  }

  async saveCheckpoint(name: string, contents: CheckpointContents, keepLast: number) {
    await this.runs.saveCheckpoint(this.id, name, await checkpointFiles(contents), keepLast);
    this.events.checkpoint?.({ name, step: contents.state.step });
  }
}

/** Metric lines to keep when resuming from a checkpoint at `step`: those up to it. */
export function metricsUpTo(lines: readonly StepMetrics[], step: number): StepMetrics[] {
  return lines.filter((l) => l.step <= step);
}
