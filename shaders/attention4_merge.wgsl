// The second half of the split decode attention (attention4.wgsl's attention4_part): the splits
// of each (head, row) combined as flash-decoding does. With (m_s, l_s, o_s) the splits' maxima,
// sums of exp(score − m_s) and unnormalized outputs, s < n = ⌈len / SPAN⌉:
//   m = max_s m_s,  l = Σ_s l_s · exp(m_s − m),  Out = Σ_s o_s · exp(m_s − m) / l,  Lse = m + log l.
// One workgroup per (head, row); every lane reads the n (m_s, l_s) pairs itself (n ≤ S, no
// barriers) and writes its groups of 4 dims. S = ⌈P / SPAN⌉ splits are stored per (row, head).

//! include attention_params

override WG: u32 = 64u;
override SPAN: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> PartO: array<vec4<f32>>;  // [N, NH, S, D]
@group(0) @binding(3) var<storage, read> PartML: array<f32>;       // [N, NH, S, 2]
@group(0) @binding(4) var<storage, read_write> Out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> Lse: array<f32>;

@compute @workgroup_size(WG)
fn attention4_merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let len = min(Meta[row].y, p.P - 1u) + 1u;
  let n = (len + SPAN - 1u) / SPAN;
  let S = (p.P + SPAN - 1u) / SPAN;
  let rh = row * p.NH + head;
  let base = rh * S;
  var m = -3.402823e38;
  for (var s = 0u; s < n; s++) { m = max(m, PartML[2u * (base + s)]); }
  var l = 0.0;
  for (var s = 0u; s < n; s++) { l += PartML[2u * (base + s) + 1u] * exp(PartML[2u * (base + s)] - m); }
  let inv = 1.0 / l;
  let D4 = p.D / 4u;
  for (var d = lid; d < D4; d += WG) {
    var o = vec4<f32>();
    for (var s = 0u; s < n; s++) {
      o += PartO[(base + s) * D4 + d] * exp(PartML[2u * (base + s)] - m);
    }
    Out[rh * D4 + d] = o * inv;
  }
  if (lid == 0u) { Lse[rh] = m + log(l); }
}
