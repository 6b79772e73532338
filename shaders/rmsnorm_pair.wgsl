// Two RMSNorms of the same width in one dispatch (Qwen3's per-head q and k norms before RoPE):
// rows0 rows of X0 with weight W0 into Out0 and Rstd0, then rows1 rows of X1 with W1 into Out1
// and Rstd1. Each row is computed as rmsnorm.wgsl's entry of the same form computes it (the same
// sums in the same order), so the pair equals two rmsnorm dispatches bit for bit.

//! include rmsnorm_pair_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: PairParams;
@group(0) @binding(1) var<storage, read> X0: array<f32>;
@group(0) @binding(2) var<storage, read> W0: array<f32>;
@group(0) @binding(3) var<storage, read_write> Out0: array<f32>;
@group(0) @binding(4) var<storage, read_write> Rstd0: array<f32>;
@group(0) @binding(5) var<storage, read> X1: array<f32>;
@group(0) @binding(6) var<storage, read> W1: array<f32>;
@group(0) @binding(7) var<storage, read_write> Out1: array<f32>;
@group(0) @binding(8) var<storage, read_write> Rstd1: array<f32>;

// Norm n (0 or 1) of the pair: its input, weight and outputs.
fn ldX(n: u32, i: u32) -> f32 { if (n == 0u) { return X0[i]; } return X1[i]; }
fn ldW(n: u32, c: u32) -> f32 { if (n == 0u) { return W0[c]; } return W1[c]; }
fn stOut(n: u32, i: u32, v: f32) { if (n == 0u) { Out0[i] = v; } else { Out1[i] = v; } }
fn stRstd(n: u32, r: u32, v: f32) { if (n == 0u) { Rstd0[r] = v; } else { Rstd1[r] = v; } }

// reduce(v, lid, isMax) and Lane; the subgroup twin (NAME_sg) swaps in workgroup_reduce_sg.
//! include workgroup_reduce

// rmsnorm.wgsl's rmsnorm: one workgroup per row of either norm.
@compute @workgroup_size(WG)
fn rmsnorm_pair(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                lane: Lane) {
  let lid = enterLane(lane);
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.rows0 + p.rows1) { return; }
  let n = select(0u, 1u, g >= p.rows0);
  let row = g - n * p.rows0;
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = lid; c < p.cols; c += WG) { let v = ldX(n, base + c); ss = fma(v, v, ss); }
  let rstd = inverseSqrt(reduce(ss, lid, false) / f32(p.cols) + p.eps);
  for (var c = lid; c < p.cols; c += WG) { stOut(n, base + c, ldX(n, base + c) * rstd * ldW(n, c)); }
  if (lid == 0u) { stRstd(n, row, rstd); }
}

// rmsnorm.wgsl's rmsnorm_rows: one invocation per row of either norm.
@compute @workgroup_size(WG)
fn rmsnorm_pair_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = gid.x + gid.y * nwg.x * WG;
  if (g >= p.rows0 + p.rows1) { return; }
  let n = select(0u, 1u, g >= p.rows0);
  let row = g - n * p.rows0;
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = 0u; c < p.cols; c++) { let v = ldX(n, base + c); ss = fma(v, v, ss); }
  let rstd = inverseSqrt(ss / f32(p.cols) + p.eps);
  for (var c = 0u; c < p.cols; c++) { stOut(n, base + c, ldX(n, base + c) * rstd * ldW(n, c)); }
  stRstd(n, row, rstd);
}
