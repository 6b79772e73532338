// One Tokenizer interface for the engine and the environments, with two implementations:
// ByteTokenizer (UTF-8 bytes + a few special tokens, for the tiny presets; pure TypeScript) and
// HF tokenizer.json through @huggingface/transformers (hf_tokenizer.ts, loaded on demand so the
// byte path does not pull in transformers.js). The byte tokenizer also exports itself as a real
// HF tokenizer.json (byte-level BPE without merges), so tiny checkpoints load in transformers too.

import { type Folder, readFolderText } from "../io/bytesource.ts";
import { type ModelConfig } from "./config.ts";
import { TokenizerError } from "./errors.ts";

/** A chat message as chat templates expect it. */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

export interface ChatOptions {
  /** End with the header of an assistant turn, for generation (HF add_generation_prompt). */
  readonly addGenerationPrompt?: boolean;
}

export interface Tokenizer {
  readonly kind: "byte" | "hf";
  /** Number of token ids the tokenizer can produce (≤ the model's vocab_size). */
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  /** Id used to pad batches: pad, else eos, else 0 (padded positions are masked anyway). */
  readonly padId: number;
  /** Ids that end generation (eos, end-of-turn markers, the config's eos_token_id list). */
  readonly stopIds: readonly number[];
  /** Whether applyChatTemplate can render a conversation (the file carries a chat template). */
  readonly hasChatTemplate: boolean;
  /** Text → ids. Special-token strings in `text` become their ids (as in HF). */
  encode(text: string, opts?: { addSpecialTokens?: boolean }): number[];
  decode(ids: ArrayLike<number>, opts?: { skipSpecialTokens?: boolean }): string;
  /** The prompt text for a conversation, rendered by the tokenizer's chat template. */
  applyChatTemplate(messages: readonly ChatMessage[], opts?: ChatOptions): string;
  /** applyChatTemplate then encode, without adding special tokens twice. */
  encodeChat(messages: readonly ChatMessage[], opts?: ChatOptions): number[];
}

/**
 * Byte tokenizer ids: 0..255 are the UTF-8 bytes, then these specials. Chat follows ChatML:
 * `<bos><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n...`.
 */
export const BYTE_SPECIAL_TOKENS = [
  "<pad>", // 256
  "<bos>", // 257
  "<eos>", // 258
  "<|im_start|>", // 259
  "<|im_end|>", // 260
  "<|reserved_0|>", // 261
  "<|reserved_1|>", // 262
  "<|reserved_2|>", // 263
] as const;

/** The byte tokenizer's vocabulary size (264: a multiple of 8). */
export const BYTE_VOCAB_SIZE = 256 + BYTE_SPECIAL_TOKENS.length;

/** The ChatML template of the byte tokenizer, in Jinja for the HF export. */
export const BYTE_CHAT_TEMPLATE = "{{ bos_token }}{% for message in messages %}" +
  "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Marker in tokenizer_config.json: this folder's tokenizer is the byte tokenizer. */
export const BYTE_TOKENIZER_MARKER = "pettingllms_byte_tokenizer";

/** UTF-8 bytes plus special tokens. Deterministic, tiny, and identical to its HF export. */
export class ByteTokenizer implements Tokenizer {
  readonly kind = "byte";
  readonly vocabSize = BYTE_VOCAB_SIZE;
  readonly padId = 256;
  readonly bosId = 257;
  readonly eosId = 258;
  readonly imStartId = 259;
  readonly imEndId = 260;
  readonly stopIds: readonly number[] = [258, 260];
  readonly hasChatTemplate = true;
  private readonly specialRe = new RegExp(
    BYTE_SPECIAL_TOKENS.map((s) => s.replace(/[|<>]/g, (c) => `\\${c}`)).join("|"),
    "g",
  );

  encode(text: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    const ids: number[] = opts.addSpecialTokens ? [this.bosId] : [];
    const utf8 = new TextEncoder();
    let last = 0;
    for (const m of text.matchAll(this.specialRe)) {
      for (const b of utf8.encode(text.slice(last, m.index))) ids.push(b);
      ids.push(256 + BYTE_SPECIAL_TOKENS.indexOf(m[0] as typeof BYTE_SPECIAL_TOKENS[number]));
      last = m.index + m[0].length;
    }
    for (const b of utf8.encode(text.slice(last))) ids.push(b);
    return ids;
  }

  decode(ids: ArrayLike<number>, opts: { skipSpecialTokens?: boolean } = {}): string {
    let out = "";
    let bytes: number[] = [];
    // Bytes between specials are decoded as one run, so multi-byte characters survive and
    // invalid UTF-8 becomes U+FFFD exactly as in HF's byte-level decoder. Skipped specials
    // vanish before decoding, so (as in HF) the bytes around them join one run.
    const flush = () => {
      out += new TextDecoder().decode(new Uint8Array(bytes));
      bytes = [];
    };
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!Number.isInteger(id) || id < 0 || id >= BYTE_VOCAB_SIZE) {
        throw new TokenizerError(`byte tokenizer: id ${id} is outside [0, ${BYTE_VOCAB_SIZE})`);
      }
      if (id < 256) {
        bytes.push(id);
      } else if (!opts.skipSpecialTokens) {
        flush();
        out += BYTE_SPECIAL_TOKENS[id - 256];
      }
    }
    flush();
    return out;
  }

  applyChatTemplate(messages: readonly ChatMessage[], opts: ChatOptions = {}): string {
    let s = "<bos>";
    for (const m of messages) s += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
    if (opts.addGenerationPrompt) s += "<|im_start|>assistant\n";
    return s;
  }

  encodeChat(messages: readonly ChatMessage[], opts: ChatOptions = {}): number[] {
    return this.encode(this.applyChatTemplate(messages, opts));
  }
}

/** GPT-2's byte → printable character table, which HF byte-level BPE vocabularies use. */
export function bytesToUnicode(): string[] {
  const table: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = String.fromCharCode(printable ? b : 256 + n++);
  }
  return table;
}

/**
 * The byte tokenizer as HF files (tokenizer.json, tokenizer_config.json): a byte-level BPE with
 * no merges, so every byte is one token with id = byte value; specials are added tokens.
 */
export function byteTokenizerFiles(): Map<string, string> {
  const chars = bytesToUnicode();
  const vocab: Record<string, number> = {};
  chars.forEach((c, b) => (vocab[c] = b));
  const byteLevel = {
    type: "ByteLevel",
    add_prefix_space: false,
    trim_offsets: false,
    use_regex: false,
  };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: BYTE_SPECIAL_TOKENS.map((content, i) => ({
      id: 256 + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: null,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  const config = {
    tokenizer_class: "PreTrainedTokenizerFast",
    bos_token: "<bos>",
    eos_token: "<eos>",
    pad_token: "<pad>",
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: 1 << 20,
    chat_template: BYTE_CHAT_TEMPLATE,
    [BYTE_TOKENIZER_MARKER]: 1,
  };
  return new Map([
    ["tokenizer.json", JSON.stringify(tokenizer, null, 1)],
    ["tokenizer_config.json", JSON.stringify(config, null, 2)],
  ]);
}

export interface LoadTokenizerOptions {
  /** The model's config: its eos_token_id list joins the stop ids. */
  readonly config?: ModelConfig;
  /** Load through transformers.js even when the folder holds the byte tokenizer (tests). */
  readonly forceHF?: boolean;
}

/**
 * Loads a folder's tokenizer: the byte tokenizer when tokenizer_config.json carries its marker,
 * else tokenizer.json + tokenizer_config.json through transformers.js (offline: only the given
 * files are read, from disk, OPFS, picked files or a URL).
 */
export async function loadTokenizer(
  folder: Folder,
  opts: LoadTokenizerOptions = {},
): Promise<Tokenizer> {
  const configText = await readFolderText(folder, "tokenizer_config.json");
  const tokConfig = configText === null
    ? {}
    : parseJson(folder, "tokenizer_config.json", configText);
  if (tokConfig[BYTE_TOKENIZER_MARKER] === 1 && !opts.forceHF) return new ByteTokenizer();
  const tokText = await readFolderText(folder, "tokenizer.json");
  if (tokText === null) {
    throw new TokenizerError(
      `${folder.name} has no tokenizer.json; copy the HF tokenizer files ` +
        "(tokenizer.json, tokenizer_config.json) next to the model, or use the byte tokenizer",
    );
  }
  const tokJson = parseJson(folder, "tokenizer.json", tokText);
  if (tokConfig.chat_template == null) {
    // Newer HF releases keep the template in its own file.
    const jinja = await readFolderText(folder, "chat_template.jinja");
    if (jinja !== null) tokConfig.chat_template = jinja;
  }
  const genText = await readFolderText(folder, "generation_config.json");
  const gen = genText === null ? {} : parseJson(folder, "generation_config.json", genText);
  const extraStops = [...(opts.config?.eosTokenIds ?? []), ...idList(gen.eos_token_id)];
  const { HFTokenizer } = await import("./hf_tokenizer.ts");
  return new HFTokenizer(tokJson, tokConfig, extraStops);
}

function idList(v: unknown): number[] {
  if (typeof v === "number") return [v];
  return Array.isArray(v) ? v.filter((x): x is number => typeof x === "number") : [];
}

function parseJson(folder: Folder, file: string, text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v;
  } catch (e) {
    throw new TokenizerError(`${folder.name}/${file} is not valid JSON: ${(e as Error).message}`);
  }
  throw new TokenizerError(`${folder.name}/${file} is not a JSON object`);
}
