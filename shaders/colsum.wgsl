// Column sums accumulated into Out: out[c] += Σ_r X[r, c] (bias gradients). One invocation per
// column.

//! include colsum_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(WG)
fn colsum(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= p.cols) { return; }
  var s = 0.0;
  for (var r = 0u; r < p.rows; r++) { s += X[r * p.cols + c]; }
  Out[c] += s;
}
