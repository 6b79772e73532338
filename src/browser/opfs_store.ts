// The DirStore of run_store.ts over the origin-private file system (navigator.storage), usable in
// a page and in a worker. Each file write goes through createWritable, which commits on close,
// so a reader never sees half a file.

import { opfsSource, writeOpfsFile } from "../io/bytesource.ts";
import type { DirStore } from "./run_store.ts";

const parts = (p: string) => p.split("/").filter(Boolean);

/** True where this host has OPFS (secure context, a browser that supports it). */
export function hasOpfs(): boolean {
  const nav = (globalThis as { navigator?: { storage?: { getDirectory?: unknown } } }).navigator;
  return typeof nav?.storage?.getDirectory === "function";
}

/** A DirStore rooted at `sub` under the OPFS root (created when missing). */
export async function opfsStore(sub = "pettingllms"): Promise<DirStore> {
  const root = await (await navigator.storage.getDirectory()).getDirectoryHandle(sub, {
    create: true,
  });

  async function dirOf(segs: string[], create: boolean): Promise<FileSystemDirectoryHandle | null> {
    let d = root;
    for (const s of segs) {
      try {
        d = await d.getDirectoryHandle(s, { create });
      } catch (e) {
        if ((e as Error).name === "NotFoundError" || (e as Error).name === "TypeMismatchError") {
          return null;
        }
        throw e;
      }
    }
    return d;
  }

  async function fileOf(path: string): Promise<FileSystemFileHandle | null> {
    const segs = parts(path);
    const d = await dirOf(segs.slice(0, -1), false);
    if (!d) return null;
    try {
      return await d.getFileHandle(segs[segs.length - 1]);
    } catch (e) {
      if ((e as Error).name === "NotFoundError" || (e as Error).name === "TypeMismatchError") {
        return null;
      }
      throw e;
    }
  }

  return {
    name: `opfs:/${sub}`,
    async write(path, bytes) {
      const segs = parts(path);
      const d = (await dirOf(segs.slice(0, -1), true))!;
      await writeOpfsFile(d, segs[segs.length - 1], bytes);
    },
    async read(path) {
      const h = await fileOf(path);
      return h ? new Uint8Array(await (await h.getFile()).arrayBuffer()) : null;
    },
    async source(path) {
      const h = await fileOf(path);
      return h ? await opfsSource(h) : null;
    },
    async list(dir) {
      const d = await dirOf(parts(dir), false);
      if (!d) return [];
      const out: { name: string; kind: "file" | "dir" }[] = [];
      // The DOM typings lack FileSystemDirectoryHandle.entries().
      const entries = (d as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> })
        .entries();
      for await (const [name, h] of entries) {
        out.push({ name, kind: h.kind === "directory" ? "dir" : "file" });
      }
      return out;
    },
    async remove(path) {
      const segs = parts(path);
      if (!segs.length) throw new TypeError("refusing to remove the store's root");
      const d = await dirOf(segs.slice(0, -1), false);
      if (!d) return;
      try {
        await d.removeEntry(segs[segs.length - 1], { recursive: true });
      } catch (e) {
        if ((e as Error).name !== "NotFoundError") throw e;
      }
    },
  };
}
