// Weights & Biases over its HTTP API, host-neutral (fetch; Deno or a browser tab): the GraphQL
// `UpsertBucket` mutation creates (or, with the same id, resumes) the run, then
// /files/<entity>/<project>/<run id>/file_stream takes wandb-history.jsonl lines ({...scalars,
// _step, _runtime, _timestamp}) and wandb-summary.json, and a last {complete, exitcode} post ends
// it. These are the requests W&B's own JavaScript SDK (@wandb/sdk 0.5) sends, in the same shape
// (test/fixtures/wandb_js_sdk_requests.json is a recording of them). The SDK itself is not used:
// it needs Node's Buffer and process (no browser tab), installs its own SIGINT handler that
// calls process.exit (which would cut train's checkpoint-on-Ctrl-C), retries a dead server for
// minutes, and cannot resume a run's history offset.
//
// Failures never stop training: the first warns (the API key never appears in a message), the
// lines stay queued and go with the next post; what is still unsent at the end is counted.

/** Where history goes: posted to a server, or lines handed to `writeOffline` (the run directory's wandb/). */
export type WandbMode = "online" | "offline";

export interface WandbOptions {
  project: string;
  /** null: the API key's default entity (online), "offline" (offline). */
  entity: string | null;
  /** Display name. */
  name: string;
  /** The W&B run id (8 characters of [a-z0-9]); the same id resumes the run. */
  runId: string;
  mode: WandbMode;
  /** e.g. https://api.wandb.ai (no trailing slash needed). */
  baseUrl: string;
  /** WANDB_API_KEY; online without one W&B is off (warned). */
  apiKey?: string;
  /** The run's config, shown in the W&B run's Config tab. */
  config?: Record<string, unknown>;
  /** Warnings (train: the run's log). */
  warn: (line: string) => void;
  /** offline: append `text` to `file` (wandb-history.jsonl) or replace it (wandb-summary.json, config.json). */
  writeOffline?: (file: string, text: string, append: boolean) => Promise<void>;
  /** Per-request limit (default 15 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const USER_AGENT = "pettingllms-webgpu W&B client (W&B Internal JS Client protocol)";

const UPSERT_BUCKET =
  `mutation UpsertBucket($id: String, $name: String, $project: String, $entity: String, $displayName: String, $config: JSONString) {
  upsertBucket(input: {id: $id, name: $name, modelName: $project, entityName: $entity, displayName: $displayName, config: $config}) {
    bucket { id name displayName historyLineCount project { id name entity { id name } } }
    inserted
  }
}`;

/** A new W&B run id: 8 characters of [a-z0-9], as the SDKs make them. */
export function newWandbRunId(random: () => number = Math.random): string {
  const abc = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: 8 }, () => abc[Math.floor(random() * abc.length)]).join("");
}

/** Python's wandb.config form: each top-level key as {value, desc}. */
function wandbConfig(cfg: Record<string, unknown>): string {
  return JSON.stringify(
    Object.fromEntries(Object.entries(cfg).map(([k, v]) => [k, { desc: null, value: v }])),
  );
}

export class WandbRun {
  private readonly started = Date.now();
  private queue: string[] = [];
  private offset = 0;
  private summary: Record<string, number> = {};
  private sending: Promise<void> = Promise.resolve();
  private warned = false;
  private off = false;
  private entity: string;

  private constructor(private readonly opts: WandbOptions) {
    this.entity = opts.entity ?? "";
  }

  /** Creates (or resumes) the run; never throws for a server that cannot be reached. */
  static async start(opts: WandbOptions): Promise<WandbRun> {
    const run = new WandbRun(opts);
    if (opts.mode === "offline") {
      if (opts.config) {
        await run.writeOffline("config.json", JSON.stringify(opts.config, null, 2) + "\n", false);
      }
      return run;
    }
    if (!opts.apiKey) {
      opts.warn(
        'W&B: WANDB_API_KEY is not set, so nothing is sent to W&B (set it, or logging.wandb.mode "offline")',
      );
      run.off = true;
      return run;
    }
    try {
      const res = await run.post("/graphql", {
        query: UPSERT_BUCKET,
        operationName: "UpsertBucket",
        variables: {
          name: opts.runId,
          project: opts.project,
          ...(opts.entity ? { entity: opts.entity } : {}),
          displayName: opts.name,
          ...(opts.config ? { config: wandbConfig(opts.config) } : {}),
        },
      });
      const body = await res.json() as {
        data?: {
          upsertBucket?: {
            bucket?: { historyLineCount?: number; project?: { entity?: { name?: string } } };
          };
        };
        errors?: { message: string }[];
      };
      if (body.errors?.length) {
        throw new Error(`GraphQL: ${body.errors.map((e) => e.message).join("; ")}`);
      }
      const bucket = body.data?.upsertBucket?.bucket;
      run.entity = bucket?.project?.entity?.name ?? run.entity;
      // A resumed run continues its history file where it ends.
      run.offset = bucket?.historyLineCount ?? 0;
      if (!run.entity) {
        throw new Error("the server named no entity for the run; set logging.wandb.entity");
      }
    } catch (e) {
      run.off = true;
      run.fail(e, "could not create the run");
    }
    return run;
  }

  /** The run's page on the W&B app (online). */
  get url(): string {
    const app = this.opts.baseUrl.replace(/\/+$/, "").replace("//api.", "//");
    return `${app}/${this.entity}/${this.opts.project}/runs/${this.opts.runId}`;
  }

  get enabled(): boolean {
    return !this.off;
  }

  /** One history row at `step`; sent in the background (offline: appended). Non-finite values are left out (JSON has none). */
  log(step: number, scalars: Readonly<Record<string, number>>): Promise<void> {
    if (this.off) return Promise.resolve();
    const row: Record<string, number> = {};
    for (const [k, v] of Object.entries(scalars)) if (Number.isFinite(v)) row[k] = v;
    Object.assign(row, {
      _step: step,
      _runtime: (Date.now() - this.started) / 1000,
      _timestamp: Date.now() / 1000,
    });
    Object.assign(this.summary, row);
    this.queue.push(JSON.stringify(row));
    return this.flush();
  }

  /** Sends (or writes) what is queued; resolves when done or failed, never rejects. */
  flush(): Promise<void> {
    this.sending = this.sending.then(() => this.sendQueued());
    return this.sending;
  }

  private async sendQueued() {
    if (this.off || !this.queue.length) return;
    const lines = this.queue.slice();
    const summary = JSON.stringify(this.summary);
    try {
      if (this.opts.mode === "offline") {
        await this.writeOffline("wandb-history.jsonl", lines.map((l) => l + "\n").join(""), true);
        await this.writeOffline("wandb-summary.json", summary + "\n", false);
      } else {
        const res = await this.post(this.fileStreamPath, {
          files: {
            "wandb-history.jsonl": { offset: this.offset, content: lines },
            "wandb-summary.json": { offset: 0, content: [summary] },
          },
        });
        await res.body?.cancel();
      }
      this.queue.splice(0, lines.length);
      this.offset += lines.length;
    } catch (e) {
      this.fail(e, "could not send metrics");
    }
  }

  /** Sends what is left and marks the run finished (exit code 0: completed). Never throws. */
  async finish(exitCode: number): Promise<void> {
    await this.flush();
    if (this.off || this.opts.mode === "offline") return;
    if (this.queue.length) {
      this.opts.warn(
        `W&B: ${this.queue.length} step(s) of metrics were not sent (metrics.jsonl and the TensorBoard file have them)`,
      );
    }
    try {
      const res = await this.post(this.fileStreamPath, { complete: true, exitcode: exitCode });
      await res.body?.cancel();
    } catch (e) {
      this.fail(e, "could not mark the run finished");
    }
  }

  private get fileStreamPath(): string {
    const seg = encodeURIComponent;
    return `/files/${seg(this.entity)}/${seg(this.opts.project)}/${
      seg(this.opts.runId)
    }/file_stream`;
  }

  private async post(path: string, body: unknown): Promise<Response> {
    const f = this.opts.fetch ?? fetch;
    const res = await f(this.opts.baseUrl.replace(/\/+$/, "") + path, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        Authorization: `Basic ${btoa(`api:${this.opts.apiKey}`)}`,
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.opts.timeoutMs ?? 15_000),
    });
    if (!res.ok) {
      await res.body?.cancel();
      const hint = res.status === 401 || res.status === 403
        ? " (is WANDB_API_KEY right for this server?)"
        : "";
      throw new Error(`HTTP ${res.status} ${res.statusText} from ${path}${hint}`);
    }
    return res;
  }

  private async writeOffline(file: string, text: string, append: boolean) {
    if (!this.opts.writeOffline) {
      throw new Error("offline mode needs a place to write (writeOffline)");
    }
    await this.opts.writeOffline(file, text, append);
  }

  /** The first failure warns; later ones are quiet (the count of unsent steps comes at the end). */
  private fail(e: unknown, what: string) {
    if (this.warned) return;
    this.warned = true;
    let msg = (e as Error).message ?? String(e);
    if (this.opts.apiKey) msg = msg.replaceAll(this.opts.apiKey, "***");
    this.opts.warn(
      `W&B: ${what} at ${this.opts.baseUrl}: ${msg}; training goes on${
        this.off ? "" : " and later steps retry"
      }`,
    );
  }
}
