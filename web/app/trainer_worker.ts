// The trainer worker: a TrainerHost (trainer_host.ts) with the browser's own dependencies — a
// WebGPU device, runs in OPFS (memory where a browser has none, e.g. private windows), the
// bundled presets and warm starts or the Hub or a picked folder, blob-Worker sandboxes — served to
// the page through comlink (TrainerService in protocol.ts).

import * as Comlink from "comlink";
import "../shaders.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { SandboxPool } from "../../src/sandbox/mod.ts";
import { hasOpfs, opfsStore } from "../../src/browser/opfs_store.ts";
import { type DirStore, memoryStore } from "../../src/browser/run_store.ts";
import { describeSource, loadBaseModel } from "./model_source.ts";
import { TrainerHost } from "./trainer_host.ts";

async function openStore(): Promise<{ store: DirStore; persistent: boolean }> {
  if (hasOpfs()) {
    try {
      return { store: await opfsStore(), persistent: true };
    } catch { /* OPFS refused (storage disabled): keep runs in memory */ }
  }
  return { store: memoryStore("memory"), persistent: false };
}

Comlink.expose(
  new TrainerHost({
    createGpu: () => Gpu.create(),
    openStore,
    models: { load: loadBaseModel, describe: describeSource },
    sandbox: () => new SandboxPool({ concurrency: 2 }),
  }),
);
