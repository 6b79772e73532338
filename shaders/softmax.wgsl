// Row softmax and log-softmax over a [rows, cols] matrix, one workgroup per row.
// Numerically stable: subtract the row max, sum exp in f32, tree-reduce in workgroup memory.
// Rows beyond 65535 use a 2-D grid: row = wid.x + wid.y · num_workgroups.x.

//! include softmax_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;

var<workgroup> red: array<f32, 256>;

fn reduceMax(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduceSum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] = red[lid] + red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

// Returns (max, log Σ exp(x − max)) of the row.
fn rowStats(base: u32, lid: u32) -> vec2<f32> {
  var m = -3.402823e38;
  for (var c = lid; c < p.cols; c += WG) { m = max(m, X[base + c]); }
  m = reduceMax(m, lid);
  var s = 0.0;
  for (var c = lid; c < p.cols; c += WG) { s += exp(X[base + c] - m); }
  s = reduceSum(s, lid);
  return vec2(m, log(s));
}

@compute @workgroup_size(WG)
fn softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let st = rowStats(base, lid);
  for (var c = lid; c < p.cols; c += WG) { Out[base + c] = exp(X[base + c] - st.x - st.y); }
}

@compute @workgroup_size(WG)
fn log_softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let st = rowStats(base, lid);
  for (var c = lid; c < p.cols; c += WG) { Out[base + c] = X[base + c] - st.x - st.y; }
}
