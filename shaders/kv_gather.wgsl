// The inverse of the cache write (rope.wgsl rope_store): rows' values read back from cache layout,
// Out[r, h, d] = Cache[slot_r, h, pos_r, d] (the gradients of K and V per row).

//! include kv_gather_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(WG)
fn kv_gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let width = p.KV * p.D;
  if (i >= p.N * width) { return; }
  let r = i / width;
  let hd = i % width;
  let m = Meta[r];
  Out[i] = Cache[((m.x * p.KV + hd / p.D) * p.P + min(m.y, p.P - 1u)) * p.D + hd % p.D];
}
