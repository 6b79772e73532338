// Model parameters on the GPU: the flat layout uploaded into as few buffers as the adapter
// allows (tensors keep their 256-byte alignment), each tensor exposed as a bindable range —
// or, for a tensor larger than one storage binding (the vocabulary-sized embedding and LM head
// of real models, a large MLP weight), as row chunks: each chunk is a range of whole rows of
// shape[0] starting on a 256-byte boundary and at most one binding long. Gradients and Adam
// moments are allocated with the same placement, so chunk k of a gradient mirrors chunk k of its
// parameter. Only the GPU placement is chunked: files and CPU arrays keep one tensor.

import { type BufferRef, readFloat32 } from "../gpu/buffers.ts";
import { GpuLimitError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import { halfValue, packHalves } from "../ops/matmul_half.ts";
import type { ModelWeights, ParamTensor } from "./weights.ts";

/** A bindable range of a buffer. */
export interface BufferRange {
  readonly buffer: GPUBuffer;
  readonly offset: number;
  readonly size: number;
}

/** Rows [rowStart, rowStart + rows) of a tensor's shape[0], stored in one binding. */
export interface ParamChunk {
  readonly rowStart: number;
  readonly rows: number;
  /** Offset a multiple of 256 bytes; size rows × (floats per row) × 4 ≤ the binding limit. */
  readonly ref: BufferRange;
}

/** Limits a placement plans with (defaults from the Gpu). */
export interface ParamPlacement {
  /** Largest binding, bytes (default gpu.maxBindingBytes, i.e. the device's limit unless capped). */
  readonly maxBindingBytes: number;
  /** Largest buffer, bytes (default min(maxBufferSize, 1 GiB)). */
  readonly maxBufferBytes: number;
}

export interface GpuParams {
  /**
   * The range of one tensor; throws GpuLimitError for a split tensor (use `chunks`) and for one
   * stored as half floats (`isHalf`: bind its chunks to the kernels that read halves).
   */
  ref(t: ParamTensor): BufferRef;
  /** The tensor's row chunks in order: one chunk covering the whole tensor unless it is split. */
  chunks(t: ParamTensor): readonly ParamChunk[];
  /** Whether the tensor is stored as more than one chunk. */
  isSplit(t: ParamTensor): boolean;
  /**
   * Whether the tensor is stored as half floats, two to a u32 (a frozen weight: uploadParams'
   * `half`); its chunks' ranges are then in those bytes.
   */
  isHalf(t: ParamTensor): boolean;
  /** True when some tensor is split. */
  readonly anySplit: boolean;
  /** The limits this placement was planned with (allocate mirrors with the same). */
  readonly placement: ParamPlacement;
  readonly buffers: readonly GPUBuffer[];
  readonly bytes: number;
  destroy(): void;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(bytes < 2 ** 20 ? 3 : 0)} MiB`;

/** A chunk before placement: row range and float range in the flat layout. */
interface ChunkPlan {
  rowStart: number;
  rows: number;
  offset: number;
  size: number;
}

/**
 * Splits a tensor into row chunks of at most `maxBindingBytes` each, every chunk starting on a
 * 256-byte boundary; chunks hold equal row counts (a multiple of 4 where possible, so the vec4
 * matmul kernels apply) except a shorter last one. A tensor that fits is one chunk.
 * `bytes`: bytes per element (4, or 2 for half floats). Throws GpuLimitError when no split can
 * fit: a 1-D tensor, or one row over the limit.
 */
export function planChunks(t: ParamTensor, maxBindingBytes: number, bytes = 4): ChunkPlan[] {
  if (t.size * bytes <= maxBindingBytes) {
    return [{ rowStart: 0, rows: t.shape[0] ?? 1, offset: t.offset, size: t.size }];
  }
  const what = `tensor ${t.name} [${t.shape.join(", ")}] (${mib(t.size * bytes)})`;
  const limit = `the ${mib(maxBindingBytes)} (${maxBindingBytes}-byte) storage binding limit`;
  const advice =
    "use an adapter with a larger maxStorageBufferBindingSize (a GPU rather than a software " +
    "adapter; Gpu.create requests the adapter's maximum) or a smaller model";
  if (t.shape.length < 2) {
    throw new GpuLimitError(
      `${what} is over ${limit} and is 1-D, so it cannot be split into row chunks; ${advice}`,
    );
  }
  const R = t.shape[0], rowFloats = t.size / R;
  if (rowFloats * bytes > maxBindingBytes) {
    throw new GpuLimitError(
      `${what} is over ${limit}, and a single row of it (${
        rowFloats * bytes
      } bytes) is too, so splitting ` +
        `it into row chunks cannot help; ${advice}`,
    );
  }
  // Rows per chunk keep every chunk's start 256-byte aligned: a multiple of rowAlign rows.
  const align = 256 / bytes;
  const rowAlign = align / gcd(rowFloats, align);
  const maxRows = Math.floor(Math.floor(maxBindingBytes / (rowFloats * bytes)) / rowAlign) *
    rowAlign;
  if (maxRows === 0) {
    throw new GpuLimitError(
      `${what} is over ${limit}; its chunks must hold a multiple of ${rowAlign} rows (${
        rowAlign * rowFloats * bytes
      } ` +
        `bytes) to start on 256-byte boundaries, which does not fit one binding; ${advice}`,
    );
  }
  const u4 = rowAlign * 4 / gcd(rowAlign, 4);
  const unit = u4 <= maxRows ? u4 : rowAlign;
  const cap = Math.floor(maxRows / unit) * unit;
  const n = Math.ceil(R / cap);
  const rows = Math.min(cap, Math.ceil(Math.ceil(R / n) / unit) * unit);
  const out: ChunkPlan[] = [];
  for (let r = 0; r < R; r += rows) {
    const k = Math.min(rows, R - r);
    out.push({ rowStart: r, rows: k, offset: t.offset + r * rowFloats, size: k * rowFloats });
  }
  return out;
}

/** The default placement limits of a device. */
export function defaultPlacement(gpu: Gpu): ParamPlacement {
  return {
    maxBindingBytes: gpu.maxBindingBytes,
    maxBufferBytes: Math.min(gpu.device.limits.maxBufferSize, 2 ** 30),
  };
}

/**
 * Places the layout's tensors into buffers (a new buffer starts where the next tensor — or, for a
 * tensor larger than a buffer, the next chunk — would not fit under maxBufferBytes, so buffers
 * break where they always did unless a tensor outgrows a buffer); `data` null gives zero-filled buffers
 * (gradients, optimizer moments) with the same placement as the parameters. Pass the parameters'
 * `placement` when allocating such mirrors. Tensors larger than one binding become row chunks
 * (see planChunks); GpuLimitError names a tensor that cannot be split.
 */
export function allocParams(
  gpu: Gpu,
  w: ModelWeights,
  data: Float32Array | null,
  label = "params",
  placement: Partial<ParamPlacement> = {},
  half: (t: ParamTensor) => boolean = () => false,
): GpuParams {
  const place: ParamPlacement = { ...defaultPlacement(gpu), ...placement };
  const halves = new Set(data ? w.layout.tensors.filter(half) : []);
  // With half tensors, the f32 ones (norms, biases) are packed into a compact copy of their own
  // (each at a 64-float boundary): `at` gives a tensor's place there, `src` the data.
  const f32 = w.layout.tensors.filter((t) => !halves.has(t));
  let src = data, at = (t: ParamTensor) => t;
  if (halves.size) {
    const moved = new Map<ParamTensor, ParamTensor>();
    let off = 0;
    for (const t of f32) {
      moved.set(t, { ...t, offset: off });
      off += Math.ceil(t.size / 64) * 64;
    }
    const compact = new Float32Array(Math.max(off, 1));
    for (const t of f32) {
      compact.set(data!.subarray(t.offset, t.offset + t.size), moved.get(t)!.offset);
    }
    src = compact;
    at = (t) => moved.get(t)!;
  }
  const plans = new Map<ParamTensor, ChunkPlan[]>(
    f32.map((t) => [t, planChunks(at(t), place.maxBindingBytes)]),
  );
  // Buffers break at tensor boundaries as long as tensors fit one buffer (so the grouping, and the
  // optimizer state saved per buffer, do not depend on the binding limit); a larger tensor is
  // placed chunk by chunk and may span buffers.
  const groups: { start: number; end: number }[] = [];
  const place1 = (name: string, offset: number, size: number) => {
    if (size * 4 > place.maxBufferBytes) {
      throw new GpuLimitError(
        `tensor ${name}: a chunk of ${
          size * 4
        } bytes does not fit the ${place.maxBufferBytes}-byte buffer limit; ` +
          `use maxBindingBytes ≤ maxBufferBytes`,
      );
    }
    const g = groups[groups.length - 1], end = offset + size;
    if (g && (end - g.start) * 4 <= place.maxBufferBytes) g.end = end;
    else groups.push({ start: offset, end });
  };
  for (const t of f32) {
    if (t.size * 4 <= place.maxBufferBytes) place1(t.name, at(t).offset, t.size);
    else for (const c of plans.get(t)!) place1(t.name, c.offset, c.size);
  }
  const buffers = groups.map((g, i) =>
    src
      ? gpu.upload(src.subarray(g.start, g.end), `${label}[${i}]`)
      : gpu.zeros(g.end - g.start, `${label}[${i}]`)
  );
  const where = new Map<ParamTensor, ParamChunk[]>();
  let gi = 0;
  for (const t of f32) {
    where.set(
      t,
      plans.get(t)!.map((c) => {
        while (!(c.offset >= groups[gi].start && c.offset + c.size <= groups[gi].end)) gi++;
        const ref = {
          buffer: buffers[gi],
          offset: (c.offset - groups[gi].start) * 4,
          size: Math.max(4, c.size * 4),
        };
        return { rowStart: c.rowStart, rows: c.rows, ref };
      }),
    );
  }
  if (halves.size) placeHalves(gpu, [...halves], data!, `${label}.half`, place, buffers, where);
  const get = (t: ParamTensor) => {
    const r = where.get(t);
    if (!r) throw new GpuLimitError(`tensor ${t.name} is not part of these parameters`);
    return r;
  };
  return {
    ref(t) {
      const c = get(t);
      if (halves.has(t)) {
        throw new GpuLimitError(
          `tensor ${t.name} is stored as half floats: bind its chunks to kernels that read halves`,
        );
      }
      if (c.length > 1) {
        throw new GpuLimitError(
          `tensor ${t.name} [${
            t.shape.join(", ")
          }] is stored as ${c.length} row chunks (over the ` +
            `${place.maxBindingBytes}-byte binding limit); bind each of chunks(t) instead of the whole tensor`,
        );
      }
      return c[0].ref;
    },
    chunks: get,
    isSplit: (t) => get(t).length > 1,
    isHalf: (t) => halves.has(t),
    anySplit: [...where.values()].some((c) => c.length > 1),
    placement: place,
    buffers,
    bytes: buffers.reduce((s, b) => s + b.size, 0),
    destroy: () => buffers.forEach((b) => b.destroy()),
  };
}

/**
 * The tensors `half` names, as packed half floats (src/ops/matmul_half.ts), in buffers of their
 * own: each chunk (planned at 2 bytes an element) on a 256-byte boundary, a new buffer where the
 * next chunk would pass maxBufferBytes. Adds the buffers to `buffers` and the chunks to `where`.
 */
function placeHalves(
  gpu: Gpu,
  tensors: ParamTensor[],
  data: Float32Array,
  label: string,
  place: ParamPlacement,
  buffers: GPUBuffer[],
  where: Map<ParamTensor, ParamChunk[]>,
) {
  type Placed = { t: ParamTensor; c: ChunkPlan; buf: number; at: number; bytes: number };
  const placed: Placed[] = [];
  const ends: number[] = [0];
  for (const t of tensors) {
    const rowFloats = t.size / (t.shape[0] ?? 1);
    for (const c of planChunks(t, place.maxBindingBytes, 2)) {
      const bytes = Math.max(8, Math.ceil(c.rows * rowFloats / 2) * 4); // whole u32s
      const b = ends.length - 1;
      const at = Math.ceil(ends[b] / 256) * 256;
      if (at + bytes > place.maxBufferBytes && ends[b] > 0) {
        ends.push(bytes);
        placed.push({ t, c, buf: b + 1, at: 0, bytes });
      } else {
        ends[b] = at + bytes;
        placed.push({ t, c, buf: b, at, bytes });
      }
    }
  }
  const packed = ends.map((e) => new Uint32Array(Math.ceil(e / 4)));
  for (const p of placed) {
    const rowFloats = p.t.size / (p.t.shape[0] ?? 1);
    const start = p.t.offset + p.c.rowStart * rowFloats;
    packed[p.buf].set(packHalves(data.subarray(start, start + p.c.rows * rowFloats)), p.at / 4);
  }
  const first = buffers.length;
  packed.forEach((a, i) => buffers.push(gpu.upload(a, `${label}[${i}]`)));
  for (const p of placed) {
    const ref = { buffer: buffers[first + p.buf], offset: p.at, size: p.bytes };
    const list = where.get(p.t) ?? [];
    list.push({ rowStart: p.c.rowStart, rows: p.c.rows, ref });
    where.set(p.t, list);
  }
}

/**
 * Uploads every tensor (large ones as row chunks); throws GpuLimitError for one that cannot be
 * split. `half`: the tensors to store as half floats (frozen weights read by half-B kernels).
 */
export function uploadParams(
  gpu: Gpu,
  w: ModelWeights,
  label = "params",
  placement: Partial<ParamPlacement> = {},
  half?: (t: ParamTensor) => boolean,
): GpuParams {
  return allocParams(gpu, w, w.data, label, placement, half);
}

/** One tensor back on the CPU, its chunks concatenated (waits for the GPU; halves widened). */
export async function readParamTensor(
  gpu: Gpu,
  params: GpuParams,
  t: ParamTensor,
): Promise<Float32Array> {
  const out = new Float32Array(t.size);
  const rowFloats = t.size / (t.shape[0] ?? 1);
  for (const c of params.chunks(t)) {
    const n = c.rows * rowFloats;
    if (params.isHalf(t)) {
      // Packed halves: read the u32 words (as bits) and widen.
      const words = new Uint32Array(
        (await readFloat32(gpu.device, c.ref, Math.ceil(n / 2))).buffer,
      );
      const v = Float32Array.from(
        { length: n },
        (_, i) => halfValue((words[i >> 1] >>> (16 * (i & 1))) & 0xffff),
      );
      out.set(v, c.rowStart * rowFloats);
    } else out.set(await readFloat32(gpu.device, c.ref, n), c.rowStart * rowFloats);
  }
  return out;
}
