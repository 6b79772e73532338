// attention_bwd.wgsl's attn_dq with vec4 loads, for head_dim a multiple of 4 (≤ 4·MAXD4; GPUs):
// the same dQ[r,h] = scale · Σ_t dS_t · k_t, dS_t = P_t·(dO·v_t − Δ), P_t = exp(s_t − Lse), one
// workgroup per (head, row). The scalar kernel reloads q and dO for every position, walks
// head_dim one float at a time (a chain of dependent waits on a GPU: 1.27 ms a call at
// Qwen3-0.6B's B 8 × T 128 on an H100, where the forward attention took 0.21), and leaves most
// lanes idle in its dQ phase. Here q and dO sit in workgroup memory, a head's loops have the
// pipeline-constant bound HD4 (head_dim / 4) the driver can unroll, and the dQ phase gives each
// lane a group of 4 dims and a share of the positions (lane = part · HD4 + g, as attention4's
// output phase), loading four positions' keys before adding them; the shares are summed at the
// end. Per tile of TILE positions, the lanes first walk positions (each dS_t computed once, into
// workgroup memory), so the context is not bounded by workgroup memory.

//! include attention_bwd_params

override WG: u32 = 64u;
override TILE: u32 = 256u;
override HD4: u32;
const MAXD4: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<vec4<f32>>;      // [N, NH·D] (after RoPE)
@group(0) @binding(3) var<storage, read> Kc: array<vec4<f32>>;     // [S, KV, P, D]
@group(0) @binding(4) var<storage, read> Vc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> Dout: array<vec4<f32>>;   // [N, NH·D]
@group(0) @binding(6) var<storage, read> Lse: array<f32>;          // [N, NH]
@group(0) @binding(7) var<storage, read> Delta: array<f32>;        // [N, NH]
@group(0) @binding(8) var<storage, read_write> Dq: array<vec4<f32>>;

var<workgroup> tQ: array<vec4<f32>, MAXD4>;
var<workgroup> tO: array<vec4<f32>, MAXD4>;
var<workgroup> ds: array<f32, TILE>;
var<workgroup> part4: array<vec4<f32>, WG>;

@compute @workgroup_size(WG)
fn attn_dq4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let m = Meta[row];
  let len = min(m.y, p.P - 1u) + 1u;
  let kvh = head / (p.NH / p.KV);
  let qBase = (row * p.NH + head) * HD4;
  let cBase = (m.x * p.KV + kvh) * p.P * HD4;
  let lse = Lse[row * p.NH + head];
  let delta = Delta[row * p.NH + head];
  for (var d = lid; d < HD4; d += WG) {
    tQ[d] = Q[qBase + d];
    tO[d] = Dout[qBase + d];
  }
  workgroupBarrier();
  let parts = max(1u, WG / HD4);
  let g = lid % HD4;
  var acc = vec4<f32>();
  for (var t0 = 0u; t0 < len; t0 += TILE) {
    let n = min(TILE, len - t0);
    for (var i = lid; i < n; i += WG) {
      let kB = cBase + (t0 + i) * HD4;
      var s = 0.0;
      var dp = 0.0;
      for (var d = 0u; d < HD4; d++) {
        s += dot(tQ[d], Kc[kB + d]);
        dp += dot(tO[d], Vc[kB + d]);
      }
      ds[i] = exp(s * p.scale - lse) * (dp - delta);
    }
    workgroupBarrier();
    if (lid < parts * HD4) {
      let kB = cBase + t0 * HD4 + g;
      var i = lid / HD4;
      for (; i + 3u * parts < n; i += 4u * parts) {
        let k0 = Kc[kB + i * HD4];
        let k1 = Kc[kB + (i + parts) * HD4];
        let k2 = Kc[kB + (i + 2u * parts) * HD4];
        let k3 = Kc[kB + (i + 3u * parts) * HD4];
        acc += ds[i] * k0;
        acc += ds[i + parts] * k1;
        acc += ds[i + 2u * parts] * k2;
        acc += ds[i + 3u * parts] * k3;
      }
      for (; i < n; i += parts) { acc += ds[i] * Kc[kB + i * HD4]; }
    }
    workgroupBarrier(); // the next tile overwrites ds
  }
  part4[lid] = acc;
  workgroupBarrier();
  for (var d = lid; d < HD4; d += WG) {
    var o = vec4<f32>();
    for (var q = 0u; q < parts; q++) { o += part4[q * HD4 + d]; }
    Dq[qBase + d] = o * p.scale;
  }
}
