// dQ of causal GQA attention for CPU adapters (attention_bwd.wgsl's attn_dq, same bindings and
// math): one invocation per (row, head), a single pass over the row's positions with vec4 loads,
// no workgroup memory and no barrier. For position t ≤ pos:
//   P_t = exp(scale·q·k_t − Lse),  dS_t = P_t·(dO·v_t − Δ),  dQ = scale · Σ_t dS_t · k_t
// q and dO stay in registers (head_dim = 4·D4, D4 an override constant), so each position costs
// one K and one V row; the workgroup kernel also reloads q and dO per position and K again for
// the sum, and leaves most lanes idle in its second phase.

//! include attention_bwd_params

override WG: u32 = 8u;
override D4: u32 = 4u;
const MAXD4: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<vec4<f32>>;     // [N, NH·D] (after RoPE)
@group(0) @binding(3) var<storage, read> Kc: array<vec4<f32>>;    // [S, KV, P, D]
@group(0) @binding(4) var<storage, read> Vc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> Dout: array<vec4<f32>>;  // [N, NH·D]
@group(0) @binding(6) var<storage, read> Lse: array<f32>;         // [N, NH]
@group(0) @binding(7) var<storage, read> Delta: array<f32>;       // [N, NH]
@group(0) @binding(8) var<storage, read_write> Dq: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn attn_dq_lane(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid;
  if (i >= p.N * p.NH) { return; }
  let row = i / p.NH;
  let head = i % p.NH;
  let m = Meta[row];
  let len = min(m.y, p.P - 1u) + 1u;
  let kvh = head / (p.NH / p.KV);
  let qBase = i * D4;
  let cBase = (m.x * p.KV + kvh) * p.P * D4;
  let lse = Lse[i];
  let delta = Delta[i];
  var q: array<vec4<f32>, MAXD4>;
  var dout: array<vec4<f32>, MAXD4>;
  var acc: array<vec4<f32>, MAXD4>;
  for (var d = 0u; d < D4; d++) {
    q[d] = Q[qBase + d] * p.scale;
    dout[d] = Dout[qBase + d];
    acc[d] = vec4<f32>();
  }
  var k: array<vec4<f32>, MAXD4>;
  for (var t = 0u; t < len; t++) {
    let kb = cBase + t * D4;
    var s = 0.0;
    var dp = 0.0;
    for (var d = 0u; d < D4; d++) {
      k[d] = Kc[kb + d];
      s += dot(q[d], k[d]);
      dp += dot(dout[d], Vc[kb + d]);
    }
    let ds = exp(s - lse) * (dp - delta);
    for (var d = 0u; d < D4; d++) { acc[d] += ds * k[d]; }
  }
  for (var d = 0u; d < D4; d++) { Dq[qBase + d] = acc[d] * p.scale; }
}
