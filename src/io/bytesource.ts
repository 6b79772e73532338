// Random-access bytes from wherever a checkpoint lives, so the safetensors reader can fetch a
// header and then single tensors without loading a whole (possibly 1 GB) file: in-memory bytes,
// browser File/Blob, HTTP(S) URLs (range requests), OPFS. Deno files live in deno_files.ts so
// this module stays importable in a browser. A "Folder" names the files of one model directory.

import { ReadError } from "./errors.ts";

/** Random-access, read-only bytes. `read` returns exactly `length` bytes or throws ReadError. */
export interface ByteSource {
  /** The file name or URL, for error messages. */
  readonly name: string;
  /** Total size in bytes. */
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Releases an open handle (Deno files); a no-op elsewhere. */
  close(): void;
}

/** The files of one model directory (config.json, *.safetensors, tokenizer files, ...). */
export interface Folder {
  /** The directory path or base URL, for error messages. */
  readonly name: string;
  /** Opens `file` (a name relative to the folder), or returns null when it does not exist. */
  open(file: string): Promise<ByteSource | null>;
}

/** Checks a read request against a source's size before any I/O happens. */
export function checkRange(src: { name: string; size: number }, offset: number, length: number) {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0) {
    throw new ReadError(src.name, `invalid read of ${length} bytes at offset ${offset}`);
  }
  if (offset + length > src.size) {
    throw new ReadError(
      src.name,
      `read of ${length} bytes at offset ${offset} runs past the end (${src.size} bytes); ` +
        `the file is shorter than expected — was it changed or cut short while being read?`,
    );
  }
}

/** A ByteSource over bytes already in memory (tests, uploads, freshly encoded files). */
export function bytesSource(bytes: Uint8Array, name = "<memory>"): ByteSource {
  return {
    name,
    size: bytes.length,
    // async so that a bad range rejects instead of throwing synchronously
    async read(offset, length) {
      checkRange(this, offset, length);
      return await Promise.resolve(bytes.subarray(offset, offset + length));
    },
    close() {},
  };
}

/** A ByteSource over a browser File or Blob: `slice` reads only the requested range. */
export function blobSource(blob: Blob, name?: string): ByteSource {
  const label = name ?? ((blob as File).name || "<blob>");
  return {
    name: label,
    size: blob.size,
    async read(offset, length) {
      checkRange(this, offset, length);
      const buf = await blob.slice(offset, offset + length).arrayBuffer();
      if (buf.byteLength !== length) {
        throw new ReadError(label, `got ${buf.byteLength} of ${length} bytes at ${offset}`);
      }
      return new Uint8Array(buf);
    },
    close() {},
  };
}

/** A ByteSource over an OPFS file handle (the browser's origin-private file system). */
export async function opfsSource(handle: FileSystemFileHandle): Promise<ByteSource> {
  return blobSource(await handle.getFile(), handle.name);
}

/** Size from a Content-Range header ("bytes 0-7/1234"), or null. */
function totalFromContentRange(header: string | null): number | null {
  const m = header?.match(/\/(\d+)\s*$/);
  return m ? Number(m[1]) : null;
}

/**
 * A ByteSource over an HTTP(S) URL. Uses Range requests; when the server ignores them (answers
 * 200 with the whole body) the body is kept and later reads are served from memory. When the URL
 * redirects (the Hugging Face Hub sends each LFS file's `resolve` URL to a CDN), later reads go to
 * where it led, one round trip each instead of two and no load on the redirecting server; should
 * that URL stop answering (signed CDN URLs expire), reads go back to the original URL.
 */
export async function urlSource(url: string | URL, init?: RequestInit): Promise<ByteSource> {
  return (await openUrlSource(String(url), init, false))!;
}

async function openUrlSource(
  href: string,
  init: RequestInit | undefined,
  missingIsNull: boolean,
): Promise<ByteSource | null> {
  // A 1-byte range probe tells the size and whether ranges work, in one round trip.
  const probe = await fetchOrThrow(href, init, "bytes=0-0", missingIsNull);
  if (probe === null) return null;
  let whole: Uint8Array | null = null;
  let size: number;
  if (probe.status === 206) {
    await probe.body?.cancel();
    const total = totalFromContentRange(probe.headers.get("content-range"));
    if (total === null) {
      throw new ReadError(
        href,
        "206 response without a readable Content-Range total (a cross-origin server must list " +
          "Content-Range in Access-Control-Expose-Headers)",
      );
    }
    size = total;
  } else {
    whole = new Uint8Array(await probe.arrayBuffer());
    size = whole.length;
  }
  let readUrl = probe.redirected && probe.url ? probe.url : href;
  const src: ByteSource = {
    name: href,
    size,
    async read(offset, length) {
      checkRange(src, offset, length);
      if (whole !== null) return whole.subarray(offset, offset + length);
      if (length === 0) return new Uint8Array(0);
      const range = `bytes=${offset}-${offset + length - 1}`;
      let res: Response;
      try {
        res = (await fetchOrThrow(readUrl, init, range, false))!;
      } catch (e) {
        if (readUrl === href) throw e;
        // The redirect target expired or went away: resolve the original URL again.
        res = (await fetchOrThrow(href, init, range, false))!;
        readUrl = res.redirected && res.url ? res.url : href;
      }
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (res.status !== 206) {
        whole = bytes; // the server stopped honouring ranges: keep the whole body
        checkRange({ name: href, size: whole.length }, offset, length);
        return whole.subarray(offset, offset + length);
      }
      if (bytes.length !== length) {
        throw new ReadError(href, `range request returned ${bytes.length} of ${length} bytes`);
      }
      return bytes;
    },
    close() {},
  };
  return src;
}

/** The response to a range request; null for a 404 when `missingIsNull`; else throws ReadError. */
async function fetchOrThrow(
  href: string,
  init: RequestInit | undefined,
  range: string,
  missingIsNull: boolean,
) {
  const headers = new Headers(init?.headers);
  headers.set("Range", range);
  let res: Response;
  try {
    res = await fetch(href, { ...init, headers });
  } catch (e) {
    throw new ReadError(href, `fetch failed (${(e as Error).message}); is the server up?`, {
      cause: e,
    });
  }
  if (!res.ok) {
    await res.body?.cancel();
    if (res.status === 404 && missingIsNull) return null;
    throw new ReadError(href, `HTTP ${res.status} ${res.statusText}`);
  }
  return res;
}

/** Reads a whole source as UTF-8 text. */
export async function readAllText(src: ByteSource): Promise<string> {
  return new TextDecoder().decode(await src.read(0, src.size));
}

/** Reads `file` from a folder as text, or null when the folder has no such file. */
export async function readFolderText(folder: Folder, file: string): Promise<string | null> {
  const src = await folder.open(file);
  if (src === null) return null;
  try {
    return await readAllText(src);
  } finally {
    src.close();
  }
}

/** A folder backed by an in-memory map (tests; files produced in the browser before saving). */
export function memoryFolder(files: ReadonlyMap<string, Uint8Array>, name = "<memory>"): Folder {
  return {
    name,
    open(file) {
      const bytes = files.get(file);
      return Promise.resolve(bytes === undefined ? null : bytesSource(bytes, `${name}/${file}`));
    },
  };
}

/**
 * A folder over files the user picked (`<input type=file multiple webkitdirectory>` or drag and
 * drop). Files match by base name, so picking the directory or its files both work.
 */
export function filesFolder(files: Iterable<File>, name = "<picked files>"): Folder {
  const byName = new Map<string, File>();
  for (const f of files) byName.set(f.name.split("/").pop()!, f);
  return {
    name,
    open: (file) => {
      const f = byName.get(file);
      return Promise.resolve(f === undefined ? null : blobSource(f, `${name}/${file}`));
    },
  };
}

/** A folder over an OPFS directory handle. */
export function opfsFolder(dir: FileSystemDirectoryHandle): Folder {
  return {
    name: dir.name,
    async open(file) {
      try {
        return await opfsSource(await dir.getFileHandle(file));
      } catch (e) {
        if ((e as DOMException).name === "NotFoundError") return null;
        throw e;
      }
    },
  };
}

/**
 * A folder under a base URL (e.g. a static server with model files, the Hub's resolve/<rev>/);
 * 404 means "no file". Opening a file is its range probe, one request (no separate HEAD).
 */
export function urlFolder(base: string | URL, init?: RequestInit): Folder {
  const baseUrl = new URL(String(base).endsWith("/") ? String(base) : `${base}/`);
  return {
    name: baseUrl.href,
    open: (file) => openUrlSource(new URL(file, baseUrl).href, init, true),
  };
}

/** Writes bytes to an OPFS file; createWritable commits on close, so readers never see half. */
export async function writeOpfsFile(
  dir: FileSystemDirectoryHandle,
  file: string,
  bytes: Uint8Array,
): Promise<void> {
  const handle = await dir.getFileHandle(file, { create: true });
  const w = await handle.createWritable();
  try {
    await w.write(bytes as Uint8Array<ArrayBuffer>);
    await w.close();
  } catch (e) {
    await w.abort();
    throw e;
  }
}
