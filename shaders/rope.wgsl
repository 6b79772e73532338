// Rotate-half rotary position embedding (HF `apply_rotary_pos_emb`), in place on
// X [rows, heads, D]: with x1 = x[:D/2], x2 = x[D/2:] and angle θ_i = pos · inv_freq_i,
//   out[i] = x1·cos θ_i − x2·sin θ_i,   out[i + D/2] = x2·cos θ_i + x1·sin θ_i.
// cos/sin come from a [maxPos, D/2] table computed in float64 on the CPU. SIGN = −1 applies
// the inverse rotation (the backward pass). Each row's position is meta[row].y.

struct Params { rows: u32, heads: u32, D: u32, maxPos: u32 }

override WG: u32 = 256u;
override SIGN: f32 = 1.0;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> Cos: array<f32>;
@group(0) @binding(4) var<storage, read> Sin: array<f32>;

@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.D / 2u;
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= p.rows * p.heads * half) { return; }
  let i = idx % half;
  let rh = idx / half;            // row * heads + head
  let row = rh / p.heads;
  let pos = min(Meta[row].y, p.maxPos - 1u);
  let c = Cos[pos * half + i];
  let s = SIGN * Sin[pos * half + i];
  let base = rh * p.D;
  let x1 = X[base + i];
  let x2 = X[base + i + half];
  X[base + i] = x1 * c - x2 * s;
  X[base + i + half] = x2 * c + x1 * s;
}
