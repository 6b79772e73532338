// Δ[r,h] = Σ_d dO[r,h,d] · O[r,h,d]: the softmax-backward correction of attention, one
// invocation per (row, head). See attention_bwd.wgsl.

//! include attention_delta_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Dout: array<f32>;
@group(0) @binding(2) var<storage, read> O: array<f32>;
@group(0) @binding(3) var<storage, read_write> Delta: array<f32>;

@compute @workgroup_size(WG)
fn attention_delta(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows) { return; }
  var s = 0.0;
  for (var d = 0u; d < p.D; d++) { s = fma(Dout[i * p.D + d], O[i * p.D + d], s); }
  Delta[i] = s;
}
