// Batched generation: prefill every prompt into its own KV-cache slot, then decode all
// sequences together, one row per sequence per step, sampling on the GPU. Only the sampled
// ids and their log-probs come back each step (8 bytes a sequence), for stop checks.
// Sampling is keyed by (seed, sequence, step), so a sequence's tokens do not depend on what
// else is in the batch.

import { KernelArgumentError } from "../gpu/errors.ts";
import type { Kernel } from "../gpu/pipelines.ts";
import { uniformStruct } from "../gpu/uniforms.ts";
import type { GpuModel } from "./gpu_model.ts";
import type { ModelRow } from "./gpu_model_options.ts";
import {
  packSamplingParams,
  PARAM_WORDS,
  Sampler,
  type SamplerOptions,
  type SamplingParams,
} from "./sampling.ts";

/**
 * shaders/decode.wgsl's parameters (advance): rows, the cache positions, words per row of the
 * sampling params, and this step of `steps` chained between readbacks.
 */
export const DecodeParams = uniformStruct("decode_params", "Params", [
  ["rows", "u32"],
  ["maxPos", "u32"],
  ["paramWords", "u32"],
  ["step", "u32"],
  ["steps", "u32"],
]);

export interface GenerateRequest {
  prompt: readonly number[];
  maxNewTokens: number;
  /** Sampling settings; temperature 0 is greedy. */
  sampling?: Omit<SamplingParams, "step" | "sequence" | "seed"> & { seed?: number };
  /** RNG stream of this sequence (default: its index in the batch). */
  sequence?: number;
  /** Ids that end the sequence (kept in the output). */
  stopIds?: readonly number[];
  /** Text that ends the sequence, checked on the decoded output when `decode` is given. */
  stopStrings?: readonly string[];
  /** LoRA adapter of this sequence (omitted: the base model). */
  adapter?: number;
}

export type FinishReason = "stop" | "length";

export interface GenerateResult {
  ids: number[];
  /** log p(id) under the sampling distribution's full softmax (temperature applied). */
  logprobs: number[];
  finish: FinishReason;
}

export interface GenerateOptions {
  /** Turns ids into text for stop strings. */
  decode?: (ids: number[]) => string;
  /**
   * Decode steps chained on the GPU between readbacks (default 8; all of them when no request
   * can stop early and there is no onStep). Each readback costs a submission and a wait, so
   * chaining keeps batched decoding fast; the price is up to S−1 wasted steps after the last
   * sequence stops. (4 and 8 measured the same in the RL bench once readbacks were early.)
   */
  stepsPerSync?: number;
  /**
   * Prefill a prompt prefix that several requests share (same tokens, same adapter) once and
   * copy its KV-cache positions to the other requests' slots, which prefill only the rest
   * (prefillPlan: GRPO's K samples of one prompt share it all, different tasks their system
   * message): default true; false prefills every request whole (tests compare the two).
   */
  sharePrefill?: boolean;
  /** Called after each decode step with the tokens so far (for streaming). */
  onStep?: (step: number, results: readonly GenerateResult[]) => void;
  /**
   * Called once per request (its index in `reqs`) as soon as a readback shows its sequence has
   * ended, while the GPU goes on decoding the others: callers start work on a finished sequence
   * (an env step, a sandboxed tool run) without waiting for the batch.
   */
  onFinish?: (index: number, result: GenerateResult) => void;
  /**
   * Filled in with the wall time of each phase when given (for throughput reports): prefill
   * then waits for the GPU before decoding starts, which costs one sync.
   */
  timing?: GenerateTiming;
}

export interface GenerateTiming {
  /** Prefill of every prompt but its last token, through the GPU finishing it. */
  prefillMs: number;
  /** The decode steps, from the first step's submission to the last readback. */
  decodeMs: number;
  /** Decode steps run (chained steps after every sequence stopped included). */
  decodeSteps: number;
  /** Prompt tokens prefilled (a prompt shared by several requests counts once); optional. */
  prefillTokens?: number;
}

export interface GeneratorOptions {
  /**
   * Sample inside the fused decode step where the model has one and the sampler would take its
   * lane kernel (the same code, so the same tokens): one dispatch a step instead of three
   * (forward, sample, advance). Default true; tests turn it off to compare.
   */
  fuseSampling?: boolean;
  /** The sampler's options (lazy always): e.g. `{ rowChunks: 1 }` never splits a row (benches). */
  sampler?: SamplerOptions;
}

export class Generator {
  private constructor(
    readonly model: GpuModel,
    readonly sampler: Sampler,
    private advance: Kernel,
    private fuseSampling: boolean,
  ) {}

  static async create(model: GpuModel, opts: GeneratorOptions = {}): Promise<Generator> {
    const fuse = opts.fuseSampling ?? true;
    // Lazy: compiles nothing, so the decode step below can ask which variant it will take.
    const sampler = await Sampler.create(model.gpu, {
      vocab: model.config.vocabSize,
      ...opts.sampler,
      lazy: true,
    });
    const [advance] = await Promise.all([
      model.gpu.kernel({
        shader: "decode",
        entry: "advance",
        bindings: [
          "uniform",
          "read-only-storage",
          "read-only-storage",
          "storage",
          "storage",
          "storage",
          "storage",
        ],
        constants: { WG: 64 },
      }),
      // The decode step's kernels for the adapters attached now (generate prepares again for
      // adapters attached later, and the sampler's kernel where the step does not sample itself).
      model.prepareDecode({
        sample: fuse && sampler.variantFor(model.config.vocabSize) === "lane",
      }),
    ]);
    return new Generator(model, sampler, advance, fuse);
  }

  /** Requests completed and tokens generated by this generator so far (progress reports). */
  readonly totals = { requests: 0, tokens: 0 };

  /** Sequences one decode batch holds: a KV slot, an activation row and a row of logits each. */
  get maxBatch(): number {
    return Math.min(this.model.slots, this.model.chunkRows, this.model.maxLogitRows);
  }

  private checkRequests(reqs: readonly GenerateRequest[]) {
    const m = this.model;
    if (reqs.length === 0) throw new KernelArgumentError("generate: no requests");
    reqs.forEach((r, i) => {
      if (r.prompt.length === 0) {
        throw new KernelArgumentError(`request ${i}: empty prompt (add a BOS token)`);
      }
      if (r.prompt.length + r.maxNewTokens > m.maxLen) {
        throw new KernelArgumentError(
          `request ${i}: prompt ${r.prompt.length} + ${r.maxNewTokens} new tokens exceeds maxLen ${m.maxLen}; create the model with a larger maxLen`,
        );
      }
    });
  }

  /**
   * Generates every request. More requests than one batch holds (maxBatch) run as consecutive
   * batches; each keeps its RNG stream (`sequence`, default its index in `reqs`), so the tokens
   * are the same as in one batch. onStep sees every request's results (later batches' still empty).
   */
  async generate(
    reqs: readonly GenerateRequest[],
    opts: GenerateOptions = {},
  ): Promise<GenerateResult[]> {
    this.checkRequests(reqs);
    const cap = this.maxBatch;
    if (reqs.length <= cap) return await this.generateBatch(reqs, opts);
    const all: GenerateResult[] = reqs.map(() => ({ ids: [], logprobs: [], finish: "length" }));
    const total: GenerateTiming = { prefillMs: 0, decodeMs: 0, decodeSteps: 0 };
    for (let start = 0; start < reqs.length; start += cap) {
      const part = reqs.slice(start, start + cap).map((r, j) => ({
        ...r,
        sequence: r.sequence ?? start + j,
      }));
      const timing: GenerateTiming | undefined = opts.timing &&
        { prefillMs: 0, decodeMs: 0, decodeSteps: 0 };
      const onStep = opts.onStep && ((step: number, res: readonly GenerateResult[]) => {
        opts.onStep!(step, [...all.slice(0, start), ...res, ...all.slice(start + res.length)]);
      });
      const onFinish = opts.onFinish &&
        ((i: number, res: GenerateResult) => opts.onFinish!(start + i, res));
      const out = await this.generateBatch(part, { ...opts, timing, onStep, onFinish });
      all.splice(start, out.length, ...out);
      if (timing) {
        total.prefillMs += timing.prefillMs;
        total.decodeMs += timing.decodeMs;
        total.decodeSteps += timing.decodeSteps;
        total.prefillTokens = (total.prefillTokens ?? 0) + (timing.prefillTokens ?? 0);
      }
    }
    if (opts.timing) Object.assign(opts.timing, total);
    return all;
  }

  private async generateBatch(
    reqs: readonly GenerateRequest[],
    opts: GenerateOptions,
  ): Promise<GenerateResult[]> {
    const m = this.model, gpu = m.gpu, B = reqs.length, V = m.config.vocabSize;
    // Prefill all but each prompt's last token; that token starts the first decode step. A
    // request whose prompt begins like an earlier one's (same adapter) takes a copy of those
    // cache positions from that request's slot and prefills only the rest (prefillPlan).
    const shares = opts.sharePrefill === false
      ? reqs.map((_, slot) => ({ from: slot, n: 0, whole: false }))
      : prefillPlan(reqs);
    const rowsOf = (slot: number, from: number): ModelRow[] => {
      const r = reqs[slot];
      return r.prompt.slice(from, -1).map((token, i) => ({
        token,
        slot,
        pos: from + i,
        adapter: r.adapter,
      }));
    };
    const copiesOf = (whole: boolean) =>
      shares.flatMap((q, to) => q.n > 0 && q.whole === whole ? [{ from: q.from, to, n: q.n }] : []);
    // Stages: roots whole; the first n positions of prompts that begin like a root copied, then
    // their rest; then repeated prompts copied whole from their first request.
    const roots = reqs.flatMap((_, slot) => shares[slot].n === 0 ? rowsOf(slot, 0) : []);
    const prefixes = copiesOf(false), repeats = copiesOf(true);
    const rests = prefixes.flatMap((q) => rowsOf(q.to, q.n));
    // Once per model and adapter rank: the fused decode step, where it applies; else the sampler.
    // Steps sample inside the fused decode step where the model has one and the sampler would take
    // its lane kernel; else the plain decode step (fused or per op), then the sampler's kernel.
    const sampleInStep = this.fuseSampling && this.sampler.variantFor(V) === "lane";
    await m.prepareDecode({ sample: sampleInStep });
    const fused = sampleInStep && m.canSampleInStep;
    if (!fused) {
      if (sampleInStep) await m.prepareDecode({ sample: false });
      await this.sampler.prepare(V);
    }
    const t0 = performance.now();
    if (roots.length) await m.forward(roots, []);
    const copy = (pairs: { from: number; to: number; n: number }[]) => {
      if (!pairs.length) return;
      const rec = gpu.recorder("shared prefill");
      m.encodeCopyCache(rec, pairs);
      rec.submit();
    };
    copy(prefixes);
    if (rests.length) await m.forward(rests, []);
    copy(repeats);
    if (opts.timing) {
      await gpu.sync();
      opts.timing.prefillTokens = roots.length + rests.length;
    }
    const t1 = performance.now();
    const results: GenerateResult[] = reqs.map(() => ({ ids: [], logprobs: [], finish: "length" }));
    const done = reqs.map((r) => r.maxNewTokens <= 0);
    done.forEach((d, i) => d && opts.onFinish?.(i, results[i]));
    // Requests that can only end by length, with no streaming, are read back once at the end.
    const lengthBound = !opts.onStep &&
      reqs.every((r) => !r.stopIds?.length && !(r.stopStrings?.length && opts.decode));
    const longest = Math.max(...reqs.map((r) => r.maxNewTokens));
    const S = Math.max(1, Math.min(opts.stepsPerSync ?? (lengthBound ? longest : 8), longest));
    const ids = gpu.zeros(B, "gen.ids"), logprobs = gpu.zeros(B, "gen.logprobs");
    const params = gpu.zeros(B * PARAM_WORDS, "gen.params");
    const out = gpu.zeros(2 * S * B, "gen.out"); // [S, B] ids then [S, B] log-probs
    // The first decode step feeds each prompt's last token at its position.
    m.writeRows(
      reqs.map((r, slot) => ({
        token: r.prompt[r.prompt.length - 1],
        slot,
        pos: r.prompt.length - 1,
        adapter: r.adapter,
      })),
      reqs.map((_, i) => i),
    );
    gpu.write(
      params,
      packSamplingParams(
        reqs.map((r, i) => ({
          ...r.sampling,
          seed: r.sampling?.seed ?? 0,
          sequence: r.sequence ?? i,
          step: 0,
        })),
      ),
    );
    // S chained steps, recorded once and replayed: forward, sample, then save and advance; or
    // all three in the fused step's dispatch, which chains up to sampleStepsPerDispatch steps.
    // The plan is replayed until the longest request ends, every row advancing each step: no
    // row's context passes the longest prompt plus that many steps.
    const context = Math.max(...reqs.map((r) => r.prompt.length)) + Math.ceil(longest / S) * S;
    const rec = gpu.recorder("decode steps");
    for (let s = 0; s < S; s++) {
      if (fused) {
        const count = Math.min(S - s, m.sampleStepsPerDispatch);
        m.encodeSampleStep(rec, B, { params, out, step: s, steps: S, count });
        s += count - 1;
        continue;
      }
      m.encodeForward(rec, B, B, true, context); // a decode step: one row per slot, all logits
      this.sampler.encode(rec, {
        rows: B,
        vocab: V,
        logits: m.logitsBuffer,
        params,
        ids,
        logprobs,
      });
      const adv = DecodeParams.pack({
        rows: B,
        maxPos: m.maxLen,
        paramWords: PARAM_WORDS,
        step: s,
        steps: S,
      });
      rec.dispatch(
        this.advance,
        [null, ids, logprobs, m.scratch.ids, m.scratch.meta, params, out],
        [Math.ceil(B / 64)],
        adv,
      );
    }
    // The model's decode plans share an arena and bind groups across calls: a model runs one
    // generation at a time (its scratch and caches are one batch's), and the plan is done with
    // before this returns.
    const plan = rec.finish({ shared: m.planKey });
    try {
      let steps = 0;
      for (let step = 0; done.some((d) => !d); step += S) {
        plan.run();
        steps += S;
        const raw = await gpu.read(out, 2 * S * B * 4);
        const idv = new Uint32Array(raw, 0, S * B), lpv = new Float32Array(raw, S * B * 4, S * B);
        for (let s = 0; s < S; s++) {
          reqs.forEach((r, i) => {
            if (done[i]) return;
            const res = results[i], id = idv[s * B + i];
            res.ids.push(id);
            res.logprobs.push(lpv[s * B + i]);
            if (r.stopIds?.includes(id) || this.hitStopString(r, res, opts)) {
              [res.finish, done[i]] = ["stop", true];
            } else if (res.ids.length >= r.maxNewTokens) done[i] = true;
            if (done[i]) opts.onFinish?.(i, res);
          });
          opts.onStep?.(step + s, results);
        }
      }
      if (opts.timing) {
        Object.assign(opts.timing, {
          prefillMs: t1 - t0,
          decodeMs: performance.now() - t1,
          decodeSteps: steps,
        });
      }
    } finally {
      plan.destroy();
      [ids, logprobs, params, out].forEach((b) => b.destroy());
    }
    this.totals.requests += B;
    this.totals.tokens += results.reduce((n, r) => n + r.ids.length, 0);
    return results;
  }

  private hitStopString(r: GenerateRequest, res: GenerateResult, opts: GenerateOptions): boolean {
    if (!r.stopStrings?.length || !opts.decode) return false;
    const text = opts.decode(res.ids);
    return r.stopStrings.some((s) => text.includes(s));
  }

  /** log p(ids[t+1] | ids[0..t]) for t = 0..n−2, computed in one forward on slot 0. */
  async logprobs(ids: readonly number[], adapter?: number): Promise<Float32Array> {
    if (ids.length < 2) return new Float32Array(0);
    const m = this.model, V = m.config.vocabSize;
    const rows = ids.map((token, pos) => ({ token, slot: 0, pos, adapter }));
    const want = rows.slice(0, -1).map((_, i) => i);
    const logits = await m.forward(rows, want);
    const out = new Float32Array(want.length);
    for (let t = 0; t < want.length; t++) {
      const row = logits.subarray(t * V, (t + 1) * V);
      let mx = -Infinity;
      for (const v of row) mx = Math.max(mx, v);
      let s = 0;
      for (const v of row) s += Math.exp(v - mx);
      out[t] = row[ids[t + 1]] - mx - Math.log(s);
    }
    return out;
  }
}

/** Shortest shared prefix worth a copy (a copy and a second forward cost more than a few rows). */
export const MIN_SHARED_PREFIX = 16;

/**
 * Which cache positions each request takes from another's prefill. A prompt that an earlier
 * request already has (same tokens, same adapter) is copied whole from that first request
 * (`whole`, n = its length − 1: GRPO's K samples, a tree's K branches). The first request of each
 * prompt takes the longest prefix, at least MIN_SHARED_PREFIX tokens, that it shares with an
 * earlier root (a request that prefills its whole prompt; different tasks share a system
 * message) and prefills the rest; with none it is a root itself (n = 0).
 */
export function prefillPlan(
  reqs: readonly GenerateRequest[],
): { from: number; n: number; whole: boolean }[] {
  const first = new Map<string, number>(), roots: number[] = [];
  return reqs.map((r, slot) => {
    const want = r.prompt.length - 1; // positions a prefill writes
    const key = `${r.adapter ?? -1}|${r.prompt.join(",")}`;
    const seen = first.get(key);
    if (seen !== undefined) return { from: seen, n: want, whole: true };
    first.set(key, slot);
    let best = { from: slot, n: 0, whole: false };
    for (const root of roots) {
      const p = reqs[root];
      if ((p.adapter ?? -1) !== (r.adapter ?? -1)) continue;
      const limit = Math.min(want, p.prompt.length - 1);
      let n = 0;
      while (n < limit && p.prompt[n] === r.prompt[n]) n++;
      if (n > best.n) best = { from: root, n, whole: false };
    }
    if (best.n >= MIN_SHARED_PREFIX) return best;
    roots.push(slot);
    return { from: slot, n: 0, whole: false };
  });
}
