// The Tokenizer interface over Hugging Face tokenizer.json + tokenizer_config.json, through
// @huggingface/transformers (never a hand-written BPE). The tokenizer is built directly from the
// JSON objects, so nothing is fetched from the Hub and it works the same in Deno and browsers.

import { AutoTokenizer, type PreTrainedTokenizer } from "@huggingface/transformers";
import { TokenizerError } from "./errors.ts";
import type { ChatMessage, ChatOptions, Tokenizer } from "./tokenizer.ts";

type Json = Record<string, unknown>;
type TokenizerClass = new (json: Json, config: Json) => PreTrainedTokenizer;

/** A transformers.js tokenizer behind the project's Tokenizer interface. */
export class HFTokenizer implements Tokenizer {
  readonly kind = "hf";
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly padId: number;
  readonly stopIds: readonly number[];
  readonly hasChatTemplate: boolean;
  /** The transformers.js object, for what the interface does not cover. */
  readonly inner: PreTrainedTokenizer;

  /**
   * @param tokenizerJson tokenizer.json
   * @param tokenizerConfig tokenizer_config.json (chat_template included)
   * @param extraStopIds more ids that end generation (config / generation_config eos lists)
   */
  constructor(tokenizerJson: Json, tokenizerConfig: Json, extraStopIds: readonly number[] = []) {
    // Pick the class the way AutoTokenizer.from_pretrained does, minus the download.
    const mapping = AutoTokenizer.TOKENIZER_CLASS_MAPPING as unknown as Record<
      string,
      TokenizerClass
    >;
    const name = String(tokenizerConfig.tokenizer_class ?? "PreTrainedTokenizer").replace(
      /Fast$/,
      "",
    );
    const cls = mapping[name] ?? mapping.PreTrainedTokenizer;
    try {
      this.inner = new cls(tokenizerJson, tokenizerConfig);
    } catch (e) {
      throw new TokenizerError(
        `tokenizer.json could not be loaded by transformers.js ` +
          `(${(e as Error).message}); is it a tokenizers-library file?`,
        { cause: e },
      );
    }
    const t = this.inner as unknown as {
      bos_token_id?: number;
      eos_token_id?: number;
      pad_token_id?: number;
      model: { vocab: unknown[] };
    };
    this.vocabSize = t.model.vocab.length;
    this.bosId = t.bos_token_id ?? null;
    this.eosId = t.eos_token_id ?? null;
    this.padId = t.pad_token_id ?? this.eosId ?? 0;
    const stops = new Set<number>(extraStopIds);
    if (this.eosId !== null) stops.add(this.eosId);
    this.stopIds = [...stops];
    this.hasChatTemplate = this.inner.chat_template != null;
  }

  encode(text: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    return this.inner.encode(text, { add_special_tokens: opts.addSpecialTokens ?? false });
  }

  decode(ids: ArrayLike<number>, opts: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return ""; // transformers.js throws on an empty list
    return this.inner.decode(Array.from(ids), {
      skip_special_tokens: opts.skipSpecialTokens ?? false,
    });
  }

  applyChatTemplate(messages: readonly ChatMessage[], opts: ChatOptions = {}): string {
    if (this.inner.chat_template == null) {
      throw new TokenizerError(
        "this tokenizer has no chat_template; add one to " +
          "tokenizer_config.json (or chat_template.jinja), or build prompts with encode()",
      );
    }
    const out = this.inner.apply_chat_template(
      messages.map((m) => ({ role: m.role, content: m.content })),
      { tokenize: false, add_generation_prompt: opts.addGenerationPrompt ?? false },
    );
    return out as string;
  }

  encodeChat(messages: readonly ChatMessage[], opts: ChatOptions = {}): number[] {
    // HF's apply_chat_template(tokenize=True) also encodes without adding special tokens.
    return this.encode(this.applyChatTemplate(messages, opts), { addSpecialTokens: false });
  }
}
