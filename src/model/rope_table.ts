// cos/sin tables for rotate-half RoPE, computed the way HF's LlamaRotaryEmbedding does in
// float32 (inv_freq = 1 / theta^(2i/D), angle = pos · inv_freq, each step rounded to f32), so
// the GPU sees the same values transformers would, not a more precise float64 variant.

export interface RopeTable {
  cos: Float32Array; // [maxPos, D/2]
  sin: Float32Array; // [maxPos, D/2]
}

export function ropeTable(headDim: number, theta: number, maxPos: number): RopeTable {
  const half = headDim / 2;
  const f = Math.fround;
  const invFreq = Float32Array.from(
    { length: half },
    (_, i) => f(1 / f(Math.pow(theta, f(f(2 * i) / headDim)))),
  );
  const cos = new Float32Array(maxPos * half), sin = new Float32Array(maxPos * half);
  for (let p = 0; p < maxPos; p++) {
    for (let i = 0; i < half; i++) {
      const angle = f(f(p) * invFreq[i]);
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}
