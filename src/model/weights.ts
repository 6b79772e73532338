// The parameters of a model as one flat Float32 allocation with an offsets table (llm.c style):
// HF tensor names and shapes (Linear weights [out, in]) for Llama/Qwen2/Qwen3, each tensor
// starting on a 64-float (256-byte) boundary so GPU code can bind any tensor as a buffer range,
// `layerView(l)` for a layer's tensors, and loading from safetensors with shapes checked against
// the config before any tensor data is read. Gradients and Adam moments can reuse this layout.

import { type Folder } from "../io/bytesource.ts";
import { MissingTensorError } from "../io/errors.ts";
import {
  expectShape,
  floatDtypeOf,
  SafetensorsCheckpoint,
  type TensorToWrite,
} from "../io/safetensors.ts";
import { loadModelConfig, type ModelConfig } from "./config.ts";
import { UnexpectedTensorError } from "./errors.ts";

/** Alignment of every tensor's offset, in floats: 64 × 4 B = 256 B (minStorageBufferOffsetAlignment). */
export const PARAM_ALIGN_FLOATS = 64;

export type GlobalRole = "embed" | "final_norm" | "lm_head";
export type LayerRole =
  | "input_norm"
  | "q"
  | "k"
  | "v"
  | "o"
  | "q_bias"
  | "k_bias"
  | "v_bias"
  | "o_bias"
  | "q_norm"
  | "k_norm"
  | "post_norm"
  | "gate"
  | "up"
  | "down";

/** One tensor in the flat layout. `offset` and `size` count floats. */
export interface ParamTensor {
  /** The HF name, e.g. "model.layers.3.self_attn.q_proj.weight". */
  readonly name: string;
  readonly role: GlobalRole | LayerRole;
  /** Layer index, or null for embed / final norm / lm_head. */
  readonly layer: number | null;
  /** Shape as HF stores it: Linear weights [out, in], embeddings [vocab, hidden]. */
  readonly shape: readonly number[];
  /** Start in floats; a multiple of PARAM_ALIGN_FLOATS. */
  readonly offset: number;
  /** Number of floats (product of shape). */
  readonly size: number;
}

/** The tensors of one decoder layer. Optional ones are null when the config has none. */
export interface LayerView {
  readonly inputNorm: ParamTensor; // [C]
  readonly q: ParamTensor; // [NH*D, C]
  readonly k: ParamTensor; // [KV*D, C]
  readonly v: ParamTensor; // [KV*D, C]
  readonly o: ParamTensor; // [C, NH*D]
  readonly qBias: ParamTensor | null; // [NH*D]
  readonly kBias: ParamTensor | null; // [KV*D]
  readonly vBias: ParamTensor | null; // [KV*D]
  readonly oBias: ParamTensor | null; // [C]
  readonly qNorm: ParamTensor | null; // [D]
  readonly kNorm: ParamTensor | null; // [D]
  readonly postNorm: ParamTensor; // [C]
  readonly gate: ParamTensor; // [I, C]
  readonly up: ParamTensor; // [I, C]
  readonly down: ParamTensor; // [C, I]
}

/** Name, role and shape of a tensor before it has an offset. */
type TensorDecl = Omit<ParamTensor, "offset" | "size">;

// Dimension legend: V vocab, C hidden, I intermediate, NH heads, KV kv heads, D head_dim.
/** The tensors of one layer, in layout order, as HF names them. */
function layerDecls(cfg: ModelConfig, l: number): TensorDecl[] {
  const C = cfg.hiddenSize, I = cfg.intermediateSize, D = cfg.headDim;
  const q = cfg.numHeads * D, kv = cfg.numKvHeads * D;
  const p = `model.layers.${l}.`;
  const out: TensorDecl[] = [];
  const add = (role: LayerRole, name: string, shape: number[]) =>
    out.push({ name: p + name, role, layer: l, shape });
  add("input_norm", "input_layernorm.weight", [C]);
  add("q", "self_attn.q_proj.weight", [q, C]);
  if (cfg.qkvBias) add("q_bias", "self_attn.q_proj.bias", [q]);
  add("k", "self_attn.k_proj.weight", [kv, C]);
  if (cfg.qkvBias) add("k_bias", "self_attn.k_proj.bias", [kv]);
  add("v", "self_attn.v_proj.weight", [kv, C]);
  if (cfg.qkvBias) add("v_bias", "self_attn.v_proj.bias", [kv]);
  if (cfg.qkNorm) {
    add("q_norm", "self_attn.q_norm.weight", [D]);
    add("k_norm", "self_attn.k_norm.weight", [D]);
  }
  add("o", "self_attn.o_proj.weight", [C, q]);
  if (cfg.oBias) add("o_bias", "self_attn.o_proj.bias", [C]);
  add("post_norm", "post_attention_layernorm.weight", [C]);
  add("gate", "mlp.gate_proj.weight", [I, C]);
  add("up", "mlp.up_proj.weight", [I, C]);
  add("down", "mlp.down_proj.weight", [C, I]);
  return out;
}

/** Every tensor of the model in layout order: embed, layers 0..L-1, final norm, lm_head. */
export function hfTensorDecls(cfg: ModelConfig): TensorDecl[] {
  const decls: TensorDecl[] = [
    {
      name: "model.embed_tokens.weight",
      role: "embed",
      layer: null,
      shape: [cfg.vocabSize, cfg.hiddenSize],
    },
  ];
  for (let l = 0; l < cfg.numLayers; l++) decls.push(...layerDecls(cfg, l));
  decls.push({
    name: "model.norm.weight",
    role: "final_norm",
    layer: null,
    shape: [cfg.hiddenSize],
  });
  if (!cfg.tieWordEmbeddings) {
    decls.push({
      name: "lm_head.weight",
      role: "lm_head",
      layer: null,
      shape: [cfg.vocabSize, cfg.hiddenSize],
    });
  }
  return decls;
}

const LAYER_KEYS: Readonly<Record<LayerRole, keyof LayerView>> = {
  input_norm: "inputNorm",
  q: "q",
  k: "k",
  v: "v",
  o: "o",
  q_bias: "qBias",
  k_bias: "kBias",
  v_bias: "vBias",
  o_bias: "oBias",
  q_norm: "qNorm",
  k_norm: "kNorm",
  post_norm: "postNorm",
  gate: "gate",
  up: "up",
  down: "down",
};

/** The offsets table of one model config. */
export class ParamLayout {
  /** All tensors in layout order. */
  readonly tensors: readonly ParamTensor[];
  /** Floats to allocate (includes alignment padding). */
  readonly totalFloats: number;
  /** Parameter count (excludes padding). */
  readonly numParams: number;
  readonly embed: ParamTensor;
  readonly finalNorm: ParamTensor;
  /** The output head: the embedding itself when tie_word_embeddings. */
  readonly lmHead: ParamTensor;
  private readonly byName: ReadonlyMap<string, ParamTensor>;
  private readonly layers: readonly LayerView[];

  constructor(readonly config: ModelConfig) {
    let offset = 0;
    const tensors: ParamTensor[] = [];
    for (const d of hfTensorDecls(config)) {
      const size = d.shape.reduce((a, b) => a * b, 1);
      tensors.push({ ...d, offset, size });
      offset += Math.ceil(size / PARAM_ALIGN_FLOATS) * PARAM_ALIGN_FLOATS;
    }
    this.tensors = tensors;
    this.totalFloats = offset;
    this.numParams = tensors.reduce((a, t) => a + t.size, 0);
    this.byName = new Map(tensors.map((t) => [t.name, t]));
    this.embed = this.get("model.embed_tokens.weight");
    this.finalNorm = this.get("model.norm.weight");
    this.lmHead = config.tieWordEmbeddings ? this.embed : this.get("lm_head.weight");
    this.layers = Array.from({ length: config.numLayers }, (_, l) => this.buildLayerView(l));
  }

  private buildLayerView(l: number): LayerView {
    const v: Record<string, ParamTensor | null> = {
      qBias: null,
      kBias: null,
      vBias: null,
      oBias: null,
      qNorm: null,
      kNorm: null,
    };
    for (const t of this.tensors) if (t.layer === l) v[LAYER_KEYS[t.role as LayerRole]] = t;
    return v as unknown as LayerView;
  }

  /** The tensors of layer `l`. */
  layerView(l: number): LayerView {
    const v = this.layers[l];
    if (v === undefined) throw new RangeError(`layer ${l} out of range [0, ${this.layers.length})`);
    return v;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** A tensor by HF name. */
  get(name: string): ParamTensor {
    const t = this.byName.get(name);
    if (t === undefined) throw new RangeError(`no tensor "${name}" in this layout`);
    return t;
  }
}

/** The floats of tensor `t` inside a flat parameter array (a view, not a copy). */
export function slice(data: Float32Array, t: ParamTensor): Float32Array {
  return data.subarray(t.offset, t.offset + t.size);
}

/** A model ready for the engine or the reference: config, layout and the flat parameters. */
export interface ModelWeights {
  readonly config: ModelConfig;
  readonly layout: ParamLayout;
  /** [layout.totalFloats] */
  readonly data: Float32Array;
}

/** Checkpoint tensors that HF ignores on load (buffers, or a head the config ties away). */
function ignorable(name: string, cfg: ModelConfig): boolean {
  return name.endsWith(".rotary_emb.inv_freq") ||
    (cfg.tieWordEmbeddings && name === "lm_head.weight");
}

/**
 * Checks, from headers alone, that the checkpoint has exactly the tensors of `layout` with the
 * right shapes and float dtypes. Throws MissingTensorError, ShapeMismatchError,
 * UnsupportedDtypeError or UnexpectedTensorError before any tensor data is read.
 */
export function checkCheckpoint(ckpt: SafetensorsCheckpoint, layout: ParamLayout): void {
  const cfg = layout.config;
  for (const t of layout.tensors) {
    if (!ckpt.has(t.name)) {
      const hint = t.role === "lm_head"
        ? "; if the model ties its head to the embedding, config.json needs tie_word_embeddings true"
        : "";
      throw new MissingTensorError(
        ckpt.name,
        t.name,
        `the ${cfg.modelType} config needs it ` +
          `but the checkpoint lacks it${hint}`,
      );
    }
    const info = ckpt.info(t.name);
    expectShape(
      info.file,
      t.name,
      info.shape,
      t.shape,
      "check that config.json (sizes, head_dim, num_key_value_heads) belongs to these weights",
    );
    floatDtypeOf(info);
  }
  const extra = ckpt.names().filter((n) => !layout.has(n) && !ignorable(n, cfg));
  if (extra.length > 0) throw new UnexpectedTensorError(ckpt.name, extra);
}

/**
 * Streams every tensor of `layout` from the checkpoint to `sink` (e.g. a GPU upload), one at a
 * time, so the whole model never has to sit in JS memory. The checkpoint is checked first.
 */
export async function streamWeights(
  ckpt: SafetensorsCheckpoint,
  layout: ParamLayout,
  sink: (t: ParamTensor, data: Float32Array) => void | Promise<void>,
): Promise<void> {
  checkCheckpoint(ckpt, layout);
  for (const t of layout.tensors) {
    const data = new Float32Array(t.size);
    await ckpt.readInto(t.name, data);
    await sink(t, data);
  }
}

/** Reads every tensor into one flat array (a new one unless `into` is given). */
export async function loadWeights(
  ckpt: SafetensorsCheckpoint,
  layout: ParamLayout,
  into?: Float32Array,
): Promise<Float32Array> {
  const data = into ?? new Float32Array(layout.totalFloats);
  if (data.length !== layout.totalFloats) {
    throw new RangeError(
      `loadWeights: buffer has ${data.length} floats, layout needs ${layout.totalFloats}`,
    );
  }
  checkCheckpoint(ckpt, layout);
  for (const t of layout.tensors) await ckpt.readInto(t.name, slice(data, t));
  return data;
}

/** Loads config.json and the safetensors weights of a model folder. */
export async function loadModel(folder: Folder): Promise<ModelWeights> {
  const config = await loadModelConfig(folder);
  const layout = new ParamLayout(config);
  const ckpt = await SafetensorsCheckpoint.open(folder);
  try {
    return { config, layout, data: await loadWeights(ckpt, layout) };
  } finally {
    ckpt.close();
  }
}

/** The model's tensors under their HF names, ready for encodeSafetensors. */
export function weightTensors(w: ModelWeights): TensorToWrite[] {
  return w.layout.tensors.map((t) => ({ name: t.name, shape: t.shape, data: slice(w.data, t) }));
}
