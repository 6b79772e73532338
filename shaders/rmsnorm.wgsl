// RMSNorm with HF semantics: out = x · 1/sqrt(mean(x²) + eps) · w, per row of [rows, cols].
// Also the Qwen3 per-head q/k norm (rows = tokens × heads, cols = head_dim). One workgroup per
// row; 1/rms is saved per row for the backward pass.

//! include rmsnorm_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> W: array<f32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;
@group(0) @binding(4) var<storage, read_write> Rstd: array<f32>;

// reduce(v, lid, isMax) and Lane; the subgroup twin (NAME_sg) swaps in workgroup_reduce_sg.
//! include workgroup_reduce

@compute @workgroup_size(WG)
fn rmsnorm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = lid; c < p.cols; c += WG) { let v = X[base + c]; ss = fma(v, v, ss); }
  let rstd = inverseSqrt(reduce(ss, lid, false) / f32(p.cols) + p.eps);
  for (var c = lid; c < p.cols; c += WG) { Out[base + c] = X[base + c] * rstd * W[c]; }
  if (lid == 0u) { Rstd[row] = rstd; }
}

// The same op with one invocation per row and no workgroup memory: on CPU adapters (llvmpipe),
// where barriers are coroutine switches and rows map to SIMD lanes, this is several times
// faster for the narrow rows of small models and of decode steps.
@compute @workgroup_size(WG)
fn rmsnorm_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = 0u; c < p.cols; c++) { let v = X[base + c]; ss = fma(v, v, ss); }
  let rstd = inverseSqrt(ss / f32(p.cols) + p.eps);
  for (var c = 0u; c < p.cols; c++) { Out[base + c] = X[base + c] * rstd * W[c]; }
  Rstd[row] = rstd;
}
