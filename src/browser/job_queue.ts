// A serial job queue: jobs wait until their owner drains the queue, then run one at a time in the
// order they were queued. The browser trainer queues the teaching demos' GPU work here and drains
// it only where training leaves the GPU free (idle, paused, or between two steps).

export class JobQueue {
  #jobs: (() => Promise<void>)[] = [];
  #drain: Promise<void> | null = null;

  /** Jobs queued and not yet started. */
  get pending(): number {
    return this.#jobs.length;
  }

  /** True while a drain is running jobs. */
  get draining(): boolean {
    return this.#drain !== null;
  }

  /** Queues `fn` without starting it; settles with its result (or error) once a drain ran it. */
  push<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#jobs.push(async () => {
        try {
          resolve(await fn());
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  /**
   * Runs the queued jobs one at a time, in order, until none is left (jobs queued meanwhile
   * included). While a drain runs, another call returns that same drain rather than a second one.
   */
  drain(): Promise<void> {
    if (!this.#drain) {
      if (!this.#jobs.length) return Promise.resolve();
      this.#drain = this.#run();
    }
    return this.#drain;
  }

  async #run() {
    try {
      while (this.#jobs.length) await this.#jobs.shift()!();
    } finally {
      // In the same turn as the loop's last check: a job queued after it starts a new drain.
      this.#drain = null;
    }
  }

  /** Resolves once no drain is running (it starts none). */
  async idle(): Promise<void> {
    while (this.#drain) await this.#drain;
  }
}
