// The OpenAI-compatible HTTP API of `deno task serve` on this engine: GET /v1/models,
// POST /v1/completions and POST /v1/chat/completions (non-streamed, or streamed as server-sent
// events: `data: {...}` chunks, then `data: [DONE]`). Every request goes through a BatchQueue, so
// requests that arrive together share one batched generation. Host-neutral: `openAiHandler`
// returns a fetch-style handler (Request → Response) that Deno.serve (src/cli/serve.ts) or a test
// mounts. See docs/serve.md for the parameters, the extensions and what is not supported.

import type { GenerateResult } from "../model/generate.ts";
import type { ChatMessage, Tokenizer } from "../model/tokenizer.ts";
import type { BatchQueue, QueuedRequest } from "./batcher.ts";

export interface ServerModel {
  /** The model id /v1/models lists and requests name (e.g. the folder's base name). */
  id: string;
  tokenizer: Tokenizer;
  queue: BatchQueue;
  /** Prompt + completion tokens one sequence may take (the KV cache's length). */
  maxLen: number;
  vocabSize: number;
  /** Ids that end generation (the tokenizer's, else the config's eos ids). */
  stopIds: readonly number[];
  /** Unix seconds, for /v1/models. */
  created?: number;
}

/** A request the API refuses: HTTP status, OpenAI error type and the parameter at fault. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly type = "invalid_request_error",
  ) {
    super(message);
    this.name = "ApiError";
  }
}

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
};

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...CORS },
  });
}

function errorResponse(e: ApiError): Response {
  return json(
    { error: { message: e.message, type: e.type, param: e.param, code: null } },
    e.status,
  );
}

// ---- request parameters -----------------------------------------------------------------------

type Body = Record<string, unknown>;

function num(
  body: Body,
  name: string,
  def: number,
  check: (v: number) => boolean,
  why: string,
): number {
  const v = body[name];
  if (v === undefined || v === null) return def;
  if (typeof v !== "number" || !Number.isFinite(v) || !check(v)) {
    throw new ApiError(400, `${name} ${why}, got ${JSON.stringify(v)}`, name);
  }
  return v;
}

const isInt = (v: number) => Number.isInteger(v);

/** Stop strings: a string or a list of up to 4 non-empty strings. */
function stops(body: Body): string[] {
  const s = body.stop;
  if (s === undefined || s === null) return [];
  const list = typeof s === "string" ? [s] : s;
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string" || x.length === 0)) {
    throw new ApiError(
      400,
      `stop must be a non-empty string or a list of them, got ${JSON.stringify(s)}`,
      "stop",
    );
  }
  return list as string[];
}

interface Sampling {
  maxTokens: number | null;
  temperature: number;
  topP: number;
  topK: number;
  repetitionPenalty: number;
  seed: number | null;
  n: number;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
}

function samplingOf(body: Body, maxTokensKeys: readonly string[]): Sampling {
  let maxTokens: number | null = null;
  for (const k of maxTokensKeys) {
    if (body[k] !== undefined && body[k] !== null) {
      maxTokens = num(body, k, 0, (v) => isInt(v) && v >= 1, "must be a whole number ≥ 1");
    }
  }
  const so = body.stream_options;
  return {
    maxTokens,
    temperature: num(
      body,
      "temperature",
      1,
      (v) => v >= 0 && v <= 100,
      "must be a number in [0, 100] (0 = greedy)",
    ),
    topP: num(body, "top_p", 1, (v) => v > 0 && v <= 1, "must be in (0, 1]"),
    topK: num(
      body,
      "top_k",
      0,
      (v) => isInt(v) && v >= -1,
      "must be a whole number (0 or -1 = off)",
    ),
    repetitionPenalty: num(body, "repetition_penalty", 1, (v) => v > 0, "must be > 0 (1 = off)"),
    seed: body.seed === undefined || body.seed === null
      ? null
      : num(body, "seed", 0, isInt, "must be a whole number"),
    n: num(body, "n", 1, (v) => isInt(v) && v >= 1 && v <= 64, "must be a whole number in [1, 64]"),
    stop: stops(body),
    stream: body.stream === true,
    includeUsage: typeof so === "object" && so !== null && (so as Body).include_usage === true,
  };
}

// ---- text of a result ---------------------------------------------------------------------------

/** The index where the first stop string starts in `text`, or -1. */
function stopIndex(text: string, stop: readonly string[]): number {
  let at = -1;
  for (const s of stop) {
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at;
}

interface Finished {
  text: string;
  /** The completion's tokens the text covers (a trailing stop id and tokens past a stop string left out). */
  ids: number[];
  logprobs: number[];
  finish: "stop" | "length";
}

function finish(m: ServerModel, r: GenerateResult, stop: readonly string[]): Finished {
  const tk = m.tokenizer;
  const decode = (ids: number[]) => tk.decode(ids, { skipSpecialTokens: true });
  let ids = r.ids;
  if (r.finish === "stop" && ids.length && m.stopIds.includes(ids[ids.length - 1])) {
    ids = ids.slice(0, -1);
  }
  let text = decode(ids);
  const at = stopIndex(text, stop);
  if (at >= 0) {
    text = text.slice(0, at);
    let k = ids.length;
    while (k > 0 && decode(ids.slice(0, k)).length > text.length) k--;
    ids = ids.slice(0, k);
  }
  return {
    text,
    ids,
    logprobs: r.logprobs.slice(0, ids.length),
    finish: at >= 0 ? "stop" : r.finish,
  };
}

/** The text a stream may send so far: up to a stop string, holding back a possible stop prefix and an unfinished UTF-8 character. */
function streamableText(text: string, stop: readonly string[]): string {
  const at = stopIndex(text, stop);
  if (at >= 0) return text.slice(0, at);
  const hold = Math.max(0, ...stop.map((s) => s.length - 1));
  let t = text.slice(0, text.length - hold);
  while (t.endsWith("\uFFFD")) t = t.slice(0, -1);
  return t;
}

// ---- requests ---------------------------------------------------------------------------------

interface Choice {
  prompt: number[];
  index: number;
}

function randomSeed(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

/** The queued request of one choice, checked against the KV cache's length. */
function queued(
  m: ServerModel,
  c: Choice,
  s: Sampling,
  onTokens?: (r: GenerateResult) => void,
): QueuedRequest {
  if (!c.prompt.length) {
    throw new ApiError(400, "the prompt is empty (it encodes to no tokens)", "prompt");
  }
  const room = m.maxLen - c.prompt.length;
  if (room < 1) {
    throw new ApiError(
      400,
      `the prompt has ${c.prompt.length} tokens; this server holds ${m.maxLen} per sequence (prompt + completion; serve --max-len)`,
      "prompt",
    );
  }
  const maxNewTokens = s.maxTokens ?? room;
  if (maxNewTokens > room) {
    throw new ApiError(
      400,
      `prompt (${c.prompt.length} tokens) + max_tokens (${maxNewTokens}) exceeds this server's ${m.maxLen} tokens per sequence (serve --max-len)`,
      "max_tokens",
    );
  }
  return {
    prompt: c.prompt,
    maxNewTokens,
    stopIds: m.stopIds,
    stopStrings: s.stop.length ? s.stop : undefined,
    // A seed keys the stream with the choice's index, so a seeded request repeats exactly whatever shares its batch.
    sequence: c.index,
    sampling: {
      temperature: s.temperature,
      topP: s.topP,
      topK: Math.max(0, s.topK),
      repetitionPenalty: s.repetitionPenalty,
      seed: (s.seed ?? randomSeed()) >>> 0,
    },
    onTokens,
  };
}

function promptIds(m: ServerModel, p: unknown, addSpecial: boolean): number[][] {
  const ok = (ids: unknown[]) =>
    ids.every((x) => typeof x === "number" && Number.isInteger(x) && x >= 0 && x < m.vocabSize);
  const bad = () =>
    new ApiError(
      400,
      `prompt must be a string, a list of strings, a list of token ids (0..${
        m.vocabSize - 1
      }) or a list of such lists`,
      "prompt",
    );
  if (typeof p === "string") return [m.tokenizer.encode(p, { addSpecialTokens: addSpecial })];
  if (!Array.isArray(p) || !p.length) throw bad();
  if (p.every((x) => typeof x === "string")) {
    return p.map((s) => m.tokenizer.encode(s, { addSpecialTokens: addSpecial }));
  }
  if (p.every((x) => typeof x === "number")) {
    if (!ok(p)) throw bad();
    return [p as number[]];
  }
  if (p.every((x) => Array.isArray(x) && ok(x))) return p as number[][];
  throw bad();
}

function messagesOf(body: Body): ChatMessage[] {
  const ms = body.messages;
  if (!Array.isArray(ms) || !ms.length) {
    throw new ApiError(400, "messages must be a non-empty list of {role, content}", "messages");
  }
  return ms.map((x, i) => {
    const role = (x as Body)?.role, content = (x as Body)?.content;
    if (typeof role !== "string") {
      throw new ApiError(400, `messages[${i}].role must be a string`, "messages");
    }
    if (typeof content === "string") return { role, content };
    if (
      Array.isArray(content) &&
      content.every((c) => (c as Body)?.type === "text" && typeof (c as Body).text === "string")
    ) {
      return { role, content: content.map((c) => (c as Body).text as string).join("") };
    }
    throw new ApiError(
      400,
      `messages[${i}].content must be a string or a list of {type: "text", text} parts (this server is text-only)`,
      "messages",
    );
  });
}

// ---- responses --------------------------------------------------------------------------------

function tokenText(m: ServerModel, id: number, asIds: boolean): string {
  return asIds ? `token_id:${id}` : m.tokenizer.decode([id]);
}

/** Legacy completions logprobs: tokens, their log-probs, text offsets; top_logprobs hold the sampled token only. */
function completionLogprobs(m: ServerModel, f: Finished, asIds: boolean, k: number) {
  const tokens = f.ids.map((id) => tokenText(m, id, asIds));
  const offsets: number[] = [];
  let at = 0;
  for (let i = 0; i < f.ids.length; i++) {
    offsets.push(at);
    at = m.tokenizer.decode(f.ids.slice(0, i + 1), { skipSpecialTokens: true }).length;
  }
  return {
    tokens,
    token_logprobs: f.logprobs,
    top_logprobs: k > 0 ? tokens.map((t, i) => ({ [t]: f.logprobs[i] })) : null,
    text_offset: offsets,
  };
}

function chatLogprobs(m: ServerModel, f: Finished, asIds: boolean) {
  return {
    content: f.ids.map((id, i) => {
      const token = tokenText(m, id, asIds);
      return {
        token,
        logprob: f.logprobs[i],
        bytes: [...new TextEncoder().encode(token)],
        top_logprobs: [],
      };
    }),
  };
}

const sse = (data: unknown) =>
  `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

interface Job {
  kind: "completion" | "chat";
  model: ServerModel;
  id: string;
  choices: Choice[];
  sampling: Sampling;
  /** Legacy logprobs count (completions) or 1 when chat logprobs are on; null: off. */
  logprobs: number | null;
  tokenIds: boolean;
}

async function runJob(job: Job): Promise<Response> {
  const { model: m, sampling: s } = job;
  const created = Math.floor(Date.now() / 1000);
  const promptTokens = job.choices.filter((_, i) => i % s.n === 0).reduce(
    (a, c) => a + c.prompt.length,
    0,
  );
  const object = job.kind === "chat" ? "chat.completion" : "text_completion";
  if (!s.stream) {
    const reqs = job.choices.map((c) => queued(m, c, s));
    const results = await Promise.all(reqs.map((r) => m.queue.submit(r)));
    const fs = results.map((r) => finish(m, r, s.stop));
    const completionTokens = results.reduce((a, r) => a + r.ids.length, 0);
    return json({
      id: job.id,
      object,
      created,
      model: m.id,
      choices: fs.map((f, index) =>
        job.kind === "chat"
          ? {
            index,
            message: { role: "assistant", content: f.text },
            finish_reason: f.finish,
            logprobs: job.logprobs === null ? null : chatLogprobs(m, f, job.tokenIds),
          }
          : {
            index,
            text: f.text,
            finish_reason: f.finish,
            logprobs: job.logprobs === null
              ? null
              : completionLogprobs(m, f, job.tokenIds, job.logprobs),
          }
      ),
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
  }
  // Streamed: one chunk per choice and decode step that adds text, then each choice's finish.
  const enc = new TextEncoder();
  const object2 = job.kind === "chat" ? "chat.completion.chunk" : "text_completion";
  const chunk = (
    index: number,
    text: string | null,
    finishReason: string | null,
    first = false,
  ) => ({
    id: job.id,
    object: object2,
    created,
    model: m.id,
    choices: [
      job.kind === "chat"
        ? {
          index,
          delta: first
            ? { role: "assistant", content: "" }
            : text === null
            ? {}
            : { content: text },
          finish_reason: finishReason,
          logprobs: null,
        }
        : { index, text: text ?? "", finish_reason: finishReason, logprobs: null },
    ],
  });
  const sent = job.choices.map(() => 0);
  const decode = (ids: number[]) => m.tokenizer.decode(ids, { skipSpecialTokens: true });
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  const push = (x: unknown) => {
    if (!closed) {
      try {
        controller.enqueue(enc.encode(sse(x)));
      } catch {
        closed = true; // the client went away; the generation finishes regardless
      }
    }
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => void (closed = true),
  });
  const reqs = job.choices.map((c, i) =>
    queued(m, c, s, (r) => {
      const t = streamableText(decode(r.ids), s.stop);
      if (t.length > sent[i]) {
        push(chunk(i, t.slice(sent[i]), null));
        sent[i] = t.length;
      }
    })
  );
  if (job.kind === "chat") job.choices.forEach((_, i) => push(chunk(i, null, null, true)));
  (async () => {
    try {
      const results = await Promise.all(reqs.map((r) => m.queue.submit(r)));
      let completionTokens = 0;
      results.forEach((r, i) => {
        const f = finish(m, r, s.stop);
        completionTokens += r.ids.length;
        if (f.text.length > sent[i]) push(chunk(i, f.text.slice(sent[i]), null));
        push(chunk(i, null, f.finish));
      });
      if (s.includeUsage) {
        push({
          id: job.id,
          object: object2,
          created,
          model: m.id,
          choices: [],
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completionTokens,
            total_tokens: promptTokens + completionTokens,
          },
        });
      }
      push("[DONE]");
    } catch (e) {
      push({
        error: {
          message: `generation failed: ${(e as Error).message}`,
          type: "server_error",
          param: null,
          code: null,
        },
      });
    } finally {
      if (!closed) controller.close();
      closed = true;
    }
  })();
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...CORS },
  });
}

let counter = 0;
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}${(counter++).toString(36)}`;

function checkModel(m: ServerModel, body: Body) {
  if (body.model !== undefined && body.model !== null && body.model !== m.id) {
    throw new ApiError(
      404,
      `The model \`${
        String(body.model)
      }\` does not exist; this server serves "${m.id}" (GET /v1/models)`,
      "model",
      "not_found_error",
    );
  }
}

function completionJob(m: ServerModel, body: Body): Job {
  checkModel(m, body);
  if (body.echo === true) {
    throw new ApiError(
      400,
      "echo is not supported (score a prompt with npx deno task logprobs)",
      "echo",
    );
  }
  if (body.suffix) throw new ApiError(400, "suffix (insertion) is not supported", "suffix");
  const s = samplingOf(body, ["max_tokens"]);
  if (s.maxTokens === null) s.maxTokens = 16; // the OpenAI default
  const logprobs = body.logprobs === undefined || body.logprobs === null ? null : num(
    body,
    "logprobs",
    0,
    (v) => isInt(v) && v >= 0 && v <= 1,
    "must be 0 or 1: sampling runs on the GPU and reads back only the sampled token's log-prob, so no other top candidates are known",
  );
  if (s.stream && logprobs !== null) {
    throw new ApiError(
      400,
      "logprobs with stream is not supported; request them without stream",
      "logprobs",
    );
  }
  const addSpecial = body.add_special_tokens === true;
  const prompts = promptIds(m, body.prompt, addSpecial);
  const choices = prompts.flatMap((prompt, p) =>
    Array.from({ length: s.n }, (_, j) => ({ prompt, index: p * s.n + j }))
  );
  return {
    kind: "completion",
    model: m,
    id: newId("cmpl"),
    choices,
    sampling: s,
    logprobs,
    tokenIds: body.return_tokens_as_token_ids === true,
  };
}

function chatJob(m: ServerModel, body: Body): Job {
  checkModel(m, body);
  const s = samplingOf(body, ["max_tokens", "max_completion_tokens"]);
  const logprobs = body.logprobs === true ? 1 : null;
  if (body.top_logprobs !== undefined && body.top_logprobs !== null && body.top_logprobs !== 0) {
    throw new ApiError(
      400,
      "top_logprobs must be 0: sampling runs on the GPU and reads back only the sampled token's log-prob",
      "top_logprobs",
    );
  }
  if (s.stream && logprobs !== null) {
    throw new ApiError(
      400,
      "logprobs with stream is not supported; request them without stream",
      "logprobs",
    );
  }
  const messages = messagesOf(body);
  let prompt: number[];
  try {
    prompt = m.tokenizer.encodeChat(messages, { addGenerationPrompt: true });
  } catch (e) {
    throw new ApiError(
      400,
      `this model's tokenizer cannot render a chat: ${
        (e as Error).message
      }. Use /v1/completions with the prompt text instead`,
      "messages",
    );
  }
  const choices = Array.from({ length: s.n }, (_, index) => ({ prompt, index }));
  return {
    kind: "chat",
    model: m,
    id: newId("chatcmpl"),
    choices,
    sampling: s,
    logprobs,
    tokenIds: body.return_tokens_as_token_ids === true,
  };
}

async function readBody(req: Request): Promise<Body> {
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    throw new ApiError(400, "the request body is not JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "the request body must be a JSON object");
  }
  return body as Body;
}

/** The API as a fetch-style handler. */
export function openAiHandler(m: ServerModel): (req: Request) => Promise<Response> {
  const created = m.created ?? Math.floor(Date.now() / 1000);
  return async (req) => {
    const path = new URL(req.url).pathname.replace(/\/+$/, "");
    try {
      if (req.method === "OPTIONS") return new Response(null, { status: 204, headers: CORS });
      if (path === "/health") return json({ status: "ok" });
      if (path === "/v1/models" && req.method === "GET") {
        return json({
          object: "list",
          data: [{
            id: m.id,
            object: "model",
            created,
            owned_by: "pettingllms-webgpu",
            max_model_len: m.maxLen,
          }],
        });
      }
      if (path === "/v1/completions" || path === "/v1/chat/completions") {
        if (req.method !== "POST") throw new ApiError(405, `${path} takes POST`);
        const body = await readBody(req);
        return await runJob(path === "/v1/completions" ? completionJob(m, body) : chatJob(m, body));
      }
      throw new ApiError(
        404,
        `no route ${req.method} ${path}; this server has GET /v1/models, POST /v1/completions, POST /v1/chat/completions`,
      );
    } catch (e) {
      if (e instanceof ApiError) return errorResponse(e);
      return errorResponse(
        new ApiError(500, `generation failed: ${(e as Error).message}`, null, "server_error"),
      );
    }
  };
}
