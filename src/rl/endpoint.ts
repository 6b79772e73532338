// An agent served by an OpenAI-compatible endpoint (config model.endpoint / model.endpoints):
// ours (`deno task serve`), vLLM, SGLang, llama.cpp's server. It stands in for a Generator in
// rollouts and evaluation: each request goes to POST {url}/v1/completions (all of a batch's
// requests at once, so a batching server runs them together) with the prompt as text (decoded
// with the local tokenizer; any server) or as token ids (prompt "ids": servers of the same
// model), temperature / top_p / top_k / max_tokens / stop / seed, and the reply's text comes back
// as completion ids through the local tokenizer (or the server's own ids where it returns them as
// "token_id:N", vLLM's return_tokens_as_token_ids). An endpoint agent is a frozen partner: its
// weights are not ours, so its samples never enter the loss (RlSession leaves them out).

import type { GenerateOptions, GenerateRequest, GenerateResult } from "../model/generate.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { CompletionSampler } from "./rollout.ts";

export interface EndpointOptions {
  /** The server's base URL, with or without the trailing /v1. */
  url: string;
  /** Local tokenizer: prompt ids → text, reply text → ids. */
  tokenizer: Tokenizer;
  /** "text" (default): the prompt's text; "ids": its token ids (the server must run the same tokenizer). */
  prompt?: "text" | "ids";
  /** Model id to request; default the first of GET /v1/models. */
  model?: string;
  /** Requests in flight at once (default 64). */
  concurrency?: number;
}

/** The endpoint failed or refused a request; the message names the URL and the server's reason. */
export class EndpointError extends Error {
  override name = "EndpointError";
}

/** http://h:p, http://h:p/ or http://h:p/v1 → http://h:p/v1 */
export function apiBase(url: string): string {
  const u = url.replace(/\/+$/, "");
  return u.endsWith("/v1") ? u : `${u}/v1`;
}

/** One u32 seed from (seed, sequence): the request's own RNG stream on a server that takes one seed. */
function mixSeed(seed: number, sequence: number): number {
  let h = 2166136261;
  for (const x of [seed >>> 0, sequence >>> 0]) h = Math.imul(h ^ x, 16777619) >>> 0;
  return h >>> 0;
}

interface CompletionReply {
  choices?: {
    text?: string;
    finish_reason?: string | null;
    logprobs?: { tokens?: string[]; token_logprobs?: (number | null)[] } | null;
  }[];
  error?: { message?: string };
}

export class EndpointSampler implements CompletionSampler {
  readonly base: string;
  private modelId: Promise<string> | null = null;
  /** Requests sent (tests and logs). */
  requests = 0;

  constructor(readonly opts: EndpointOptions) {
    this.base = apiBase(opts.url);
  }

  private async post(path: string, body: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    } catch (e) {
      throw new EndpointError(`cannot reach ${this.base}${path}: ${(e as Error).message}`);
    }
    const text = await res.text();
    let reply: unknown;
    try {
      reply = JSON.parse(text);
    } catch {
      throw new EndpointError(
        `${this.base}${path} answered ${res.status} with a body that is not JSON: ${
          text.slice(0, 200)
        }`,
      );
    }
    if (!res.ok) {
      const msg = (reply as CompletionReply)?.error?.message ?? text.slice(0, 300);
      throw new EndpointError(`${this.base}${path} refused the request (${res.status}): ${msg}`);
    }
    return reply;
  }

  /** The model id requests name: the configured one, else the first the server lists. */
  model(): Promise<string> {
    if (this.opts.model) return Promise.resolve(this.opts.model);
    this.modelId ??= (async () => {
      let res: Response;
      try {
        res = await fetch(`${this.base}/models`);
      } catch (e) {
        throw new EndpointError(`cannot reach ${this.base}/models: ${(e as Error).message}`);
      }
      const body = await res.json().catch(() => null) as { data?: { id?: string }[] } | null;
      const id = body?.data?.[0]?.id;
      if (!res.ok || typeof id !== "string") {
        throw new EndpointError(`${this.base}/models lists no model (status ${res.status})`);
      }
      return id;
    })();
    this.modelId.catch(() => (this.modelId = null));
    return this.modelId;
  }

  private async one(model: string, r: GenerateRequest, index: number): Promise<GenerateResult> {
    const tk = this.opts.tokenizer, asIds = this.opts.prompt === "ids";
    const s = r.sampling ?? {};
    const body: Record<string, unknown> = {
      model,
      prompt: asIds ? [...r.prompt] : tk.decode(r.prompt, { skipSpecialTokens: true }),
      max_tokens: r.maxNewTokens,
      temperature: s.temperature ?? 1,
      top_p: s.topP ?? 1,
      seed: mixSeed(s.seed ?? 0, r.sequence ?? index),
      logprobs: 1,
      add_special_tokens: false,
    };
    if (s.topK) body.top_k = s.topK;
    if (s.repetitionPenalty !== undefined && s.repetitionPenalty !== 1) {
      body.repetition_penalty = s.repetitionPenalty;
    }
    if (r.stopStrings?.length) body.stop = [...r.stopStrings];
    if (asIds) body.return_tokens_as_token_ids = true;
    this.requests++;
    const reply = await this.post("/completions", body) as CompletionReply;
    const c = reply.choices?.[0];
    if (!c || typeof c.text !== "string") {
      throw new EndpointError(`${this.base}/completions answered without choices[0].text`);
    }
    const lp = c.logprobs;
    const served = asIds && lp?.tokens?.every((t) => /^token_id:\d+$/.test(t))
      ? lp.tokens.map((t) => Number(t.slice(9)))
      : null;
    const ids = served ?? tk.encode(c.text);
    const logprobs = lp?.token_logprobs && lp.token_logprobs.length === ids.length
      ? lp.token_logprobs.map((x) => x ?? 0)
      : new Array(ids.length).fill(0); // unknown: the server's tokens differ from ours (never used in a loss)
    return { ids, logprobs, finish: c.finish_reason === "length" ? "length" : "stop" };
  }

  async generate(
    reqs: readonly GenerateRequest[],
    opts: Pick<GenerateOptions, "onFinish"> = {},
  ): Promise<GenerateResult[]> {
    const model = await this.model();
    const out: GenerateResult[] = new Array(reqs.length);
    let next = 0;
    const worker = async () => {
      while (next < reqs.length) {
        const i = next++;
        out[i] = await this.one(model, reqs[i], i);
        opts.onFinish?.(i, out[i]);
      }
    };
    const n = Math.max(1, Math.min(this.opts.concurrency ?? 64, reqs.length));
    await Promise.all(Array.from({ length: n }, worker));
    return out;
  }
}
