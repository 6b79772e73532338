// The vec4 decode attention with RoPE and the cache write folded in (attention4_rope.wgsl,
// attention4_rope_qkn.wgsl, attention4_rope_bias.wgsl): what they share, on attention4_core.wgsl,
// bindings 1–9 included (9 storage buffers: they fit adapters that bind 10 a stage with one more).
// The including shader declares `p` (binding 0, attention_fold_params) and any binding after 9,
// and defines
//   fn prepare(qb: u32, kb: u32, lid: u32)   anything the row's heads need first (barriers allowed)
//   fn qIn(qb: u32, i: u32) -> f32           element i of the row's query head, before RoPE
//   fn kIn(kb: u32, i: u32) -> f32           element i of its kv head's new key, before RoPE
//   fn vIn(vb: u32, d: u32) -> vec4<f32>     vec4 d of its kv head's new value
// (qb, kb: the heads' first floats in q [N, NH·D] and k [N, KV·D]; vb = kb / 4, in vec4s of v).

@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Qr: array<f32>;    // q [N, NH·D], raw
@group(0) @binding(3) var<storage, read> Kr: array<f32>;    // k [N, KV·D], raw
@group(0) @binding(4) var<storage, read> Vr: array<vec4<f32>>;  // v [N, KV·D]
@group(0) @binding(5) var<storage, read> Rope: array<f32>;  // cos [P, D/2], sin [P, D/2] at p.sin_at
@group(0) @binding(6) var<storage, read_write> Kc: array<vec4<f32>>;  // [S, KV, P, D]
@group(0) @binding(7) var<storage, read_write> Vc: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> Out: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> Lse: array<f32>;

//! include attention4_core

var<workgroup> tK: array<vec4<f32>, MAXD4>;
var<workgroup> tV: array<vec4<f32>, MAXD4>;

fn score(rh: RowHead, t: u32) -> f32 {
  var s = 0.0;
  if (t + 1u == rh.len) {
    for (var d = 0u; d < HD4; d++) { s += dot(tQ[d], tK[d]); }
  } else {
    for (var d = 0u; d < HD4; d++) { s += dot(tQ[d], Kc[rh.kBase + t * HD4 + d]); }
  }
  return s * p.scale;
}

fn value(rh: RowHead, t: u32, g: u32) -> vec4<f32> {
  if (t + 1u == rh.len) { return tV[g]; }
  return Vc[rh.kBase + t * rh.D4 + g];
}

/**
 * Element e of a head rotated at pos as rope.wgsl's rotate_half does, given its pair (x1, x2):
 * the elements e % (D/2) and that + D/2.
 */
fn rotated(x1: f32, x2: f32, e: u32, pos: u32) -> f32 {
  let half = p.D / 2u;
  let at = pos * half + e % half;
  let c = Rope[at];
  let s = Rope[p.sin_at + at];
  let y = vec2<f32>(x1 * c - x2 * s, x2 * c + x1 * s);
  return select(y.x, y.y, e >= half);
}

fn qAt(base: u32, e: u32, pos: u32) -> f32 {
  let i = e % (p.D / 2u);
  return rotated(qIn(base, i), qIn(base, i + p.D / 2u), e, pos);
}

fn kAt(base: u32, e: u32, pos: u32) -> f32 {
  let i = e % (p.D / 2u);
  return rotated(kIn(base, i), kIn(base, i + p.D / 2u), e, pos);
}

/**
 * A workgroup's (head, row): its rotated query into tQ, its kv head's rotated new key into tK and
 * new value into tV; `store`: also those two into the cache at the row's (slot, pos).
 */
fn loadRow(head: u32, row: u32, store: bool, lid: u32) -> RowHead {
  let rh = rowHead(head, row, Meta[row]);
  let pos = rh.len - 1u;
  let qb = (row * p.NH + head) * p.D;
  let kb = (row * p.KV + head / (p.NH / p.KV)) * p.D;
  prepare(qb, kb, lid);
  for (var d = lid; d < rh.D4; d += WG) {
    let e = 4u * d;
    tQ[d] = vec4<f32>(qAt(qb, e, pos), qAt(qb, e + 1u, pos), qAt(qb, e + 2u, pos), qAt(qb, e + 3u, pos));
    let k = vec4<f32>(kAt(kb, e, pos), kAt(kb, e + 1u, pos), kAt(kb, e + 2u, pos), kAt(kb, e + 3u, pos));
    let v = vIn(kb / 4u, d);
    tK[d] = k;
    tV[d] = v;
    if (store) {
      Kc[rh.kBase + pos * rh.D4 + d] = k;
      Vc[rh.kBase + pos * rh.D4 + d] = v;
    }
  }
  workgroupBarrier();
  return rh;
}

/** Whether this workgroup's query head is its kv head's first (that workgroup writes the cache). */
fn firstOfGroup(head: u32) -> bool {
  return head % (p.NH / p.KV) == 0u;
}

@compute @workgroup_size(WG)
fn attention4_rope(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let rh = loadRow(head, row, firstOfGroup(head), lid);
  let f = attendAll(rh, lid);
  writeOut(rh, row * p.NH + head, f.acc, f.m, f.l, lid);
}

@compute @workgroup_size(WG)
fn attention4_rope_flash(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let rh = loadRow(head, row, firstOfGroup(head), lid);
  let f = flashRange(rh, 0u, rh.len, lid);
  writeOut(rh, row * p.NH + head, f.acc, f.m, f.l, lid);
}

// The split form: Out and Lse are the partials (attention4_core's writeSplit), merged by
// attention4_merge.wgsl as attention4_part's are.
@compute @workgroup_size(WG)
fn attention4_rope_part(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let head = wid.x;
  let row = wid.y;
  if (row >= p.N) { return; }
  let pos = min(Meta[row].y, p.P - 1u);
  if (wid.z * SPAN > pos) { return; }
  let rh = loadRow(head, row, firstOfGroup(head) && pos / SPAN == wid.z, lid);
  writeSplit(rh, head, row, wid.z, lid);
}
