// safetensors: round trips in F32/F16/BF16 (bit-exact), lazy reads, sharded checkpoints, and
// one test per corruption, each checking the error's name, file and tensor.

import assert from "node:assert/strict";
import { type ByteSource, bytesSource, memoryFolder } from "../../src/io/bytesource.ts";
import { decode, encode, type FloatDtype } from "../../src/io/dtypes.ts";
import {
  MissingTensorError,
  ReadError,
  SafetensorsError,
  SafetensorsHeaderError,
  SafetensorsHeaderLengthError,
  SafetensorsIndexError,
  SafetensorsOffsetError,
  SafetensorsTruncatedError,
  ShapeMismatchError,
  UnsupportedDtypeError,
} from "../../src/io/errors.ts";
import {
  encodeSafetensors,
  encodeSharded,
  expectShape,
  SafetensorsCheckpoint,
  SafetensorsFile,
  type TensorToWrite,
} from "../../src/io/safetensors.ts";

const values = (n: number, seed: number) =>
  Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 43758.5453 % 3);

const TENSORS: TensorToWrite[] = [
  { name: "a.weight", shape: [3, 5], data: values(15, 1) },
  { name: "b.bias", shape: [7], data: values(7, 2) },
  { name: "scalar", shape: [], data: new Float32Array([0.125]) },
  { name: "empty", shape: [0, 4], data: new Float32Array(0) },
];

async function open(bytes: Uint8Array, name = "test.safetensors") {
  return await SafetensorsFile.open(bytesSource(bytes, name));
}

/** Builds a file from a raw header object (for corrupt or exotic headers). */
function rawFile(header: unknown, dataBytes: number, headerLen?: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLen ?? json.length), true);
  out.set(json, 8);
  return out;
}

/** Asserts a SafetensorsError subclass by name, file and tensor. */
async function rejectsWith(
  p: Promise<unknown>,
  cls: new (...a: never[]) => SafetensorsError,
  file: string,
  tensor: string | null,
) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(
      e instanceof cls,
      `expected ${cls.name}, got ${(e as Error).name}: ${(e as Error).message}`,
    );
    assert.equal(e.name, cls.name);
    assert.equal(e.file, file);
    assert.equal(e.tensor, tensor);
    assert.ok(e.message.includes(file));
    if (tensor !== null) assert.ok(e.message.includes(tensor));
    return true;
  });
}

for (const dtype of ["F32", "F16", "BF16"] as FloatDtype[]) {
  Deno.test(`${dtype} round trip: values come back rounded once, bytes are stable`, async () => {
    const bytes = encodeSafetensors(TENSORS, { dtype, metadata: { note: "x" } });
    const f = await open(bytes);
    assert.deepEqual(f.metadata, { format: "pt", note: "x" });
    for (const t of TENSORS) {
      assert.equal(f.info(t.name).dtype, dtype);
      assert.deepEqual(f.info(t.name).shape, t.shape);
      const back = await f.readF32(t.name, t.shape);
      assert.deepEqual(back, decode(dtype, encode(dtype, t.data)));
      // Bit-exact: the stored 16-bit patterns are exactly what we wrote.
      assert.deepEqual(await f.readBytes(t.name), encode(dtype, t.data));
    }
    // Re-encoding what was read reproduces the file byte for byte.
    const again = await Promise.all(
      TENSORS.map(async (t) => ({ ...t, data: await f.readF32(t.name) })),
    );
    assert.deepEqual(encodeSafetensors(again, { dtype, metadata: { note: "x" } }), bytes);
  });
}

Deno.test("mixed dtypes in one file; header padded so data starts 8-byte aligned", async () => {
  const mixed: TensorToWrite[] = [
    { name: "h", shape: [3], data: new Float32Array([1, 2, 3]), dtype: "F16" },
    { name: "f", shape: [2], data: new Float32Array([0.1, 0.2]), dtype: "F32" },
    { name: "b", shape: [1], data: new Float32Array([3.5]), dtype: "BF16" },
  ];
  const bytes = encodeSafetensors(mixed);
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal((8 + n) % 8, 0);
  const f = await open(bytes);
  assert.deepEqual([...await f.readF32("h")], [1, 2, 3]);
  assert.deepEqual([...await f.readF32("f")], [...new Float32Array([0.1, 0.2])]);
  assert.deepEqual([...await f.readF32("b")], [3.5]);
  assert.equal(f.info("f").begin, 8 + n); // the widest dtype comes first
});

Deno.test("open reads only the header; a tensor read touches only its byte range", async () => {
  const big: TensorToWrite[] = [
    { name: "x", shape: [1000], data: values(1000, 3) },
    { name: "y", shape: [10], data: values(10, 4) },
  ];
  const inner = bytesSource(encodeSafetensors(big), "counted");
  const reads: [number, number][] = [];
  const counted: ByteSource = {
    name: inner.name,
    size: inner.size,
    read: (o, l) => (reads.push([o, l]), inner.read(o, l)),
    close() {},
  };
  const f = await SafetensorsFile.open(counted);
  const headerBytes = reads.reduce((a, [, l]) => a + l, 0);
  assert.ok(headerBytes < 300, `open read ${headerBytes} bytes`);
  reads.length = 0;
  await f.readF32("y");
  assert.deepEqual(reads, [[f.info("y").begin, 40]]);
});

Deno.test("truncated files: too short, inside the header, inside the data", async () => {
  const good = encodeSafetensors(TENSORS);
  await rejectsWith(open(good.slice(0, 5), "t.st"), SafetensorsTruncatedError, "t.st", null);
  await rejectsWith(open(good.slice(0, 20), "t.st"), SafetensorsTruncatedError, "t.st", null);
  // Cut inside the data: the error names the tensor whose data ends last ("scalar": the
  // writer orders tensors by name).
  await rejectsWith(
    open(good.slice(0, good.length - 3), "t.st"),
    SafetensorsTruncatedError,
    "t.st",
    "scalar",
  );
});

Deno.test("header length out of range (e.g. a PyTorch zip) and corrupt header JSON", async () => {
  const zipLike = new Uint8Array(64).fill(0x41);
  zipLike.set([0x50, 0x4b, 0x03, 0x04], 0);
  await rejectsWith(
    open(zipLike, "pytorch_model.bin"),
    SafetensorsHeaderLengthError,
    "pytorch_model.bin",
    null,
  );
  await rejectsWith(open(rawFile({}, 0, 1), "z.st"), SafetensorsHeaderLengthError, "z.st", null);
  const garbled = encodeSafetensors(TENSORS);
  garbled[9] = 0xff; // invalid UTF-8 inside the JSON
  await rejectsWith(open(garbled, "g.st"), SafetensorsHeaderError, "g.st", null);
  const notJson = rawFile({}, 0);
  notJson.set(new TextEncoder().encode("[]"), 8);
  await rejectsWith(open(notJson, "n.st"), SafetensorsHeaderError, "n.st", null);
  await rejectsWith(
    open(rawFile({ w: { dtype: "F32", shape: [2] } }, 8), "e.st"),
    SafetensorsHeaderError,
    "e.st",
    "w",
  );
});

Deno.test("data offsets that disagree with the shape, are unordered, or lie outside the file", async () => {
  const wrongSize = rawFile({ w: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, 8);
  await rejectsWith(open(wrongSize, "o.st"), SafetensorsOffsetError, "o.st", "w");
  const unordered = rawFile({ w: { dtype: "F32", shape: [0], data_offsets: [8, 4] } }, 8);
  await rejectsWith(open(unordered, "o.st"), SafetensorsOffsetError, "o.st", "w");
  const outside = rawFile({ w: { dtype: "F32", shape: [2], data_offsets: [1000, 1008] } }, 8);
  await rejectsWith(open(outside, "o.st"), SafetensorsTruncatedError, "o.st", "w");
});

Deno.test("unsupported dtype is named on read; other tensors stay readable", async () => {
  const header = {
    ids: { dtype: "I64", shape: [2], data_offsets: [0, 16] },
    w: { dtype: "F32", shape: [1], data_offsets: [16, 20] },
  };
  const bytes = rawFile(header, 20);
  bytes.set(new Uint8Array(new Float32Array([2.5]).buffer), bytes.length - 4);
  const f = await open(bytes, "d.st");
  assert.deepEqual([...await f.readF32("w")], [2.5]);
  await rejectsWith(f.readF32("ids"), UnsupportedDtypeError, "d.st", "ids");
  assert.equal((await f.readBytes("ids")).length, 16);
});

Deno.test("missing tensor and shape mismatch name the file and tensor", async () => {
  const f = await open(encodeSafetensors(TENSORS), "m.st");
  await rejectsWith(f.readF32("nope"), MissingTensorError, "m.st", "nope");
  await rejectsWith(f.readF32("a.weight", [5, 3]), ShapeMismatchError, "m.st", "a.weight");
  assert.throws(() => expectShape("m.st", "a.weight", [3, 5], [3]), (e: ShapeMismatchError) => {
    assert.deepEqual([e.expected, e.actual], [[3], [3, 5]]);
    return e.name === "ShapeMismatchError" && e.message.includes("[3, 5]");
  });
  expectShape("m.st", "a.weight", [3, 5], [3, 5]);
});

Deno.test("writer rejects duplicate names and data that does not fit the shape", () => {
  const t = TENSORS[0];
  assert.throws(() => encodeSafetensors([t, t]), SafetensorsError);
  assert.throws(() => encodeSafetensors([{ ...t, shape: [4, 5] }]), ShapeMismatchError);
});

function folderOf(files: Map<string, Uint8Array>) {
  return memoryFolder(files, "ckpt");
}

Deno.test("sharded checkpoint: writer splits, index maps, reader finds every tensor", async () => {
  const many = Array.from({ length: 6 }, (_, i) => ({
    name: `layer.${i}.w`,
    shape: [4, 8],
    data: values(32, i),
  }));
  const files = encodeSharded(many, 300, { dtype: "BF16" });
  assert.deepEqual([...files.keys()].sort(), [
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
  ]);
  const index = JSON.parse(new TextDecoder().decode(files.get("model.safetensors.index.json")));
  assert.equal(index.metadata.total_size, 6 * 32 * 2);
  assert.equal(index.weight_map["layer.5.w"], "model-00002-of-00002.safetensors");
  const ckpt = await SafetensorsCheckpoint.open(folderOf(files));
  assert.deepEqual(ckpt.names().sort(), many.map((t) => t.name).sort());
  for (const t of many) {
    assert.deepEqual(await ckpt.readF32(t.name, [4, 8]), decode("BF16", encode("BF16", t.data)));
  }
  assert.equal(ckpt.info("layer.5.w").file, "ckpt/model-00002-of-00002.safetensors");
  ckpt.close();
});

Deno.test("sharded checkpoint errors: missing shard, tensor not in its shard, bad index", async () => {
  const files = encodeSharded(TENSORS.slice(0, 2), 50);
  const shard2 = "model-00002-of-00002.safetensors";
  const noShard = new Map(files);
  noShard.delete(shard2);
  await rejectsWith(
    SafetensorsCheckpoint.open(folderOf(noShard)),
    MissingTensorError,
    "ckpt/model.safetensors.index.json",
    "b.bias",
  );
  const lying = new Map(files);
  const idx = { weight_map: { "a.weight": shard2, "b.bias": shard2 } };
  lying.set("model.safetensors.index.json", new TextEncoder().encode(JSON.stringify(idx)));
  await rejectsWith(
    SafetensorsCheckpoint.open(folderOf(lying)),
    MissingTensorError,
    `ckpt/${shard2}`,
    "a.weight",
  );
  const bad = new Map(files);
  bad.set("model.safetensors.index.json", new TextEncoder().encode("{ nope"));
  await rejectsWith(
    SafetensorsCheckpoint.open(folderOf(bad)),
    SafetensorsIndexError,
    "ckpt/model.safetensors.index.json",
    null,
  );
  await assert.rejects(SafetensorsCheckpoint.open(folderOf(new Map())), ReadError);
});

Deno.test("single-file checkpoint and a custom file name (PEFT adapter)", async () => {
  const bytes = encodeSafetensors(TENSORS);
  const ckpt = await SafetensorsCheckpoint.open(
    folderOf(new Map([["adapter_model.safetensors", bytes]])),
    "adapter_model.safetensors",
  );
  assert.deepEqual([...await ckpt.readF32("b.bias")], [...TENSORS[1].data]);
  await rejectsWith(ckpt.readF32("zzz"), MissingTensorError, "ckpt", "zzz");
});
