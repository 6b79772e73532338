// AdamW on the GPU over flat fp32 buffers (params, grads, m, v in one layout, llm.c style), with
// decoupled weight decay masked per tensor, bias correction, and global grad-norm clipping whose
// coefficient goes from a GPU reduction straight into the update kernel: one recording, no
// readback. A step may span several buffer ranges (the parameter buffers of a full model, or the
// tensors of one LoRA adapter); all of them share one norm and are recorded together.
//
// Semantics follow torch.optim.AdamW + torch.nn.utils.clip_grad_norm_:
//   g ← g · gradScale · min(1, maxGradNorm / (‖g·gradScale‖ + 1e-6))
//   m ← β1·m + (1−β1)·g;   v ← β2·v + (1−β2)·g²
//   p ← p·(1 − lr·wd·mask) − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + ε)
// A non-finite norm skips the update (stats report it); torch would write NaNs into p instead.

import { type BufferRef, resolveRange, STORAGE } from "../gpu/buffers.ts";
import { KernelArgumentError } from "../gpu/errors.ts";
import type { Gpu } from "../gpu/mod.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import type { Recorder } from "../gpu/recorder.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import { grid1d } from "../ops/grid.ts";
import { CheckpointMismatchError, TrainConfigError } from "./errors.ts";

/** Floats per mask entry: tensors in a ParamLayout start on these boundaries. */
export const BLOCK_FLOATS = 64;
/** Floats one workgroup covers (64 lanes × one 64-float block each). */
const WG = 64;
const WG_FLOATS = WG * BLOCK_FLOATS;

/** shaders/adamw.wgsl's sumsq_partial: Σg² of n floats into partials from index `base`. */
export const AdamWPartialParams = uniformStruct("adamw_partial_params", "PartialParams", [
  ["n", "u32"],
  ["base", "u32"],
]);

/** shaders/adamw.wgsl's norm_finalize: `count` partials, the clip norm and the gradient scale. */
export const AdamWFinalizeParams = uniformStruct("adamw_finalize_params", "FinalizeParams", [
  ["count", "u32"],
  ["_p0", "u32"],
  ["max_norm", "f32"],
  ["grad_scale", "f32"],
]);

/**
 * shaders/adamw.wgsl's adamw_step: n floats; mask_base the chunk's first 64-float block in the
 * decay mask (chunks of one range share its mask), use_mask; the betas and eps; lr_wd =
 * lr · weight_decay (decoupled decay p ← p·(1 − lr·wd·mask)); step_size = lr / (1 − β1^t);
 * bc2_sqrt = sqrt(1 − β2^t).
 */
export const AdamWStepParams = uniformStruct("adamw_step_params", "StepParams", [
  ["n", "u32"],
  ["mask_base", "u32"],
  ["use_mask", "u32"],
  ["_p0", "u32"],
  ["beta1", "f32"],
  ["beta2", "f32"],
  ["eps", "f32"],
  ["lr_wd", "f32"],
  ["step_size", "f32"],
  ["bc2_sqrt", "f32"],
]);

/** shaders/adamw.wgsl's zero_grads: n floats. */
export const AdamWZeroParams = uniformStruct("adamw_zero_params", "ZeroParams", [["n", "u32"]]);

export interface AdamWHyper {
  /** Default 0.9. */
  readonly beta1: number;
  /** Default 0.999. */
  readonly beta2: number;
  /** Default 1e-8. */
  readonly eps: number;
  /** Decoupled weight decay (default 0.01, torch's and verl's). Masked-out tensors get none. */
  readonly weightDecay: number;
  /** Global-norm clip threshold (default 1.0, the paper's); 0 disables clipping (the norm is still reported). */
  readonly maxGradNorm: number;
}

export interface AdamWOptions extends Partial<AdamWHyper> {
  /** Most floats one step covers, over all its ranges (sizes the norm scratch). */
  readonly numel: number;
  /** Most ranges (after splitting at the binding limit) one step covers; default 64. */
  readonly maxChunks?: number;
  /** Lane-to-data mapping; default by adapter class (CPU: contiguous, GPU: interleaved). */
  readonly laneLayout?: "contiguous" | "interleaved";
  /**
   * Longest stretch bound at once, a multiple of 4096 floats; default: the most the adapter's
   * storage binding limit allows (gpu.maxBindingBytes). Longer ranges are split (tests set it
   * small to exercise that).
   */
  readonly chunkFloats?: number;
}

/** One contiguous stretch of parameters with its grads and moments (same length, same layout). */
export interface AdamWRange {
  readonly params: BufferRef;
  readonly grads: BufferRef;
  readonly m: BufferRef;
  readonly v: BufferRef;
  /** Floats in the range. */
  readonly numel: number;
  /** Weight-decay multiplier per 64-float block, [ceil(numel/64)] f32 (see `decayMask`); omitted: all decay. */
  readonly decayMask?: BufferRef;
}

export interface AdamWStepArgs {
  readonly ranges: readonly AdamWRange[];
  /** Learning rate of this update (e.g. StepCounter.next().lr). */
  readonly lr: number;
  /** Adam's 1-based step t for bias correction (StepCounter.next().t). */
  readonly step: number;
  /** Multiplies the accumulated grads before anything else: 1/accumulation steps (default 1). */
  readonly gradScale?: number;
}

/** What the last recorded step saw, read back with `readStats`. */
export interface AdamWStats {
  /** ‖g · gradScale‖₂ before clipping. */
  readonly gradNorm: number;
  /** min(1, maxGradNorm / (gradNorm + 1e-6)), or 1 without clipping. */
  readonly clipCoef: number;
  /** False when some gradient was NaN/Inf: the update was skipped. */
  readonly finite: boolean;
}

/** Moments of every range plus the step they belong to: what a checkpoint needs to resume exactly. */
export interface OptimizerState {
  /** Optimizer steps completed. */
  readonly step: number;
  readonly hyper: AdamWHyper;
  readonly moments: readonly { readonly m: Float32Array; readonly v: Float32Array }[];
}

/** A range cut at the binding limit; offsets in floats from the range start. */
interface Chunk {
  range: AdamWRange;
  start: number;
  numel: number;
}

const DEFAULTS: AdamWHyper = {
  beta1: 0.9,
  beta2: 0.999,
  eps: 1e-8,
  weightDecay: 0.01,
  maxGradNorm: 1,
};

function validateHyper(h: AdamWHyper): void {
  const check = (field: string, ok: boolean, rule: string) => {
    if (!ok) {
      throw new TrainConfigError(
        field,
        `${(h as unknown as Record<string, number>)[field]} ${rule}`,
      );
    }
  };
  check("beta1", h.beta1 >= 0 && h.beta1 < 1, "must lie in [0, 1)");
  check("beta2", h.beta2 >= 0 && h.beta2 < 1, "must lie in [0, 1)");
  check("eps", h.eps > 0 && Number.isFinite(h.eps), "must be a small positive number such as 1e-8");
  check("weightDecay", h.weightDecay >= 0 && Number.isFinite(h.weightDecay), "must be ≥ 0");
  check(
    "maxGradNorm",
    h.maxGradNorm >= 0 && Number.isFinite(h.maxGradNorm),
    "must be ≥ 0 (0 turns clipping off)",
  );
}

export class AdamW {
  private constructor(
    private readonly gpu: Gpu,
    readonly hyper: AdamWHyper,
    private readonly k: Record<"partial" | "finalize" | "step" | "zero", Kernel>,
    private readonly partials: GPUBuffer,
    private readonly partialCapacity: number,
    private readonly stats: GPUBuffer,
    private readonly noMask: GPUBuffer,
    private readonly maxChunkFloats: number,
  ) {}

  static async create(gpu: Gpu, opts: AdamWOptions): Promise<AdamW> {
    const hyper: AdamWHyper = {
      beta1: opts.beta1 ?? DEFAULTS.beta1,
      beta2: opts.beta2 ?? DEFAULTS.beta2,
      eps: opts.eps ?? DEFAULTS.eps,
      weightDecay: opts.weightDecay ?? DEFAULTS.weightDecay,
      maxGradNorm: opts.maxGradNorm ?? DEFAULTS.maxGradNorm,
    };
    validateHyper(hyper);
    if (!Number.isInteger(opts.numel) || opts.numel <= 0) {
      throw new TrainConfigError(
        "numel",
        `${opts.numel} must be the positive number of floats a step updates`,
      );
    }
    const layout = opts.laneLayout ?? (gpu.adapterClass === "cpu" ? "contiguous" : "interleaved");
    const constants = { WG, LANE_CONTIG: layout === "contiguous" ? 1 : 0 };
    const spec = (entry: string, bindings: GPUBufferBindingType[]) =>
      gpu.kernel({ shader: "adamw", entry, bindings: ["uniform", ...bindings], constants });
    const [partial, finalize, step, zero] = await Promise.all([
      spec("sumsq_partial", ["read-only-storage", "storage"]),
      spec("norm_finalize", ["read-only-storage", "storage"]),
      spec("adamw_step", [
        "storage",
        "read-only-storage",
        "storage",
        "storage",
        "read-only-storage",
        "read-only-storage",
      ]),
      spec("zero_grads", ["storage"]),
    ]);
    const maxChunks = opts.maxChunks ?? 64;
    const capacity = Math.ceil(opts.numel / WG_FLOATS) + maxChunks;
    // Chunks are whole workgroups (block indices and 256-byte binding offsets stay aligned) and
    // stay below the storage binding limit.
    // gpu.maxBindingBytes: the device's limit unless capped (the test seam that forces splitting).
    const maxBinding = gpu.maxBindingBytes;
    const limitFloats = Math.floor(maxBinding / 4 / WG_FLOATS) * WG_FLOATS;
    const maxChunkFloats = opts.chunkFloats ?? limitFloats;
    if (
      !Number.isInteger(maxChunkFloats / WG_FLOATS) || maxChunkFloats <= 0 ||
      maxChunkFloats > limitFloats
    ) {
      throw new TrainConfigError(
        "chunkFloats",
        `${maxChunkFloats} must be a positive multiple of ${WG_FLOATS} no larger than ${limitFloats}`,
      );
    }
    return new AdamW(
      gpu,
      hyper,
      { partial, finalize, step, zero },
      gpu.zeros(capacity, "adamw:partials"),
      capacity,
      gpu.zeros(8, "adamw:stats", STORAGE),
      gpu.upload(new Float32Array(4).fill(1), "adamw:no-mask"),
      maxChunkFloats,
    );
  }

  /** The [8] f32 stats buffer: norm, clip coefficient, scale·clip, finite flag, Σg². */
  get statsBuffer(): GPUBuffer {
    return this.stats;
  }

  /**
   * Records one optimizer step over all ranges: the grad-norm reduction, its finalisation and the
   * update. The grads are left as they are (record `encodeZeroGrads` before the next accumulation).
   */
  encodeStep(rec: Recorder, args: AdamWStepArgs): void {
    const { lr, step } = args;
    const gradScale = args.gradScale ?? 1;
    if (!(lr >= 0) || !Number.isFinite(lr)) {
      throw new TrainConfigError("lr", `${lr} must be a finite number ≥ 0`);
    }
    if (!Number.isInteger(step) || step < 1) {
      throw new TrainConfigError(
        "step",
        `${step} must be Adam's 1-based step t (completed steps + 1)`,
      );
    }
    if (!(gradScale > 0) || !Number.isFinite(gradScale)) {
      throw new TrainConfigError(
        "gradScale",
        `${gradScale} must be positive (1 / accumulation steps)`,
      );
    }
    const chunks = this.chunks(args.ranges);
    this.encodeNorm(rec, chunks, gradScale);
    const h = this.hyper;
    const bc1 = 1 - h.beta1 ** step, bc2 = 1 - h.beta2 ** step;
    for (const c of chunks) {
      const mask = c.range.decayMask;
      const u = AdamWStepParams.pack({
        n: c.numel,
        mask_base: c.start / BLOCK_FLOATS,
        use_mask: mask ? 1 : 0,
        beta1: h.beta1,
        beta2: h.beta2,
        eps: h.eps,
        lr_wd: lr * h.weightDecay,
        step_size: lr / bc1,
        bc2_sqrt: Math.sqrt(bc2),
      });
      const r = c.range;
      rec.dispatch(
        this.k.step,
        [
          null,
          this.sub(r.params, c),
          this.sub(r.grads, c),
          this.sub(r.m, c),
          this.sub(r.v, c),
          mask ?? this.noMask,
          this.stats,
        ],
        this.grid(c.numel),
        u,
      );
    }
  }

  /** Records grads ← 0 for every range (between optimizer steps). */
  encodeZeroGrads(rec: Recorder, ranges: readonly AdamWRange[]): void {
    for (const c of this.chunks(ranges)) {
      const u = AdamWZeroParams.pack({ n: c.numel });
      rec.dispatch(this.k.zero, [null, this.sub(c.range.grads, c)], this.grid(c.numel), u);
    }
  }

  /** The norm, clip coefficient and finiteness of the last step (waits for the GPU). */
  async readStats(): Promise<AdamWStats> {
    const s = await this.gpu.readFloat32(this.stats, 4);
    return { gradNorm: s[0], clipCoef: s[1], finite: s[3] === 1 };
  }

  /** Reads m and v of every range: with `step` (completed steps) this is an exact resume point. */
  async readState(ranges: readonly AdamWRange[], step: number): Promise<OptimizerState> {
    const moments = [];
    for (const r of ranges) {
      moments.push({
        m: await this.gpu.readFloat32(r.m, r.numel),
        v: await this.gpu.readFloat32(r.v, r.numel),
      });
    }
    return { step, hyper: this.hyper, moments };
  }

  /** Writes saved moments back into the ranges' m and v (shapes checked first). */
  writeState(ranges: readonly AdamWRange[], state: OptimizerState): void {
    if (state.moments.length !== ranges.length) {
      throw new CheckpointMismatchError(
        "optimizer state",
        `holds ${state.moments.length} ranges but the optimizer has ${ranges.length}; ` +
          `resume with the same model, adapters and trainable tensors as the checkpoint`,
      );
    }
    ranges.forEach((r, i) => {
      const { m, v } = state.moments[i];
      if (m.length !== r.numel || v.length !== r.numel) {
        throw new CheckpointMismatchError(
          "optimizer state",
          `range ${i} has ${m.length}/${v.length} floats of m/v but the parameters have ${r.numel}; ` +
            `the checkpoint belongs to a different model or adapter shape`,
        );
      }
      const rm = resolveRange(r.m), rv = resolveRange(r.v);
      this.gpu.write(rm.buffer, m, rm.offset);
      this.gpu.write(rv.buffer, v, rv.offset);
    });
  }

  destroy(): void {
    for (const b of [this.partials, this.stats, this.noMask]) b.destroy();
  }

  /** Σg² partials of every chunk side by side in one scratch buffer, then one finalize. */
  private encodeNorm(rec: Recorder, chunks: readonly Chunk[], gradScale: number): void {
    let base = 0;
    for (const c of chunks) {
      const u = AdamWPartialParams.pack({ n: c.numel, base });
      rec.dispatch(
        this.k.partial,
        [null, this.sub(c.range.grads, c), this.partials],
        this.grid(c.numel),
        u,
      );
      base += Math.ceil(c.numel / WG_FLOATS);
    }
    const u = AdamWFinalizeParams.pack({
      count: base,
      max_norm: this.hyper.maxGradNorm,
      grad_scale: gradScale,
    });
    rec.dispatch(this.k.finalize, [null, this.partials, this.stats], [1], u);
  }

  private grid(numel: number): [number, number] {
    return grid1d(
      Math.ceil(numel / WG_FLOATS),
      this.gpu.device.limits.maxComputeWorkgroupsPerDimension,
    );
  }

  /** Splits ranges at the binding limit and checks sizes against the scratch and the buffers. */
  private chunks(ranges: readonly AdamWRange[]): Chunk[] {
    if (ranges.length === 0) throw new KernelArgumentError("adamw: no ranges given");
    const out: Chunk[] = [];
    ranges.forEach((range, i) => {
      if (!Number.isInteger(range.numel) || range.numel <= 0) {
        throw new KernelArgumentError(
          `adamw: range ${i} has numel ${range.numel}; it must be a positive integer`,
        );
      }
      for (
        const [name, ref] of [["params", range.params], ["grads", range.grads], ["m", range.m], [
          "v",
          range.v,
        ]] as const
      ) {
        const r = resolveRange(ref);
        if (r.size < range.numel * 4 || r.offset + vecBytes(range.numel) > r.buffer.size) {
          throw new KernelArgumentError(
            `adamw: range ${i} ${name} holds ${r.size} bytes but numel ${range.numel} needs ` +
              `${
                range.numel * 4
              } (plus room to the next 16 bytes in its buffer); allocate it with gpu.zeros/upload`,
          );
        }
      }
      if (
        range.decayMask &&
        resolveRange(range.decayMask).size < Math.ceil(range.numel / BLOCK_FLOATS) * 4
      ) {
        throw new KernelArgumentError(
          `adamw: range ${i} decayMask needs ${
            Math.ceil(range.numel / BLOCK_FLOATS)
          } floats (one per 64); build it with decayMask()`,
        );
      }
      for (let start = 0; start < range.numel; start += this.maxChunkFloats) {
        out.push({ range, start, numel: Math.min(this.maxChunkFloats, range.numel - start) });
      }
    });
    const parts = out.reduce((s, c) => s + Math.ceil(c.numel / WG_FLOATS), 0);
    if (parts > this.partialCapacity) {
      throw new KernelArgumentError(
        `adamw: ${out.length} ranges of ${
          out.reduce((s, c) => s + c.numel, 0)
        } floats exceed what this ` +
          `optimizer was created for; pass the total numel (and maxChunks) of a step to AdamW.create`,
      );
    }
    return out;
  }

  /** The part of `ref` a chunk covers, rounded up to whole vec4s. */
  private sub(ref: BufferRef, c: Chunk): BufferRef {
    const r = resolveRange(ref);
    return { buffer: r.buffer, offset: r.offset + c.start * 4, size: vecBytes(c.numel) };
  }
}

function vecBytes(numel: number): number {
  return Math.ceil(numel / 4) * 16;
}

/** A tensor's place in a flat layout and whether it decays. Offsets and sizes count floats. */
export interface DecaySpan {
  readonly name?: string;
  readonly offset: number;
  readonly size: number;
  readonly decay: boolean;
}

/**
 * The per-64-float-block weight-decay mask of the range [start, start + numel) of a flat layout.
 * Tensors must start on 64-float boundaries (ParamLayout's do) unless their neighbours decay alike.
 */
export function decayMask(spans: readonly DecaySpan[], start: number, numel: number): Float32Array {
  const blocks = Math.ceil(numel / BLOCK_FLOATS);
  const out = new Float32Array(blocks);
  const owner = new Array<string | null>(blocks).fill(null);
  for (const t of spans) {
    const lo = Math.max(t.offset, start) - start,
      hi = Math.min(t.offset + t.size, start + numel) - start;
    if (hi <= lo) continue;
    const label = t.name ?? `tensor at ${t.offset}`;
    for (let b = Math.floor(lo / BLOCK_FLOATS); b < Math.ceil(hi / BLOCK_FLOATS); b++) {
      const value = t.decay ? 1 : 0;
      if (owner[b] !== null && out[b] !== value) {
        throw new KernelArgumentError(
          `decayMask: ${label} and ${
            owner[b]
          } share a 64-float block but only one of them decays; ` +
            `align tensors to 64 floats (as ParamLayout does)`,
        );
      }
      out[b] = value;
      owner[b] = label;
    }
  }
  return out;
}

/**
 * HF Trainer's default: no weight decay for biases and normalisation weights (RMSNorm, q/k norms);
 * everything else (linear weights, embeddings, LoRA A/B) decays.
 */
export function hfDecays(name: string): boolean {
  return !/(^|\.)bias$|layernorm|rmsnorm|(^|\.)norm(\.|$)|_norm(\.|$)/i.test(name);
}
