// A minimal ZIP archive writer (stored, no compression: safetensors do not compress) and reader
// (stored and deflate, the latter through the platform's DecompressionStream), so checkpoints and
// PEFT adapters download as one file and upload back. Host-neutral; no ZIP64 (archives < 4 GiB).

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The bad archive's problem, named. */
export class ZipError extends Error {
  override name = "ZipError";
}

/** A ZIP (method 0, stored) of the given files, in map order. */
export function zipFiles(files: ReadonlyMap<string, Uint8Array>): Uint8Array {
  const enc = new TextEncoder();
  const entries = [...files].map(([path, data]) => ({
    name: enc.encode(path),
    data,
    crc: crc32(data),
    offset: 0,
  }));
  const size =
    entries.reduce((s, e) => s + 30 + e.name.length + e.data.length + 46 + e.name.length, 0) + 22;
  if (size >= 2 ** 32) {
    throw new ZipError(`archive of ${size} bytes needs ZIP64, which this writer does not do`);
  }
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  let o = 0;
  const DOS_TIME = 0, DOS_DATE = (2020 - 1980) << 9 | 1 << 5 | 1; // fixed: archives are reproducible
  for (const e of entries) {
    e.offset = o;
    dv.setUint32(o, 0x04034b50, true);
    dv.setUint16(o + 4, 20, true);
    dv.setUint16(o + 6, 0x0800, true); // UTF-8 names
    dv.setUint16(o + 8, 0, true);
    dv.setUint16(o + 10, DOS_TIME, true);
    dv.setUint16(o + 12, DOS_DATE, true);
    dv.setUint32(o + 14, e.crc, true);
    dv.setUint32(o + 18, e.data.length, true);
    dv.setUint32(o + 22, e.data.length, true);
    dv.setUint16(o + 26, e.name.length, true);
    dv.setUint16(o + 28, 0, true);
    out.set(e.name, o + 30);
    out.set(e.data, o + 30 + e.name.length);
    o += 30 + e.name.length + e.data.length;
  }
  const cd = o;
  for (const e of entries) {
    dv.setUint32(o, 0x02014b50, true);
    dv.setUint16(o + 4, 20, true);
    dv.setUint16(o + 6, 20, true);
    dv.setUint16(o + 8, 0x0800, true);
    dv.setUint16(o + 10, 0, true);
    dv.setUint16(o + 12, DOS_TIME, true);
    dv.setUint16(o + 14, DOS_DATE, true);
    dv.setUint32(o + 16, e.crc, true);
    dv.setUint32(o + 20, e.data.length, true);
    dv.setUint32(o + 24, e.data.length, true);
    dv.setUint16(o + 28, e.name.length, true);
    // extra, comment, disk, internal attrs, external attrs: 0
    dv.setUint32(o + 42, e.offset, true);
    out.set(e.name, o + 46);
    o += 46 + e.name.length;
  }
  dv.setUint32(o, 0x06054b50, true);
  dv.setUint16(o + 8, entries.length, true);
  dv.setUint16(o + 10, entries.length, true);
  dv.setUint32(o + 12, o - cd, true);
  dv.setUint32(o + 16, cd, true);
  return out;
}

async function inflateRaw(data: Uint8Array): Promise<Uint8Array> {
  const ds = new DecompressionStream("deflate-raw");
  const stream = new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(ds);
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The files of a ZIP archive (stored or deflated entries), by path; directories are skipped. */
export async function unzipFiles(zip: Uint8Array): Promise<Map<string, Uint8Array>> {
  const dv = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 65535); i--) {
    if (dv.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ZipError("not a ZIP archive (no end-of-central-directory record)");
  const count = dv.getUint16(eocd + 10, true);
  let o = dv.getUint32(eocd + 16, true);
  const dec = new TextDecoder();
  const out = new Map<string, Uint8Array>();
  for (let i = 0; i < count; i++) {
    if (dv.getUint32(o, true) !== 0x02014b50) {
      throw new ZipError(`central directory entry ${i} is damaged`);
    }
    const method = dv.getUint16(o + 10, true), crc = dv.getUint32(o + 16, true);
    const csize = dv.getUint32(o + 20, true), usize = dv.getUint32(o + 24, true);
    const nlen = dv.getUint16(o + 28, true),
      xlen = dv.getUint16(o + 30, true),
      clen = dv.getUint16(o + 32, true);
    const local = dv.getUint32(o + 42, true);
    const name = dec.decode(zip.subarray(o + 46, o + 46 + nlen));
    o += 46 + nlen + xlen + clen;
    if (name.endsWith("/")) continue;
    if (dv.getUint32(local, true) !== 0x04034b50) {
      throw new ZipError(`${name}: local header is damaged`);
    }
    const start = local + 30 + dv.getUint16(local + 26, true) + dv.getUint16(local + 28, true);
    const raw = zip.subarray(start, start + csize);
    let data: Uint8Array;
    if (method === 0) data = raw.slice();
    else if (method === 8) data = await inflateRaw(raw);
    else {throw new ZipError(
        `${name}: compression method ${method} is not supported (use stored or deflate)`,
      );}
    if (data.length !== usize || crc32(data) !== crc) {
      throw new ZipError(`${name}: CRC or size mismatch; the archive is damaged`);
    }
    out.set(name, data);
  }
  return out;
}
