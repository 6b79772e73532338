// Byte sources and folders on each host kind: memory, File/Blob, OPFS (a fake handle), HTTP with
// and without range support (a local Deno.serve), Deno files; and atomic writes.

import assert from "node:assert/strict";
import {
  blobSource,
  bytesSource,
  filesFolder,
  opfsFolder,
  opfsSource,
  readFolderText,
  urlFolder,
  urlSource,
} from "../../src/io/bytesource.ts";
import {
  denoFileSource,
  denoFolder,
  writeFileAtomic,
  writeFilesAtomic,
} from "../../src/io/deno_files.ts";
import { ReadError } from "../../src/io/errors.ts";
import { encodeSafetensors, SafetensorsCheckpoint } from "../../src/io/safetensors.ts";

const BYTES = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff);

Deno.test("memory and Blob sources read exact ranges and refuse reads past the end", async () => {
  for (const src of [bytesSource(BYTES, "mem"), blobSource(new File([BYTES], "f.bin"))]) {
    assert.equal(src.size, 1000);
    assert.deepEqual(await src.read(10, 5), BYTES.subarray(10, 15));
    assert.deepEqual(await src.read(1000, 0), new Uint8Array(0));
    await assert.rejects(src.read(998, 5), ReadError);
    await assert.rejects(src.read(-1, 2), ReadError);
  }
  assert.equal(blobSource(new File([BYTES], "f.bin")).name, "f.bin");
});

Deno.test("OPFS handles: source and folder (NotFoundError means no file)", async () => {
  const file = new File([BYTES], "model.safetensors");
  const handle = { name: "model.safetensors", getFile: () => Promise.resolve(file) };
  const src = await opfsSource(handle as unknown as FileSystemFileHandle);
  assert.deepEqual(await src.read(100, 3), BYTES.subarray(100, 103));
  const dir = {
    name: "models",
    getFileHandle: (n: string) =>
      n === "model.safetensors"
        ? Promise.resolve(handle)
        : Promise.reject(new DOMException("no such file", "NotFoundError")),
  };
  const folder = opfsFolder(dir as unknown as FileSystemDirectoryHandle);
  assert.equal(await folder.open("config.json"), null);
  assert.equal((await folder.open("model.safetensors"))?.size, 1000);
});

Deno.test("picked files: a folder matched by base name", async () => {
  const folder = filesFolder([
    new File(["{}"], "config.json"),
    new File([BYTES], "model.safetensors"),
  ]);
  assert.equal(await readFolderText(folder, "config.json"), "{}");
  assert.equal(await folder.open("tokenizer.json"), null);
});

/** A static server for BYTES at /data.bin and a safetensors file at /m/model.safetensors. */
function serve(ranges: boolean) {
  const st = encodeSafetensors([{ name: "w", shape: [3], data: new Float32Array([1, 2, 3]) }]);
  const files: Record<string, Uint8Array> = { "/data.bin": BYTES, "/m/model.safetensors": st };
  let requests = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    requests++;
    const body = files[new URL(req.url).pathname];
    if (body === undefined) return new Response("not found", { status: 404 });
    const m = req.headers.get("range")?.match(/^bytes=(\d+)-(\d+)$/);
    if (!ranges || !m) {
      return new Response(req.method === "HEAD" ? null : body as Uint8Array<ArrayBuffer>);
    }
    const [a, b] = [Number(m[1]), Math.min(Number(m[2]), body.length - 1)];
    return new Response(body.slice(a, b + 1), {
      status: 206,
      headers: { "content-range": `bytes ${a}-${b}/${body.length}` },
    });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  return { server, base, count: () => requests };
}

Deno.test("URL source with range requests fetches only what is read", async () => {
  const { server, base, count } = serve(true);
  try {
    const src = await urlSource(`${base}/data.bin`);
    assert.equal(src.size, 1000);
    assert.deepEqual(await src.read(500, 10), BYTES.subarray(500, 510));
    assert.deepEqual(await src.read(999, 1), BYTES.subarray(999));
    assert.equal(count(), 3); // probe + two ranges
    const ckpt = await SafetensorsCheckpoint.open(urlFolder(`${base}/m`));
    assert.deepEqual([...await ckpt.readF32("w", [3])], [1, 2, 3]);
    await assert.rejects(urlSource(`${base}/missing.bin`), ReadError);
  } finally {
    await server.shutdown();
  }
});

Deno.test("URL source falls back to the whole body when the server ignores ranges", async () => {
  const { server, base, count } = serve(false);
  try {
    const src = await urlSource(`${base}/data.bin`);
    assert.equal(src.size, 1000);
    assert.deepEqual(await src.read(3, 4), BYTES.subarray(3, 7));
    assert.equal(count(), 1); // later reads come from memory
    assert.equal(await urlFolder(base).open("nothing.json"), null);
  } finally {
    await server.shutdown();
  }
});

Deno.test("URL source follows a redirect once, and resolves again when the signed URL expires", async () => {
  // The Hub's layout: /<id>/resolve/main/<file> answers 302 to a signed CDN URL.
  const log: string[] = [];
  let sig = 1;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const u = new URL(req.url);
    log.push(u.pathname + u.search);
    if (u.pathname === "/org/m/resolve/main/data.bin") {
      return new Response(null, { status: 302, headers: { location: `/cdn/data.bin?sig=${sig}` } });
    }
    if (u.pathname !== "/cdn/data.bin") return new Response("not found", { status: 404 });
    if (u.searchParams.get("sig") !== String(sig)) return new Response("expired", { status: 403 });
    const m = req.headers.get("range")!.match(/^bytes=(\d+)-(\d+)$/)!;
    const [a, b] = [Number(m[1]), Math.min(Number(m[2]), BYTES.length - 1)];
    return new Response(BYTES.slice(a, b + 1), {
      status: 206,
      headers: { "content-range": `bytes ${a}-${b}/${BYTES.length}` },
    });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    const src = await urlSource(`${base}/org/m/resolve/main/data.bin`);
    assert.equal(src.size, 1000);
    assert.deepEqual(await src.read(10, 5), BYTES.subarray(10, 15));
    // probe: resolve + CDN; the read: straight to the CDN URL.
    assert.deepEqual(log, [
      "/org/m/resolve/main/data.bin",
      "/cdn/data.bin?sig=1",
      "/cdn/data.bin?sig=1",
    ]);
    sig = 2; // the signed URL expires
    log.length = 0;
    assert.deepEqual(await src.read(900, 100), BYTES.subarray(900));
    assert.deepEqual(log, [
      "/cdn/data.bin?sig=1",
      "/org/m/resolve/main/data.bin",
      "/cdn/data.bin?sig=2",
    ]);
    log.length = 0;
    assert.deepEqual(await src.read(0, 3), BYTES.subarray(0, 3));
    assert.deepEqual(log, ["/cdn/data.bin?sig=2"], "reads go to the new signed URL");
  } finally {
    await server.shutdown();
  }
});

Deno.test("Deno file source: lazy ranges, concurrent reads stay correct", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeFileAtomic(`${dir}/data.bin`, BYTES);
    const src = await denoFileSource(`${dir}/data.bin`);
    const offsets = Array.from({ length: 50 }, (_, i) => (i * 37) % 990);
    const got = await Promise.all(offsets.map((o) => src.read(o, 10)));
    got.forEach((g, i) => assert.deepEqual(g, BYTES.subarray(offsets[i], offsets[i] + 10)));
    await assert.rejects(src.read(995, 10), ReadError);
    src.close();
    assert.equal(await denoFolder(dir).open("absent"), null);
    await assert.rejects(denoFileSource(`${dir}/absent`), ReadError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("atomic writes replace whole files and leave no temp files behind", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeFileAtomic(`${dir}/a.json`, "old");
    await writeFileAtomic(`${dir}/a.json`, "new");
    assert.equal(await Deno.readTextFile(`${dir}/a.json`), "new");
    await writeFilesAtomic(
      `${dir}/sub/deeper`,
      new Map<string, Uint8Array | string>([["x.txt", "1"], ["y.bin", BYTES]]),
    );
    assert.deepEqual(await Deno.readFile(`${dir}/sub/deeper/y.bin`), BYTES);
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(names, ["a.json", "sub"]);
    await assert.rejects(writeFileAtomic(`${dir}/no/such/dir/f`, "x"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
