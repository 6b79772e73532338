// Greedy exact match on demonstrations: how often the model's greedy completion of a record's
// prompt is the record's completion, word for word. For oracle demonstrations this is the share
// of held-out states where the policy picks the oracle's move (`deno task match`), a finer signal
// than an environment's success rate while a warm start is being trained.

import type { Generator } from "../model/generate.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import { encodePrompt, type RecordSource, SftDataError, type SftRecord } from "./sft_data.ts";

/** One record as a generation target: the prompt's ids and the text the model should write. */
export interface MatchTarget {
  readonly prompt: number[];
  readonly expected: string;
  /** Tokens of the expected text (plus a stop token): the least generation budget it needs. */
  readonly expectedTokens: number;
  readonly source: RecordSource;
}

export interface MatchMiss {
  readonly source: RecordSource;
  readonly expected: string;
  readonly got: string;
}

export interface MatchResult {
  readonly exact: number;
  readonly total: number;
  readonly misses: MatchMiss[];
}

/**
 * Prompt ids and expected text per record, encoded as `sft` trains them: a prompt/completion
 * record's prompt as is (an empty one as the bos), a chat record's conversation up to its last
 * assistant turn with the generation prompt, that turn's content the expected text.
 */
export function matchTargets(tok: Tokenizer, records: readonly SftRecord[]): MatchTarget[] {
  return records.map((r) => {
    let prompt: number[], expected: string;
    if (r.kind === "completion") {
      prompt = encodePrompt(tok, r.prompt);
      expected = r.completion;
    } else {
      const last = r.messages.findLastIndex((m) => m.role === "assistant");
      if (last < 0) {
        throw new SftDataError(
          r.source.file,
          r.source.line,
          `no "assistant" message to compare with`,
        );
      }
      prompt = tok.encodeChat(r.messages.slice(0, last), { addGenerationPrompt: true });
      expected = r.messages[last].content;
    }
    if (!prompt.length) {
      throw new SftDataError(
        r.source.file,
        r.source.line,
        "the prompt encodes to no tokens and the tokenizer has no bos",
      );
    }
    return { prompt, expected, expectedTokens: tok.encode(expected).length + 1, source: r.source };
  });
}

/**
 * Greedy completions of every target, `batch` at a time, compared with the expected text after
 * trimming surrounding whitespace. The generator's model needs `batch` slots and room for the
 * longest prompt plus `maxNewTokens`.
 */
export async function greedyMatch(
  gen: Generator,
  tok: Tokenizer,
  targets: readonly MatchTarget[],
  opts: { batch: number; maxNewTokens: number },
): Promise<MatchResult> {
  let exact = 0;
  const misses: MatchMiss[] = [];
  for (let i = 0; i < targets.length; i += opts.batch) {
    const chunk = targets.slice(i, i + opts.batch);
    const res = await gen.generate(chunk.map((t, j) => ({
      prompt: t.prompt,
      maxNewTokens: opts.maxNewTokens,
      stopIds: tok.stopIds,
      sequence: j,
      sampling: { temperature: 0 },
    })));
    res.forEach((r, j) => {
      const got = tok.decode(r.ids, { skipSpecialTokens: true });
      if (got.trim() === chunk[j].expected.trim()) exact++;
      else misses.push({ source: chunk[j].source, expected: chunk[j].expected, got });
    });
  }
  return { exact, total: targets.length, misses };
}
