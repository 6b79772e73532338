// dK/dV of causal GQA attention, one workgroup per cache entry (kv head, position t, slot):
// sums over the query rows of the slot at positions ≥ t and the G heads sharing the kv head.
// See attention_bwd.wgsl for the formulas. Output in cache layout [S, KV, P, D].

struct Params { N: u32, NH: u32, KV: u32, D: u32, P: u32, scale: f32, S: u32, _p1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> RowOf: array<u32>;   // [S, P] row index of (slot, pos)
@group(0) @binding(2) var<storage, read> SeqLen: array<u32>;  // [S]
@group(0) @binding(3) var<storage, read> Q: array<f32>;
@group(0) @binding(4) var<storage, read> Kc: array<f32>;
@group(0) @binding(5) var<storage, read> Vc: array<f32>;
@group(0) @binding(6) var<storage, read> Dout: array<f32>;
@group(0) @binding(7) var<storage, read> Lse: array<f32>;
@group(0) @binding(8) var<storage, read> Delta: array<f32>;
@group(0) @binding(9) var<storage, read_write> DKc: array<f32>;
@group(0) @binding(10) var<storage, read_write> DVc: array<f32>;

@compute @workgroup_size(WG)
fn attn_dkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let kvh = wid.x;
  let t = wid.y;
  let slot = wid.z;
  let len = SeqLen[slot];
  if (t >= len) { return; }
  let G = p.NH / p.KV;
  let cB = ((slot * p.KV + kvh) * p.P + t) * p.D;
  for (var d = lid; d < p.D; d += WG) {
    var dk = 0.0;
    var dv = 0.0;
    for (var pos = t; pos < len; pos++) {
      let row = RowOf[slot * p.P + pos];
      for (var g = 0u; g < G; g++) {
        let h = kvh * G + g;
        let qB = (row * p.NH + h) * p.D;
        var s = 0.0;
        var dp = 0.0;
        for (var e = 0u; e < p.D; e++) {
          s = fma(Q[qB + e], Kc[cB + e], s);
          dp = fma(Dout[qB + e], Vc[cB + e], dp);
        }
        let pr = exp(s * p.scale - Lse[row * p.NH + h]);
        let ds = pr * (dp - Delta[row * p.NH + h]);
        dk = fma(ds, Q[qB + d], dk);
        dv = fma(pr, Dout[qB + d], dv);
      }
    }
    DKc[cB + d] = dk * p.scale;
    DVc[cB + d] = dv;
  }
}
