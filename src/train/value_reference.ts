// Float64 CPU references of the value head (shaders/value_head.wgsl): the forward v = h·w + b, the
// clipped value loss with its gradient, and the backward into h, w and b. Tests compare the GPU
// kernels against these, and these against finite differences of `valueLossRef`.
// Dims: N rows, C hidden.

export interface ValueRowRef {
  readonly oldValue: number;
  readonly ret: number;
  /** Aggregation weight (vf coefficient included). */
  readonly coef: number;
  readonly mask: number;
}

/** v[r] = Σ_c h[r, c]·w[c] + b. */
export function valueForwardRef(
  h: ArrayLike<number>,
  w: ArrayLike<number>,
  b: number,
  N: number,
  C: number,
): Float64Array {
  const v = new Float64Array(N);
  for (let r = 0; r < N; r++) {
    let s = b;
    for (let c = 0; c < C; c++) s += h[r * C + c] * w[c];
    v[r] = s;
  }
  return v;
}

/** ℓ_r = ½·max((v − R)², (clip(v, v_old ± ε) − R)²); loss Σ coef·ℓ, dv = coef·dℓ/dv, clipped flags. */
export function valueLossRef(v: ArrayLike<number>, rows: readonly ValueRowRef[], clip: number) {
  const dv = new Float64Array(rows.length);
  const clipped: boolean[] = [];
  let loss = 0;
  rows.forEach((r, i) => {
    const vc = Math.min(Math.max(v[i], r.oldValue - clip), r.oldValue + clip);
    const e1 = v[i] - r.ret, e2 = vc - r.ret;
    const isClipped = e2 * e2 > e1 * e1;
    loss += r.coef * 0.5 * Math.max(e1 * e1, e2 * e2);
    dv[i] = isClipped ? 0 : r.coef * e1;
    clipped.push(isClipped);
  });
  return { loss, dv, clipped };
}

/** dh[r, c] = dv[r]·w[c];  dw[c] = Σ_r dv[r]·h[r, c];  db = Σ_r dv[r]. */
export function valueBackwardRef(
  h: ArrayLike<number>,
  w: ArrayLike<number>,
  dv: ArrayLike<number>,
  N: number,
  C: number,
) {
  const dh = new Float64Array(N * C), dw = new Float64Array(C);
  let db = 0;
  for (let r = 0; r < N; r++) {
    db += dv[r];
    for (let c = 0; c < C; c++) {
      dh[r * C + c] = dv[r] * w[c];
      dw[c] += dv[r] * h[r * C + c];
    }
  }
  return { dh, dw, db };
}
