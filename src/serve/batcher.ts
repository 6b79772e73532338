// Batching for the model server: requests that arrive within a short window (or until the batch
// is full) run as one batched generation on the engine (src/model/generate.ts). Each request keeps
// its own sampling settings (the generator samples per row), its stop ids and stop strings, and its
// RNG stream (`sampling.seed` + `sequence`), so its tokens do not depend on what else shares the
// batch: greedy answers equal the sequential ones, and a seeded request repeats exactly.
// One generation runs at a time (the model has one KV cache); requests that arrive meanwhile
// queue for the next.

import type { GenerateOptions, GenerateRequest, GenerateResult } from "../model/generate.ts";

/** What the queue needs of a generator (Generator implements it). */
export interface BatchGenerator {
  readonly maxBatch: number;
  generate(reqs: readonly GenerateRequest[], opts?: GenerateOptions): Promise<GenerateResult[]>;
}

export interface BatchQueueOptions {
  /** How long the first request of a batch waits for others (ms, default 5). */
  windowMs?: number;
  /** Requests per generation (default and cap: the generator's maxBatch). */
  maxBatch?: number;
  /** Turns ids into text, for stop strings. */
  decode?: (ids: number[]) => string;
}

export interface QueuedRequest extends GenerateRequest {
  /** Streaming: called with this request's tokens so far after each decode step that added one. */
  onTokens?: (result: GenerateResult) => void;
}

interface Pending {
  req: QueuedRequest;
  resolve: (r: GenerateResult) => void;
  reject: (e: unknown) => void;
}

export class BatchQueue {
  /** Generations run so far, and the size of each (tests read them to see batching). */
  readonly batchSizes: number[] = [];
  private queue: Pending[] = [];
  private running = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly windowMs: number;
  private readonly maxBatch: number;

  constructor(private gen: BatchGenerator, private opts: BatchQueueOptions = {}) {
    this.windowMs = opts.windowMs ?? 5;
    this.maxBatch = Math.max(1, Math.min(opts.maxBatch ?? gen.maxBatch, gen.maxBatch));
  }

  get generationCalls(): number {
    return this.batchSizes.length;
  }

  /** Queues one request; resolves with its result once its batch finishes. */
  submit(req: QueuedRequest): Promise<GenerateResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      this.schedule();
    });
  }

  private schedule() {
    if (this.running) return;
    if (this.queue.length >= this.maxBatch) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.runBatch();
    } else if (this.queue.length && this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.runBatch();
      }, this.windowMs);
    }
  }

  private async runBatch() {
    if (this.running || !this.queue.length) return;
    this.running = true;
    const batch = this.queue.splice(0, this.maxBatch);
    this.batchSizes.push(batch.length);
    const streaming = batch.some((p) => p.req.onTokens);
    const seen = batch.map(() => 0);
    const onStep = streaming
      ? (_: number, results: readonly GenerateResult[]) => {
        batch.forEach((p, i) => {
          const r = results[i];
          if (p.req.onTokens && r.ids.length > seen[i]) {
            seen[i] = r.ids.length;
            p.req.onTokens(r);
          }
        });
      }
      : undefined;
    try {
      const results = await this.gen.generate(batch.map((p) => p.req), {
        decode: this.opts.decode,
        onStep,
      });
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (e) {
      batch.forEach((p) => p.reject(e));
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}
