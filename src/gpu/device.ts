// Adapter and device: ask for the adapter's real limits and useful features, classify the
// adapter (CPU fallback vs GPU) so kernels can pick variants, and report device loss.

import { envVar, webgpu } from "../runtime.ts";
import { DeviceLostError, DeviceRequestError, noAdapterAdvice, NoWebGPUError } from "./errors.ts";

/** Coarse adapter families; kernel variants are chosen per class in the kernel lab. */
export type AdapterClass = "cpu" | "gpu";

/** Optional features this project uses when present. */
export const WANTED_FEATURES = ["shader-f16", "subgroups", "timestamp-query"] as const;
export type WantedFeature = typeof WANTED_FEATURES[number];

/** Limits requested at the adapter's maximum (defaults are far lower, e.g. 128 MiB bindings). */
const WANTED_LIMITS = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBuffersPerShaderStage",
  "maxUniformBufferBindingSize",
  "maxBindGroups",
] as const;

export interface AdapterDescription {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallback: boolean;
  adapterClass: AdapterClass;
}

export interface GpuContext {
  adapter: GPUAdapter;
  device: GPUDevice;
  info: AdapterDescription;
  features: ReadonlySet<string>;
  limits: GPUSupportedLimits;
  /** navigator.gpu.wgslLanguageFeatures (empty where the implementation does not list them). */
  wgslFeatures: ReadonlySet<string>;
  /** Resolves once, if the device is lost; `destroy()` losses are reported too. */
  lost: Promise<DeviceLostError>;
  /** min(CreateGpuOptions.maxBindingBytes, limits.maxStorageBufferBindingSize). */
  maxBindingBytes: number;
  has(feature: WantedFeature): boolean;
}

/** The binding size parameter placement plans with: the device's limit, or a smaller cap. */
export function bindingCap(deviceLimit: number, cap: number | undefined): number {
  if (cap === undefined) return deviceLimit;
  if (!Number.isInteger(cap) || cap < 256) {
    throw new RangeError(`maxBindingBytes ${cap} must be an integer ≥ 256 (bytes)`);
  }
  return Math.min(cap, deviceLimit);
}

export interface CreateGpuOptions {
  powerPreference?: GPUPowerPreference;
  /** Force a CPU-class or GPU-class choice of kernel variants (for the lab and tests). */
  adapterClass?: AdapterClass;
  /** Features to leave off even when present (to test fallbacks). */
  disableFeatures?: WantedFeature[];
  /** Called when the device is lost (in addition to the `lost` promise). */
  onLost?: (err: DeviceLostError) => void;
  /**
   * Caps the storage binding size that parameter placement and the optimizer plan with
   * (`Gpu.maxBindingBytes`) below the adapter's maxStorageBufferBindingSize: tensors larger than
   * the cap are stored as row chunks (src/model/gpu_params.ts). A test seam that forces splitting
   * on tiny models; other buffers are still checked against the device's own limit. At least 256.
   */
  maxBindingBytes?: number;
  /**
   * Asks the device for at most these limits (where the adapter offers more): a test seam that
   * makes a device as a browser's would be, e.g. { maxStorageBuffersPerShaderStage: 10 }.
   */
  capLimits?: Partial<Record<(typeof WANTED_LIMITS)[number], number>>;
}

/** The environment variable that forces every Gpu.create's adapter class (Deno). */
export const ADAPTER_CLASS_ENV = "PETTINGLLMS_ADAPTER_CLASS";

/**
 * `PETTINGLLMS_ADAPTER_CLASS=gpu|cpu` in Deno: every Gpu.create without its own adapterClass
 * takes that class, so a CPU adapter runs the GPU class's kernels and picks (CI checks they
 * stay correct there) and a test suite can be run as a GPU would run it. Unset (or in a
 * browser): null, the adapter's own class.
 */
export function envAdapterClass(): AdapterClass | null {
  const v = envVar(ADAPTER_CLASS_ENV); // no --allow-env: the adapter's own class
  if (v === undefined || v === "") return null;
  if (v !== "gpu" && v !== "cpu") {
    throw new RangeError(`${ADAPTER_CLASS_ENV}=${v}: must be "gpu" or "cpu" (or unset)`);
  }
  return v;
}

const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|swiftshader|software|microsoft basic render/i;

/** The adapter's identifying strings in one line, for matching drivers by name. */
export function adapterText(info: Omit<AdapterDescription, "adapterClass">): string {
  return `${info.vendor} ${info.architecture} ${info.device} ${info.description}`;
}

/** Classifies an adapter from its info: software rasterisers are "cpu". */
export function classifyAdapter(info: Omit<AdapterDescription, "adapterClass">): AdapterClass {
  return info.isFallback || SOFTWARE_ADAPTER.test(adapterText(info)) ? "cpu" : "gpu";
}

function describeAdapter(adapter: GPUAdapter): Omit<AdapterDescription, "adapterClass"> {
  // deno-lint-ignore no-explicit-any
  const a = adapter as any;
  const info = a.info ?? {};
  return {
    vendor: String(info.vendor ?? ""),
    architecture: String(info.architecture ?? ""),
    device: String(info.device ?? ""),
    description: String(info.description ?? ""),
    isFallback: Boolean(info.isFallbackAdapter ?? a.isFallbackAdapter ?? false),
  };
}

/**
 * llvmpipe's worker threads (LP_NUM_THREADS, default one per core) left decode's small grids
 * (2–8 workgroups a dispatch) mostly on one core on the 2-core machine this was measured on:
 * with two per core a tiny-llama decode step took 1.5 ms instead of 1.8–2.3 at batch 8 and
 * 2.6–2.9 instead of 3.8–5.6 at batch 32, and large matmuls did not change. Set before the
 * driver loads (the first adapter request), only in Deno, only when the user has not set it;
 * other drivers ignore the variable.
 */
function tuneSoftwareRasterizerThreads() {
  const deno = (globalThis as {
    Deno?: { env: { get(k: string): string | undefined; set(k: string, v: string): void } };
  }).Deno;
  if (!deno) return;
  try {
    if (deno.env.get("LP_NUM_THREADS") !== undefined) return;
    const cores = globalThis.navigator?.hardwareConcurrency ?? 2;
    deno.env.set("LP_NUM_THREADS", String(Math.min(32, 2 * cores)));
  } catch {
    // No --allow-env: llvmpipe keeps its default.
  }
}

/** Requests an adapter and a device with the adapter's limits; throws NoWebGPUError with advice. */
export async function createGpu(options: CreateGpuOptions = {}): Promise<GpuContext> {
  const capCheck = bindingCap(Infinity, options.maxBindingBytes); // bad caps fail before any device exists
  tuneSoftwareRasterizerThreads();
  const gpu = webgpu();
  if (!gpu) throw new NoWebGPUError(`This host has no navigator.gpu.\n${noAdapterAdvice()}`);
  const adapter = await gpu.requestAdapter({
    powerPreference: options.powerPreference ?? "high-performance",
  });
  if (!adapter) throw new NoWebGPUError(noAdapterAdvice());

  const disabled = new Set(options.disableFeatures ?? []);
  const requiredFeatures = WANTED_FEATURES.filter((f) =>
    adapter.features.has(f) && !disabled.has(f)
  );
  const requiredLimits: Record<string, number> = {};
  for (const k of WANTED_LIMITS) {
    const v = (adapter.limits as unknown as Record<string, number>)[k];
    const cap = options.capLimits?.[k];
    if (typeof v === "number") requiredLimits[k] = cap === undefined ? v : Math.min(v, cap);
  }
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      requiredFeatures: requiredFeatures as GPUFeatureName[],
      requiredLimits,
    });
  } catch (e) {
    throw new DeviceRequestError(
      `requestDevice failed: ${(e as Error).message}. Try again with fewer features ` +
        `(createGpu({disableFeatures: [...]})) or update the graphics driver.`,
      { cause: e },
    );
  }
  const base = describeAdapter(adapter);
  const info: AdapterDescription = {
    ...base,
    adapterClass: options.adapterClass ?? envAdapterClass() ?? classifyAdapter(base),
  };
  const lost = device.lost.then((i) => {
    const err = new DeviceLostError(String(i.reason ?? "unknown"), i.message || "no message");
    options.onLost?.(err);
    return err;
  });
  const features = new Set<string>(requiredFeatures);
  return {
    adapter,
    device,
    info,
    features,
    limits: device.limits,
    wgslFeatures: new Set<string>([
      ...(gpu as { wgslLanguageFeatures?: Iterable<string> }).wgslLanguageFeatures ?? [],
    ]),
    lost,
    maxBindingBytes: Math.min(capCheck, device.limits.maxStorageBufferBindingSize),
    has: (f) => features.has(f),
  };
}

/** One line for logs: which adapter, which class, which features. */
export function describeGpu(ctx: GpuContext): string {
  const i = ctx.info;
  const name = [i.vendor, i.architecture, i.device, i.description].filter((s) => s).join(" / ") ||
    "unnamed adapter";
  const feats = [...ctx.features].join(", ") || "none";
  const mib = (ctx.limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0);
  const cap = ctx.maxBindingBytes < ctx.limits.maxStorageBufferBindingSize
    ? ` (parameters capped at ${ctx.maxBindingBytes} B)`
    : "";
  return `${name} [${i.adapterClass}${i.isFallback ? ", fallback" : ""}] features: ${feats}; ` +
    `max binding ${mib} MiB${cap}, workgroup storage ${ctx.limits.maxComputeWorkgroupStorageSize} B, ` +
    `${ctx.limits.maxStorageBuffersPerShaderStage} storage buffers a stage`;
}
