// What a set of LoRA adapters is, apart from the GPU: the projections they target (with PEFT's
// module names), their layout in one flat f32 array (per (layer, module), the adapters stacked,
// each block 64-float aligned), their initialisation, and merging one into a copy of the base's
// weights (the float32 merge and the float64 one the reference uses). src/model/lora.ts runs
// them on the GPU.

import { KernelArgumentError } from "../gpu/errors.ts";
import type { ModelConfig } from "./config.ts";
import { Rng } from "./init.ts";
import type { ModelWeights, ModelWeights64 } from "./weights.ts";

/**
 * The projections an adapter can target. The Llama family has q, k, v, o, gate, up, down; GPT-2
 * has qkv (attn.c_attn, the fused q/k/v), o (attn.c_proj), up (mlp.c_fc) and down (mlp.c_proj).
 * Targets a model lacks are skipped (so "all" means every projection of either family).
 */
export const LORA_MODULES = ["q", "k", "v", "o", "gate", "up", "down", "qkv"] as const;
export type LoraModule = typeof LORA_MODULES[number];
/** The Llama family's modules, in the order of the fused decode's LoRA table. */
export const LLAMA_LORA_MODULES = ["q", "k", "v", "o", "gate", "up", "down"] as const;
/** GPT-2's modules. */
export const GPT2_LORA_MODULES = ["qkv", "o", "up", "down"] as const;

/** The modules model `c` has. */
export function loraModulesOf(c: ModelConfig): readonly LoraModule[] {
  return c.modelType === "gpt2" ? GPT2_LORA_MODULES : LLAMA_LORA_MODULES;
}

/** PEFT's names for the Llama family's modules (target_modules in adapter_config.json). */
export const PEFT_MODULE_NAMES: Record<LoraModule, string> = {
  q: "q_proj",
  k: "k_proj",
  v: "v_proj",
  o: "o_proj",
  gate: "gate_proj",
  up: "up_proj",
  down: "down_proj",
  qkv: "c_attn",
};

/** GPT-2's module paths under transformer.h.{i} (PEFT matches target_modules as their suffixes). */
export const GPT2_PEFT_MODULE_NAMES: Record<string, string> = {
  qkv: "attn.c_attn",
  o: "attn.c_proj",
  up: "mlp.c_fc",
  down: "mlp.c_proj",
};

/** PEFT's name of a module of model `c`: "q_proj" etc., for gpt2 its path such as "attn.c_attn". */
export function peftModuleName(c: ModelConfig, m: LoraModule): string {
  if (c.modelType !== "gpt2") return PEFT_MODULE_NAMES[m];
  const name = GPT2_PEFT_MODULE_NAMES[m];
  if (!name) throw new KernelArgumentError(`gpt2 has no LoRA module "${m}"`);
  return name;
}

export interface LoraConfig {
  rank: number;
  alpha: number;
  targets: readonly LoraModule[];
  /** Adapter names, e.g. one per agent; the index is the adapter id rows refer to. */
  adapters: readonly string[];
}

export interface LoraEntry {
  layer: number;
  module: LoraModule;
  inDim: number;
  outDim: number;
  /** Start of adapter 0's A [r, in] and the distance between adapters (floats). */
  offsetA: number;
  strideA: number;
  offsetB: number;
  strideB: number;
}

/** n floats rounded up to a 64-float block. */
export const align64 = (n: number) => Math.ceil(n / 64) * 64;

function moduleDims(c: ModelConfig, m: LoraModule): [inDim: number, outDim: number] {
  const C = c.hiddenSize,
    q = c.numHeads * c.headDim,
    kv = c.numKvHeads * c.headDim,
    I = c.intermediateSize;
  return {
    q: [C, q],
    k: [C, kv],
    v: [C, kv],
    o: [q, C],
    gate: [C, I],
    up: [C, I],
    down: [I, C],
    qkv: [C, 3 * C],
  }[m] as [number, number];
}

export class LoraLayout {
  readonly entries: LoraEntry[] = [];
  readonly totalFloats: number;
  readonly scale: number;
  private byKey = new Map<string, LoraEntry>();

  constructor(readonly model: ModelConfig, readonly cfg: LoraConfig) {
    if (!Number.isInteger(cfg.rank) || cfg.rank < 1) {
      throw new KernelArgumentError(`LoRA rank must be a positive integer, got ${cfg.rank}`);
    }
    if (!cfg.adapters.length) throw new KernelArgumentError("LoRA needs at least one adapter name");
    for (const t of cfg.targets) {
      if (!LORA_MODULES.includes(t)) {
        throw new KernelArgumentError(`unknown LoRA target "${t}"; use ${LORA_MODULES.join(", ")}`);
      }
    }
    const r = cfg.rank, n = cfg.adapters.length;
    const has = loraModulesOf(model);
    const modules = LORA_MODULES.filter((m) => cfg.targets.includes(m) && has.includes(m));
    if (!modules.length) {
      throw new KernelArgumentError(
        `LoRA targets ${
          cfg.targets.join(", ")
        }: none is a projection of this ${model.modelType} model (${has.join(", ")})`,
      );
    }
    let off = 0;
    for (let layer = 0; layer < model.numLayers; layer++) {
      for (const module of modules) {
        const [inDim, outDim] = moduleDims(model, module);
        const strideA = align64(r * inDim), strideB = align64(outDim * r);
        const e: LoraEntry = {
          layer,
          module,
          inDim,
          outDim,
          offsetA: off,
          strideA,
          offsetB: off + n * strideA,
          strideB,
        };
        off += n * (strideA + strideB);
        this.entries.push(e);
        this.byKey.set(`${layer}:${module}`, e);
      }
    }
    this.totalFloats = off;
    this.scale = cfg.alpha / r;
  }

  entry(layer: number, module: string): LoraEntry | undefined {
    return this.byKey.get(`${layer}:${module}`);
  }

  /** PEFT initialisation: A ~ U(−1/√in, 1/√in) (kaiming_uniform with a=√5), B = 0. */
  init(seed: number, bStd = 0): Float32Array {
    const data = new Float32Array(this.totalFloats);
    const rng = new Rng(seed);
    const r = this.cfg.rank;
    for (const e of this.entries) {
      const bound = 1 / Math.sqrt(e.inDim);
      this.cfg.adapters.forEach((_, a) => {
        const A = data.subarray(e.offsetA + a * e.strideA, e.offsetA + a * e.strideA + r * e.inDim);
        for (let i = 0; i < A.length; i++) A[i] = (2 * rng.uniform() - 1) * bound;
        const B = data.subarray(
          e.offsetB + a * e.strideB,
          e.offsetB + a * e.strideB + e.outDim * r,
        );
        for (let i = 0; i < B.length; i++) B[i] = bStd ? bStd * rng.normal() : 0;
      });
    }
    return data;
  }

  /** Adapter a's A [r, in] and B [out, r] of one entry, as views into `data`. */
  slices(data: Float32Array, e: LoraEntry, a: number): { A: Float32Array; B: Float32Array } {
    const r = this.cfg.rank;
    return {
      A: data.subarray(e.offsetA + a * e.strideA, e.offsetA + a * e.strideA + r * e.inDim),
      B: data.subarray(e.offsetB + a * e.strideB, e.offsetB + a * e.strideB + e.outDim * r),
    };
  }
}

const ROLE_OF: Record<LoraModule, "q" | "k" | "v" | "o" | "gate" | "up" | "down" | "qkv"> = {
  q: "q",
  k: "k",
  v: "v",
  o: "o",
  gate: "gate",
  up: "up",
  down: "down",
  qkv: "qkv",
};

/** A copy of `w` with adapter `a` merged into the base: W += (alpha/r)·B·A per targeted Linear. */
export function mergeLora(
  w: ModelWeights,
  layout: LoraLayout,
  data: Float32Array,
  a: number,
): ModelWeights {
  return { ...w, data: mergeInto(new Float32Array(w.data), w, layout, data, a) };
}

/**
 * mergeLora without rounding the merged weights to float32: what PEFT computes unmerged in
 * float64 (W x + (alpha/r)·B(A x)), for the float64 reference.
 */
export function mergeLoraFloat64(
  w: ModelWeights,
  layout: LoraLayout,
  data: Float32Array,
  a: number,
): ModelWeights64 {
  return { ...w, data: mergeInto(new Float64Array(w.data), w, layout, data, a) };
}

function mergeInto<T extends Float32Array | Float64Array>(
  out: T,
  w: ModelWeights,
  layout: LoraLayout,
  data: Float32Array,
  a: number,
): T {
  const r = layout.cfg.rank, s = layout.scale;
  for (const e of layout.entries) {
    const t = w.layout.layerView(e.layer)[ROLE_OF[e.module]]!;
    const { A, B } = layout.slices(data, e, a);
    for (let o = 0; o < e.outDim; o++) {
      for (let i = 0; i < e.inDim; i++) {
        let acc = 0;
        for (let j = 0; j < r; j++) acc += B[o * r + j] * A[j * e.inDim + i];
        out[t.offset + o * e.inDim + i] += s * acc;
      }
    }
  }
  return out;
}
