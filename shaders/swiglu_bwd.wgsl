// Backward of out = silu(g) · u:  dg = dout · u · σ(g)·(1 + g·(1 − σ(g))),  du = dout · silu(g).

//! include swiglu_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Dout: array<f32>;
@group(0) @binding(2) var<storage, read> G: array<f32>;
@group(0) @binding(3) var<storage, read> U: array<f32>;
@group(0) @binding(4) var<storage, read_write> Dg: array<f32>;
@group(0) @binding(5) var<storage, read_write> Du: array<f32>;

@compute @workgroup_size(WG)
fn swiglu_bwd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let g = G[i];
  let sg = 1.0 / (1.0 + exp(-g));
  let d = Dout[i];
  Dg[i] = d * U[i] * sg * (1.0 + g * (1.0 - sg));
  Du[i] = d * g * sg;
}
