// Row gather: out[r, c] = src[idx[r], c]. The token embedding, and picking the rows whose
// logits are wanted. One invocation per output element, 2-D grid for large counts.

//! include gather_rows_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Src: array<f32>;
@group(0) @binding(2) var<storage, read> Idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(WG)
fn gather_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * p.cols) { return; }
  let r = i / p.cols;
  let c = i % p.cols;
  // Out-of-range ids read row 0 rather than past the buffer; callers validate ids first.
  let s = select(0u, Idx[r], Idx[r] < p.srcRows);
  Out[i] = Src[s * p.cols + c];
}
