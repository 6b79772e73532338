// Records many dispatches (and copies) into one command encoder. Each dispatch's uniform
// block goes into one shared arena buffer, written once before submit, so a whole step is
// one writeBuffer + one submit. A finished recording can be kept as a plan and replayed:
// the bind groups are built once, so a hot loop creates neither pipelines nor bind groups.

import { type BufferRef, resolveRange } from "./buffers.ts";
import { GpuLimitError, KernelArgumentError } from "./errors.ts";
import type { Kernel } from "./pipelines.ts";
import { activeProfiler } from "./profiler.ts";

type Workgroups = readonly [number, number?, number?];

/** A texture bound to a "texture-read" or "texture-write" slot: its view, and an id naming it in bind-group keys. */
export interface TextureBinding {
  readonly view: GPUTextureView;
  readonly id: string;
}

/** What a dispatch binds per slot: a buffer range, a texture, or null for the uniform block. */
export type Binding = BufferRef | TextureBinding | null;

function isTexture(b: Binding): b is TextureBinding {
  return b !== null && "view" in b && "id" in b;
}

interface DispatchCmd {
  kind: "dispatch";
  kernel: Kernel;
  /** null marks the slot filled from the uniform arena. */
  bindings: Binding[];
  workgroups: [number, number, number];
  uniformOffset: number;
  uniformSize: number;
}
interface CopyCmd {
  kind: "copy";
  src: BufferRef;
  dst: BufferRef;
  size: number;
}
interface ClearCmd {
  kind: "clear";
  dst: BufferRef;
}
type Cmd = DispatchCmd | CopyCmd | ClearCmd;

interface EncodedDispatch {
  kind: "dispatch";
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: [number, number, number];
  label: string;
}
type Encoded = EncodedDispatch | CopyCmd | ClearCmd;

function encodeDispatch(pass: GPUComputePassEncoder, c: EncodedDispatch): void {
  pass.setPipeline(c.pipeline);
  pass.setBindGroup(0, c.bindGroup);
  pass.dispatchWorkgroups(c.workgroups[0], c.workgroups[1], c.workgroups[2]);
}

/**
 * Dispatches per submission of a plan run on its own (CommandPlan.run) on GPU-class adapters.
 * On CPU adapters a plan is one submission: llvmpipe runs a submission's work before submit
 * returns, so there is nothing to overlap, and chunks measured 0–10% slower there.
 */
export const DEFAULT_SUBMIT_CHUNK = 128;
let submitChunkOverride: number | null = null;

/**
 * Dispatches per submission for every plan run on its own encoder, over the adapter-class
 * default: a positive integer, Infinity for one submission per run (the bench's A/B), or null
 * for the default again. Returns the previous override.
 */
export function setSubmitChunk(n: number | null): number | null {
  if (n !== null && !(n === Infinity || (Number.isInteger(n) && n > 0))) {
    throw new KernelArgumentError(`submit chunk ${n}: a positive integer, Infinity or null`);
  }
  const prev = submitChunkOverride;
  submitChunkOverride = n;
  return prev;
}

/** A frozen recording: replay it any number of times with `run()`. */
export class CommandPlan {
  constructor(
    private device: GPUDevice,
    private cmds: Encoded[],
    private arena: GPUBuffer | null,
    readonly label: string,
    /** Dispatches per submission of run() without an encoder (Recorder's submitChunk). */
    private submitChunk = Infinity,
  ) {}

  get dispatchCount(): number {
    return this.cmds.filter((c) => c.kind === "dispatch").length;
  }

  /** Each dispatch's kernel, in order, as "shader:entry" (what the plan runs, for tests). */
  get dispatchKernels(): string[] {
    return this.cmds.flatMap((c) => c.kind === "dispatch" ? [c.label.split("|")[0]] : []);
  }

  /** Distinct bind groups the dispatches use (identical dispatches share one). */
  get bindGroupCount(): number {
    return new Set(this.cmds.flatMap((c) => c.kind === "dispatch" ? [c.bindGroup] : [])).size;
  }

  /** Bytes of the uniform arena (identical uniform blocks share one slot). */
  get uniformBytes(): number {
    return this.arena?.size ?? 0;
  }

  /**
   * Encodes the plan into `encoder` (for composing plans) or into new ones that are submitted.
   * Consecutive dispatches share one compute pass, or, while a profiler is active, each gets its
   * own timed pass (profiler.ts). Without `encoder`, a plan of more than `submitChunk` dispatches
   * is submitted `submitChunk` dispatches at a time (on GPUs; setSubmitChunk), so the GPU starts on the
   * first while JS encodes the rest: encoding costs ~2 µs a dispatch (Deno, 2026-11-27), a
   * decode step of a 30-layer model ~270 of them, and one submission at the end would leave
   * the GPU idle for all of it. The queue runs submissions in order: the same work either way.
   */
  run(encoder?: GPUCommandEncoder): void {
    let enc = encoder ?? this.device.createCommandEncoder({ label: this.label });
    const profiler = activeProfiler();
    const chunk = encoder || profiler ? Infinity : submitChunkOverride ?? this.submitChunk;
    let inEncoder = 0;
    let run: EncodedDispatch[] = [];
    const flush = () => {
      if (!run.length) return;
      if (profiler) {
        profiler.encode(
          enc,
          run.map((c) => ({
            label: c.label.split("|")[0],
            run: (pass: GPUComputePassEncoder) => encodeDispatch(pass, c),
          })),
        );
      } else {
        const pass = enc.beginComputePass({ label: this.label });
        for (const c of run) encodeDispatch(pass, c);
        pass.end();
      }
      run = [];
    };
    for (const c of this.cmds) {
      if (c.kind === "dispatch") {
        run.push(c);
        if (++inEncoder >= chunk) {
          flush();
          this.device.queue.submit([enc.finish()]);
          enc = this.device.createCommandEncoder({ label: this.label });
          inEncoder = 0;
        }
        continue;
      }
      flush();
      const d = resolveRange(c.dst);
      if (c.kind === "clear") enc.clearBuffer(d.buffer, d.offset, d.size);
      else {
        const s = resolveRange(c.src);
        enc.copyBufferToBuffer(s.buffer, s.offset, d.buffer, d.offset, c.size);
      }
    }
    flush();
    if (!encoder) this.device.queue.submit([enc.finish()]);
  }

  destroy(): void {
    this.arena?.destroy();
    this.arena = null;
    this.cmds = [];
  }
}

const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 1;

/** A number naming a buffer object (for bind group reuse keys). */
function bufferId(b: GPUBuffer): number {
  let id = bufferIds.get(b);
  if (id === undefined) bufferIds.set(b, id = nextBufferId++);
  return id;
}

/**
 * Throws KernelArgumentError where a storage binding that the kernel writes overlaps another
 * buffer binding of the same dispatch. WebGPU forbids it (Chrome refuses the dispatch, even for
 * bytes never written, and skips it with only a console warning); Deno's wgpu does not check, so
 * a path tested only in Deno would silently compute nothing in a browser.
 */
function checkAliasing(kernel: Kernel, bindings: Binding[]) {
  const kinds = kernel.spec.bindings;
  const ranges = bindings.map((b) => (b && !isTexture(b) ? resolveRange(b) : null));
  for (let i = 0; i < ranges.length; i++) {
    const a = ranges[i];
    if (!a || kinds[i] !== "storage") continue;
    for (let j = 0; j < ranges.length; j++) {
      const b = ranges[j];
      if (j === i || !b || b.buffer !== a.buffer) continue;
      if (a.offset < b.offset + b.size && b.offset < a.offset + a.size) {
        throw new KernelArgumentError(
          `${kernel.key}: binding ${i} (written) overlaps binding ${j} in buffer "${
            a.buffer.label || "unlabelled"
          }" (bytes ${a.offset}+${a.size} and ${b.offset}+${b.size}); WebGPU refuses aliased ` +
            `writable bindings in a dispatch: bind disjoint ranges or separate buffers`,
        );
      }
    }
  }
}

/**
 * What a device's one-shot recordings share (Gpu.recorder): a uniform arena per recording label,
 * rewritten by each `submit()`, and the bind groups built on it, so a step recorded afresh each
 * time (a train step: ~1200 dispatches at ~24 µs of createBindGroup each, 30 ms a step of the
 * SmolLM2-135M shape in Deno on a 2-core EPYC, before any GPU work) builds only the groups it has
 * not built before. Rewriting an arena is safe: the queue runs the write after every submission
 * made before it. Groups binding textures are not kept (a texture's id may outlive its view).
 */
export class RecordingCache {
  private groups = new Map<string, GPUBindGroup>();
  private arenas = new Map<string, GPUBuffer>();

  constructor(private device: GPUDevice, readonly maxGroups = 16384) {}

  /** The arena of `key` (a label's one-shot recordings, a plan's key), at least `bytes` long (grown in powers of two). */
  arena(key: string, bytes: number): GPUBuffer {
    const have = this.arenas.get(key);
    if (have && have.size >= bytes) return have;
    if (have) {
      // Submitted work may still read it: freed when the queue is done with that work.
      this.device.queue.onSubmittedWorkDone().then(() => have.destroy());
    }
    const arena = this.device.createBuffer({
      label: `${key}:uniforms`,
      size: Math.max(4096, 2 ** Math.ceil(Math.log2(bytes))),
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.arenas.set(key, arena);
    return arena;
  }

  /** The bind group of `key`, made by `make` if it is not kept; the least recently used go first. */
  group(key: string, make: () => GPUBindGroup): GPUBindGroup {
    let g = this.groups.get(key);
    if (g) {
      this.groups.delete(key); // re-inserted last: Map order is recency
    } else {
      g = make();
      if (this.groups.size >= this.maxGroups) {
        this.groups.delete(this.groups.keys().next().value!);
      }
    }
    this.groups.set(key, g);
    return g;
  }

  /**
   * Frees the arena of plans made with `finish({ shared: key })` (their owner is gone: a
   * destroyed model's decode plans); their bind groups age out.
   */
  dropShared(key: string): void {
    const arena = this.arenas.get(`plan:${key}`);
    if (!arena) return;
    this.arenas.delete(`plan:${key}`);
    this.device.queue.onSubmittedWorkDone().then(() => arena.destroy());
  }

  /** Bind groups kept now (for tests). */
  get size(): number {
    return this.groups.size;
  }

  destroy(): void {
    for (const a of this.arenas.values()) a.destroy();
    this.arenas.clear();
    this.groups.clear();
  }
}

/** Collects dispatches; `submit()` runs them once, `finish()` keeps them as a CommandPlan. */
export class Recorder {
  private cmds: Cmd[] = [];
  private uniforms = new Uint8Array(4096);
  private used = 0;
  private align: number;
  /** Arena offsets and lengths of the uniform blocks recorded so far, by a hash of their bytes. */
  private uniformSlots = new Map<number, [offset: number, bytes: number][]>();

  /**
   * `submitChunk`: dispatches per submission when a finished plan runs on its own
   * (DEFAULT_SUBMIT_CHUNK on GPU-class adapters, Gpu.recorder; Infinity: one submission).
   */
  constructor(
    private device: GPUDevice,
    readonly label = "recording",
    private submitChunk = Infinity,
    /** Shared arenas and bind groups for `submit()` without an encoder (RecordingCache). */
    private cache: RecordingCache | null = null,
  ) {
    this.align = Math.max(device.limits.minUniformBufferOffsetAlignment, 16);
  }

  /**
   * Adds one dispatch. `bindings` follow the kernel's binding list; a "uniform" slot is filled
   * from `uniform` (a packed std140-style block) automatically when given as null.
   */
  dispatch(
    kernel: Kernel,
    bindings: Binding[],
    workgroups: Workgroups,
    uniform?: ArrayBuffer,
  ): this {
    const kinds = kernel.spec.bindings;
    if (bindings.length !== kinds.length) {
      throw new KernelArgumentError(
        `${kernel.key}: expected ${kinds.length} bindings, got ${bindings.length}`,
      );
    }
    const wg: [number, number, number] = [workgroups[0], workgroups[1] ?? 1, workgroups[2] ?? 1];
    const maxWg = this.device.limits.maxComputeWorkgroupsPerDimension;
    if (wg.some((n) => n > maxWg)) {
      throw new GpuLimitError(
        `${kernel.key}: dispatch ${wg.join("×")} exceeds ${maxWg} workgroups per dimension`,
      );
    }
    let uniformOffset = -1, uniformSize = 0;
    if (uniform) {
      uniformSize = Math.ceil(uniform.byteLength / 16) * 16;
      uniformOffset = this.uniformSlot(uniform, uniformSize);
    }
    bindings.forEach((b, i) => {
      if (!b && (kinds[i] !== "uniform" || !uniform)) {
        throw new KernelArgumentError(
          `${kernel.key}: binding ${i} is null but no uniform block was given for it`,
        );
      }
      if (b && isTexture(b) !== (kinds[i] === "texture-read" || kinds[i] === "texture-write")) {
        throw new KernelArgumentError(
          `${kernel.key}: binding ${i} is a ${kinds[i]} slot, given a ${
            isTexture(b) ? "texture" : "buffer"
          }`,
        );
      }
    });
    checkAliasing(kernel, bindings);
    if (wg[0] * wg[1] * wg[2] > 0) {
      this.cmds.push({
        kind: "dispatch",
        kernel,
        bindings: [...bindings],
        workgroups: wg,
        uniformOffset,
        uniformSize,
      });
    }
    return this;
  }

  /** A buffer-to-buffer copy; WebGPU refuses one within a single buffer (use a kernel). */
  copy(src: BufferRef, dst: BufferRef, size: number): this {
    if (resolveRange(src).buffer === resolveRange(dst).buffer) {
      throw new KernelArgumentError(
        `${this.label}: a copy within one buffer (${
          resolveRange(src).buffer.label || "unlabelled"
        }) is a WebGPU validation error; copy through another buffer or a kernel`,
      );
    }
    this.cmds.push({ kind: "copy", src, dst, size: Math.ceil(size / 4) * 4 });
    return this;
  }

  /** Zero-fills a buffer range (offset and size multiples of 4). */
  clear(dst: BufferRef): this {
    this.cmds.push({ kind: "clear", dst });
    return this;
  }

  get length(): number {
    return this.cmds.length;
  }

  /**
   * Freezes the recording into a replayable plan (uniforms uploaded once). `shared`: the plan's
   * uniforms go into the arena the recording cache keeps for that key, and its bind groups come
   * from the cache, so a plan recorded again (a generate call's decode plan) builds only new
   * groups. The caller promises that no other plan of the key runs between its runs and that the
   * plan is not run after the next plan of the key is made.
   */
  finish(opts: { shared?: string } = {}): CommandPlan {
    if (opts.shared !== undefined && this.cache) return this.sharedPlan(`plan:${opts.shared}`);
    const arena = this.used > 0
      ? this.device.createBuffer({
        label: `${this.label}:uniforms`,
        size: this.used,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      })
      : null;
    return this.plan(arena, null, arena);
  }

  /**
   * Runs the recording once. Without `encoder`, on a Gpu's recorder, its uniforms go into the
   * label's shared arena and its bind groups come from the shared ones (RecordingCache); else
   * the plan's own arena is freed when the GPU is done with it.
   */
  submit(encoder?: GPUCommandEncoder): void {
    if (!encoder && this.cache) {
      this.sharedPlan(`submit:${this.label}`).run();
      return;
    }
    const plan = this.finish();
    plan.run(encoder);
    if (encoder) return; // the caller submits; the arena lives until garbage collection
    this.device.queue.onSubmittedWorkDone().then(() => plan.destroy());
  }

  /** The recording as a plan over the cache's arena of `key`, with the cache's bind groups. */
  private sharedPlan(key: string): CommandPlan {
    const cache = this.cache!;
    return this.plan(this.used > 0 ? cache.arena(key, this.used) : null, cache, null);
  }

  /**
   * The recording as a plan over `arena` (its uniforms written into it); the plan destroys
   * `owned` with itself. Dispatches with the same kernel, bindings and uniform block (a decode
   * step replayed S times, say) share one bind group; with `shared`, groups binding no texture
   * come from and go to it. The recorder is empty after.
   */
  private plan(
    arena: GPUBuffer | null,
    shared: RecordingCache | null,
    owned: GPUBuffer | null,
  ): CommandPlan {
    if (arena) this.device.queue.writeBuffer(arena, 0, this.uniforms, 0, this.used);
    const own = new Map<string, GPUBindGroup>();
    const group = (key: string, make: () => GPUBindGroup, textures: boolean) => {
      if (shared && !textures) return shared.group(key, make);
      let g = own.get(key);
      if (!g) own.set(key, g = make());
      return g;
    };
    const encoded: Encoded[] = this.cmds.map((c) =>
      c.kind === "dispatch" ? this.encodeDispatch(c, arena, group) : c
    );
    this.cmds = [];
    this.used = 0;
    this.uniformSlots.clear();
    return new CommandPlan(this.device, encoded, owned, this.label, this.submitChunk);
  }

  private encodeDispatch(
    c: DispatchCmd,
    arena: GPUBuffer | null,
    group: (key: string, make: () => GPUBindGroup, textures: boolean) => GPUBindGroup,
  ): EncodedDispatch {
    const ranges = c.bindings.map((b) =>
      isTexture(b)
        ? b
        : b
        ? resolveRange(b)
        : { buffer: arena!, offset: c.uniformOffset, size: c.uniformSize }
    );
    const key = `${c.kernel.key}|${
      ranges.map((r) => "view" in r ? `t${r.id}` : `${bufferId(r.buffer)}:${r.offset}:${r.size}`)
        .join(",")
    }`;
    const bindGroup = group(key, () =>
      this.device.createBindGroup({
        layout: c.kernel.layout,
        entries: ranges.map((r, i) => ({
          binding: i,
          resource: "view" in r ? r.view : { buffer: r.buffer, offset: r.offset, size: r.size },
        })),
        label: c.kernel.key,
      }), ranges.some((r) => "view" in r));
    return {
      kind: "dispatch",
      pipeline: c.kernel.pipeline,
      bindGroup,
      workgroups: c.workgroups,
      label: c.kernel.key,
    };
  }

  /** The arena offset of a uniform block: an identical block recorded before is reused. */
  private uniformSlot(uniform: ArrayBuffer, size: number): number {
    const words = new Uint32Array(uniform, 0, uniform.byteLength >> 2);
    let h = 0x811c9dc5 ^ words.length;
    for (let i = 0; i < words.length; i++) h = Math.imul(h ^ words[i], 0x01000193);
    const bytes = new Uint8Array(uniform);
    const slots = this.uniformSlots.get(h);
    const same = slots?.find(([off, n]) => n === bytes.length && this.sameBytes(off, bytes));
    if (same) return same[0];
    const off = this.reserve(size);
    this.uniforms.set(bytes, off);
    if (slots) slots.push([off, bytes.length]);
    else this.uniformSlots.set(h, [[off, bytes.length]]);
    return off;
  }

  /** Whether the arena holds `bytes` at `off` (a slot offset, so word-aligned). */
  private sameBytes(off: number, bytes: Uint8Array): boolean {
    const n = bytes.length >> 2;
    const have = new Uint32Array(this.uniforms.buffer, off, n),
      want = new Uint32Array(bytes.buffer, bytes.byteOffset, n);
    for (let i = 0; i < n; i++) if (have[i] !== want[i]) return false;
    for (let i = 4 * n; i < bytes.length; i++) {
      if (this.uniforms[off + i] !== bytes[i]) return false;
    }
    return true;
  }

  private reserve(size: number): number {
    const off = Math.ceil(this.used / this.align) * this.align;
    const need = off + size;
    const maxArena = 256 * 2 ** 20;
    if (need > maxArena) {
      throw new GpuLimitError(`uniform arena over ${maxArena} bytes: split the recording`);
    }
    if (need > this.uniforms.length) {
      const grown = new Uint8Array(Math.max(need, this.uniforms.length * 2));
      grown.set(this.uniforms.subarray(0, this.used));
      this.uniforms = grown;
    }
    this.used = need;
    return off;
  }
}
