// The env pool behind comlink: N workers, each running a LocalEnvPool; episodes are spread
// round-robin and every batch call fans out to the workers concurrently. Same interface as
// LocalEnvPool, so a trainer does not care which it has. Errors keep their `name` across comlink.

import * as Comlink from "comlink";
import { UnknownEpisodeError } from "./errors.ts";
import type { BranchRequest, CandidateResult, EnvPool, EpisodeSpec, EpisodeView } from "./pool.ts";
import type { PoolWorkerApi } from "./pool_worker.ts";
import type { AgentId, CodeExecutor, EnvState, Prompt, Rendered } from "./types.ts";

/** Episode ids of worker w start at w·STRIDE, so an id names its worker. */
const STRIDE = 1_000_000_000;

export interface WorkerPoolOptions {
  workers: number;
  /** Runs tool agents' code; exposed to every worker over its own MessageChannel. */
  executor?: CodeExecutor;
}

export class WorkerEnvPool implements EnvPool {
  private rr = 0;

  private constructor(
    private workers: Worker[],
    private remotes: Comlink.Remote<PoolWorkerApi>[],
    private ports: MessagePort[],
  ) {}

  static async start(opts: WorkerPoolOptions): Promise<WorkerEnvPool> {
    const n = Math.max(1, Math.floor(opts.workers));
    const workers: Worker[] = [],
      remotes: Comlink.Remote<PoolWorkerApi>[] = [],
      ports: MessagePort[] = [];
    for (let w = 0; w < n; w++) {
      const worker = new Worker(new URL("./pool_worker.ts", import.meta.url), { type: "module" });
      const remote = Comlink.wrap<PoolWorkerApi>(worker);
      let port: MessagePort | null = null;
      if (opts.executor) {
        const ch = new MessageChannel();
        Comlink.expose(opts.executor, ch.port1);
        ports.push(ch.port1);
        port = ch.port2;
      }
      await remote.init(w * STRIDE, port ? Comlink.transfer(port, [port]) : null);
      workers.push(worker);
      remotes.push(remote);
    }
    return new WorkerEnvPool(workers, remotes, ports);
  }

  get size(): number {
    return this.workers.length;
  }

  async create(specs: EpisodeSpec[]): Promise<EpisodeView[]> {
    const owner = specs.map(() => this.rr++ % this.remotes.length);
    return await this.scatter(specs, owner, (r, part) => r.create(part));
  }

  views(ids: number[]): Promise<EpisodeView[]> {
    return this.scatter(ids, ids.map((id) => this.owner(id)), (r, part) => r.views(part));
  }

  prompts(requests: { id: number; agent: AgentId }[]): Promise<Prompt[]> {
    return this.scatter(
      requests,
      requests.map((q) => this.owner(q.id)),
      (r, part) => r.prompts(part),
    );
  }

  branch(requests: BranchRequest[]): Promise<CandidateResult[][]> {
    return this.scatter(
      requests,
      requests.map((q) => this.owner(q.id)),
      (r, part) => r.branch(part),
    );
  }

  commit(choices: { id: number; index: number }[]): Promise<EpisodeView[]> {
    return this.scatter(choices, choices.map((c) => this.owner(c.id)), (r, part) => r.commit(part));
  }

  states(ids: number[]): Promise<EnvState[]> {
    return this.scatter(ids, ids.map((id) => this.owner(id)), (r, part) => r.states(part));
  }

  renders(ids: number[]): Promise<Rendered[]> {
    return this.scatter(ids, ids.map((id) => this.owner(id)), (r, part) => r.renders(part));
  }

  async close(ids: number[]): Promise<void> {
    await this.scatter(ids, ids.map((id) => this.owner(id)), async (r, part) => {
      await r.close(part);
      return part;
    });
  }

  async dispose(): Promise<void> {
    await Promise.allSettled(this.remotes.map((r) => r.dispose()));
    for (const r of this.remotes) r[Comlink.releaseProxy]();
    for (const w of this.workers) w.terminate();
    for (const p of this.ports) p.close();
    this.workers = [];
    this.remotes = [];
    this.ports = [];
  }

  /** The worker holding episode `id`. */
  private owner(id: number): number {
    const w = Math.floor(id / STRIDE);
    if (!(w >= 0 && w < this.remotes.length)) throw new UnknownEpisodeError(id);
    return w;
  }

  /** Sends each item to its worker in one call per worker; answers come back in input order. */
  private async scatter<I, O>(
    items: I[],
    owner: number[],
    call: (remote: Comlink.Remote<PoolWorkerApi>, part: I[]) => Promise<O[]>,
  ): Promise<O[]> {
    const groups = new Map<number, number[]>();
    owner.forEach((w, i) => groups.set(w, [...(groups.get(w) ?? []), i]));
    const out: O[] = new Array(items.length);
    await Promise.all([...groups].map(async ([w, idx]) => {
      const res = await call(this.remotes[w], idx.map((i) => items[i]));
      idx.forEach((i, k) => (out[i] = res[k]));
    }));
    return out;
  }
}
