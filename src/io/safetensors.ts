// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets}}, then raw tensor data.
// Reading fetches the header first and each tensor by byte range, so a 1 GB checkpoint is never
// held twice; F32/F16/BF16 decode to Float32Array. Sharded checkpoints (index.json) and the
// writer (single file or shards) live here too. Every error names the file and the tensor.

import { type ByteSource, type Folder, readAllText } from "./bytesource.ts";
import { decodeInto, DTYPE_BYTES, encode, type FloatDtype } from "./dtypes.ts";
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
} from "./errors.ts";

/** The safetensors library refuses headers above 100 MB; so do we (it is not a safetensors file). */
export const MAX_HEADER_BYTES = 100_000_000;

/** Element sizes of every dtype the format defines (only F32/F16/BF16 can be decoded). */
const ELEMENT_BYTES: Readonly<Record<string, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
};

/** Bytes read per step when decoding a big tensor, so temporary memory stays bounded. */
const READ_CHUNK_BYTES = 32 << 20;

/** One tensor's header entry; `begin`/`end` are absolute byte offsets in the file. */
export interface TensorInfo {
  readonly name: string;
  readonly file: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly begin: number;
  readonly end: number;
}

/** Number of elements of a shape ([] is a scalar: 1). */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Throws ShapeMismatchError unless `actual` equals `expected` exactly. */
export function expectShape(
  file: string,
  tensor: string,
  actual: readonly number[],
  expected: readonly number[],
  hint?: string,
): void {
  if (actual.length !== expected.length || actual.some((d, i) => d !== expected[i])) {
    throw new ShapeMismatchError(file, tensor, expected, actual, hint);
  }
}

/** One .safetensors file: its parsed header, and tensors read on demand. */
export class SafetensorsFile {
  private constructor(
    private readonly src: ByteSource,
    readonly metadata: Readonly<Record<string, string>>,
    private readonly tensors: ReadonlyMap<string, TensorInfo>,
  ) {}

  /** File name (or URL) for messages. */
  get name(): string {
    return this.src.name;
  }

  /** Reads and validates the header; tensor data is not touched. */
  static async open(src: ByteSource): Promise<SafetensorsFile> {
    const file = src.name;
    if (src.size < 8) {
      throw new SafetensorsTruncatedError(
        file,
        null,
        `only ${src.size} bytes; a safetensors ` +
          `file starts with an 8-byte header length. Download or export the file again.`,
      );
    }
    const n = new DataView((await src.read(0, 8)).slice().buffer).getBigUint64(0, true);
    if (n < 2n || n > BigInt(MAX_HEADER_BYTES)) {
      throw new SafetensorsHeaderLengthError(
        file,
        null,
        `header length ${n} is outside ` +
          `[2, ${MAX_HEADER_BYTES}]; this is not a safetensors file (a PyTorch .bin or a Git LFS ` +
          `pointer?). Convert it to safetensors or download the real file.`,
      );
    }
    const headerLen = Number(n);
    if (8 + headerLen > src.size) {
      throw new SafetensorsTruncatedError(
        file,
        null,
        `the file (${src.size} bytes) ends ` +
          `inside its ${headerLen}-byte header; it was cut short. Download or export it again.`,
      );
    }
    const json = parseHeaderJson(file, await src.read(8, headerLen));
    const { metadata, tensors } = parseEntries(file, json, 8 + headerLen);
    checkDataFits(file, tensors, src.size);
    return new SafetensorsFile(src, metadata, tensors);
  }

  /** Tensor names, in header order. */
  names(): string[] {
    return [...this.tensors.keys()];
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** The header entry of `name`; MissingTensorError when absent. */
  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (t === undefined) {
      throw new MissingTensorError(
        this.name,
        name,
        `no such tensor in this file ` +
          `(it has ${this.tensors.size}); check the model type and config against the checkpoint`,
      );
    }
    return t;
  }

  /** The raw bytes of a tensor, any dtype. */
  async readBytes(name: string): Promise<Uint8Array> {
    const t = this.info(name);
    return await this.src.read(t.begin, t.end - t.begin);
  }

  /** Decodes a F32/F16/BF16 tensor into `out` (length = numel), reading in bounded chunks. */
  async readInto(name: string, out: Float32Array): Promise<void> {
    const t = this.info(name);
    const dtype = floatDtypeOf(t);
    const count = numel(t.shape);
    if (out.length !== count) {
      throw new RangeError(
        `${this.name}: readInto("${name}") needs ${count} floats, got ${out.length}`,
      );
    }
    const per = DTYPE_BYTES[dtype];
    const chunk = Math.max(1, Math.floor(READ_CHUNK_BYTES / per));
    for (let i = 0; i < count; i += chunk) {
      const m = Math.min(chunk, count - i);
      const bytes = await this.src.read(t.begin + i * per, m * per);
      decodeInto(dtype, bytes, out.subarray(i, i + m));
    }
  }

  /** Decodes a tensor to a new Float32Array, checking its shape first when `expected` is given. */
  async readF32(name: string, expected?: readonly number[]): Promise<Float32Array> {
    const t = this.info(name);
    if (expected !== undefined) expectShape(this.name, name, t.shape, expected);
    const out = new Float32Array(numel(t.shape));
    await this.readInto(name, out);
    return out;
  }

  close(): void {
    this.src.close();
  }
}

/** The decodable dtype of a tensor, or UnsupportedDtypeError naming it. */
export function floatDtypeOf(t: TensorInfo): FloatDtype {
  if (t.dtype === "F32" || t.dtype === "F16" || t.dtype === "BF16") return t.dtype;
  throw new UnsupportedDtypeError(
    t.file,
    t.name,
    `dtype ${t.dtype} cannot be read as float32 ` +
      `(only F32, F16, BF16); dequantize or convert the checkpoint first`,
  );
}

function parseHeaderJson(file: string, bytes: Uint8Array): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new SafetensorsHeaderError(
      file,
      null,
      `header is not valid UTF-8 JSON ` +
        `(${(e as Error).message}); the file is corrupt — download or export it again`,
      { cause: e },
    );
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new SafetensorsHeaderError(
      file,
      null,
      "header JSON is not an object; the file is corrupt",
    );
  }
  return json as Record<string, unknown>;
}

function isIndex(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** Validates every header entry; offsets are made absolute (data starts at `dataStart`). */
function parseEntries(file: string, json: Record<string, unknown>, dataStart: number) {
  let metadata: Record<string, string> = {};
  const tensors = new Map<string, TensorInfo>();
  for (const [name, raw] of Object.entries(json)) {
    if (name === "__metadata__") {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        throw new SafetensorsHeaderError(file, null, "__metadata__ is not a string map");
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
    const offsets = e?.data_offsets;
    if (
      typeof e !== "object" || e === null || typeof e.dtype !== "string" ||
      !Array.isArray(e.shape) || !e.shape.every(isIndex) ||
      !Array.isArray(offsets) || offsets.length !== 2
    ) {
      throw new SafetensorsHeaderError(
        file,
        name,
        "entry is not {dtype, shape, data_offsets}; " +
          "the file is corrupt",
      );
    }
    const [begin, end] = offsets;
    if (!isIndex(begin) || !isIndex(end) || begin > end) {
      throw new SafetensorsOffsetError(
        file,
        name,
        `data_offsets ${JSON.stringify(offsets)} ` +
          `are not two ordered non-negative integers; the file is corrupt`,
      );
    }
    const shape = e.shape as number[];
    const size = ELEMENT_BYTES[e.dtype];
    if (size !== undefined && end - begin !== numel(shape) * size) {
      throw new SafetensorsOffsetError(
        file,
        name,
        `data_offsets span ${end - begin} bytes but ` +
          `${e.dtype}[${shape.join(", ")}] needs ${numel(shape) * size}; the file is corrupt`,
      );
    }
    tensors.set(name, {
      name,
      file,
      dtype: e.dtype,
      shape,
      begin: dataStart + begin,
      end: dataStart + end,
    });
  }
  return { metadata, tensors };
}

/** The data region must lie inside the file; else it was truncated (or offsets are garbage). */
function checkDataFits(file: string, tensors: ReadonlyMap<string, TensorInfo>, size: number) {
  let last: TensorInfo | null = null;
  for (const t of tensors.values()) if (last === null || t.end > last.end) last = t;
  if (last !== null && last.end > size) {
    throw new SafetensorsTruncatedError(
      file,
      last.name,
      `data ends at byte ${last.end} but the ` +
        `file has ${size} bytes; it was cut short (incomplete download?). Download it again.`,
    );
  }
}

/** A tensor to write: float32 values, stored as `dtype` (default: the writer's dtype). */
export interface TensorToWrite {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: Float32Array;
  readonly dtype?: FloatDtype;
}

export interface WriteOptions {
  /** Storage dtype for tensors that do not name one (default F32). */
  readonly dtype?: FloatDtype;
  /** String metadata; `format: "pt"` is added because transformers insists on it. */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** Encodes tensors as one safetensors file (bytes). Order: widest dtype first, then by name. */
export function encodeSafetensors(tensors: readonly TensorToWrite[], opts: WriteOptions = {}) {
  const seen = new Set<string>();
  const items = tensors.map((t) => {
    if (t.name === "__metadata__" || seen.has(t.name)) {
      throw new SafetensorsError("<writer>", t.name, "duplicate or reserved tensor name");
    }
    seen.add(t.name);
    if (t.data.length !== numel(t.shape)) {
      throw new ShapeMismatchError(
        "<writer>",
        t.name,
        t.shape,
        [t.data.length],
        "the data length does not match the shape",
      );
    }
    const dtype = t.dtype ?? opts.dtype ?? "F32";
    return { name: t.name, shape: t.shape, dtype, bytes: encode(dtype, t.data) };
  });
  // Widest element first keeps every tensor aligned to its element size (as safetensors does).
  items.sort((a, b) => DTYPE_BYTES[b.dtype] - DTYPE_BYTES[a.dtype] || cmp(a.name, b.name));
  const header: Record<string, unknown> = { __metadata__: { format: "pt", ...opts.metadata } };
  let offset = 0;
  for (const it of items) {
    const end = offset + it.bytes.length;
    header[it.name] = { dtype: it.dtype, shape: it.shape, data_offsets: [offset, end] };
    offset = end;
  }
  let json = JSON.stringify(header);
  // Pad with spaces so the data region starts 8-byte aligned, like the reference writer.
  json += " ".repeat((8 - ((new TextEncoder().encode(json).length) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let pos = 8 + headerBytes.length;
  for (const it of items) {
    out.set(it.bytes, pos);
    pos += it.bytes.length;
  }
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Encodes tensors as HF-style shards (`model-00001-of-0000N.safetensors`, each at most about
 * `maxShardBytes`) plus `model.safetensors.index.json`. One shard gives just `model.safetensors`.
 */
export function encodeSharded(
  tensors: readonly TensorToWrite[],
  maxShardBytes: number,
  opts: WriteOptions = {},
): Map<string, Uint8Array> {
  const shards: TensorToWrite[][] = [[]];
  let used = 0;
  let total = 0;
  for (const t of tensors) {
    const bytes = t.data.length * DTYPE_BYTES[t.dtype ?? opts.dtype ?? "F32"];
    if (used > 0 && used + bytes > maxShardBytes) {
      shards.push([]);
      used = 0;
    }
    shards[shards.length - 1].push(t);
    used += bytes;
    total += bytes;
  }
  const files = new Map<string, Uint8Array>();
  if (shards.length === 1) {
    files.set("model.safetensors", encodeSafetensors(tensors, opts));
    return files;
  }
  const n = shards.length;
  const pad = (i: number) => String(i).padStart(5, "0");
  const weightMap: Record<string, string> = {};
  shards.forEach((shard, i) => {
    const fname = `model-${pad(i + 1)}-of-${pad(n)}.safetensors`;
    files.set(fname, encodeSafetensors(shard, opts));
    for (const t of shard) weightMap[t.name] = fname;
  });
  const index = { metadata: { total_size: total }, weight_map: weightMap };
  files.set(
    "model.safetensors.index.json",
    new TextEncoder().encode(JSON.stringify(index, null, 2)),
  );
  return files;
}

/** A model's weights in one folder: a single file, or shards listed by an index.json. */
export class SafetensorsCheckpoint {
  private constructor(
    readonly name: string,
    private readonly where: ReadonlyMap<string, SafetensorsFile>,
    private readonly files: readonly SafetensorsFile[],
  ) {}

  /**
   * Opens `<weights>.index.json` if the folder has one, else `<weights>` (default
   * "model.safetensors"; pass "adapter_model.safetensors" for a PEFT adapter). Reads headers only.
   */
  static async open(folder: Folder, weights = "model.safetensors"): Promise<SafetensorsCheckpoint> {
    const indexName = `${weights}.index.json`;
    const indexSrc = await folder.open(indexName);
    if (indexSrc === null) {
      const src = await folder.open(weights);
      if (src === null) {
        throw new ReadError(
          folder.name,
          `no ${weights} or ${indexName}; a PyTorch .bin ` +
            `checkpoint must be converted to safetensors first`,
        );
      }
      const f = await SafetensorsFile.open(src);
      return new SafetensorsCheckpoint(folder.name, new Map(f.names().map((n) => [n, f])), [f]);
    }
    const indexFile = `${folder.name}/${indexName}`;
    const weightMap = parseIndex(indexFile, await readAllText(indexSrc));
    indexSrc.close();
    const shards = new Map<string, SafetensorsFile>();
    const where = new Map<string, SafetensorsFile>();
    for (const [tensor, shardName] of Object.entries(weightMap)) {
      let shard = shards.get(shardName);
      if (shard === undefined) {
        const src = await folder.open(shardName);
        if (src === null) {
          throw new MissingTensorError(
            indexFile,
            tensor,
            `the index puts it in ${shardName}, ` +
              `which is not in the folder; download all shards`,
          );
        }
        shard = await SafetensorsFile.open(src);
        shards.set(shardName, shard);
      }
      if (!shard.has(tensor)) {
        throw new MissingTensorError(
          shard.name,
          tensor,
          `the index puts it in this shard but the ` +
            `shard has no such tensor; the index and shards do not match`,
        );
      }
      where.set(tensor, shard);
    }
    return new SafetensorsCheckpoint(folder.name, where, [...shards.values()]);
  }

  names(): string[] {
    return [...this.where.keys()];
  }

  has(name: string): boolean {
    return this.where.has(name);
  }

  /** Header entry of a tensor (its `file` says which shard); MissingTensorError when absent. */
  info(name: string): TensorInfo {
    const f = this.where.get(name);
    if (f === undefined) {
      throw new MissingTensorError(
        this.name,
        name,
        `not in this checkpoint; check that the ` +
          `config's model_type and tie_word_embeddings match the weights`,
      );
    }
    return f.info(name);
  }

  async readInto(name: string, out: Float32Array): Promise<void> {
    this.info(name);
    await this.where.get(name)!.readInto(name, out);
  }

  async readF32(name: string, expected?: readonly number[]): Promise<Float32Array> {
    this.info(name);
    return await this.where.get(name)!.readF32(name, expected);
  }

  close(): void {
    for (const f of this.files) f.close();
  }
}

function parseIndex(file: string, text: string): Record<string, string> {
  let json: { weight_map?: unknown };
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new SafetensorsIndexError(file, null, `not valid JSON (${(e as Error).message})`);
  }
  const map = json?.weight_map;
  if (
    typeof map !== "object" || map === null || Array.isArray(map) ||
    !Object.values(map).every((v) => typeof v === "string" && !v.includes("/"))
  ) {
    throw new SafetensorsIndexError(
      file,
      null,
      "weight_map must map tensor names to shard " +
        "file names in the same folder",
    );
  }
  return map as Record<string, string>;
}
