// Seeded initialisation of a model from its config (as HF's _init_weights does: normal(0,
// initializer_range) for linear and embedding weights, the padding row zeroed, RMSNorm weights 1,
// biases 0 — with opt-in noise on norms and biases so tests notice a swapped or ignored tensor),
// and the files of a complete HF model folder: config.json, safetensors, tokenizer files.

import type { FloatDtype } from "../io/dtypes.ts";
import { encodeSharded } from "../io/safetensors.ts";
import { type ModelConfig, toHFConfig } from "./config.ts";
import { BYTE_VOCAB_SIZE, byteTokenizerFiles } from "./tokenizer.ts";
import { type ModelWeights, ParamLayout, slice, weightTensors } from "./weights.ts";

/**
 * xoshiro128** seeded through splitmix32: small, fast, and the same sequence on every host.
 * Normals come from Box–Muller (V8 and SpiderMonkey share fdlibm's log/cos, and values are
 * rounded to float32 afterwards, so checkpoints are reproducible across hosts in practice).
 */
export class Rng {
  private s = new Uint32Array(4);
  // The second Box–Muller value. A flag beside a plain number (not number | null) keeps the field
  // a double that V8 updates in place: 5× faster normals, the same values.
  private spare = 0;
  private hasSpare = false;

  constructor(seed: number) {
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      // splitmix32: spreads any seed (even 0) over the whole state
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
  }

  /** Uniform 32-bit unsigned integer. */
  nextU32(): number {
    const s = this.s;
    const r = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return r;
  }

  /** Uniform in [0, 1) with 32 random bits. */
  uniform(): number {
    return this.nextU32() / 4294967296;
  }

  /** Standard normal. */
  normal(): number {
    if (this.hasSpare) {
      this.hasSpare = false;
      return this.spare;
    }
    const u1 = 1 - this.uniform(); // (0, 1]: log stays finite
    const u2 = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spare = r * Math.sin(2 * Math.PI * u2);
    this.hasSpare = true;
    return r * Math.cos(2 * Math.PI * u2);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** FNV-1a of a string: gives each tensor its own stream, so adding one changes no other. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export interface InitOptions {
  /** Seed of every tensor's stream (default 0). */
  readonly seed?: number;
  /** Std of weights and embeddings (default config.initializerRange, 0.02 in HF). */
  readonly std?: number;
  /** Std of attention biases (default 0, as HF); tests set it so biases matter. */
  readonly biasStd?: number;
  /** Norm weights are 1 + normal(0, normNoise) (default 0: exactly 1, as HF). */
  readonly normNoise?: number;
  /**
   * "normal" (default, as HF) or "uniform": the same mean and std from a uniform draw, ~20×
   * faster in JS (no log/sin/cos), for benchmarks that write models of hundreds of millions of
   * parameters, where the values only need a realistic scale.
   */
  readonly distribution?: "normal" | "uniform";
}

/** A freshly initialised model. Same config + options → the same bits, on every host. */
export function initModel(config: ModelConfig, opts: InitOptions = {}): ModelWeights {
  const layout = new ParamLayout(config);
  const data = new Float32Array(layout.totalFloats);
  const seed = opts.seed ?? 0;
  const std = opts.std ?? config.initializerRange;
  for (const t of layout.tensors) {
    const rng = new Rng((hashName(t.name) ^ Math.imul(seed, 0x9e3779b1)) >>> 0);
    const out = slice(data, t);
    const isNorm = t.role.endsWith("norm");
    const isBias = t.role.endsWith("bias");
    const s = isNorm ? (opts.normNoise ?? 0) : isBias ? (opts.biasStd ?? 0) : std;
    const mean = isNorm ? 1 : 0;
    if (s === 0) out.fill(mean);
    else if (opts.distribution === "uniform") {
      // U(−a, a) has std a/√3.
      const a = 2 * Math.sqrt(3) * s;
      for (let i = 0; i < out.length; i++) out[i] = mean + a * (rng.uniform() - 0.5);
    } else for (let i = 0; i < out.length; i++) out[i] = mean + s * rng.normal();
  }
  // nn.Embedding(padding_idx=pad_token_id) starts with a zero row for the pad token.
  const pad = config.padTokenId;
  if (pad !== null && pad < config.vocabSize) {
    slice(data, layout.embed).fill(0, pad * config.hiddenSize, (pad + 1) * config.hiddenSize);
  }
  return { config, layout, data };
}

const TORCH_DTYPE: Readonly<Record<FloatDtype, string>> = {
  F32: "float32",
  F16: "float16",
  BF16: "bfloat16",
};

export interface HFFolderOptions {
  /** Storage dtype of the weights (default F32). */
  readonly dtype?: FloatDtype;
  /**
   * Tokenizer files to include: "byte" (the byte tokenizer as HF files), "none", or a map of
   * file name → content. Default: "byte" when vocab_size is the byte tokenizer's, else "none".
   */
  readonly tokenizer?: "byte" | "none" | ReadonlyMap<string, string>;
  /** Original config.json fields to keep (e.g. of the model that was fine-tuned). */
  readonly baseConfig?: Readonly<Record<string, unknown>>;
  /** Split weights into shards of about this many bytes (default: one file). */
  readonly maxShardBytes?: number;
}

/**
 * The files of an HF model folder for `w` (write them with writeFilesAtomic in Deno, or
 * writeOpfsFile in a browser): config.json, generation_config.json, model.safetensors (or shards
 * + index) and tokenizer files.
 */
export function hfFolderFiles(
  w: ModelWeights,
  opts: HFFolderOptions = {},
): Map<string, Uint8Array> {
  const dtype = opts.dtype ?? "F32";
  const files = encodeSharded(weightTensors(w), opts.maxShardBytes ?? Infinity, { dtype });
  const config: Record<string, unknown> = {
    ...toHFConfig(w.config, opts.baseConfig),
    torch_dtype: TORCH_DTYPE[dtype],
  };
  const enc = new TextEncoder();
  files.set("config.json", enc.encode(JSON.stringify(config, null, 2) + "\n"));
  // generate() in transformers reads its stop tokens from here.
  const gen = {
    bos_token_id: config.bos_token_id,
    eos_token_id: config.eos_token_id,
    pad_token_id: config.pad_token_id,
  };
  files.set("generation_config.json", enc.encode(JSON.stringify(gen, null, 2) + "\n"));
  const tok = opts.tokenizer ?? (w.config.vocabSize === BYTE_VOCAB_SIZE ? "byte" : "none");
  const tokFiles = tok === "byte" ? byteTokenizerFiles() : tok === "none" ? new Map() : tok;
  for (const [name, text] of tokFiles) files.set(name, enc.encode(text));
  return files;
}
