// Deno's side of checkpoint I/O: files as lazily-read ByteSources, directories as Folders, and
// atomic writes (temp file in the same directory + rename) so a crash never leaves half a file.
// Browser code must not import this module.

import { type ByteSource, checkRange, type Folder } from "./bytesource.ts";
import { ReadError, writeFailure, writingTo } from "./errors.ts";

/** Opens a file for random access; bytes are read only when asked for. */
export async function denoFileSource(path: string): Promise<ByteSource> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (e) {
    throw new ReadError(path, `cannot open: ${(e as Error).message}`, { cause: e });
  }
  const { size } = await file.stat();
  // One handle, one file position: reads are chained so concurrent callers do not interleave
  // their seek/read pairs.
  let queue: Promise<unknown> = Promise.resolve();
  const src: ByteSource = {
    name: path,
    size,
    async read(offset, length) {
      checkRange(src, offset, length);
      const job = queue.then(() => readAt(file, path, offset, length));
      queue = job.catch(() => {});
      return await job;
    },
    close() {
      try {
        file.close();
      } catch { /* already closed */ }
    },
  };
  return src;
}

async function readAt(file: Deno.FsFile, path: string, offset: number, length: number) {
  const out = new Uint8Array(length);
  await file.seek(offset, Deno.SeekMode.Start);
  let done = 0;
  while (done < length) {
    const n = await file.read(out.subarray(done));
    if (n === null) {
      throw new ReadError(path, `file ended after ${done} of ${length} bytes at offset ${offset}`);
    }
    done += n;
  }
  return out;
}

/** A Folder over a directory on disk. */
export function denoFolder(dir: string): Folder {
  return {
    name: dir,
    async open(file) {
      const path = joinPath(dir, file);
      try {
        await Deno.stat(path);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) return null;
        throw e;
      }
      return await denoFileSource(path);
    },
  };
}

/** Joins a directory and a relative file name with one slash. */
export function joinPath(dir: string, file: string): string {
  return dir.endsWith("/") ? `${dir}${file}` : `${dir}/${file}`;
}

/**
 * Writes `data` to `path` atomically: a temp file next to it is written, flushed and renamed
 * over the target, so readers see either the old file or the complete new one.
 */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const slash = path.lastIndexOf("/");
  const dir = slash >= 0 ? path.slice(0, slash) : ".";
  const base = slash >= 0 ? path.slice(slash + 1) : path;
  const tmp = `${dir}/.${base}.tmp-${crypto.randomUUID()}`;
  try {
    const f = await Deno.open(tmp, { write: true, createNew: true });
    try {
      let done = 0;
      while (done < bytes.length) done += await f.write(bytes.subarray(done));
      await f.sync();
    } finally {
      f.close();
    }
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw writeFailure(e, path);
  }
}

/** Writes several files into `dir` (created if missing), each atomically. */
export async function writeFilesAtomic(
  dir: string,
  files: ReadonlyMap<string, Uint8Array | string>,
): Promise<void> {
  await writingTo(dir, () => Deno.mkdir(dir, { recursive: true }));
  for (const [name, data] of files) await writeFileAtomic(joinPath(dir, name), data);
}
