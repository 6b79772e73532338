// Buffers: typed creation and upload, a pool that recycles buffers by size class and usage,
// and readback helpers (the only places the CPU waits on the GPU).

import { GpuLimitError } from "./errors.ts";
import { readbackFor } from "./readback.ts";

export const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** A whole buffer or a byte range of one; every kernel binding takes this. */
export type BufferRef = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

export interface ResolvedRange {
  buffer: GPUBuffer;
  offset: number;
  size: number;
}

export function resolveRange(ref: BufferRef): ResolvedRange {
  if ("buffer" in ref && !("mapState" in ref)) {
    const offset = ref.offset ?? 0;
    return { buffer: ref.buffer, offset, size: ref.size ?? ref.buffer.size - offset };
  }
  const b = ref as GPUBuffer;
  return { buffer: b, offset: 0, size: b.size };
}

/** Rounds a byte size up to a pool size class: powers of two, then 1/8 steps above 1 MiB. */
export function sizeClass(bytes: number): number {
  const n = Math.max(16, Math.ceil(bytes / 16) * 16);
  const p = 2 ** Math.ceil(Math.log2(n));
  if (p <= 1 << 20) return p;
  const step = p / 8;
  return Math.ceil(n / step) * step;
}

/** Recycles buffers of the same size class and usage (hot loops allocate nothing). */
export class BufferPool {
  private free = new Map<string, GPUBuffer[]>();
  private live = new Set<GPUBuffer>();
  bytesAllocated = 0;

  constructor(private device: GPUDevice) {}

  acquire(bytes: number, usage: number = STORAGE, label?: string): GPUBuffer {
    const size = sizeClass(bytes);
    if (size > this.device.limits.maxBufferSize) {
      throw new GpuLimitError(
        `buffer of ${bytes} bytes exceeds this adapter's maxBufferSize ` +
          `(${this.device.limits.maxBufferSize}); split the tensor or use a smaller model/batch`,
      );
    }
    let buf = this.free.get(`${size}:${usage}`)?.pop();
    if (!buf) {
      buf = this.device.createBuffer({ size, usage, label });
      this.bytesAllocated += size;
    }
    this.live.add(buf);
    return buf;
  }

  release(buf: GPUBuffer): void {
    if (!this.live.delete(buf)) return;
    const key = `${buf.size}:${buf.usage}`;
    const list = this.free.get(key) ?? [];
    list.push(buf);
    this.free.set(key, list);
  }

  /** Destroys every pooled buffer, free or not. */
  destroy(): void {
    for (const list of this.free.values()) for (const b of list) b.destroy();
    for (const b of this.live) b.destroy();
    this.free.clear();
    this.live.clear();
    this.bytesAllocated = 0;
  }
}

/**
 * From this size on, createBufferFrom fills a COPY_DST buffer with queue.writeBuffer rather than
 * mapping it at creation: Deno's getMappedRange took 7.1–7.5 s for a 538 MB buffer (a 135M
 * model's parameters) on llvmpipe, where writeBuffer took 1.8–2.4 s (2026-11-26, 2-core EPYC,
 * under load); trainer creation for the 135M shape took 25 s on the H100.
 */
export const WRITE_UPLOAD_BYTES = 1 << 20;

/** A new storage buffer holding `data` (padded to 4 bytes). */
export function createBufferFrom(
  device: GPUDevice,
  data: ArrayBufferView,
  usage: number = STORAGE,
  label?: string,
): GPUBuffer {
  const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
  if (
    data.byteLength >= WRITE_UPLOAD_BYTES && data.byteLength % 4 === 0 &&
    (usage & GPUBufferUsage.COPY_DST) !== 0
  ) {
    // Queue order makes the contents visible to everything submitted afterwards, as a mapped
    // creation does; the bytes are the same.
    const buf = device.createBuffer({ size, usage, label });
    device.queue.writeBuffer(buf, 0, data.buffer, data.byteOffset, data.byteLength);
    return buf;
  }
  const buf = device.createBuffer({ size, usage, mappedAtCreation: true, label });
  new Uint8Array(buf.getMappedRange()).set(
    new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  );
  buf.unmap();
  return buf;
}

/**
 * Copies a buffer range back to the CPU once the work submitted before it has finished
 * (through the device's staging buffers: src/gpu/readback.ts).
 */
export function readBuffer(
  device: GPUDevice,
  ref: BufferRef,
  bytes?: number,
): Promise<ArrayBuffer> {
  const r = resolveRange(ref);
  return readbackFor(device).read(r.buffer, r.offset, Math.ceil((bytes ?? r.size) / 4) * 4);
}

export async function readFloat32(
  device: GPUDevice,
  ref: BufferRef,
  count?: number,
): Promise<Float32Array> {
  return new Float32Array(
    await readBuffer(device, ref, count === undefined ? undefined : count * 4),
  );
}

export async function readUint32(
  device: GPUDevice,
  ref: BufferRef,
  count?: number,
): Promise<Uint32Array> {
  return new Uint32Array(
    await readBuffer(device, ref, count === undefined ? undefined : count * 4),
  );
}
