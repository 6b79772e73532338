// dK/dV of causal GQA attention for CPU adapters (attention_bwd_kv4.wgsl's attn_dkv4, same
// bindings and math): one invocation per cache entry (kv head, position t, slot), K_t and V_t in
// registers, one pass over the (position ≥ t, head sharing the kv head) entries of its slot:
//   P = exp(scale·q·k_t − Lse),  dS = P·(dO·v_t − Δ),  dK_t = scale·Σ dS·q,  dV_t = Σ P·dO
// Each entry loads its q and dO rows once (the workgroup kernel loads them twice, once per
// phase), with no workgroup memory and no barriers. head_dim = 4·D4 (override constant).

//! include attention_bwd_params

override WG: u32 = 8u;
override D4: u32 = 4u;
const MAXD4: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> RowOf: array<u32>;   // [S, P] row index of (slot, pos)
@group(0) @binding(2) var<storage, read> SeqLen: array<u32>;  // [S]
@group(0) @binding(3) var<storage, read> Q: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> Kc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> Vc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> Dout: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> Lse: array<f32>;
@group(0) @binding(8) var<storage, read> Delta: array<f32>;
@group(0) @binding(9) var<storage, read_write> DKc: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> DVc: array<vec4<f32>>;

// Grid: x = positions / WG (lanes walk consecutive positions), y = kv head, z = slot.
@compute @workgroup_size(WG)
fn attn_dkv_lane(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x * WG + lid;
  let kvh = wid.y;
  let slot = wid.z;
  let len = SeqLen[slot];
  if (t >= len) { return; }
  let G = p.NH / p.KV;
  let cB = ((slot * p.KV + kvh) * p.P + t) * D4;
  var k: array<vec4<f32>, MAXD4>;
  var v: array<vec4<f32>, MAXD4>;
  var dk: array<vec4<f32>, MAXD4>;
  var dv: array<vec4<f32>, MAXD4>;
  for (var d = 0u; d < D4; d++) {
    k[d] = Kc[cB + d] * p.scale;
    v[d] = Vc[cB + d];
    dk[d] = vec4<f32>();
    dv[d] = vec4<f32>();
  }
  var q: array<vec4<f32>, MAXD4>;
  var o: array<vec4<f32>, MAXD4>;
  for (var pos = t; pos < len; pos++) {
    let row = RowOf[slot * p.P + pos];
    for (var j = 0u; j < G; j++) {
      let hr = row * p.NH + kvh * G + j;
      let qB = hr * D4;
      var s = 0.0;
      var dp = 0.0;
      for (var d = 0u; d < D4; d++) {
        q[d] = Q[qB + d];
        o[d] = Dout[qB + d];
        s += dot(q[d], k[d]);
        dp += dot(o[d], v[d]);
      }
      let pr = exp(s - Lse[hr]);
      let ds = pr * (dp - Delta[hr]);
      for (var d = 0u; d < D4; d++) {
        dk[d] += ds * q[d];
        dv[d] += pr * o[d];
      }
    }
  }
  for (var d = 0u; d < D4; d++) {
    DKc[cB + d] = dk[d] * p.scale;
    DVc[cB + d] = dv[d];
  }
}
