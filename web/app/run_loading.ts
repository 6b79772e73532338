// Loading a run in the browser trainer (TrainerHost's start, resume and recovery): the config
// checked for what a browser can read, the base model described for the page, the run's latest
// checkpoint read for a resume, and the session made on the GPU.

import type { Gpu } from "../../src/gpu/mod.ts";
import { parseConfig, type RunConfig } from "../../src/rl/config.ts";
import { RlSession, type SessionInit } from "../../src/rl/session.ts";
import { type LoadedCheckpoint, readCheckpoint } from "../../src/train/checkpoint.ts";
import type { CodeExecutor } from "../../src/envs/types.ts";
import type { RunStore } from "../../src/browser/run_store.ts";
import type { LoadedBase } from "./model_source.ts";
import type { ModelInfo } from "./protocol.ts";

/** An Error with a name the page shows (comlink carries name and message across). */
export const named = (name: string, message: string): Error =>
  Object.assign(new Error(message), { name });

/** A run's config, refusing a warm start on disk (a browser reads only uploaded adapters). */
export function resolveConfig(raw: Record<string, unknown>): RunConfig {
  const c = parseConfig(raw);
  if (c.warmStart.path !== null && !c.warmStart.path.startsWith("upload:")) {
    throw named(
      "ConfigError",
      `warmStart.path: "${c.warmStart.path}" is a path on disk, which a browser cannot read; upload a PEFT adapter instead, or set it to null`,
    );
  }
  return c;
}

/** What the page shows of a loaded base model, with a checksum of the weights as read. */
export function describeBase(base: LoadedBase): ModelInfo {
  const w = base.weights;
  let sum = 0;
  for (const v of w.data) sum += v;
  return {
    label: base.label,
    params: w.layout.numParams,
    layers: w.config.numLayers,
    hidden: w.config.hiddenSize,
    vocab: w.config.vocabSize,
    tokenizer: base.tokenizer.kind,
    weightsSum: sum,
  };
}

/**
 * The run's latest complete checkpoint, read ("best" holds the best policy so far, not where the
 * run stands); null when it has none.
 */
export async function readLatestCheckpoint(
  runs: RunStore,
  id: string,
  base: LoadedBase,
): Promise<{ name: string; checkpoint: LoadedCheckpoint } | null> {
  const infos = (await runs.checkpoints(id)).filter((x) => x.name !== "best");
  const latest = infos[infos.length - 1];
  if (!latest) return null;
  const checkpoint = await readCheckpoint(runs.checkpointFolder(id, latest.name), {
    base: base.weights.config,
  });
  return { name: latest.name, checkpoint };
}

/** The run's session on `gpu`: resumed from a checkpoint, or new (with an uploaded warm start). */
export function openSession(
  c: RunConfig,
  gpu: Gpu,
  base: LoadedBase,
  executor: CodeExecutor | undefined,
  from: { resume?: LoadedCheckpoint; warmStart?: SessionInit["warmStart"] },
): Promise<RlSession> {
  return RlSession.create(c, {
    gpu,
    weights: base.weights,
    tokenizer: base.tokenizer,
    executor,
    resume: from.resume,
    warmStart: from.resume ? undefined : from.warmStart,
  });
}
