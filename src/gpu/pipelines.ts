// Compute pipelines, compiled once per (shader, entry point, bindings, constants) and cached.
// Bind group layouts are explicit so bind groups can be shared; compilation and pipeline
// errors are caught in error scopes and raised with the WGSL compiler's own messages.

import { PipelineCreationError, ShaderCompileError } from "./errors.ts";
import { shaderSource } from "./shaders.ts";

/**
 * Binding kinds: buffers; "texture-read", an rgba32float 2D storage texture read with
 * textureLoad (`texture_storage_2d<rgba32float, read>`: the weight textures of
 * model/cpu_adapter/weight_textures.ts; needs the WGSL language feature
 * readonly_and_readwrite_storage_textures, see Gpu.readOnlyStorageTextures); and
 * "texture-write", an rgba32float 2D storage texture written with textureStore.
 *
 * Why storage rather than sampled textures for reads: llvmpipe (Mesa 22.3) compiles a sampled
 * textureLoad of rgba32float into a call of a generic texel function that works out the mip
 * level's size and offset per lane, while a storage-texture load is inline. Measured on a 2-core
 * EPYC, 8 rows, r8c32 tiles: K×N 512×2816 0.96 → 0.65 ms, 1408×512 0.48 → 0.31 ms.
 */
export type BindingKind =
  | "uniform"
  | "storage"
  | "read-only-storage"
  | "texture-read"
  | "texture-write";

/** What a kernel is: one entry point of one WGSL file with its binding list. */
export interface KernelSpec {
  /** File in shaders/ without ".wgsl". */
  shader: string;
  entry: string;
  /** Binding kinds of group 0, in @binding order. */
  bindings: readonly BindingKind[];
  /** WGSL `override` constants: workgroup sizes, operation selectors. */
  constants?: Record<string, number>;
}

export interface Kernel {
  readonly spec: KernelSpec;
  readonly key: string;
  readonly pipeline: GPUComputePipeline;
  readonly layout: GPUBindGroupLayout;
}

export function kernelKey(spec: KernelSpec): string {
  const sorted = (o?: Record<string, number>) =>
    o ? Object.keys(o).sort().map((k) => `${k}=${o[k]}`).join(",") : "";
  return `${spec.shader}:${spec.entry}|${spec.bindings.join(",")}|${sorted(spec.constants)}`;
}

async function compileModule(
  device: GPUDevice,
  name: string,
  code: string,
): Promise<GPUShaderModule> {
  // The scope is pushed and popped with no await between, so scopes of calls in flight at once
  // nest properly on the device's stack (see PipelineCache).
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ label: name, code });
  const scope = device.popErrorScope();
  const [info, scoped] = await Promise.all([module.getCompilationInfo(), scope]);
  const errors = info.messages.filter((m) => m.type === "error");
  if (errors.length || scoped) {
    const diags = errors.map((m) =>
      `${name}.wgsl:${m.lineNum}:${m.linePos} ${m.type}: ${m.message}`
    );
    if (scoped && !diags.length) diags.push(scoped.message);
    throw new ShaderCompileError(name, diags);
  }
  return module;
}

function layoutEntry(kind: BindingKind, binding: number): GPUBindGroupLayoutEntry {
  if (kind === "texture-read") {
    return {
      binding,
      visibility: GPUShaderStage.COMPUTE,
      storageTexture: { access: "read-only", format: "rgba32float", viewDimension: "2d" },
    };
  }
  if (kind === "texture-write") {
    return {
      binding,
      visibility: GPUShaderStage.COMPUTE,
      storageTexture: { access: "write-only", format: "rgba32float", viewDimension: "2d" },
    };
  }
  return {
    binding,
    visibility: GPUShaderStage.COMPUTE,
    buffer: { type: kind },
  };
}

/**
 * Caches shader modules, bind group layouts and pipelines of one device.
 *
 * Pipelines compile concurrently: each error scope is pushed and popped around one call with no
 * await between, so the device's scope stack never interleaves, and nothing waits for another
 * kernel's compilation. Browsers compile createComputePipelineAsync on worker threads (a page
 * that loads a model creates ~80 pipelines; SwiftShader takes seconds for some), so a model's
 * kernels, requested together, build side by side.
 */
export class PipelineCache {
  private modules = new Map<string, Promise<GPUShaderModule>>();
  private layouts = new Map<string, GPUBindGroupLayout>();
  private kernels = new Map<string, Promise<Kernel>>();
  /** Number of pipelines created so far: tests assert hot loops create none. */
  created = 0;

  constructor(private device: GPUDevice) {}

  /** The bind group layout for a binding list (shared between kernels with the same list). */
  bindGroupLayout(bindings: readonly BindingKind[]): GPUBindGroupLayout {
    const key = bindings.join(",");
    let l = this.layouts.get(key);
    if (!l) {
      l = this.device.createBindGroupLayout({ label: key, entries: bindings.map(layoutEntry) });
      this.layouts.set(key, l);
    }
    return l;
  }

  kernel(spec: KernelSpec): Promise<Kernel> {
    const key = kernelKey(spec);
    let k = this.kernels.get(key);
    if (!k) {
      k = this.build(spec, key);
      k.catch(() => this.kernels.delete(key));
      this.kernels.set(key, k);
    }
    return k;
  }

  private module(spec: KernelSpec): Promise<GPUShaderModule> {
    const key = spec.shader;
    let m = this.modules.get(key);
    if (!m) {
      m = shaderSource(spec.shader).then((src) => compileModule(this.device, spec.shader, src));
      m.catch(() => this.modules.delete(key));
      this.modules.set(key, m);
    }
    return m;
  }

  private async build(spec: KernelSpec, key: string): Promise<Kernel> {
    const module = await this.module(spec);
    const layout = this.bindGroupLayout(spec.bindings);
    // A failed asynchronous creation rejects (GPUPipelineError); an implementation that validates
    // at the call (Deno's) reports to the scope instead.
    this.device.pushErrorScope("validation");
    const creating = this.device.createComputePipelineAsync({
      label: key,
      layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: spec.entry, constants: spec.constants },
    });
    const scope = this.device.popErrorScope();
    let pipeline: GPUComputePipeline;
    try {
      pipeline = await creating;
    } catch (e) {
      await scope;
      throw new PipelineCreationError(`pipeline ${key}: ${(e as Error).message}`, { cause: e });
    }
    const err = await scope;
    if (err) throw new PipelineCreationError(`pipeline ${key}: ${err.message}`);
    this.created++;
    return { spec, key, pipeline, layout };
  }
}
