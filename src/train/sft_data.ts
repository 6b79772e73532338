// SFT data: JSONL records (prompt/completion or chat messages) → token ids with a loss weight per
// position, the held-out split and the shuffled data order whose state a checkpoint stores.
//
// Masking (TRL's completion_only_loss / assistant_only_loss semantics):
//   {"prompt","completion"}  prompt completion [eos]; loss on completion + eos only.
//   {"messages":[...]}       the tokenizer's chat template over the whole conversation; loss on
//                            each assistant turn as the template renders it (content + end marker).
// An assistant turn's span is found by rendering the conversation up to it (with the generation
// prompt) and through it; both renders must be token prefixes of the whole, which holds for
// ChatML-style templates. A template that rewrites earlier turns is refused, not guessed at.

import type { ChatMessage, Tokenizer } from "../model/tokenizer.ts";
import { Rng } from "../model/init.ts";
import { TrainConfigError, TrainError } from "./errors.ts";

/** Where a record came from, for error messages. */
export interface RecordSource {
  readonly file: string;
  /** 1-based line number. */
  readonly line: number;
}

export type SftRecord =
  | {
    readonly kind: "completion";
    readonly prompt: string;
    readonly completion: string;
    readonly source: RecordSource;
  }
  | {
    readonly kind: "chat";
    readonly messages: readonly ChatMessage[];
    readonly source: RecordSource;
  };

/** A record as the trainer takes it: weights[t] is the loss weight of predicting tokens[t+1]. */
export interface EncodedRecord {
  readonly tokens: number[];
  readonly weights: number[];
  readonly source: RecordSource;
}

/** A data file or one of its lines is unusable; the message names the file and line. */
export class SftDataError extends TrainError {
  constructor(readonly file: string, readonly line: number, message: string) {
    super(`${file}${line > 0 ? `:${line}` : ""}: ${message}`);
  }
}

/** Top-level keys a record may have ("meta" is carried along and ignored, e.g. from deno task demos). */
const RECORD_KEYS = new Set(["prompt", "completion", "messages", "meta"]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function parseMessages(v: unknown, bad: (msg: string) => never): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) {
    bad(`"messages" must be a non-empty array of {role, content}`);
  }
  const out = (v as unknown[]).map((m, i) => {
    if (!isObject(m) || typeof m.role !== "string" || typeof m.content !== "string") {
      bad(`messages[${i}] must be {"role": string, "content": string}, got ${JSON.stringify(m)}`);
    }
    return { role: m.role as string, content: m.content as string };
  });
  if (!out.some((m) => m.role === "assistant")) {
    bad(
      `no "assistant" message: the loss covers assistant turns only, so this record teaches nothing`,
    );
  }
  return out;
}

/** One JSONL line → a record, or an SftDataError naming file:line and what is wrong. */
function parseLine(text: string, source: RecordSource): SftRecord {
  const bad = (msg: string): never => {
    throw new SftDataError(source.file, source.line, msg);
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    bad(`not valid JSON (${(e as Error).message}); each line must be one JSON object`);
  }
  if (!isObject(v)) return bad(`expected a JSON object, got ${JSON.stringify(v).slice(0, 80)}`);
  const unknown = Object.keys(v).filter((k) => !RECORD_KEYS.has(k));
  if (unknown.length) {
    bad(
      `unknown key(s) ${
        unknown.join(", ")
      }; a record has "prompt" + "completion" or "messages" (and optional "meta")`,
    );
  }
  if ("messages" in v) {
    if ("prompt" in v || "completion" in v) {
      bad(`has both "messages" and "prompt"/"completion"; use one form per record`);
    }
    return { kind: "chat", messages: parseMessages(v.messages, bad), source };
  }
  if (typeof v.prompt !== "string" || typeof v.completion !== "string") {
    bad(`needs string "prompt" and "completion" (or a "messages" array)`);
  }
  if ((v.completion as string).length === 0) {
    bad(`"completion" is empty: there is nothing to learn`);
  }
  return {
    kind: "completion",
    prompt: v.prompt as string,
    completion: v.completion as string,
    source,
  };
}

/** Parses JSONL text: one record per non-blank line. */
export function parseSftJsonl(text: string, file: string): SftRecord[] {
  const out: SftRecord[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line) out.push(parseLine(line, { file, line: i + 1 }));
  });
  return out;
}

/** Reads and parses JSONL files, in order (Deno). */
export async function loadSftFiles(paths: readonly string[]): Promise<SftRecord[]> {
  const out: SftRecord[] = [];
  for (const file of paths) {
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (e) {
      throw new SftDataError(
        file,
        0,
        `cannot read it (${
          (e as Error).message
        }); make it with npx deno task demos or fix the path`,
      );
    }
    const recs = parseSftJsonl(text, file);
    if (!recs.length) throw new SftDataError(file, 0, "holds no records (every line is blank)");
    out.push(...recs);
  }
  return out;
}

/**
 * A prompt/completion record's prompt ids: encoded exactly as RL rollouts and `deno task generate`
 * encode a prompt (no special tokens added), so the policy trains on the layout it will be sampled
 * with. An empty prompt gets the bos, else nothing would precede (and predict) the completion's
 * first token.
 */
export function encodePrompt(tok: Tokenizer, prompt: string): number[] {
  const encoded = tok.encode(prompt);
  return encoded.length || tok.bosId === null ? encoded : [tok.bosId];
}

function encodeCompletion(
  tok: Tokenizer,
  prompt: string,
  completion: string,
): { tokens: number[]; weights: number[] } {
  const p = encodePrompt(tok, prompt);
  // The eos teaches the model to stop; generation ends at it (tokenizer.stopIds).
  const c = [...tok.encode(completion), ...(tok.eosId === null ? [] : [tok.eosId])];
  const tokens = [...p, ...c];
  return { tokens, weights: tokens.slice(1).map((_, t) => (t + 1 >= p.length ? 1 : 0)) };
}

const isPrefix = (a: readonly number[], b: readonly number[]) =>
  a.length <= b.length && a.every((x, i) => x === b[i]);

function encodeChat(
  tok: Tokenizer,
  messages: readonly ChatMessage[],
  source: RecordSource,
): { tokens: number[]; weights: number[] } {
  const tokens = tok.encodeChat(messages);
  const weights = new Array<number>(Math.max(0, tokens.length - 1)).fill(0);
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const before = tok.encodeChat(messages.slice(0, i), { addGenerationPrompt: true });
    const through = tok.encodeChat(messages.slice(0, i + 1));
    if (!isPrefix(before, through) || !isPrefix(through, tokens)) {
      throw new SftDataError(
        source.file,
        source.line,
        `the chat template does not render this conversation turn by turn (assistant turn ${i} changes earlier tokens), ` +
          `so its loss mask cannot be found; convert the record to prompt/completion form`,
      );
    }
    for (let t = before.length; t < through.length; t++) weights[t - 1] = 1;
  });
  return { tokens, weights };
}

/** Token ids and loss weights of one record (see the header for what the loss covers). */
export function encodeRecord(tok: Tokenizer, r: SftRecord): EncodedRecord {
  const e = r.kind === "completion"
    ? encodeCompletion(tok, r.prompt, r.completion)
    : encodeChat(tok, r.messages, r.source);
  return { ...e, source: r.source };
}

export interface TruncateResult {
  readonly kept: EncodedRecord[];
  /** Records cut to maxLen tokens (their tail, and its loss, is lost). */
  readonly truncated: number;
  /** Records with no loss token left within maxLen (the prompt alone fills it). */
  readonly dropped: RecordSource[];
}

/** Cuts records to maxLen tokens, keeping the start; drops those left with nothing to learn. */
export function truncateRecords(recs: readonly EncodedRecord[], maxLen: number): TruncateResult {
  const kept: EncodedRecord[] = [], dropped: RecordSource[] = [];
  let truncated = 0;
  for (const r of recs) {
    const cut = r.tokens.length > maxLen;
    const e = cut
      ? {
        tokens: r.tokens.slice(0, maxLen),
        weights: r.weights.slice(0, maxLen - 1),
        source: r.source,
      }
      : r;
    if (!e.weights.some((w) => w > 0)) {
      dropped.push(r.source);
      continue;
    }
    if (cut) truncated++;
    kept.push(e);
  }
  return { kept, truncated, dropped };
}

/** Fisher–Yates permutation of 0..n−1 from a seeded stream (the same on every host). */
function permutation(n: number, seed: number): number[] {
  const rng = new Rng(seed);
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/**
 * Held-out records: a seeded random `fraction` of the n records (at least one when fraction > 0),
 * fixed by the seed alone so a resumed run evaluates on the same ones. Both lists are ascending.
 */
export function splitEval(
  n: number,
  fraction: number,
  seed: number,
): { train: number[]; eval: number[] } {
  if (!(fraction >= 0 && fraction < 1)) {
    throw new TrainConfigError(
      "eval.fraction",
      `${fraction} must lie in [0, 1): some records must remain to train on`,
    );
  }
  const k = fraction > 0 ? Math.max(1, Math.round(fraction * n)) : 0;
  if (k >= n && k > 0) {
    throw new TrainConfigError(
      "eval.fraction",
      `holds out ${k} of ${n} records, leaving none to train on; lower it or add data`,
    );
  }
  const held = new Set(permutation(n, (seed ^ 0x5eed5eed) >>> 0).slice(0, k));
  const all = Array.from({ length: n }, (_, i) => i);
  return { train: all.filter((i) => !held.has(i)), eval: all.filter((i) => held.has(i)) };
}

/** Where the data order stands: all a checkpoint needs to continue with the same batches. */
export interface DataOrderState {
  readonly seed: number;
  /** Epoch being read (0-based). */
  readonly epoch: number;
  /** Records of this epoch's permutation already handed out. */
  readonly cursor: number;
}

/**
 * The training stream: each epoch is a fresh seeded permutation of the records; batches are
 * consecutive slices of the stream, so a batch may span an epoch boundary (nothing is dropped).
 * An epoch's permutation depends only on (seed, epoch), so (seed, epoch, cursor) restores it.
 */
export class DataOrder {
  private readonly seedValue: number;
  private epochOrder: number[];
  private epoch: number;
  private cursor: number;

  constructor(readonly size: number, state: DataOrderState) {
    if (!Number.isInteger(size) || size < 1) {
      throw new TrainConfigError("data", `needs at least one training record, got ${size}`);
    }
    if (!(state.cursor >= 0 && state.cursor <= size) || !(state.epoch >= 0)) {
      throw new TrainConfigError(
        "data",
        `order state ${
          JSON.stringify(state)
        } does not fit ${size} records; the data changed since the checkpoint`,
      );
    }
    this.seedValue = state.seed;
    this.epoch = state.epoch;
    this.cursor = state.cursor;
    this.epochOrder = this.permutationOf(this.epoch);
  }

  private permutationOf(epoch: number): number[] {
    return permutation(this.size, (this.seedValue ^ Math.imul(epoch + 1, 0x9e3779b1)) >>> 0);
  }

  /** The next `count` record indices. */
  next(count: number): number[] {
    const out: number[] = [];
    while (out.length < count) {
      if (this.cursor >= this.size) {
        this.epoch++;
        this.cursor = 0;
        this.epochOrder = this.permutationOf(this.epoch);
      }
      out.push(this.epochOrder[this.cursor++]);
    }
    return out;
  }

  /** Epochs completed, fractional (for logs). */
  get progress(): number {
    return this.epoch + this.cursor / this.size;
  }

  get state(): DataOrderState {
    return { seed: this.seedValue, epoch: this.epoch, cursor: this.cursor };
  }
}

/** FNV-1a over every token and weight: a resume checks that the data it reads is the data it left. */
export function dataFingerprint(recs: readonly EncodedRecord[]): string {
  let h = 0x811c9dc5;
  const mix = (x: number) => (h = Math.imul(h ^ x, 0x01000193) >>> 0);
  for (const r of recs) {
    mix(r.tokens.length);
    r.tokens.forEach(mix);
    r.weights.forEach((w) => mix(Math.round(w * 1000)));
  }
  return h.toString(16).padStart(8, "0");
}

/** Training and held-out records, ready for the trainer, with what a run log should say about them. */
export interface SftData {
  readonly train: EncodedRecord[];
  readonly eval: EncodedRecord[];
  /** Of the training records: a resume refuses data that changed. */
  readonly fingerprint: string;
  /** Counts and warnings (truncated, dropped) for summary.log. */
  readonly notes: string[];
}

/** Loads, encodes, truncates and splits the JSONL files of a run. */
export async function prepareSftData(
  paths: readonly string[],
  tok: Tokenizer,
  o: { maxSeqLen: number; evalFraction: number; seed: number },
): Promise<SftData> {
  const records = await loadSftFiles(paths);
  const { kept, truncated, dropped } = truncateRecords(
    records.map((r) => encodeRecord(tok, r)),
    o.maxSeqLen,
  );
  const notes = [`data: ${records.length} records from ${paths.join(", ")}`];
  if (truncated) {
    notes.push(
      `warning: ${truncated} record(s) longer than data.maxSeqLen ${o.maxSeqLen} tokens were cut (their tails get no loss)`,
    );
  }
  if (dropped.length) {
    const first = dropped.slice(0, 3).map((s) => `${s.file}:${s.line}`).join(", ");
    notes.push(
      `warning: ${dropped.length} record(s) dropped: the prompt alone fills data.maxSeqLen (${first}${
        dropped.length > 3 ? ", ..." : ""
      })`,
    );
  }
  if (!kept.length) {
    throw new SftDataError(
      paths[0],
      0,
      `no record has a loss token within data.maxSeqLen ${o.maxSeqLen}; raise it`,
    );
  }
  const split = splitEval(kept.length, o.evalFraction, o.seed);
  const train = split.train.map((i) => kept[i]), held = split.eval.map((i) => kept[i]);
  notes.push(`split: ${train.length} train, ${held.length} held out`);
  return { train, eval: held, fingerprint: dataFingerprint(train), notes };
}
