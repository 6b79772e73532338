// Causal GQA attention for CPU adapters: one invocation per (row, head), a single pass over the
// row's positions with an online softmax (running max and sum, the output rescaled when the max
// moves), vec4 loads, no workgroup memory and no barriers. On llvmpipe a barrier is a coroutine
// switch through every lane of the workgroup and the parallel kernel (attention4.wgsl) pays
// ~15 of them per (row, head); the loads, which are what costs here, are the same in both.
// Same bindings, Meta and outputs as attention.wgsl: Out [N, NH, D], Lse [N, NH] = log Σ exp(s).
// head_dim = 4·D4 where D4 is the override constant (unrolled loops keep q and the accumulator
// in registers); no limit on the context length (no scores in workgroup memory).

//! include attention_params

override WG: u32 = 8u;
override D4: u32 = 4u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> Kc: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> Vc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> Out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> Lse: array<f32>;

const MAXD4: u32 = 64u;

@compute @workgroup_size(WG)
fn attention_lane(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
  // Invocation i = row · NH + head; the groups are spread over x and y (grid1d on the host).
  let i = (wid.y * nwg.x + wid.x) * WG + lid;
  if (i >= p.N * p.NH) { return; }
  let row = i / p.NH;
  let head = i % p.NH;
  let m = Meta[row];
  let len = min(m.y, p.P - 1u) + 1u;
  let kvh = head / (p.NH / p.KV);
  let qBase = (row * p.NH + head) * D4;
  let kBase = (m.x * p.KV + kvh) * p.P * D4;
  var q: array<vec4<f32>, MAXD4>;
  var acc: array<vec4<f32>, MAXD4>;
  for (var d = 0u; d < D4; d++) {
    q[d] = Q[qBase + d] * p.scale;
    acc[d] = vec4<f32>();
  }
  var mx = -3.402823e38;
  var sum = 0.0;
  for (var t = 0u; t < len; t++) {
    let kb = kBase + t * D4;
    var s = 0.0;
    for (var d = 0u; d < D4; d++) { s += dot(q[d], Kc[kb + d]); }
    if (s > mx) {
      // The running max moves: rescale what was summed so far (exp(-huge) = 0 at t = 0).
      let c = exp(mx - s);
      sum *= c;
      for (var d = 0u; d < D4; d++) { acc[d] *= c; }
      mx = s;
    }
    let e = exp(s - mx);
    sum += e;
    for (var d = 0u; d < D4; d++) { acc[d] += e * Vc[kb + d]; }
  }
  let inv = 1.0 / sum;
  for (var d = 0u; d < D4; d++) { Out[qBase + d] = acc[d] * inv; }
  Lse[i] = mx + log(sum);
}

// GQA with two query heads per kv head (NH = 2·KV): one invocation per (row, kv head) takes both,
// so each K and V vector is loaded once for the two (the loads are what costs on llvmpipe). The
// two heads' state is spelled out (q0/q1, acc0/acc1), not indexed by head, so every array index
// is the unrolled head-dim loop's constant. Per head, the same arithmetic as attention_lane.
@compute @workgroup_size(WG)
fn attention_lane_g2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid;
  if (i >= p.N * p.KV) { return; }
  let row = i / p.KV;
  let kvh = i % p.KV;
  let m = Meta[row];
  let len = min(m.y, p.P - 1u) + 1u;
  let kBase = (m.x * p.KV + kvh) * p.P * D4;
  let h0 = row * p.NH + kvh * 2u;
  var q0: array<vec4<f32>, MAXD4>;
  var q1: array<vec4<f32>, MAXD4>;
  var acc0: array<vec4<f32>, MAXD4>;
  var acc1: array<vec4<f32>, MAXD4>;
  for (var d = 0u; d < D4; d++) {
    q0[d] = Q[h0 * D4 + d] * p.scale;
    q1[d] = Q[(h0 + 1u) * D4 + d] * p.scale;
    acc0[d] = vec4<f32>();
    acc1[d] = vec4<f32>();
  }
  var mx0 = -3.402823e38;
  var mx1 = -3.402823e38;
  var sum0 = 0.0;
  var sum1 = 0.0;
  for (var t = 0u; t < len; t++) {
    let kb = kBase + t * D4;
    var s0 = 0.0;
    var s1 = 0.0;
    for (var d = 0u; d < D4; d++) {
      let kv = Kc[kb + d];
      s0 += dot(q0[d], kv);
      s1 += dot(q1[d], kv);
    }
    if (s0 > mx0) {
      let c = exp(mx0 - s0);
      sum0 *= c;
      for (var d = 0u; d < D4; d++) { acc0[d] *= c; }
      mx0 = s0;
    }
    if (s1 > mx1) {
      let c = exp(mx1 - s1);
      sum1 *= c;
      for (var d = 0u; d < D4; d++) { acc1[d] *= c; }
      mx1 = s1;
    }
    let e0 = exp(s0 - mx0);
    let e1 = exp(s1 - mx1);
    sum0 += e0;
    sum1 += e1;
    for (var d = 0u; d < D4; d++) {
      let vv = Vc[kb + d];
      acc0[d] += e0 * vv;
      acc1[d] += e1 * vv;
    }
  }
  let inv0 = 1.0 / sum0;
  let inv1 = 1.0 / sum1;
  for (var d = 0u; d < D4; d++) {
    Out[h0 * D4 + d] = acc0[d] * inv0;
    Out[(h0 + 1u) * D4 + d] = acc1[d] * inv1;
  }
  Lse[h0] = mx0 + log(sum0);
  Lse[h0 + 1u] = mx1 + log(sum1);
}
