// Model parameters on the GPU: the flat layout uploaded into as few buffers as the adapter
// allows (tensors keep their 256-byte alignment), each tensor exposed as a bindable range.

import type { BufferRef } from "../gpu/buffers.ts";
import { GpuLimitError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { ModelWeights, ParamTensor } from "./weights.ts";

export interface GpuParams {
  /** The range of one tensor. */
  ref(t: ParamTensor): BufferRef;
  readonly buffers: readonly GPUBuffer[];
  readonly bytes: number;
  destroy(): void;
}

function checkBindingLimit(gpu: Gpu, w: ModelWeights) {
  const maxBinding = gpu.device.limits.maxStorageBufferBindingSize;
  for (const t of w.layout.tensors) {
    if (t.size * 4 > maxBinding) {
      throw new GpuLimitError(
        `tensor ${t.name} [${t.shape.join(", ")}] is ${(t.size * 4 / 2 ** 20).toFixed(0)} MiB, over this ` +
          `adapter's ${(maxBinding / 2 ** 20).toFixed(0)} MiB storage binding limit; splitting one tensor ` +
          `across bindings is not implemented yet: use a smaller model or an adapter with a larger limit`,
      );
    }
  }
}

/**
 * Places the layout's tensors into buffers (a new buffer starts where the next tensor would
 * not fit under min(maxBufferSize, 1 GiB)); `data` null gives zero-filled buffers (gradients,
 * optimizer moments) with the same placement as the parameters.
 */
export function allocParams(gpu: Gpu, w: ModelWeights, data: Float32Array | null, label = "params"): GpuParams {
  checkBindingLimit(gpu, w);
  const maxBuffer = Math.min(gpu.device.limits.maxBufferSize, 2 ** 30);
  const groups: { start: number; end: number }[] = [];
  for (const t of w.layout.tensors) {
    const g = groups[groups.length - 1];
    const end = t.offset + t.size;
    if (g && (end - g.start) * 4 <= maxBuffer) g.end = end;
    else groups.push({ start: t.offset, end });
  }
  const buffers = groups.map((g, i) =>
    data ? gpu.upload(data.subarray(g.start, g.end), `${label}[${i}]`) : gpu.zeros(g.end - g.start, `${label}[${i}]`)
  );
  const where = new Map<ParamTensor, BufferRef>();
  for (const t of w.layout.tensors) {
    const gi = groups.findIndex((g) => t.offset >= g.start && t.offset + t.size <= g.end);
    where.set(t, { buffer: buffers[gi], offset: (t.offset - groups[gi].start) * 4, size: Math.max(4, t.size * 4) });
  }
  return {
    ref(t) {
      const r = where.get(t);
      if (!r) throw new GpuLimitError(`tensor ${t.name} is not part of these parameters`);
      return r;
    },
    buffers,
    bytes: buffers.reduce((s, b) => s + b.size, 0),
    destroy: () => buffers.forEach((b) => b.destroy()),
  };
}

/** Uploads every tensor; throws GpuLimitError naming a tensor larger than one binding. */
export function uploadParams(gpu: Gpu, w: ModelWeights, label = "params"): GpuParams {
  return allocParams(gpu, w, w.data, label);
}
