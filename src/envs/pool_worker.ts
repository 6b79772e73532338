// Worker entry of the env pool: a LocalEnvPool exposed over comlink. The code executor, if any,
// arrives as a MessagePort on which the main thread exposes its CodeExecutor, so tool code still
// runs in the main thread's sandbox rather than in this worker.

import * as Comlink from "comlink";
import { LocalEnvPool } from "./pool.ts";
import type { CodeExecutor } from "./types.ts";

/** The worker-side API: the pool plus the setup call the main thread makes once. */
export class PoolWorkerApi extends LocalEnvPool {
  init(idBase: number, executorPort: MessagePort | null): void {
    this.setIdBase(idBase);
    this.setExecutor(executorPort ? Comlink.wrap<CodeExecutor>(executorPort) : undefined);
  }
}

Comlink.expose(new PoolWorkerApi());
