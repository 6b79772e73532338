// Rotate-half rotary position embedding (HF `apply_rotary_pos_emb`), in place on
// X [rows, heads, D]: with x1 = x[:D/2], x2 = x[D/2:] and angle θ_i = pos · inv_freq_i,
//   out[i] = x1·cos θ_i − x2·sin θ_i,   out[i + D/2] = x2·cos θ_i + x1·sin θ_i.
// cos/sin come from a [maxPos, D/2] table computed in float64 on the CPU. SIGN = −1 applies
// the inverse rotation (the backward pass). Each row's position is meta[row].y.

//! include rope_params

override WG: u32 = 256u;
override SIGN: f32 = 1.0;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> Cos: array<f32>;
@group(0) @binding(4) var<storage, read> Sin: array<f32>;

// The rotation of one (x1, x2) pair by an angle with cosine c and sine s.
fn rotate_half(x1: f32, x2: f32, c: f32, s: f32) -> vec2<f32> {
  return vec2<f32>(x1 * c - x2 * s, x2 * c + x1 * s);
}

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
  let y = rotate_half(X[base + i], X[base + i + half], c, s);
  X[base + i] = y.x;
  X[base + i + half] = y.y;
}

// ---------------------------------------------------------------------------------------------
// rope_store: the forward's RoPE of q and k and the K/V cache write in one dispatch.
// The per-slot KV cache read by causal GQA attention (attention.wgsl): dims N rows (tokens of
// this call), NH query heads, KV key/value heads, D head_dim, S slots (sequences), P cache
// positions per slot; layout Kc, Vc [S, KV, P, D]. Each row r has meta[r] = (slot, pos); writing
// every row's K/V at its (slot, pos) and letting attention read positions 0..pos makes prefill,
// ragged batched decode and causality one path.
// Invocations cover [rows, NH + KV heads, D/2] pairs: a q head's pair is rotated in place; a kv
// head's k pair is rotated in place and written, with the same two elements of v, to
// Kc[slot, h, pos, :] and Vc[slot, h, pos, :]. The forward's rotation (SIGN +1); the rope entry
// above is the backward's inverse.

//! include rope_store_params

@group(0) @binding(0) var<uniform> sp: StoreParams;
@group(0) @binding(1) var<storage, read_write> Q: array<f32>;
@group(0) @binding(2) var<storage, read_write> Kr: array<f32>;
@group(0) @binding(3) var<storage, read> Vr: array<f32>;
@group(0) @binding(4) var<storage, read> SMeta: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> SCos: array<f32>;
@group(0) @binding(6) var<storage, read> SSin: array<f32>;
@group(0) @binding(7) var<storage, read_write> Kc: array<f32>;
@group(0) @binding(8) var<storage, read_write> Vc: array<f32>;

@compute @workgroup_size(WG)
fn rope_store(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = sp.D / 2u;
  let heads = sp.NH + sp.KV;
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= sp.rows * heads * half) { return; }
  let i = idx % half;
  let rh = idx / half;
  let row = rh / heads;
  let h = rh % heads;
  let m = SMeta[row];
  let pos = min(m.y, sp.P - 1u);
  let c = SCos[pos * half + i];
  let s = SSin[pos * half + i];
  if (h < sp.NH) {
    let base = (row * sp.NH + h) * sp.D;
    let y = rotate_half(Q[base + i], Q[base + i + half], c, s);
    Q[base + i] = y.x;
    Q[base + i + half] = y.y;
    return;
  }
  let kh = h - sp.NH;
  let base = (row * sp.KV + kh) * sp.D;
  let y = rotate_half(Kr[base + i], Kr[base + i + half], c, s);
  Kr[base + i] = y.x;
  Kr[base + i + half] = y.y;
  let dst = ((m.x * sp.KV + kh) * sp.P + pos) * sp.D;
  Kc[dst + i] = y.x;
  Kc[dst + i + half] = y.y;
  Vc[dst + i] = Vr[base + i];
  Vc[dst + i + half] = Vr[base + i + half];
}
