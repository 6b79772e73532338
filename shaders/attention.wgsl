// Causal GQA attention over the per-slot KV cache (layout and dims in rope.wgsl, rope_store):
//   Out[r, h, :] = softmax(Q[r,h]·Kc[slot, h/G, 0..pos]ᵀ · scale) · Vc[slot, h/G, 0..pos],
//   G = NH / KV, (slot, pos) = meta[r]; Lse[r, h] = log Σ exp(scores) for the backward pass.
// One workgroup per (head, row); the scores of up to MAXP positions sit in workgroup memory.

//! include attention_params

override WG: u32 = 64u;
override MAXP: u32 = 1024u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<f32>;
@group(0) @binding(3) var<storage, read> Kc: array<f32>;
@group(0) @binding(4) var<storage, read> Vc: array<f32>;
@group(0) @binding(5) var<storage, read_write> Out: array<f32>;
@group(0) @binding(6) var<storage, read_write> Lse: array<f32>;

var<workgroup> sc: array<f32, MAXP>;
var<workgroup> red: array<f32, WG>;

fn reduce(v: f32, lid: u32, isMax: bool) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      if (isMax) { red[lid] = max(red[lid], red[lid + s]); } else { red[lid] += red[lid + s]; }
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let m = Meta[row];
  let len = min(m.y, p.P - 1u) + 1u;
  let kvh = head / (p.NH / p.KV);
  let qBase = (row * p.NH + head) * p.D;
  let kBase = (m.x * p.KV + kvh) * p.P * p.D;
  var mx = -3.402823e38;
  for (var t = lid; t < len; t += WG) {
    var s = 0.0;
    for (var d = 0u; d < p.D; d++) { s = fma(Q[qBase + d], Kc[kBase + t * p.D + d], s); }
    s *= p.scale;
    sc[t] = s;
    mx = max(mx, s);
  }
  mx = reduce(mx, lid, true);
  var sum = 0.0;
  for (var t = lid; t < len; t += WG) { let e = exp(sc[t] - mx); sc[t] = e; sum += e; }
  sum = reduce(sum, lid, false);
  let inv = 1.0 / sum;
  for (var d = lid; d < p.D; d += WG) {
    var acc = 0.0;
    for (var t = 0u; t < len; t++) { acc = fma(sc[t], Vc[kBase + t * p.D + d], acc); }
    Out[qBase + d] = acc * inv;
  }
  if (lid == 0u) { Lse[row * p.NH + head] = mx + log(sum); }
}
