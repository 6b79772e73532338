// The parameters of a model as one flat Float32 allocation with an offsets table (llm.c style):
// HF tensor names and shapes (Linear weights [out, in]) for Llama/Qwen2/Qwen3 and GPT-2 (whose
// Conv1D weights, stored [in, out] in checkpoints, are transposed to [out, in] on load and back
// on save, so every projection is [out, in] in memory; checkpoint names with or without the
// `transformer.` prefix load), each tensor
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

export type GlobalRole = "embed" | "pos_embed" | "final_norm" | "final_norm_bias" | "lm_head";
export type LayerRole =
  | "input_norm"
  | "input_norm_bias"
  | "qkv"
  | "qkv_bias"
  | "post_norm_bias"
  | "up_bias"
  | "down_bias"
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
  /** Shape in memory: Linear weights [out, in] as HF stores them, embeddings [vocab, hidden]. */
  readonly shape: readonly number[];
  /**
   * GPT-2 Conv1D weight: the checkpoint stores it transposed, [shape[1], shape[0]] = [in, out];
   * loading and saving transpose it, so `shape` is [out, in] like every Linear here.
   */
  readonly conv1d?: boolean;
  /** Start in floats; a multiple of PARAM_ALIGN_FLOATS. */
  readonly offset: number;
  /** Number of floats (product of shape). */
  readonly size: number;
}

/** The tensors of one decoder layer. Optional ones are null when the config has none. */
export interface LayerView {
  readonly inputNorm: ParamTensor; // [C]
  /** Llama family; null in gpt2, whose q/k/v are the rows of the fused `qkv`. */
  readonly q: ParamTensor | null; // [NH*D, C]
  readonly k: ParamTensor | null; // [KV*D, C]
  readonly v: ParamTensor | null; // [KV*D, C]
  /** gpt2 only: attn.c_attn, q, k and v stacked, [3C, C] in memory (Conv1D [C, 3C] on disk). */
  readonly qkv: ParamTensor | null;
  readonly qkvBias: ParamTensor | null; // [3C]
  /** gpt2 only: LayerNorm biases of ln_1 and ln_2, MLP biases of c_fc and c_proj. */
  readonly inputNormBias: ParamTensor | null; // [C]
  readonly postNormBias: ParamTensor | null; // [C]
  readonly upBias: ParamTensor | null; // [I]
  readonly downBias: ParamTensor | null; // [C]
  readonly o: ParamTensor; // [C, NH*D]
  readonly qBias: ParamTensor | null; // [NH*D]
  readonly kBias: ParamTensor | null; // [KV*D]
  readonly vBias: ParamTensor | null; // [KV*D]
  readonly oBias: ParamTensor | null; // [C]
  readonly qNorm: ParamTensor | null; // [D]
  readonly kNorm: ParamTensor | null; // [D]
  readonly postNorm: ParamTensor; // [C]
  /** SwiGLU gate (Llama family); null in gpt2, whose MLP is down(gelu_new(up(x))). */
  readonly gate: ParamTensor | null; // [I, C]
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

/** GPT-2's tensors (GPT2LMHeadModel names, `transformer.` prefixed as save_pretrained writes). */
function gpt2Decls(cfg: ModelConfig): TensorDecl[] {
  const C = cfg.hiddenSize, I = cfg.intermediateSize;
  const out: TensorDecl[] = [
    { name: "transformer.wte.weight", role: "embed", layer: null, shape: [cfg.vocabSize, C] },
    {
      name: "transformer.wpe.weight",
      role: "pos_embed",
      layer: null,
      shape: [cfg.maxPositionEmbeddings, C],
    },
  ];
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `transformer.h.${l}.`;
    const add = (role: LayerRole, name: string, shape: number[], conv1d = false) =>
      out.push({ name: p + name, role, layer: l, shape, ...(conv1d ? { conv1d } : {}) });
    add("input_norm", "ln_1.weight", [C]);
    add("input_norm_bias", "ln_1.bias", [C]);
    add("qkv", "attn.c_attn.weight", [3 * C, C], true);
    add("qkv_bias", "attn.c_attn.bias", [3 * C]);
    add("o", "attn.c_proj.weight", [C, C], true);
    add("o_bias", "attn.c_proj.bias", [C]);
    add("post_norm", "ln_2.weight", [C]);
    add("post_norm_bias", "ln_2.bias", [C]);
    add("up", "mlp.c_fc.weight", [I, C], true);
    add("up_bias", "mlp.c_fc.bias", [I]);
    add("down", "mlp.c_proj.weight", [C, I], true);
    add("down_bias", "mlp.c_proj.bias", [C]);
  }
  out.push(
    { name: "transformer.ln_f.weight", role: "final_norm", layer: null, shape: [C] },
    { name: "transformer.ln_f.bias", role: "final_norm_bias", layer: null, shape: [C] },
  );
  if (!cfg.tieWordEmbeddings) {
    out.push({ name: "lm_head.weight", role: "lm_head", layer: null, shape: [cfg.vocabSize, C] });
  }
  return out;
}

/** Every tensor of the model in layout order: embed, layers 0..L-1, final norm, lm_head. */
export function hfTensorDecls(cfg: ModelConfig): TensorDecl[] {
  if (cfg.modelType === "gpt2") return gpt2Decls(cfg);
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
  input_norm_bias: "inputNormBias",
  qkv: "qkv",
  qkv_bias: "qkvBias",
  post_norm_bias: "postNormBias",
  up_bias: "upBias",
  down_bias: "downBias",
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
  /** gpt2: the learned position embedding wpe [n_positions, C]; null with RoPE. */
  readonly posEmbed: ParamTensor | null;
  readonly finalNorm: ParamTensor;
  /** gpt2: ln_f's bias; null for RMSNorm models. */
  readonly finalNormBias: ParamTensor | null;
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
    const byRole = (role: GlobalRole) => tensors.find((t) => t.role === role) ?? null;
    this.embed = byRole("embed")!;
    this.posEmbed = byRole("pos_embed");
    this.finalNorm = byRole("final_norm")!;
    this.finalNormBias = byRole("final_norm_bias");
    this.lmHead = config.tieWordEmbeddings ? this.embed : this.get("lm_head.weight");
    this.layers = Array.from({ length: config.numLayers }, (_, l) => this.buildLayerView(l));
  }

  private buildLayerView(l: number): LayerView {
    const v: Record<string, ParamTensor | null> = {
      q: null,
      k: null,
      v: null,
      gate: null,
      qkv: null,
      qkvBias: null,
      inputNormBias: null,
      postNormBias: null,
      upBias: null,
      downBias: null,
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
export function slice<T extends Float32Array | Float64Array>(data: T, t: ParamTensor): T {
  return data.subarray(t.offset, t.offset + t.size) as T;
}

/** A model ready for the engine or the reference: config, layout and the flat parameters. */
export interface ModelWeights {
  readonly config: ModelConfig;
  readonly layout: ParamLayout;
  /** [layout.totalFloats] */
  readonly data: Float32Array;
}

/** The same parameters held in float64, for the reference (e.g. an adapter merged unrounded). */
export interface ModelWeights64 extends Omit<ModelWeights, "data"> {
  readonly data: Float64Array;
}

/** Checkpoint tensors that HF ignores on load (buffers, or a head the config ties away). */
function ignorable(name: string, cfg: ModelConfig): boolean {
  return name.endsWith(".rotary_emb.inv_freq") ||
    (cfg.tieWordEmbeddings && name === "lm_head.weight") ||
    // GPT-2's causal-mask buffers, saved by old transformers versions
    (cfg.modelType === "gpt2" &&
      (name.endsWith(".attn.bias") || name.endsWith(".attn.masked_bias")));
}

/**
 * The checkpoint's name of a layout tensor: its HF name, or for gpt2 the name without the
 * `transformer.` prefix (GPT2Model checkpoints such as openai-community/gpt2 store "h.0....").
 */
function ckptName(ckpt: SafetensorsCheckpoint, t: ParamTensor): string {
  if (ckpt.has(t.name) || !t.name.startsWith("transformer.")) return t.name;
  const bare = t.name.slice("transformer.".length);
  return ckpt.has(bare) ? bare : t.name;
}

/** The layout's name of a checkpoint tensor (adds GPT-2's `transformer.` prefix where needed). */
function layoutName(name: string, layout: ParamLayout): string {
  return layout.config.modelType === "gpt2" && !layout.has(name) &&
      layout.has(`transformer.${name}`)
    ? `transformer.${name}`
    : name;
}

/** Shape as the checkpoint stores it: Conv1D weights [in, out]. */
function fileShape(t: ParamTensor): readonly number[] {
  return t.conv1d ? [t.shape[1], t.shape[0]] : t.shape;
}

/** [rows, cols] row-major → [cols, rows] (into `out`). */
function transposeInto(src: Float32Array, rows: number, cols: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = src[r * cols + c];
  }
}

/** Reads tensor `t` into `out` ([t.size]), transposing a Conv1D weight to [out, in]. */
async function readTensor(ckpt: SafetensorsCheckpoint, t: ParamTensor, out: Float32Array) {
  if (!t.conv1d) return await ckpt.readInto(ckptName(ckpt, t), out);
  const raw = new Float32Array(t.size);
  await ckpt.readInto(ckptName(ckpt, t), raw);
  transposeInto(raw, t.shape[1], t.shape[0], out);
}

/**
 * Checks, from headers alone, that the checkpoint has exactly the tensors of `layout` with the
 * right shapes and float dtypes. Throws MissingTensorError, ShapeMismatchError,
 * UnsupportedDtypeError or UnexpectedTensorError before any tensor data is read.
 */
export function checkCheckpoint(ckpt: SafetensorsCheckpoint, layout: ParamLayout): void {
  const cfg = layout.config;
  for (const t of layout.tensors) {
    const name = ckptName(ckpt, t);
    if (!ckpt.has(name)) {
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
    const info = ckpt.info(name);
    expectShape(
      info.file,
      name,
      info.shape,
      fileShape(t),
      "check that config.json (sizes, head_dim, num_key_value_heads) belongs to these weights",
    );
    floatDtypeOf(info);
  }
  const extra = ckpt.names().filter((n) =>
    !layout.has(layoutName(n, layout)) && !ignorable(n, cfg)
  );
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
    await readTensor(ckpt, t, data);
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
  for (const t of layout.tensors) await readTensor(ckpt, t, slice(data, t));
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

/** The model's tensors under their HF names, ready for encodeSafetensors (Conv1D as [in, out]). */
export function weightTensors(w: ModelWeights): TensorToWrite[] {
  return w.layout.tensors.map((t) => {
    if (!t.conv1d) return { name: t.name, shape: t.shape, data: slice(w.data, t) };
    const data = new Float32Array(t.size);
    transposeInto(slice(w.data, t), t.shape[0], t.shape[1], data);
    return { name: t.name, shape: fileShape(t), data };
  });
}
