// Backward of RMSNorm y = x · r · w with r = 1/sqrt(mean(x²) + eps), per row of [rows, cols]:
//   dx_i = r·w_i·dy_i − (r³/cols) · x_i · Σ_j dy_j·w_j·x_j      (rmsnorm_bwd_x, workgroup per row;
//                                                                rmsnorm_bwd_x_rows, invocation per row)
//   dw_j += Σ_rows dy_j · x_j · r                                (rmsnorm_bwd_w, invocation per column;
//                                                                rmsnorm_bwd_w_cols, workgroup per column)
// r comes from the forward's saved Rstd. ACCUM = 1 adds dx into Dx (the residual's gradient).

//! include rmsnorm_bwd_params

override WG: u32 = 64u;
override ACCUM: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Dy: array<f32>;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> W: array<f32>;
@group(0) @binding(4) var<storage, read> Rstd: array<f32>;
@group(0) @binding(5) var<storage, read_write> Out: array<f32>;

// reduce(v, lid, isMax) and Lane; the subgroup twin (NAME_sg) swaps in workgroup_reduce_sg.
//! include workgroup_reduce

@compute @workgroup_size(WG)
fn rmsnorm_bwd_x(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 lane: Lane) {
  let lid = enterLane(lane);
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var s = 0.0;
  for (var c = lid; c < p.cols; c += WG) { s += Dy[base + c] * W[c] * X[base + c]; }
  let total = reduce(s, lid, false);
  let r = Rstd[row];
  let coef = r * r * r * total / f32(p.cols);
  for (var c = lid; c < p.cols; c += WG) {
    let g = r * W[c] * Dy[base + c] - coef * X[base + c];
    if (ACCUM == 1u) { Out[base + c] += g; } else { Out[base + c] = g; }
  }
}

// The same dx with one invocation per row and no workgroup memory or barriers: on CPU adapters
// (llvmpipe), where barriers are coroutine switches and rows map to SIMD lanes, the workgroup
// reduction above took 3.7 ms a call on a tiny model's 320-row chunks (21% of an RL step's GPU time).
@compute @workgroup_size(WG)
fn rmsnorm_bwd_x_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var s = 0.0;
  for (var c = 0u; c < p.cols; c++) { s = fma(Dy[base + c] * W[c], X[base + c], s); }
  let r = Rstd[row];
  let coef = r * r * r * s / f32(p.cols);
  for (var c = 0u; c < p.cols; c++) {
    let g = r * W[c] * Dy[base + c] - coef * X[base + c];
    if (ACCUM == 1u) { Out[base + c] += g; } else { Out[base + c] = g; }
  }
}

@compute @workgroup_size(WG)
fn rmsnorm_bwd_w(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= p.cols) { return; }
  var s = 0.0;
  for (var r = 0u; r < p.rows; r++) { s += Dy[r * p.cols + c] * X[r * p.cols + c] * Rstd[r]; }
  Out[c] += s;
}

// dw with one workgroup per column, its lanes splitting the rows (WG ≤ 256): GPUs. rmsnorm_bwd_w
// gives a column one invocation that loops over every row, so a Qwen3 q/k norm (head_dim 128
// columns over tokens × heads rows) ran on 128 invocations: 28% of a full fine-tuning step's GPU
// time at Qwen3-0.6B's shape on an H100.
@compute @workgroup_size(WG)
fn rmsnorm_bwd_w_cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      lane: Lane) {
  let lid = enterLane(lane);
  let c = wid.x + wid.y * nwg.x;
  if (c >= p.cols) { return; }
  var s = 0.0;
  for (var r = lid; r < p.rows; r += WG) { s += Dy[r * p.cols + c] * X[r * p.cols + c] * Rstd[r]; }
  let total = reduce(s, lid, false);
  if (lid == 0u) { Out[c] += total; }
}
