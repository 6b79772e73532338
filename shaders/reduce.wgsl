// Reductions. OP: 0 sum, 1 max, 2 sum of squares.
//   rows:    out[r] = reduce(X[r, 0..cols])                 one workgroup per row
//   partial: partials[w] = reduce(X[w·chunk .. (w+1)·chunk]) first pass of a global reduction
//   combine_partials: out[0] = combine(partials[0..n])               second pass, one workgroup
// Global reductions (gradient norms) are two dispatches in one recording; no readback between.

//! include reduce_params

override OP: u32 = 0u;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;

var<workgroup> red: array<f32, 256>;

fn identity() -> f32 {
  if (OP == 1u) { return -3.402823e38; }
  return 0.0;
}

fn lift(v: f32) -> f32 {
  if (OP == 2u) { return v * v; }
  return v;
}

fn combine(a: f32, b: f32) -> f32 {
  if (OP == 1u) { return max(a, b); }
  return a + b;
}

fn treeReduce(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] = combine(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  return red[0];
}

@compute @workgroup_size(WG)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var acc = identity();
  for (var c = lid; c < p.cols; c += WG) { acc = combine(acc, lift(X[base + c])); }
  let r = treeReduce(acc, lid);
  if (lid == 0u) { Out[row] = r; }
}

@compute @workgroup_size(WG)
fn partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let w = wid.x + wid.y * nwg.x;
  let start = w * p.chunk;
  let end = min(start + p.chunk, p.n);
  var acc = identity();
  for (var i = start + lid; i < end; i += WG) { acc = combine(acc, lift(X[i])); }
  let r = treeReduce(acc, lid);
  if (lid == 0u) { Out[w] = r; }
}

@compute @workgroup_size(WG)
fn combine_partials(@builtin(local_invocation_index) lid: u32) {
  // Partials are already lifted (squared), so only combine here.
  var acc = identity();
  for (var i = lid; i < p.n; i += WG) { acc = combine(acc, X[i]); }
  let r = treeReduce(acc, lid);
  if (lid == 0u) { Out[0] = r; }
}
