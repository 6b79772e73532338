// attention_bwd_kv.wgsl with vec4 loads, for head_dim a multiple of 4 (every preset and HF model
// we load): dK/dV of causal GQA attention, one workgroup per cache entry (kv head, position t,
// slot), summing over the slot's query rows at positions ≥ t and the G heads sharing the kv head.
// Phase 1 scores a tile of (position, head) entries, one per lane, against the K and V rows kept
// in workgroup memory; phase 2 gives each lane a group of 4 dims and a share of the entries, and
// the shares are added at the end. On CPU adapters loads dominate: this loads a quarter as many
// words as the scalar kernel and keeps every lane busy in phase 2 (there, only D of WG lanes were).

//! include attention_bwd_params

override WG: u32 = 64u;
// Most vec4 groups of one head: head_dim ≤ 4·MAXD4 (checked on the host).
const MAXD4: u32 = 64u;
// head_dim / 4 (the host's p.D / 4) as a pipeline constant, so that the driver can unroll the
// loops over a head's vec4s and issue their loads together (attention4_core.wgsl's HD4).
override HD4: u32;

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

const TILE: u32 = 256u;
var<workgroup> tDs: array<f32, TILE>;
var<workgroup> tP: array<f32, TILE>;
var<workgroup> tRow: array<u32, TILE>;   // vec4 index of the entry's Q / dOut row
var<workgroup> tK: array<vec4<f32>, MAXD4>;
var<workgroup> tV: array<vec4<f32>, MAXD4>;
var<workgroup> sumK: array<vec4<f32>, WG>;
var<workgroup> sumV: array<vec4<f32>, WG>;

@compute @workgroup_size(WG)
fn attn_dkv4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let kvh = wid.x;
  let t = wid.y;
  let slot = wid.z;
  let len = SeqLen[slot];
  if (t >= len) { return; }   // uniform per workgroup: the barriers below stay uniform
  let G = p.NH / p.KV;
  let D4 = HD4;
  let cB = ((slot * p.KV + kvh) * p.P + t) * D4;
  for (var d = lid; d < D4; d += WG) {
    tK[d] = Kc[cB + d];
    tV[d] = Vc[cB + d];
  }
  workgroupBarrier();
  let entries = (len - t) * G;
  // Phase 2 layout: lane = part · D4 + g; `parts` lanes share each dim group.
  let parts = max(1u, WG / D4);
  let g = lid % D4;
  let part = lid / D4;
  let busy = lid < parts * D4;
  var dk = vec4<f32>();
  var dv = vec4<f32>();
  for (var base = 0u; base < entries; base += TILE) {
    for (var e = lid; e < TILE; e += WG) {
      let idx = base + e;
      if (idx < entries) {
        let pos = t + idx / G;
        let h = kvh * G + idx % G;
        let row = RowOf[slot * p.P + pos];
        let qB = (row * p.NH + h) * D4;
        var s = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < HD4; d++) {
          s += dot(Q[qB + d], tK[d]);
          dp += dot(Dout[qB + d], tV[d]);
        }
        let pr = exp(s * p.scale - Lse[row * p.NH + h]);
        tP[e] = pr;
        tDs[e] = pr * (dp - Delta[row * p.NH + h]);
        tRow[e] = qB;
      }
    }
    workgroupBarrier();
    let n = min(TILE, entries - base);
    if (busy) {
      // Four entries' rows loaded before their adds, which stay in entry order (the same sums
      // as one at a time): a loop that waits for each load is latency-bound on a GPU.
      var e = part;
      for (; e + 3u * parts < n; e += 4u * parts) {
        let e1 = e + parts;
        let e2 = e + 2u * parts;
        let e3 = e + 3u * parts;
        let q0 = Q[tRow[e] + g];
        let q1 = Q[tRow[e1] + g];
        let q2 = Q[tRow[e2] + g];
        let q3 = Q[tRow[e3] + g];
        let o0 = Dout[tRow[e] + g];
        let o1 = Dout[tRow[e1] + g];
        let o2 = Dout[tRow[e2] + g];
        let o3 = Dout[tRow[e3] + g];
        dk += tDs[e] * q0;
        dv += tP[e] * o0;
        dk += tDs[e1] * q1;
        dv += tP[e1] * o1;
        dk += tDs[e2] * q2;
        dv += tP[e2] * o2;
        dk += tDs[e3] * q3;
        dv += tP[e3] * o3;
      }
      for (; e < n; e += parts) {
        dk += tDs[e] * Q[tRow[e] + g];
        dv += tP[e] * Dout[tRow[e] + g];
      }
    }
    workgroupBarrier();
  }
  sumK[lid] = dk;
  sumV[lid] = dv;
  workgroupBarrier();
  if (lid < D4) {
    var k = vec4<f32>();
    var v = vec4<f32>();
    for (var q = 0u; q < parts; q++) {
      k += sumK[q * D4 + lid];
      v += sumV[q * D4 + lid];
    }
    DKc[cB + lid] = k * p.scale;
    DVc[cB + lid] = v;
  }
}
