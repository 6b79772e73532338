// KV-cache positions copied between slots of one layer's cache (layout [S, KV, P, D], rope.wgsl):
// Cache[to, h, t, :] = Cache[from, h, t, :] for t < n, for each (from, to, n) of Pairs. A prompt
// that several requests share is prefilled in one slot and copied to the others (generate.ts).
// No slot is both a source and a destination, so the copy never reads what it writes.
// (copyBufferToBuffer cannot do this: its source and destination must be different buffers.)

//! include kv_copy_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Pairs: array<vec4<u32>>;  // (from, to, n, 0)
@group(0) @binding(2) var<storage, read_write> Cache: array<f32>;

@compute @workgroup_size(WG)
fn kv_copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let per = p.KV * p.maxN * p.D;
  if (i >= p.pairs * per) { return; }
  let q = Pairs[i / per];
  let j = i % per;
  let h = j / (p.maxN * p.D);
  let t = (j / p.D) % p.maxN;
  let d = j % p.D;
  if (t >= q.z) { return; }
  Cache[((q.y * p.KV + h) * p.P + t) * p.D + d] = Cache[((q.x * p.KV + h) * p.P + t) * p.D + d];
}
