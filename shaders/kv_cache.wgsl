// The per-slot KV cache read by causal GQA attention (attention.wgsl).
// Dims: N rows (tokens of this call), KV key/value heads, D head_dim, S slots (sequences),
// P cache positions per slot. Layout: Kc, Vc [S, KV, P, D].
// Each row r has meta[r] = (slot, pos); writing every row's K/V at its (slot, pos) and letting
// attention read positions 0..pos makes prefill, ragged batched decode and causality one path.
//   kv_store: Kc[slot, h, pos, :] = K[r, h, :], and the same for V.

struct Params { N: u32, NH: u32, KV: u32, D: u32, P: u32, scale: f32, _p0: u32, _p1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;

@group(0) @binding(2) var<storage, read> Kin: array<f32>;
@group(0) @binding(3) var<storage, read> Vin: array<f32>;
@group(0) @binding(4) var<storage, read_write> Kc: array<f32>;
@group(0) @binding(5) var<storage, read_write> Vc: array<f32>;

@compute @workgroup_size(WG)
fn kv_store(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let width = p.KV * p.D;
  if (i >= p.N * width) { return; }
  let r = i / width;
  let hd = i % width;             // h * D + d
  let m = Meta[r];
  let pos = min(m.y, p.P - 1u);
  let dst = ((m.x * p.KV + hd / p.D) * p.P + pos) * p.D + hd % p.D;
  Kc[dst] = Kin[i];
  Vc[dst] = Vin[i];
}
