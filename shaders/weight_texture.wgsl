// Fills a weight texture (src/model/cpu_adapter/weight_textures.ts): texel ((n / H)·K4 + k4, n % H) of an
// rgba32float 2D texture = W[n, 4·k4 .. 4·k4+3] for W [N, K] row-major (K4 = K/4), times
// g[4·k4 ..] when p.scaled != 0: the RMSNorm weight g that precedes the product, folded in.

//! include weight_texture_params

@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> W: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> G: array<vec4<f32>>;
@group(0) @binding(3) var T: texture_storage_2d<rgba32float, write>;

@compute @workgroup_size(64)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 64u + lid;
  if (i >= p.N * p.K4) { return; }
  let n = i / p.K4;
  let k4 = i % p.K4;
  var v = W[i];
  if (p.scaled != 0u) { v = v * G[k4]; }
  textureStore(T, vec2<i32>(i32(n / p.H * p.K4 + k4), i32(n % p.H)), v);
}
