// The peer for matmul throughput: TF.js's WebGPU backend, run in the same process on the
// same adapter and shapes, timed the same way.

import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-webgpu";
import { timeIt } from "./timing.ts";
import type { MatmulForm } from "../../src/ops/matmul.ts";

let ready: Promise<boolean> | null = null;

export function tfjsReady(): Promise<boolean> {
  ready ??= tf.setBackend("webgpu").then((ok) => ok && tf.getBackend() === "webgpu").catch(() =>
    false
  );
  return ready;
}

/** Milliseconds per matmul of the given form in TF.js (median of rounds). */
export async function tfjsMatmulMs(
  form: MatmulForm,
  M: number,
  N: number,
  K: number,
  minMs = 300,
): Promise<number> {
  const a = tf.randomUniform(form === "tn" ? [K, M] : [M, K]);
  const b = tf.randomUniform(form === "nt" ? [N, K] : [K, N]);
  const ta = form === "tn", tb = form === "nt";
  try {
    const t = await timeIt(async (reps) => {
      let last: tf.Tensor | null = null;
      for (let i = 0; i < reps; i++) {
        last?.dispose();
        last = tf.matMul(a, b, ta, tb);
      }
      await last!.data();
      last!.dispose();
    }, minMs);
    return t.msPerRep;
  } finally {
    a.dispose();
    b.dispose();
  }
}
