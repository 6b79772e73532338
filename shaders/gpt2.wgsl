// GPT-2's own ops (modeling_gpt2.py): LayerNorm with bias (forward and backward), gelu_new
// (forward and backward) and the learned absolute position embedding added to the token
// embedding. One invocation per row (LayerNorm) or per element; the float64 CPU references are
// layerNorm / geluNew / geluNewGrad in src/model/reference.ts and src/model/gpt2_kernels.ts.

// ---- LayerNorm: out = (x − mean)·rstd·w + b, rstd = 1/sqrt(mean((x − mean)²) + eps) ----------

//! include gpt2_norm_params

override WG: u32 = 64u;
/** layernorm_bwd_x: 1 adds dx to Dx (a residual gradient), 0 overwrites it. */
override ACCUM: u32 = 0u;

@group(0) @binding(0) var<uniform> np: NormParams;
@group(0) @binding(1) var<storage, read> NX: array<f32>;
@group(0) @binding(2) var<storage, read> NW: array<f32>;
@group(0) @binding(3) var<storage, read> NB: array<f32>;
@group(0) @binding(4) var<storage, read_write> NOut: array<f32>;
@group(0) @binding(5) var<storage, read_write> NMean: array<f32>;
@group(0) @binding(6) var<storage, read_write> NRstd: array<f32>;

@compute @workgroup_size(WG)
fn layernorm(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= np.rows) { return; }
  let base = row * np.cols;
  var s = 0.0;
  for (var c = 0u; c < np.cols; c++) { s += NX[base + c]; }
  let mean = s / f32(np.cols);
  var v = 0.0;
  for (var c = 0u; c < np.cols; c++) { let d = NX[base + c] - mean; v = fma(d, d, v); }
  let rstd = inverseSqrt(v / f32(np.cols) + np.eps);
  for (var c = 0u; c < np.cols; c++) { NOut[base + c] = (NX[base + c] - mean) * rstd * NW[c] + NB[c]; }
  NMean[row] = mean;
  NRstd[row] = rstd;
}

// Backward, dx per row: with x̂ = (x − mean)·rstd and g = dy·w,
//   dx = rstd · (g − mean(g) − x̂ · mean(g·x̂)).

@group(0) @binding(0) var<uniform> bp: NormParams;
@group(0) @binding(1) var<storage, read> BDy: array<f32>;
@group(0) @binding(2) var<storage, read> BX: array<f32>;
@group(0) @binding(3) var<storage, read> BW: array<f32>;
@group(0) @binding(4) var<storage, read> BMean: array<f32>;
@group(0) @binding(5) var<storage, read> BRstd: array<f32>;
@group(0) @binding(6) var<storage, read_write> BDx: array<f32>;

@compute @workgroup_size(WG)
fn layernorm_bwd_x(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= bp.rows) { return; }
  let base = row * bp.cols;
  let mean = BMean[row];
  let rstd = BRstd[row];
  var sg = 0.0;
  var sgx = 0.0;
  for (var c = 0u; c < bp.cols; c++) {
    let g = BDy[base + c] * BW[c];
    sg += g;
    sgx = fma(g, (BX[base + c] - mean) * rstd, sgx);
  }
  let mg = sg / f32(bp.cols);
  let mgx = sgx / f32(bp.cols);
  for (var c = 0u; c < bp.cols; c++) {
    let xh = (BX[base + c] - mean) * rstd;
    let d = rstd * (BDy[base + c] * BW[c] - mg - xh * mgx);
    if (ACCUM == 1u) { BDx[base + c] += d; } else { BDx[base + c] = d; }
  }
}

// Backward, weight and bias per column: dw[c] += Σ_r dy·x̂, db[c] += Σ_r dy.

@group(0) @binding(0) var<uniform> wp: NormParams;
@group(0) @binding(1) var<storage, read> WDy: array<f32>;
@group(0) @binding(2) var<storage, read> WX: array<f32>;
@group(0) @binding(3) var<storage, read> WMean: array<f32>;
@group(0) @binding(4) var<storage, read> WRstd: array<f32>;
@group(0) @binding(5) var<storage, read_write> WDw: array<f32>;
@group(0) @binding(6) var<storage, read_write> WDb: array<f32>;

@compute @workgroup_size(WG)
fn layernorm_bwd_wb(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= wp.cols) { return; }
  var sw = 0.0;
  var sb = 0.0;
  for (var r = 0u; r < wp.rows; r++) {
    let dy = WDy[r * wp.cols + c];
    sw = fma(dy, (WX[r * wp.cols + c] - WMean[r]) * WRstd[r], sw);
    sb += dy;
  }
  WDw[c] += sw;
  WDb[c] += sb;
}

// ---- gelu_new: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) --------------------------------

//! include gpt2_ew_params

const GELU_K: f32 = 0.7978845608028654; // √(2/π)
const GELU_C: f32 = 0.044715;

// tanh through exp, clamped where it is ±1 in f32 anyway (exp would overflow to inf/inf).
fn tanh_safe(z: f32) -> f32 {
  let e = exp(-2.0 * abs(clamp(z, -15.0, 15.0)));
  return sign(z) * (1.0 - e) / (1.0 + e);
}

@group(0) @binding(0) var<uniform> ep: EwParams;
@group(0) @binding(1) var<storage, read> GX: array<f32>;
@group(0) @binding(2) var<storage, read_write> GOut: array<f32>;

@compute @workgroup_size(WG)
fn gelu_new(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= ep.n) { return; }
  let x = GX[i];
  GOut[i] = 0.5 * x * (1.0 + tanh_safe(GELU_K * (x + GELU_C * x * x * x)));
}

// dx = dout · (0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²)), t the tanh above.

@group(0) @binding(0) var<uniform> gp: EwParams;
@group(0) @binding(1) var<storage, read> GDout: array<f32>;
@group(0) @binding(2) var<storage, read> GBX: array<f32>;
@group(0) @binding(3) var<storage, read_write> GDx: array<f32>;

@compute @workgroup_size(WG)
fn gelu_new_bwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= gp.n) { return; }
  let x = GBX[i];
  let t = tanh_safe(GELU_K * (x + GELU_C * x * x * x));
  GDx[i] = GDout[i] * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * GELU_C * x * x));
}

// ---- position embedding: X[r, c] += Wpe[pos(r), c], pos from the rows' (slot, pos) pairs ------

//! include gpt2_pos_params

@group(0) @binding(0) var<uniform> pp: PosParams;
@group(0) @binding(1) var<storage, read> PMeta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Wpe: array<f32>;
@group(0) @binding(3) var<storage, read_write> PX: array<f32>;

@compute @workgroup_size(WG)
fn add_pos_embed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= pp.rows * pp.cols) { return; }
  let r = i / pp.cols;
  let c = i % pp.cols;
  PX[i] += Wpe[PMeta[r].y * pp.cols + c];
}
