// Named errors of the GPU layer. Callers tell them apart by `name` (it survives comlink),
// and every message says what to do next.

/** Base class: sets `name` from the subclass so errors stay recognisable across workers. */
export class GpuError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The host has no WebGPU, or no adapter could be had. */
export class NoWebGPUError extends GpuError {}

/** requestDevice failed, or asked for more than the adapter allows. */
export class DeviceRequestError extends GpuError {}

/** A WGSL module failed to compile; the message carries the compiler's diagnostics. */
export class ShaderCompileError extends GpuError {
  constructor(readonly shader: string, readonly diagnostics: string[]) {
    super(`WGSL shader "${shader}" failed to compile:\n${diagnostics.join("\n")}`);
  }
}

/** Pipeline creation was rejected (bad layout, missing entry point, bad override constant). */
export class PipelineCreationError extends GpuError {}

/** The GPUDevice was lost. Rebuild the device and everything on it (or resume from a checkpoint). */
export class DeviceLostError extends GpuError {
  constructor(readonly reason: string, message: string) {
    super(
      `The WebGPU device was lost (${reason}): ${message}. ` +
        `Create a new device with createGpu() and rebuild; training resumes from the last checkpoint.`,
    );
  }
}

/** A buffer, binding or dispatch exceeds this adapter's limits. */
export class GpuLimitError extends GpuError {}

/** Arguments to a kernel do not fit its contract (shapes, sizes, alignment). */
export class KernelArgumentError extends GpuError {}

/** How to get a WebGPU adapter on this kind of host. */
export function noAdapterAdvice(): string {
  return [
    "No WebGPU adapter is available.",
    "- Deno on Linux without a GPU: install a Vulkan software driver, e.g. as root on Debian/Ubuntu:",
    "    apt-get update && apt-get install -y mesa-vulkan-drivers",
    "  (npm install runs this for you when it can), then run again.",
    "- Chromium/Chrome: use a recent version; on Linux start it with --enable-unsafe-webgpu",
    "  (and --enable-features=Vulkan where needed); serve pages from http://127.0.0.1 or https.",
    "- A machine with a GPU needs only its normal graphics driver.",
  ].join("\n");
}
