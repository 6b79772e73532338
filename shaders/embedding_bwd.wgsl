// Backward of the embedding gather without float atomics: the CPU groups rows by token
// (CSR: Tokens[u], Offsets[u..u+1] into Rows), and each invocation sums one (token, column):
//   dE[Tokens[u], c] += Σ_{i in Offsets[u]..Offsets[u+1]} dX[Rows[i], c]

//! include embedding_bwd_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Dx: array<f32>;
@group(0) @binding(2) var<storage, read> Tokens: array<u32>;
@group(0) @binding(3) var<storage, read> Offsets: array<u32>;
@group(0) @binding(4) var<storage, read> Rows: array<u32>;
@group(0) @binding(5) var<storage, read_write> DE: array<f32>;

@compute @workgroup_size(WG)
fn embedding_bwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.unique * p.cols) { return; }
  let u = i / p.cols;
  let c = i % p.cols;
  var s = 0.0;
  for (var k = Offsets[u]; k < Offsets[u + 1u]; k++) { s += Dx[Rows[k] * p.cols + c]; }
  DE[Tokens[u] * p.cols + c] += s;
}
