// The GPU layer's front door: one object per device holding the pipeline cache, the buffer
// pool and helpers to upload, record, submit and read back.

import {
  BufferPool,
  type BufferRef,
  createBufferFrom,
  readBuffer,
  readFloat32,
  STORAGE,
} from "./buffers.ts";
import {
  bindingCap,
  createGpu,
  type CreateGpuOptions,
  describeGpu,
  type GpuContext,
} from "./device.ts";
import { type BindingKind, type Kernel, type KernelSpec, PipelineCache } from "./pipelines.ts";
import { readbackFor } from "./readback.ts";
import { DEFAULT_SUBMIT_CHUNK, Recorder, RecordingCache } from "./recorder.ts";

export * from "./buffers.ts";
export * from "./device.ts";
export * from "./errors.ts";
export * from "./pipelines.ts";
export * from "./readback.ts";
export * from "./recorder.ts";
export { registerShaders, shaderSource } from "./shaders.ts";

export class Gpu {
  readonly pipelines: PipelineCache;
  readonly pool: BufferPool;
  /** The uniform arenas and bind groups one-shot recordings share (RecordingCache). */
  readonly recordings: RecordingCache;

  private constructor(readonly ctx: GpuContext, shared?: Gpu) {
    this.pipelines = shared?.pipelines ?? new PipelineCache(ctx.device);
    this.pool = shared?.pool ?? new BufferPool(ctx.device);
    this.recordings = shared?.recordings ?? new RecordingCache(ctx.device);
  }

  static async create(options: CreateGpuOptions = {}): Promise<Gpu> {
    return new Gpu(await createGpu(options));
  }

  get device(): GPUDevice {
    return this.ctx.device;
  }

  /**
   * The storage binding size parameter placement (src/model/gpu_params.ts) and the optimizer plan
   * with: the device's maxStorageBufferBindingSize unless capped with `maxBindingBytes`.
   */
  get maxBindingBytes(): number {
    return this.ctx.maxBindingBytes;
  }

  /**
   * The same device, pipeline cache and buffer pool with parameter bindings capped at `bytes`
   * (a test seam: tensors over the cap are stored as row chunks). Destroying either destroys both.
   */
  withMaxBindingBytes(bytes: number): Gpu {
    const cap = bindingCap(this.device.limits.maxStorageBufferBindingSize, bytes);
    return new Gpu({ ...this.ctx, maxBindingBytes: cap }, this);
  }

  get adapterClass(): "cpu" | "gpu" {
    return this.ctx.info.adapterClass;
  }

  /**
   * Whether WGSL may read storage textures (`texture_storage_2d<F, read>`, the language feature
   * readonly_and_readwrite_storage_textures): the weight-texture kernels need it.
   */
  get readOnlyStorageTextures(): boolean {
    return this.ctx.wgslFeatures.has("readonly_and_readwrite_storage_textures");
  }

  /**
   * Whether kernels may use subgroup operations: the device has the "subgroups" feature, WGSL
   * has the subgroup_id builtins (the language feature subgroup_id), and the adapter's
   * subgroups hold at least 4 invocations (WebGPU's minimum; Deno's adapters list none, Chrome's
   * do). Turned off by creating the Gpu with `disableFeatures: ["subgroups"]`.
   */
  get subgroups(): boolean {
    const min = (this.ctx.adapter.info as { subgroupMinSize?: number } | undefined)
      ?.subgroupMinSize ?? 4;
    return this.ctx.has("subgroups") && this.ctx.wgslFeatures.has("subgroup_id") && min >= 4;
  }

  describe(): string {
    return describeGpu(this.ctx);
  }

  kernel(spec: KernelSpec): Promise<Kernel> {
    return this.pipelines.kernel(spec);
  }

  /** kernel() with the spec's fields as arguments (the model kernels build dozens this way). */
  kernelOf(
    shader: string,
    entry: string,
    bindings: readonly BindingKind[],
    constants?: Record<string, number>,
  ): Promise<Kernel> {
    return this.pipelines.kernel({ shader, entry, bindings, constants });
  }

  recorder(label?: string): Recorder {
    return new Recorder(
      this.device,
      label,
      this.adapterClass === "gpu" ? DEFAULT_SUBMIT_CHUNK : Infinity,
      this.recordings,
    );
  }

  /** A new storage buffer with the given contents. */
  upload(data: ArrayBufferView, label?: string, usage = STORAGE): GPUBuffer {
    return createBufferFrom(this.device, data, usage, label);
  }

  /** A new zero-filled storage buffer of `floats` 32-bit elements. */
  zeros(floats: number, label?: string, usage = STORAGE): GPUBuffer {
    return this.device.createBuffer({
      size: Math.max(16, Math.ceil(floats / 4) * 16),
      usage,
      label,
    });
  }

  write(ref: GPUBuffer, data: ArrayBufferView, byteOffset = 0): void {
    this.device.queue.writeBuffer(ref, byteOffset, data.buffer, data.byteOffset, data.byteLength);
  }

  read(ref: BufferRef, bytes?: number): Promise<ArrayBuffer> {
    return readBuffer(this.device, ref, bytes);
  }

  readFloat32(ref: BufferRef, count?: number): Promise<Float32Array> {
    return readFloat32(this.device, ref, count);
  }

  /** Resolves when all work submitted so far has finished. */
  sync(): Promise<void> {
    return readbackFor(this.device).sync();
  }

  destroy(): void {
    this.pool.destroy();
    this.recordings.destroy();
    readbackFor(this.device).destroy();
    this.device.destroy();
  }
}
