// Checkpoint folders on disk (Deno): a folder appears complete or not at all. Files go into a
// hidden temp folder next to the target, each flushed to disk, the manifest last; then one rename
// publishes it. Replacing an existing folder (best/) takes two renames — old aside, new in — and
// `recoverInterrupted` undoes a crash between them. Deleting renames first, so a crash mid-delete
// never leaves a half folder under a checkpoint's name either. Browsers write OPFS folders with
// checkpointFiles + writeOpfsFile instead (the manifest, written last, marks completeness there).

import { denoFolder, joinPath } from "../io/deno_files.ts";
import {
  type CheckpointContents,
  checkpointFiles,
  type LoadedCheckpoint,
  type LoadOptions,
  MANIFEST,
  readCheckpoint,
} from "./checkpoint.ts";
import { CheckpointError } from "./errors.ts";
import { writeFailure, writingTo } from "../io/errors.ts";

export interface WriteDirOptions {
  /** Called after each file is on disk (progress for large checkpoints). */
  readonly onFile?: (name: string, bytes: number) => void | Promise<void>;
}

const STEP_RE = /^step-(\d+)$/;
const HIDDEN_RE = /^\.(.+)\.(tmp|old|trash)-[0-9a-f-]{36}$/;

function splitPath(dir: string): [string, string] {
  const trimmed = dir.replace(/\/+$/, "");
  const slash = trimmed.lastIndexOf("/");
  return slash >= 0 ? [trimmed.slice(0, slash) || "/", trimmed.slice(slash + 1)] : [".", trimmed];
}

function sibling(dir: string, kind: "tmp" | "old" | "trash"): string {
  const [parent, base] = splitPath(dir);
  return joinPath(parent, `.${base}.${kind}-${crypto.randomUUID()}`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** fsync a directory so the renames inside it survive a power cut (best effort: not every OS allows it). */
async function syncDir(path: string): Promise<void> {
  try {
    const f = await Deno.open(path, { read: true });
    try {
      await f.sync();
    } finally {
      f.close();
    }
  } catch { /* directories cannot be opened for sync on this OS */ }
}

async function writeSynced(path: string, bytes: Uint8Array): Promise<void> {
  const f = await Deno.open(path, { write: true, createNew: true });
  try {
    let done = 0;
    while (done < bytes.length) done += await f.write(bytes.subarray(done));
    await f.sync();
  } finally {
    f.close();
  }
}

/**
 * Writes `files` (relative paths, "/"-separated) as the folder `dir`, atomically: readers see the
 * previous folder (or none) until the new one is complete. Write the manifest last in `files`.
 */
export async function writeDirAtomic(
  dir: string,
  files: ReadonlyMap<string, Uint8Array>,
  opts: WriteDirOptions = {},
): Promise<void> {
  const [parent] = splitPath(dir);
  await writingTo(parent, () => Deno.mkdir(parent, { recursive: true }));
  const tmp = sibling(dir, "tmp");
  try {
    await Deno.mkdir(tmp);
    for (const [name, bytes] of files) {
      if (name.split("/").some((p) => p === "" || p === "." || p === "..")) {
        throw new CheckpointError(dir, `file name "${name}" must be a plain relative path`);
      }
      const path = joinPath(tmp, name);
      await Deno.mkdir(splitPath(path)[0], { recursive: true });
      await writeSynced(path, bytes);
      await opts.onFile?.(name, bytes.length);
    }
    await syncDir(tmp);
    if (await exists(dir)) {
      const old = sibling(dir, "old");
      await Deno.rename(dir, old);
      await Deno.rename(tmp, dir);
      await Deno.remove(old, { recursive: true });
    } else {
      await Deno.rename(tmp, dir);
    }
    await syncDir(parent);
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw writeFailure(e, dir); // a full disk or a read-only folder names the checkpoint's path
  }
}

/** Deletes a folder so that it vanishes at once (renamed aside first, then removed). */
export async function removeDirAtomic(dir: string): Promise<void> {
  if (!(await exists(dir))) return;
  const trash = sibling(dir, "trash");
  await Deno.rename(dir, trash);
  await Deno.remove(trash, { recursive: true });
}

/**
 * Cleans up after a crash in `root`: drops unfinished temp and trash folders, and puts back a
 * folder that was set aside for replacement when its replacement never arrived. Returns what it did.
 */
export async function recoverInterrupted(root: string): Promise<string[]> {
  const done: string[] = [];
  if (!(await exists(root))) return done;
  for await (const e of Deno.readDir(root)) {
    const m = HIDDEN_RE.exec(e.name);
    if (!m || !e.isDirectory) continue;
    const path = joinPath(root, e.name), target = joinPath(root, m[1]);
    if (m[2] === "old" && !(await exists(target))) {
      await Deno.rename(path, target);
      done.push(`restored ${m[1]}`);
    } else {
      await Deno.remove(path, { recursive: true });
      done.push(`removed ${e.name}`);
    }
  }
  return done;
}

/** Writes a checkpoint folder atomically (see checkpoint.ts for its layout). */
export async function writeCheckpoint(
  dir: string,
  c: CheckpointContents,
  opts: WriteDirOptions = {},
): Promise<void> {
  await writeDirAtomic(dir, await checkpointFiles(c), opts);
}

/** Loads a checkpoint folder from disk. */
export async function loadCheckpoint(
  dir: string,
  opts: LoadOptions = {},
): Promise<LoadedCheckpoint> {
  return await readCheckpoint(denoFolder(dir), opts);
}

/** `step-N` checkpoint folders under root that have a manifest, oldest first. */
export async function listCheckpoints(root: string): Promise<Array<{ step: number; dir: string }>> {
  const out: Array<{ step: number; dir: string }> = [];
  if (!(await exists(root))) return out;
  for await (const e of Deno.readDir(root)) {
    const m = STEP_RE.exec(e.name);
    if (m && e.isDirectory && (await exists(joinPath(joinPath(root, e.name), MANIFEST)))) {
      out.push({ step: Number(m[1]), dir: joinPath(root, e.name) });
    }
  }
  return out.sort((a, b) => a.step - b.step);
}

/** The newest complete `step-N` checkpoint under root, or null. */
export async function latestCheckpoint(root: string): Promise<string | null> {
  const all = await listCheckpoints(root);
  return all.length ? all[all.length - 1].dir : null;
}

/** Keeps the newest `keepLast` step-N checkpoints (keep-last-N), removing older ones atomically. */
export async function pruneCheckpoints(root: string, keepLast: number): Promise<string[]> {
  if (!Number.isInteger(keepLast) || keepLast < 1) {
    throw new CheckpointError(
      root,
      `keepLast ${keepLast} must be ≥ 1: pruning must leave a checkpoint to resume from`,
    );
  }
  const all = await listCheckpoints(root);
  const drop = all.slice(0, Math.max(0, all.length - keepLast)).map((c) => c.dir);
  for (const dir of drop) await removeDirAtomic(dir);
  return drop;
}
