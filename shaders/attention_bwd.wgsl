// Backward of causal GQA attention over the KV cache (forward in attention.wgsl), recomputing
// the probabilities from the saved log-sum-exp instead of storing them (flash-attention style).
// Dims and cache layout as in rope.wgsl (rope_store); G = NH / KV query heads share a kv head. For row r = (slot, pos),
// head h, position t ≤ pos:  s = scale·q·k_t,  P_t = exp(s − Lse[r,h]),  dP_t = dO·v_t,
//   Δ[r,h] = Σ_d dO·O  (attention_delta.wgsl),  dS_t = P_t·(dP_t − Δ),
//   dQ[r,h] = scale · Σ_t dS_t · k_t                         (attn_dq here: per (head, row))
//   dK_t    = scale · Σ_{rows, heads reading t} dS_t · q[r,h]  (attention_bwd_kv.wgsl)
//   dV_t    =         Σ_{rows, heads reading t} P_t · dO[r,h]

//! include attention_bwd_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<f32>;       // [N, NH·D] (after RoPE)
@group(0) @binding(3) var<storage, read> Kc: array<f32>;      // [S, KV, P, D]
@group(0) @binding(4) var<storage, read> Vc: array<f32>;
@group(0) @binding(5) var<storage, read> Dout: array<f32>;    // [N, NH·D]
@group(0) @binding(6) var<storage, read> Lse: array<f32>;     // [N, NH]
@group(0) @binding(7) var<storage, read> Delta: array<f32>;       // [N, NH] (attention_delta.wgsl)
@group(0) @binding(8) var<storage, read_write> Dq: array<f32>;    // [N, NH·D]

// Positions per tile of dS in workgroup memory; a lane keeps up to MAX_DIMS / WG dims of dQ.
override TILE: u32 = 256u;
const MAX_DIMS: u32 = 8u;

var<workgroup> ds: array<f32, TILE>;

fn score(qBase: u32, kBase: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.D; d++) { s = fma(Q[qBase + d], Kc[kBase + d], s); }
  return s * p.scale;
}

fn dotDv(oBase: u32, vBase: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.D; d++) { s = fma(Dout[oBase + d], Vc[vBase + d], s); }
  return s;
}

// Per tile of TILE positions, lanes first walk positions (each dS_t computed once, into workgroup
// memory), then dims; each dim sums over t in order across tiles, so the result does not depend
// on TILE and the context is not bounded by workgroup memory. head_dim ≤ MAX_DIMS · WG.
@compute @workgroup_size(WG)
fn attn_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let m = Meta[row];
  let len = min(m.y, p.P - 1u) + 1u;
  let kvh = head / (p.NH / p.KV);
  let qBase = (row * p.NH + head) * p.D;
  let cBase = (m.x * p.KV + kvh) * p.P * p.D;
  let lse = Lse[row * p.NH + head];
  let delta = Delta[row * p.NH + head];
  var acc: array<f32, MAX_DIMS>;
  for (var t0 = 0u; t0 < len; t0 += TILE) {
    let n = min(TILE, len - t0);
    for (var i = lid; i < n; i += WG) {
      let kB = cBase + (t0 + i) * p.D;
      ds[i] = exp(score(qBase, kB) - lse) * (dotDv(qBase, kB) - delta);
    }
    workgroupBarrier();
    for (var j = 0u; j < MAX_DIMS; j++) {
      let d = lid + j * WG;
      if (d < p.D) {
        var a = acc[j];
        for (var i = 0u; i < n; i++) { a = fma(ds[i], Kc[cBase + (t0 + i) * p.D + d], a); }
        acc[j] = a;
      }
    }
    workgroupBarrier(); // the next tile overwrites ds
  }
  for (var j = 0u; j < MAX_DIMS; j++) {
    let d = lid + j * WG;
    if (d < p.D) { Dq[qBase + d] = acc[j] * p.scale; }
  }
}
