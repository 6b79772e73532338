// LoRA adapters in Hugging Face PEFT's on-disk format, so transformers/PEFT and vLLM load what we
// train: adapter_config.json (LoraConfig fields) + adapter_model.safetensors with PEFT's key names
//   base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight   [r, in_features]
//   base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight   [out_features, r]
// (mlp.{gate,up,down}_proj likewise). Linear weights are [out, in] as in HF, so fan_in_fan_out is
// false. GPT-2 adapters use GPT2LMHeadModel's module paths and Conv1D's fan_in_fan_out true:
//   base_model.model.transformer.h.{i}.attn.c_attn.lora_A.weight   [r, in_features]
// (attn.c_proj, mlp.c_fc, mlp.c_proj likewise), target_modules ["c_attn", "c_proj", "c_fc"].
// lora_A/lora_B have the same shapes as for a Linear; only merging differs (PEFT transposes). Loading checks the config against what this engine implements and every tensor's name
// and shape against the base model, and names what is wrong.

import type { Folder } from "../io/bytesource.ts";
import { readFolderText } from "../io/bytesource.ts";
import type { FloatDtype } from "../io/dtypes.ts";
import { encodeSafetensors, SafetensorsCheckpoint } from "../io/safetensors.ts";
import type { ModelConfig } from "../model/config.ts";
import { CheckpointCorruptError, CheckpointMismatchError, PeftFormatError } from "./errors.ts";

export const LORA_TARGETS = [
  "q_proj",
  "k_proj",
  "v_proj",
  "o_proj",
  "gate_proj",
  "up_proj",
  "down_proj",
] as const;
/** GPT-2's adaptable modules, as paths under transformer.h.{i}. */
export const GPT2_LORA_TARGETS = ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"] as const;
export type LoraTarget = typeof LORA_TARGETS[number] | typeof GPT2_LORA_TARGETS[number];

/** The target modules of base model `cfg`. */
function targetsOf(cfg: ModelConfig): readonly LoraTarget[] {
  return cfg.modelType === "gpt2" ? GPT2_LORA_TARGETS : LORA_TARGETS;
}

export const ADAPTER_CONFIG = "adapter_config.json";
export const ADAPTER_WEIGHTS = "adapter_model.safetensors";

/** The LoraConfig fields that define an adapter. */
export interface LoraSettings {
  readonly r: number;
  readonly alpha: number;
  readonly targetModules: readonly LoraTarget[];
  /** base_model_name_or_path: the HF id or path of the frozen base model. */
  readonly baseModel: string;
  readonly dropout?: number;
  /** Scaling alpha/sqrt(r) instead of alpha/r (PEFT use_rslora). */
  readonly useRslora?: boolean;
  /** Layers that carry adapters (PEFT layers_to_transform); default all. */
  readonly layers?: readonly number[];
}

/** One adapted Linear: ΔW = scaling · B·A. */
export interface LoraModuleWeights {
  readonly layer: number;
  readonly module: LoraTarget;
  /** [r, in_features] */
  readonly a: Float32Array;
  /** [out_features, r] */
  readonly b: Float32Array;
}

export interface LoraAdapter {
  readonly settings: LoraSettings;
  /** One entry per (layer, target module), any order. */
  readonly modules: readonly LoraModuleWeights[];
}

/** The Linear a target module adapts: its HF parent block and [in, out] features. */
export function loraModuleDims(
  cfg: ModelConfig,
  module: LoraTarget,
): { block: string; in: number; out: number } {
  const C = cfg.hiddenSize,
    q = cfg.numHeads * cfg.headDim,
    kv = cfg.numKvHeads * cfg.headDim,
    I = cfg.intermediateSize;
  if (cfg.modelType === "gpt2") {
    const g: Record<string, [string, number, number]> = {
      "attn.c_attn": ["attn", C, 3 * C],
      "attn.c_proj": ["attn", C, C],
      "mlp.c_fc": ["mlp", C, I],
      "mlp.c_proj": ["mlp", I, C],
    };
    const [block, inF, outF] = g[module];
    return { block, in: inF, out: outF };
  }
  const dims: Record<string, [string, number, number]> = {
    q_proj: ["self_attn", C, q],
    k_proj: ["self_attn", C, kv],
    v_proj: ["self_attn", C, kv],
    o_proj: ["self_attn", q, C],
    gate_proj: ["mlp", C, I],
    up_proj: ["mlp", C, I],
    down_proj: ["mlp", I, C],
  };
  const [block, inF, outF] = dims[module];
  return { block, in: inF, out: outF };
}

/** PEFT's saved key of one LoRA matrix (adapter name stripped, as save_pretrained does). */
export function peftKey(
  cfg: ModelConfig,
  layer: number,
  module: LoraTarget,
  which: "A" | "B",
): string {
  if (cfg.modelType === "gpt2") {
    return `base_model.model.transformer.h.${layer}.${module}.lora_${which}.weight`;
  }
  return `base_model.model.model.layers.${layer}.${
    loraModuleDims(cfg, module).block
  }.${module}.lora_${which}.weight`;
}

/** Every (layer, module) an adapter with these settings must carry. */
export function loraSlots(
  cfg: ModelConfig,
  s: LoraSettings,
): Array<{ layer: number; module: LoraTarget }> {
  const layers = s.layers ?? Array.from({ length: cfg.numLayers }, (_, l) => l);
  return layers.flatMap((layer) => s.targetModules.map((module) => ({ layer, module })));
}

function checkSettings(where: string, s: LoraSettings, cfg: ModelConfig): void {
  if (!Number.isInteger(s.r) || s.r <= 0) {
    throw new PeftFormatError(where, `r = ${s.r} must be a positive integer`);
  }
  if (!Number.isFinite(s.alpha)) {
    throw new PeftFormatError(where, `lora_alpha = ${s.alpha} must be a number`);
  }
  const targets = targetsOf(cfg);
  if (s.targetModules.length === 0) {
    throw new PeftFormatError(
      where,
      "target_modules is empty; name at least one of " + targets.join(", "),
    );
  }
  for (const m of s.targetModules) {
    if (!targets.includes(m)) {
      throw new PeftFormatError(
        where,
        `target module "${m}" is not one of ${targets.join(", ")} (the ${cfg.modelType} modules)`,
      );
    }
  }
  for (const l of s.layers ?? []) {
    if (!Number.isInteger(l) || l < 0 || l >= cfg.numLayers) {
      throw new CheckpointMismatchError(
        where,
        `layer ${l} is outside the base model's ${cfg.numLayers} layers`,
      );
    }
  }
}

/**
 * GPT-2's target_modules as PEFT users write them: "c_attn", "c_fc", and "c_proj" when both
 * c_proj are adapted (PEFT matches names as suffixes), else the one's path.
 */
function gpt2TargetNames(ts: readonly LoraTarget[]): string[] {
  const both = ts.includes("attn.c_proj") && ts.includes("mlp.c_proj");
  return ts.map((t) =>
    t === "attn.c_attn" ? "c_attn" : t === "mlp.c_fc" ? "c_fc" : both ? "c_proj" : t
  ).filter((t, i, a) => a.indexOf(t) === i);
}

/** adapter_config.json as PEFT's LoraConfig.save_pretrained writes it (long-standing fields only). */
function adapterConfigJson(s: LoraSettings, cfg: ModelConfig): string {
  const gpt2 = cfg.modelType === "gpt2";
  const json = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: s.baseModel,
    bias: "none",
    fan_in_fan_out: gpt2, // Conv1D stores [in, out]
    inference_mode: true,
    init_lora_weights: true,
    layers_pattern: null,
    layers_to_transform: s.layers ? [...s.layers] : null,
    lora_alpha: s.alpha,
    lora_dropout: s.dropout ?? 0,
    modules_to_save: null,
    peft_type: "LORA",
    r: s.r,
    rank_pattern: {},
    revision: null,
    target_modules: (gpt2 ? gpt2TargetNames(s.targetModules) : [...s.targetModules]).sort(),
    task_type: "CAUSAL_LM",
    use_dora: false,
    use_rslora: s.useRslora ?? false,
  };
  return JSON.stringify(json, null, 2) + "\n";
}

/** The two files of a PEFT adapter folder. Throws CheckpointMismatchError on a wrong shape or a gap. */
export function peftAdapterFiles(
  adapter: LoraAdapter,
  base: ModelConfig,
  dtype: FloatDtype = "F32",
): Map<string, Uint8Array> {
  const s = adapter.settings;
  checkSettings("adapter to save", s, base);
  const byKey = new Map(adapter.modules.map((m) => [`${m.layer}/${m.module}`, m]));
  const slots = loraSlots(base, s);
  if (byKey.size !== adapter.modules.length || adapter.modules.length !== slots.length) {
    throw new CheckpointMismatchError(
      "adapter to save",
      `has ${adapter.modules.length} module entries (${byKey.size} distinct) but r/target_modules/layers ` +
        `call for ${slots.length}: one per (layer, target module)`,
    );
  }
  const tensors = slots.flatMap(({ layer, module }) => {
    const m = byKey.get(`${layer}/${module}`);
    if (!m) {
      throw new CheckpointMismatchError("adapter to save", `layer ${layer} ${module} is missing`);
    }
    const d = loraModuleDims(base, module);
    if (m.a.length !== s.r * d.in || m.b.length !== d.out * s.r) {
      throw new CheckpointMismatchError(
        "adapter to save",
        `layer ${layer} ${module}: A has ${m.a.length} floats (want ${s.r}×${d.in}), B has ${m.b.length} ` +
          `(want ${d.out}×${s.r}); the adapter does not belong to this base model config`,
      );
    }
    return [
      { name: peftKey(base, layer, module, "A"), shape: [s.r, d.in], data: m.a },
      { name: peftKey(base, layer, module, "B"), shape: [d.out, s.r], data: m.b },
    ];
  });
  return new Map([
    [ADAPTER_CONFIG, new TextEncoder().encode(adapterConfigJson(s, base))],
    [ADAPTER_WEIGHTS, encodeSafetensors(tensors, { dtype })],
  ]);
}

type Json = Record<string, unknown>;

/** Fields whose non-default value changes the adapter's function in ways we do not implement. */
function refuseUnsupported(where: string, j: Json, cfg: ModelConfig): void {
  const refuse = (field: string, why: string) => {
    throw new PeftFormatError(where, `${field} = ${JSON.stringify(j[field])}: ${why}`);
  };
  if (j.peft_type !== "LORA") refuse("peft_type", "only LoRA adapters are supported");
  if (j.task_type != null && j.task_type !== "CAUSAL_LM") {
    refuse("task_type", "only CAUSAL_LM adapters apply to these models");
  }
  if (j.bias != null && j.bias !== "none") {
    refuse("bias", "adapters that train biases are not implemented; retrain with bias='none'");
  }
  // GPT-2's Conv1D layers need fan_in_fan_out true (PEFT sets it itself when it is false).
  if (j.fan_in_fan_out === true && cfg.modelType !== "gpt2") {
    refuse(
      "fan_in_fan_out",
      "Llama/Qwen Linear weights are [out, in]; this adapter is for Conv1D layers",
    );
  }
  if (j.use_dora === true) refuse("use_dora", "DoRA adapters are not implemented");
  for (const f of ["rank_pattern", "alpha_pattern"]) {
    if (j[f] != null && Object.keys(j[f] as Json).length > 0) {
      refuse(f, "per-module ranks/alphas are not implemented");
    }
  }
  if (Array.isArray(j.modules_to_save) && j.modules_to_save.length > 0) {
    refuse(
      "modules_to_save",
      "fully trained extra modules are not implemented; merge them into the base model",
    );
  }
  if (j.layer_replication != null) {
    refuse("layer_replication", "layer replication is not implemented");
  }
}

function parseTargets(where: string, v: unknown, cfg: ModelConfig): LoraTarget[] {
  if (v === "all-linear") return [...targetsOf(cfg)];
  if (cfg.modelType === "gpt2" && Array.isArray(v) && v.every((x) => typeof x === "string")) {
    // PEFT matches a target as the suffix of a module path: "c_proj" is attn's and mlp's.
    const out = GPT2_LORA_TARGETS.filter((t) => v.some((x) => t === x || t.endsWith(`.${x}`)));
    const unknown = v.filter((x) => !GPT2_LORA_TARGETS.some((t) => t === x || t.endsWith(`.${x}`)));
    if (unknown.length) {
      throw new PeftFormatError(
        where,
        `target module "${
          unknown[0]
        }" is not a gpt2 module (c_attn, c_proj, c_fc, attn.c_proj, mlp.c_proj)`,
      );
    }
    return out;
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
    throw new PeftFormatError(
      where,
      `target_modules = ${
        JSON.stringify(v)
      }: give a list of module names (regex strings are not supported)`,
    );
  }
  return v as LoraTarget[];
}

/** Parses and validates adapter_config.json against the base model. */
export function parseAdapterConfig(where: string, text: string, base: ModelConfig): LoraSettings {
  let j: Json;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new CheckpointCorruptError(
      where,
      `${ADAPTER_CONFIG} is not valid JSON (${(e as Error).message})`,
      { cause: e },
    );
  }
  refuseUnsupported(where, j, base);
  const layers = j.layers_to_transform;
  const s: LoraSettings = {
    r: j.r as number,
    alpha: (j.lora_alpha ?? 8) as number,
    targetModules: parseTargets(where, j.target_modules, base),
    baseModel: String(j.base_model_name_or_path ?? ""),
    dropout: (j.lora_dropout ?? 0) as number,
    useRslora: j.use_rslora === true,
    layers: layers == null
      ? undefined
      : typeof layers === "number"
      ? [layers]
      : (layers as number[]),
  };
  checkSettings(where, s, base);
  return s;
}

/** Reads a PEFT adapter folder, checking every tensor name and shape against `base`. */
export async function loadPeftAdapter(folder: Folder, base: ModelConfig): Promise<LoraAdapter> {
  const text = await readFolderText(folder, ADAPTER_CONFIG);
  if (text === null) {
    throw new CheckpointCorruptError(
      folder.name,
      `no ${ADAPTER_CONFIG}; this is not a PEFT adapter folder`,
    );
  }
  const settings = parseAdapterConfig(folder.name, text, base);
  const ckpt = await SafetensorsCheckpoint.open(folder, ADAPTER_WEIGHTS);
  try {
    const slots = loraSlots(base, settings);
    const expected = new Set(
      slots.flatMap(({ layer, module }) =>
        (["A", "B"] as const).map((w) => peftKey(base, layer, module, w))
      ),
    );
    const extra = ckpt.names().filter((n) => !expected.has(n));
    if (extra.length > 0) {
      throw new PeftFormatError(
        folder.name,
        `unexpected tensors ${extra.slice(0, 3).join(", ")}${extra.length > 3 ? ", ..." : ""}; ` +
          `only lora_A/lora_B of the target modules are supported (no DoRA magnitudes, no modules_to_save)`,
      );
    }
    const modules: LoraModuleWeights[] = [];
    for (const { layer, module } of slots) {
      const d = loraModuleDims(base, module);
      const read = async (w: "A" | "B", shape: number[]) => {
        const key = peftKey(base, layer, module, w);
        if (!ckpt.has(key)) {
          throw new CheckpointMismatchError(
            folder.name,
            `adapter lacks ${key}, which its adapter_config.json promises`,
          );
        }
        const info = ckpt.info(key);
        if (info.shape.length !== 2 || info.shape[0] !== shape[0] || info.shape[1] !== shape[1]) {
          throw new CheckpointMismatchError(
            folder.name,
            `${key} is [${info.shape}] but r=${settings.r} on this base model needs [${shape}]; ` +
              `the adapter was trained on another model (its base: "${settings.baseModel}")`,
          );
        }
        return await ckpt.readF32(key);
      };
      modules.push({
        layer,
        module,
        a: await read("A", [settings.r, d.in]),
        b: await read("B", [d.out, settings.r]),
      });
    }
    return { settings, modules };
  } finally {
    ckpt.close();
  }
}
