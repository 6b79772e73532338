// Downloads of a stored checkpoint: the whole folder as a ZIP, or one agent's adapter as a PEFT
// ZIP (adapter_config.json + adapter_model.safetensors at the top, as PEFT's from_pretrained
// reads them).

import { zipFiles } from "./zip.ts";

/** Adapters in a checkpoint's files (adapters/<name>/...), in file order. */
export function checkpointAdapterNames(files: ReadonlyMap<string, Uint8Array>): string[] {
  const names = new Set<string>();
  for (const p of files.keys()) {
    const m = p.match(/^adapters\/([^/]+)\//);
    if (m) names.add(m[1]);
  }
  return [...names];
}

/**
 * A ZIP of checkpoint `name` of run `id`: `what` "checkpoint" for every file, "adapter:<agent>"
 * for that adapter's folder alone (CheckpointNotFoundError when the checkpoint has none).
 */
export function checkpointZip(
  id: string,
  name: string,
  files: ReadonlyMap<string, Uint8Array>,
  what: string,
): { fileName: string; bytes: Uint8Array } {
  if (what === "checkpoint") return { fileName: `${id}-${name}.zip`, bytes: zipFiles(files) };
  if (!what.startsWith("adapter:")) throw new TypeError(`unknown export "${what}"`);
  const a = what.slice(8), prefix = `adapters/${a}/`;
  const out = new Map(
    [...files].filter(([p]) => p.startsWith(prefix)).map(([p, b]) => [p.slice(prefix.length), b]),
  );
  if (!out.size) {
    throw Object.assign(new Error(`checkpoint ${name} has no adapter "${a}"`), {
      name: "CheckpointNotFoundError",
    });
  }
  return { fileName: `${id}-${name}-${a}-peft.zip`, bytes: zipFiles(out) };
}
