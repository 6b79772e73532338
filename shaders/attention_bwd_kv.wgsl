// dK/dV of causal GQA attention, one workgroup per cache entry (kv head, position t, slot):
// sums over the query rows of the slot at positions ≥ t and the G heads sharing the kv head.
// See attention_bwd.wgsl for the formulas. Output in cache layout [S, KV, P, D].

//! include attention_bwd_params

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

// (query position, head) entries per tile held in workgroup memory.
const TILE: u32 = 256u;
var<workgroup> tDs: array<f32, TILE>;
var<workgroup> tP: array<f32, TILE>;
var<workgroup> tRow: array<u32, TILE>;

// Lanes first score a tile of (query position ≥ t, head) entries once each, then walk dims.
@compute @workgroup_size(WG)
fn attn_dkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let kvh = wid.x;
  let t = wid.y;
  let slot = wid.z;
  let len = SeqLen[slot];
  if (t >= len) { return; }   // uniform per workgroup: the barriers below stay uniform
  let G = p.NH / p.KV;
  let cB = ((slot * p.KV + kvh) * p.P + t) * p.D;
  let entries = (len - t) * G;
  var dk = 0.0;
  var dv = 0.0;
  for (var base = 0u; base < entries; base += TILE) {
    for (var e = lid; e < TILE; e += WG) {
      let idx = base + e;
      if (idx < entries) {
        let pos = t + idx / G;
        let h = kvh * G + idx % G;
        let row = RowOf[slot * p.P + pos];
        let qB = (row * p.NH + h) * p.D;
        var s = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < p.D; d++) {
          s = fma(Q[qB + d], Kc[cB + d], s);
          dp = fma(Dout[qB + d], Vc[cB + d], dp);
        }
        let pr = exp(s * p.scale - Lse[row * p.NH + h]);
        tP[e] = pr;
        tDs[e] = pr * (dp - Delta[row * p.NH + h]);
        tRow[e] = qB;
      }
    }
    workgroupBarrier();
    let n = min(TILE, entries - base);
    // Dims beyond WG lanes would need more accumulators; D ≤ WG is checked on the host.
    if (lid < p.D) {
      for (var e = 0u; e < n; e++) {
        dk = fma(tDs[e], Q[tRow[e] + lid], dk);
        dv = fma(tP[e], Dout[tRow[e] + lid], dv);
      }
    }
    workgroupBarrier();
  }
  if (lid < p.D) {
    DKc[cB + lid] = dk * p.scale;
    DVc[cB + lid] = dv;
  }
}
