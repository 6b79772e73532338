// The train-step peer: the same Llama (embedding gather, RMSNorm, rotate-half RoPE, GQA causal
// attention, SwiGLU, tied head) written in TF.js ops on its WebGPU backend, loaded from our
// ModelWeights (so the parameter count and every initial value are ours), trained by
// forward → token-mean cross-entropy → tf.variableGrads → AdamW, in full or LoRA mode.
//
// AdamW here = torch.optim.AdamW + clip_grad_norm_, as src/train/adamw.ts: the global grad norm
// is clipped on the GPU (no readback), decoupled decay p ← p·(1 − lr·wd) is applied to the
// decaying variables (hfDecays: not norms; every LoRA adapter), then tf.train.adam updates.
// TF.js's Adam update is torch's: m̂ / (√v̂ + ε) with both bias corrections. LoRA mode: the base
// is tf.tensor (no gradient, no moments), only the adapters A [r, in], B [out, r] are
// tf.variable, y = x·Wᵀ + (α/r)·(x·Aᵀ)·Bᵀ.
//
// Dims: B batch, T time, C hidden, NH heads, KV kv heads, G = NH/KV, D head_dim, I intermediate,
// V vocab, r LoRA rank.

import * as tf from "@tensorflow/tfjs-core";
import type { ModelConfig } from "../../src/model/config.ts";
import type { LoraLayout, LoraModule } from "../../src/model/lora_layout.ts";
import { ropeInvFreq } from "../../src/model/reference.ts";
import type { ModelWeights, ParamTensor } from "../../src/model/weights.ts";
import { hfDecays } from "../../src/train/adamw.ts";

export interface TfjsTrainOptions {
  mode: "full" | "lora";
  /** LoRA mode: the layout and its data (adapter 0 is trained), as our trainer was given. */
  lora?: { layout: LoraLayout; data: Float32Array };
  lr: number;
  weightDecay: number;
  /** Global-norm clip threshold; 0 disables clipping. */
  maxGradNorm: number;
}

interface LayerParams {
  inputNorm: tf.Tensor1D;
  postNorm: tf.Tensor1D;
  w: Record<LoraModule, tf.Tensor2D>;
  /** LoRA adapters of targeted modules. */
  lora: Partial<Record<LoraModule, { A: tf.Variable; B: tf.Variable }>>;
}

/** Thrown for configs this peer does not model (biases, q/k norm: Qwen). */
export class TfjsPeerUnsupportedError extends Error {
  override name = "TfjsPeerUnsupportedError";
}

// ---- Gradients. tfjs-core's Node bundle (the one Deno loads) registers no gradients, and the ESM
// files that do (dist/gradients/*.js) use extension-less imports Deno cannot resolve; so the ones
// this model needs are ported here from tfjs-core 4.22's dist/gradients, same math, and
// registered only where none is. Ops without one here are avoided above (no split, div, neg in
// the loss; logSoftmax carries its own customGrad).

type Grads = Record<string, () => tf.Tensor>;
const T1 = (dy: tf.Tensor | tf.Tensor[]) => dy as tf.Tensor;

/** Sums a broadcast gradient back to the input's shape. */
function unbroadcast(g: tf.Tensor, shape: number[], a: tf.Tensor, b: tf.Tensor): tf.Tensor {
  const axes = tf.backend_util.getReductionAxes(
    shape,
    tf.backend_util.assertAndGetBroadcastShape(a.shape, b.shape),
  );
  return tf.reshape(axes.length ? tf.sum(g, axes) : g, shape);
}

/** dy of a reduction over `axis`, broadcast back to x's shape. */
function unreduce(dy: tf.Tensor, x: tf.Tensor, axis: number | number[]): tf.Tensor {
  const shape = x.shape.slice();
  for (const a of tf.util.parseAxisParam(axis, x.shape)) shape[a] = 1;
  return tf.mul(tf.reshape(dy, shape), tf.ones(x.shape));
}

/**
 * tf.pad by concatenating zeros: tfjs-backend-webgpu 4.22's PadV2 is wrong at rank 5 (checked
 * against the CPU backend; the RoPE halves of q [B, KV, G, T, D] are rank 5), Concat is not.
 */
function zeroPad(x: tf.Tensor, pads: [number, number][]): tf.Tensor {
  return pads.reduce((g, [lo, hi], axis) => {
    if (!lo && !hi) return g;
    const block = (n: number) => tf.zeros(g.shape.map((d, i) => (i === axis ? n : d)));
    return tf.concat([...(lo ? [block(lo)] : []), g, ...(hi ? [block(hi)] : [])], axis);
  }, x);
}

const matMulGrads = (dy: tf.Tensor, a: tf.Tensor, b: tf.Tensor, tA: boolean, tB: boolean): Grads =>
  !tA && !tB
    ? { a: () => tf.matMul(dy, b, false, true), b: () => tf.matMul(a, dy, true, false) }
    : !tA && tB
    ? { a: () => tf.matMul(dy, b), b: () => tf.matMul(dy, a, true, false) }
    : tA && !tB
    ? { a: () => tf.matMul(b, dy, false, true), b: () => tf.matMul(a, dy) }
    : { a: () => tf.matMul(b, dy, true, true), b: () => tf.matMul(dy, a, true, true) };

const GRADIENTS: tf.GradConfig[] = [
  {
    kernelName: "Multiply",
    inputsToSave: ["a", "b"],
    gradFunc: (dy, [a, b]) => ({
      a: () => unbroadcast(tf.mul(T1(dy), b), a.shape, a, b),
      b: () => unbroadcast(tf.mul(T1(dy), a), b.shape, a, b),
    }),
  },
  {
    kernelName: "Add",
    inputsToSave: ["a", "b"],
    gradFunc: (dy, [a, b]) => ({
      a: () => unbroadcast(T1(dy), a.shape, a, b),
      b: () => unbroadcast(T1(dy), b.shape, a, b),
    }),
  },
  { kernelName: "Neg", gradFunc: (dy) => ({ x: () => tf.neg(T1(dy)) }) },
  {
    kernelName: "Square",
    inputsToSave: ["x"],
    gradFunc: (dy, [x]) => ({ x: () => tf.mul(T1(dy), tf.mul(x, 2)) }),
  },
  {
    kernelName: "Rsqrt",
    inputsToSave: ["x"],
    gradFunc: (dy, [x]) => ({ x: () => tf.neg(tf.div(T1(dy), tf.mul(tf.pow(x, 1.5), 2))) }),
  },
  {
    kernelName: "Sigmoid",
    outputsToSave: [true],
    gradFunc: (dy, [y]) => ({ x: () => tf.mul(T1(dy), tf.mul(y, tf.sub(1, y))) }),
  },
  {
    kernelName: "Sum",
    inputsToSave: ["x"],
    gradFunc: (dy, [x], at) => ({ x: () => unreduce(T1(dy), x, at.axis as number[]) }),
  },
  {
    kernelName: "Mean",
    inputsToSave: ["x"],
    gradFunc: (dy, [x], at) => ({
      x: () => {
        const axes = tf.util.parseAxisParam(at.axis as number[], x.shape);
        return tf.div(unreduce(T1(dy), x, axes), axes.reduce((n, a) => n * x.shape[a], 1));
      },
    }),
  },
  {
    kernelName: "Softmax",
    outputsToSave: [true],
    gradFunc: (dy, [y], at) => ({
      logits: () => {
        const dyy = tf.mul(T1(dy), y);
        return tf.sub(dyy, tf.mul(tf.sum(dyy, [at.dim as number], true), y));
      },
    }),
  },
  {
    kernelName: "BatchMatMul",
    inputsToSave: ["a", "b"],
    gradFunc: (dy, [a, b], at) =>
      matMulGrads(T1(dy), a, b, at.transposeA as boolean, at.transposeB as boolean),
  },
  {
    kernelName: "Reshape",
    inputsToSave: ["x"],
    gradFunc: (dy, [x]) => ({ x: () => tf.reshape(T1(dy), x.shape) }),
  },
  {
    kernelName: "Transpose",
    gradFunc: (dy, _, at) => ({
      x: () => tf.transpose(T1(dy), tf.backend_util.getUndoAxesPermutation(at.perm as number[])),
    }),
  },
  {
    kernelName: "Slice",
    inputsToSave: ["x"],
    gradFunc: (dy, [x], at) => ({
      x: () => {
        const [begin, size] = tf.slice_util.parseSliceParams(
          x,
          at.begin as number[],
          at.size as number[],
        );
        return zeroPad(
          T1(dy),
          begin.map((b, i) => [b, x.shape[i] - b - size[i]] as [number, number]),
        );
      },
    }),
  },
  {
    kernelName: "Concat",
    saveAllInputs: true,
    gradFunc: (dy, saved, at) => {
      const axis = tf.util.parseAxisParam(at.axis as number, saved[0].shape)[0];
      const parts = tf.split(T1(dy), saved.map((t) => t.shape[axis]), axis);
      return Object.fromEntries(parts.map((t, i) => [String(i), () => t]));
    },
  },
  // Embedding rows: axis 0, no batch dims (what forward() uses), as tfjs-core's derXBatch there.
  {
    kernelName: "GatherV2",
    inputsToSave: ["x", "indices"],
    gradFunc: (dy, [x, indices], at) => {
      if (
        tf.util.parseAxisParam(at.axis as number, x.shape)[0] !== 0 || at.batchDims
      ) throw new TfjsPeerUnsupportedError("gather gradient: axis 0 only");
      const rows = tf.reshape(T1(dy), [indices.size, ...x.shape.slice(1)]);
      return {
        x: () => tf.unsortedSegmentSum(rows, tf.reshape(indices, [indices.size]), x.shape[0]),
        indices: () => indices,
      };
    },
  },
];

for (const g of GRADIENTS) if (!tf.getGradient(g.kernelName)) tf.registerGradient(g);

let instances = 0;

export class TfjsLlama {
  private readonly cfg: ModelConfig;
  private embed!: tf.Tensor2D; // [V, C], also the tied head
  private finalNorm!: tf.Tensor1D; // [C]
  private layers: LayerParams[] = [];
  private vars: tf.Variable[] = [];
  private decaying: tf.Variable[] = [];
  private tables = new Map<number, { cos: tf.Tensor2D; sin: tf.Tensor2D; mask: tf.Tensor2D }>();
  private readonly optimizer: tf.AdamOptimizer;
  private readonly scale: number;
  /** Floats in the base tensors this model holds (the tied head once); the bench compares it with ours. */
  readonly paramCount: number;

  private constructor(private readonly w: ModelWeights, private readonly o: TfjsTrainOptions) {
    const c = w.config;
    if (c.qkvBias || c.oBias || c.qkNorm) {
      throw new TfjsPeerUnsupportedError(
        "the TF.js peer models Llama only (no biases, no q/k norm): use a llama preset",
      );
    }
    if (!c.tieWordEmbeddings) {
      throw new TfjsPeerUnsupportedError("the TF.js peer models a tied head only");
    }
    if (o.mode === "lora" && !o.lora) {
      throw new TfjsPeerUnsupportedError("LoRA mode needs opts.lora (layout and data)");
    }
    this.cfg = c;
    this.scale = o.lora ? o.lora.layout.scale : 1;
    this.optimizer = tf.train.adam(o.lr, 0.9, 0.999, 1e-8);
    const prefix = `llama${instances++}`;
    const param = <R extends tf.Rank>(t: ParamTensor): tf.Tensor<R> => {
      const data = w.data.subarray(t.offset, t.offset + t.size);
      const shape = [...t.shape] as number[];
      if (o.mode === "lora") return tf.tensor<tf.Rank>(data, shape) as tf.Tensor<R>;
      const v = tf.tidy(() =>
        tf.variable(tf.tensor<tf.Rank>(data, shape), true, `${prefix}/${t.name}`)
      );
      this.vars.push(v);
      if (hfDecays(t.name)) this.decaying.push(v);
      return v as unknown as tf.Tensor<R>;
    };
    this.embed = param<tf.Rank.R2>(w.layout.embed);
    for (let l = 0; l < c.numLayers; l++) {
      const L = w.layout.layerView(l);
      const mods = { q: L.q, k: L.k, v: L.v, o: L.o, gate: L.gate, up: L.up, down: L.down };
      this.layers.push({
        inputNorm: param<tf.Rank.R1>(L.inputNorm),
        postNorm: param<tf.Rank.R1>(L.postNorm),
        w: Object.fromEntries(
          Object.entries(mods).map(([m, t]) => [m, param<tf.Rank.R2>(t!)]),
        ) as Record<LoraModule, tf.Tensor2D>,
        lora: {},
      });
    }
    this.finalNorm = param<tf.Rank.R1>(w.layout.finalNorm);
    if (o.mode === "lora") this.attachLora(prefix, o.lora!.layout, o.lora!.data);
    this.paramCount = this.baseTensors().reduce((s, t) => s + t.size, 0);
  }

  static create(w: ModelWeights, o: TfjsTrainOptions): TfjsLlama {
    return new TfjsLlama(w, o);
  }

  /** Adapter 0 of every targeted (layer, module) as trainable variables (all decay, as ours). */
  private attachLora(prefix: string, layout: LoraLayout, data: Float32Array) {
    const r = layout.cfg.rank;
    for (const e of layout.entries) {
      const { A, B } = layout.slices(data, e, 0);
      const name = `${prefix}/lora.${e.layer}.${e.module}`;
      const a = tf.tidy(() => tf.variable(tf.tensor2d(A, [r, e.inDim]), true, `${name}.A`));
      const b = tf.tidy(() => tf.variable(tf.tensor2d(B, [e.outDim, r]), true, `${name}.B`));
      this.layers[e.layer].lora[e.module] = { A: a, B: b };
      this.vars.push(a, b);
      this.decaying.push(a, b);
    }
  }

  /** Floats that get a gradient and two Adam moments. */
  get trainableCount(): number {
    return this.vars.reduce((s, v) => s + v.size, 0);
  }

  /** cos/sin [T, D] (cat(freqs, freqs), as HF) and the additive causal mask [T, T]. */
  private table(T: number) {
    let t = this.tables.get(T);
    if (!t) {
      const D = this.cfg.headDim, inv = ropeInvFreq(D, this.cfg.ropeTheta);
      const cos = new Float32Array(T * D),
        sin = new Float32Array(T * D),
        mask = new Float32Array(T * T);
      for (let p = 0; p < T; p++) {
        for (let i = 0; i < D; i++) {
          const a = p * inv[i % (D / 2)];
          cos[p * D + i] = Math.cos(a);
          sin[p * D + i] = Math.sin(a);
        }
        for (let s = p + 1; s < T; s++) mask[p * T + s] = -1e9;
      }
      // Kept: the first call runs inside a tidy (variableGrads), which would dispose them.
      t = {
        cos: tf.keep(tf.tensor2d(cos, [T, D])),
        sin: tf.keep(tf.tensor2d(sin, [T, D])),
        mask: tf.keep(tf.tensor2d(mask, [T, T])),
      };
      this.tables.set(T, t);
    }
    return t;
  }

  private rmsNorm(x: tf.Tensor2D, w: tf.Tensor1D): tf.Tensor2D {
    return tf.mul(
      tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), this.cfg.rmsNormEps))),
      w,
    );
  }

  /** x [N, in] · Wᵀ [in, out] (+ the LoRA path of this layer's module). */
  private linear(x: tf.Tensor2D, l: number, m: LoraModule): tf.Tensor2D {
    const L = this.layers[l];
    const y = tf.matMul(x, L.w[m], false, true);
    const ad = L.lora[m];
    return (ad
      ? tf.add(y, tf.mul(tf.matMul(tf.matMul(x, ad.A, false, true), ad.B, false, true), this.scale))
      : y) as tf.Tensor2D;
  }

  /** Rotate-half RoPE on [..., T, D]: x·cos + [−x2, x1]·sin. */
  private rope(x: tf.Tensor, cos: tf.Tensor2D, sin: tf.Tensor2D): tf.Tensor {
    const half = this.cfg.headDim / 2;
    const lo = x.shape.map(() => 0), size = [...x.shape.slice(0, -1), half];
    const x1 = tf.slice(x, lo, size), x2 = tf.slice(x, [...lo.slice(0, -1), half], size);
    return tf.add(tf.mul(x, cos), tf.mul(tf.concat([tf.neg(x2), x1], -1), sin));
  }

  /** Causal GQA without repeating k/v: query heads of one kv head share its [T, D]. [B·T, C] → [B·T, NH·D] */
  private attention(h: tf.Tensor2D, l: number, Bn: number, T: number): tf.Tensor2D {
    const { numHeads: NH, numKvHeads: KV, headDim: D } = this.cfg, G = NH / KV;
    const { cos, sin, mask } = this.table(T);
    // q [B·T, NH·D] → [B, KV, G, T, D]; k, v [B·T, KV·D] → [B, KV, T, D]
    const heads = (y: tf.Tensor, shape: number[], perm: number[]) =>
      tf.transpose(tf.reshape(y, shape), perm);
    const q = this.rope(
      heads(this.linear(h, l, "q"), [Bn, T, KV, G, D], [0, 2, 3, 1, 4]),
      cos,
      sin,
    );
    const k = this.rope(heads(this.linear(h, l, "k"), [Bn, T, KV, D], [0, 2, 1, 3]), cos, sin);
    const v = heads(this.linear(h, l, "v"), [Bn, T, KV, D], [0, 2, 1, 3]);
    const qk = tf.matMul(
      tf.reshape(q, [Bn * KV, G * T, D]),
      tf.reshape(k, [Bn * KV, T, D]),
      false,
      true,
    );
    const scores = tf.add(tf.reshape(tf.mul(qk, 1 / Math.sqrt(D)), [Bn * KV, G, T, T]), mask);
    const p = tf.reshape(tf.softmax(scores, -1), [Bn * KV, G * T, T]);
    const att = tf.matMul(p, tf.reshape(v, [Bn * KV, T, D])); // [B·KV, G·T, D]
    return tf.reshape(heads(att, [Bn, KV, G, T, D], [0, 3, 1, 2, 4]), [Bn * T, NH * D]);
  }

  /** ids [B, T] → logits [B·T, V]. */
  private forward(ids: tf.Tensor2D): tf.Tensor2D {
    const [Bn, T] = ids.shape;
    let x = tf.gather(this.embed, tf.reshape(ids, [Bn * T])) as tf.Tensor2D; // [B·T, C]
    for (let l = 0; l < this.layers.length; l++) {
      const L = this.layers[l];
      x = tf.add(x, this.linear(this.attention(this.rmsNorm(x, L.inputNorm), l, Bn, T), l, "o"));
      const h = this.rmsNorm(x, L.postNorm);
      const g = this.linear(h, l, "gate");
      x = tf.add(
        x,
        this.linear(tf.mul(tf.mul(g, tf.sigmoid(g)), this.linear(h, l, "up")), l, "down"),
      );
    }
    return tf.matMul(this.rmsNorm(x, this.finalNorm), this.embed, false, true);
  }

  /** Token-mean cross-entropy of predicting ids[:, t+1] from positions t < T−1. */
  private loss(ids: tf.Tensor2D): tf.Scalar {
    const [Bn, T] = ids.shape, V = this.cfg.vocabSize;
    const logp = tf.slice(tf.reshape(tf.logSoftmax(this.forward(ids)), [Bn, T, V]), [0, 0, 0], [
      Bn,
      T - 1,
      V,
    ]);
    const next = tf.reshape(tf.slice(ids, [0, 1], [Bn, T - 1]), [Bn * (T - 1)]);
    const targets = tf.reshape(tf.oneHot(next, V, 1, 0, "float32"), [Bn, T - 1, V]);
    return tf.mul(tf.sum(tf.mul(logp, targets)), -1 / (Bn * (T - 1)));
  }

  /** Logits [T, V] of one sequence (the equivalence check against referenceForward). */
  async logits(ids: readonly number[]): Promise<Float32Array> {
    const out = tf.tidy(() => this.forward(tf.tensor2d([...ids], [1, ids.length], "int32")));
    const data = await out.data() as Float32Array;
    out.dispose();
    return data;
  }

  /** One AdamW update on `batch` [B][T]; resolves (after the GPU finished) with the loss before it. */
  async step(batch: readonly (readonly number[])[]): Promise<number> {
    const ids = tf.tensor2d(batch.map((s) => [...s]), [batch.length, batch[0].length], "int32");
    const { value, grads } = tf.variableGrads(() => this.loss(ids), this.vars);
    const clipped = tf.tidy(() => {
      const names = Object.keys(grads);
      if (!this.o.maxGradNorm) return grads;
      // Not tf.addN: on tfjs-backend-webgpu 4.22 it returns a stale result for more than 4 inputs.
      const norm = tf.sqrt(tf.sum(tf.stack(names.map((n) => tf.sum(tf.square(grads[n]))))));
      const coef = tf.minimum(1, tf.div(this.o.maxGradNorm, tf.add(norm, 1e-6)));
      return Object.fromEntries(names.map((n) => [n, tf.mul(grads[n], coef)]));
    });
    tf.tidy(() => {
      const keep = 1 - this.o.lr * this.o.weightDecay;
      if (keep !== 1) { for (const v of this.decaying) v.assign(tf.mul(v, keep)); }
    });
    // tf.train.adam keeps moments by position in this list: this.vars order, the same every step.
    this.optimizer.applyGradients(
      this.vars.map((v) => ({ name: v.name, tensor: clipped[v.name] })),
    );
    const loss = (await value.data())[0];
    tf.dispose([ids, value, grads, clipped]);
    return loss;
  }

  /** Every base tensor (variables in full mode), the tied head once. */
  private baseTensors(): tf.Tensor[] {
    return [
      this.embed,
      this.finalNorm,
      ...this.layers.flatMap((L) => [L.inputNorm, L.postNorm, ...Object.values(L.w)]),
    ];
  }

  dispose() {
    tf.dispose([...this.baseTensors(), ...this.vars]);
    for (const t of this.tables.values()) tf.dispose([t.cos, t.sin, t.mask]);
    this.optimizer.dispose();
  }
}
