// Runs exported decoder graphs with onnxruntime-web's wasm backend: full-sequence logits, and
// step-by-step decoding with the KV-cache graph (the cache lives in JS as ORT tensors between
// steps). In Deno, `import "onnxruntime-web"` resolves to the package's "node" build, which
// loads ort-wasm-simd-threaded.wasm from node_modules/onnxruntime-web/dist by file path: no
// network, no wasmPaths needed. The wasm module is initialised once per process with the
// env settings of the first session, so configureOrt must come before any session exists.

import * as ort from "onnxruntime-web";
import type { ModelConfig } from "../config.ts";
import { kvNames } from "./export.ts";
import { OrtRuntimeError } from "./errors.ts";

export interface OrtConfig {
  /**
   * wasm threads (default 1). More than one needs SharedArrayBuffer and workers; a single
   * thread keeps runs deterministic and the peer comparable with one-queue engines.
   */
  readonly numThreads?: number;
}

let initialised: OrtConfig | null = null;

/** Sets onnxruntime-web's wasm env. Later calls must agree with the first session's settings. */
export function configureOrt(cfg: OrtConfig = {}): void {
  const numThreads = cfg.numThreads ?? 1;
  if (initialised !== null) {
    if ((initialised.numThreads ?? 1) !== numThreads) {
      throw new OrtRuntimeError(
        `onnxruntime-web is already initialised with numThreads ${initialised.numThreads ?? 1}; ` +
          `the wasm module is set up once per process, so start a new process for ${numThreads}`,
      );
    }
    return;
  }
  ort.env.wasm.numThreads = numThreads;
  // The proxy worker would move inference off the main thread; benchmarks and tests want the
  // plain in-thread call, and the node build has no proxy anyway.
  ort.env.wasm.proxy = false;
  ort.env.logLevel = "error";
  initialised = { numThreads };
}

/** The sizes the runner needs to build inputs (a ModelConfig has them all). */
export type DecoderDims = Pick<ModelConfig, "numLayers" | "numKvHeads" | "headDim" | "vocabSize">;

/** Logits of a run: [batch, seq, vocab] row-major. */
export interface Logits {
  readonly data: Float32Array;
  readonly batch: number;
  readonly seq: number;
  readonly vocab: number;
}

/** Past keys/values of every layer for one batch of sequences, and how many tokens it holds. */
export interface KvCache {
  readonly batch: number;
  length: number;
  /** By input name past_key_values.{l}.key|value: [batch, KV, length, D] */
  tensors: Map<string, ort.Tensor>;
}

/**
 * Token ids [batch][seq] as an int64 tensor; every row must have the same length. Ids are
 * checked against the vocabulary here because Gather would silently wrap negative ones.
 */
export function idsTensor(ids: readonly (readonly number[])[], vocab: number): ort.Tensor {
  const B = ids.length, T = ids[0]?.length ?? 0;
  if (B === 0 || T === 0) throw new OrtRuntimeError("ids: need at least one row and one token");
  const data = new BigInt64Array(B * T);
  ids.forEach((row, b) => {
    if (row.length !== T) {
      throw new OrtRuntimeError(
        `ids: row ${b} has ${row.length} tokens, row 0 has ${T}; the graphs take same-length ` +
          `batches (pad or group sequences by length)`,
      );
    }
    row.forEach((id, t) => {
      if (!Number.isInteger(id) || id < 0 || id >= vocab) {
        throw new OrtRuntimeError(
          `ids: token ${id} (row ${b}, position ${t}) outside [0, ${vocab})`,
        );
      }
      data[b * T + t] = BigInt(id);
    });
  });
  return new ort.Tensor("int64", data, [B, T]);
}

/** An exported decoder (full or KV-cache graph) loaded into onnxruntime-web. */
export class OrtDecoder {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly dims: DecoderDims,
    /** True for the KV-cache graph (it has position_ids and past_key_values inputs). */
    readonly kvCache: boolean,
  ) {}

  /** The graph's input names, in graph order. */
  get inputNames(): readonly string[] {
    return this.session.inputNames;
  }

  /** The graph's output names, in graph order. */
  get outputNames(): readonly string[] {
    return this.session.outputNames;
  }

  /** Loads .onnx bytes. `dims` must be those of the exported model. */
  static async create(bytes: Uint8Array, dims: DecoderDims, cfg: OrtConfig = {}) {
    configureOrt(cfg);
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(bytes, {
        executionProviders: ["wasm"],
        graphOptimizationLevel: "all",
        // Run failures come back as rejected promises with ORT's message (rethrown below);
        // its logger would print each one a second time on stderr.
        logSeverityLevel: 4,
      });
    } catch (e) {
      throw new OrtRuntimeError(
        `onnxruntime-web rejected the graph: ${(e as Error).message ?? e}. Re-export it with ` +
          `npx deno task export; if that persists the exporter emits an op ORT does not support`,
        { cause: e },
      );
    }
    const kv = session.inputNames.includes("position_ids");
    const layers = session.inputNames.filter((n) => n.endsWith(".key")).length;
    if (kv && layers !== dims.numLayers) {
      throw new OrtRuntimeError(
        `the graph has ${layers} layers of past key/values but dims say ${dims.numLayers}; ` +
          `pass the config of the model that was exported`,
      );
    }
    return new OrtDecoder(session, dims, kv);
  }

  /** Logits for whole sequences (positions 0..T-1). On the KV graph: from an empty cache. */
  async logits(ids: readonly (readonly number[])[]): Promise<Logits> {
    if (this.kvCache) return await this.step(this.emptyCache(ids.length), ids);
    return await this.run({ input_ids: idsTensor(ids, this.dims.vocabSize) }, null);
  }

  /** An empty cache (past length 0) for `batch` sequences. */
  emptyCache(batch: number): KvCache {
    const { numLayers, numKvHeads, headDim } = this.dims;
    const tensors = new Map<string, ort.Tensor>();
    for (let l = 0; l < numLayers; l++) {
      const n = kvNames(l);
      for (const name of [n.pastKey, n.pastValue]) {
        tensors.set(
          name,
          new ort.Tensor("float32", new Float32Array(0), [batch, numKvHeads, 0, headDim]),
        );
      }
    }
    return { batch, length: 0, tensors };
  }

  /**
   * Feeds the next tokens of every sequence (prefill: many; decode: one each) at positions
   * cache.length.., returns their logits and appends their keys/values to the cache.
   */
  async step(cache: KvCache, ids: readonly (readonly number[])[]): Promise<Logits> {
    if (!this.kvCache) {
      throw new OrtRuntimeError("step() needs the KV-cache graph; export with --kv-cache");
    }
    if (ids.length !== cache.batch) {
      throw new OrtRuntimeError(`step: ${ids.length} rows for a cache of batch ${cache.batch}`);
    }
    const input = idsTensor(ids, this.dims.vocabSize);
    const [B, T] = input.dims;
    const pos = new BigInt64Array(B * T);
    for (let i = 0; i < pos.length; i++) pos[i] = BigInt(cache.length + (i % T));
    const feeds: Record<string, ort.Tensor> = {
      input_ids: input,
      position_ids: new ort.Tensor("int64", pos, [B, T]),
    };
    for (const [k, v] of cache.tensors) feeds[k] = v;
    return await this.run(feeds, cache);
  }

  private async run(feeds: Record<string, ort.Tensor>, cache: KvCache | null): Promise<Logits> {
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await this.session.run(feeds, { logSeverityLevel: 4 });
    } catch (e) {
      const msg = `${(e as Error).message ?? e}`;
      const hint = msg.includes("rope.")
        ? "; a position id is beyond the RoPE tables: re-export with a larger --max-positions"
        : "";
      throw new OrtRuntimeError(`onnxruntime-web run failed: ${msg}${hint}`, { cause: e });
    }
    const logits = out.logits as ort.Tensor;
    const [batch, seq, vocab] = logits.dims;
    if (cache !== null) {
      for (let l = 0; l < this.dims.numLayers; l++) {
        const n = kvNames(l);
        cache.tensors.set(n.pastKey, out[n.presentKey] as ort.Tensor);
        cache.tensors.set(n.pastValue, out[n.presentValue] as ort.Tensor);
      }
      cache.length += seq;
    }
    return { data: logits.data as Float32Array, batch, seq, vocab };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

/** Index of the largest logit of each sequence's last position (greedy decoding). → [batch] */
export function argmaxLast(l: Logits): number[] {
  const out: number[] = [];
  for (let b = 0; b < l.batch; b++) {
    const row = l.data.subarray(((b * l.seq) + l.seq - 1) * l.vocab, (b * l.seq + l.seq) * l.vocab);
    let best = 0;
    for (let v = 1; v < row.length; v++) if (row[v] > row[best]) best = v;
    out.push(best);
  }
  return out;
}
