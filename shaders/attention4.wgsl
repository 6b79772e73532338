// attention.wgsl with vec4 loads, for head_dim a multiple of 4 (≤ 4·MAXD4): the same causal GQA
// attention and Lse, one workgroup per (head, row), over the K/V cache. The query row sits in
// workgroup memory; the output phase gives each lane a group of 4 dims and a share of the
// positions (the plain kernel keeps only D of WG lanes busy there) and adds the shares at the end.
// The loops are attention4_core.wgsl's; attention4_rope.wgsl is the same attention for decode
// steps with RoPE and the cache write of the new position folded in.

//! include attention_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> Kc: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> Vc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> Out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> Lse: array<f32>;

//! include attention4_core

fn score(rh: RowHead, t: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < HD4; d++) { s += dot(tQ[d], Kc[rh.kBase + t * HD4 + d]); }
  return s * p.scale;
}

fn value(rh: RowHead, t: u32, g: u32) -> vec4<f32> {
  return Vc[rh.kBase + t * rh.D4 + g];
}

/** A workgroup's (head, row), its query row loaded into tQ. */
fn loadQuery(head: u32, row: u32, lid: u32) -> RowHead {
  let rh = rowHead(head, row, Meta[row]);
  for (var d = lid; d < rh.D4; d += WG) { tQ[d] = Q[rh.qBase + d]; }
  workgroupBarrier();
  return rh;
}

@compute @workgroup_size(WG)
fn attention4(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let rh = loadQuery(head, row, lid);
  let f = attendAll(rh, lid);
  writeOut(rh, row * p.NH + head, f.acc, f.m, f.l, lid);
}

// attention4_flash: the scores streamed TILE positions at a time (attention4_core's flashRange),
// where all P scores do not fit workgroup memory (ModelKernels).
@compute @workgroup_size(WG)
fn attention4_flash(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let rh = loadQuery(head, row, lid);
  let f = flashRange(rh, 0u, rh.len, lid);
  writeOut(rh, row * p.NH + head, f.acc, f.m, f.l, lid);
}

// attention4_part: the split decode attention (attention4_core's writeSplit), split z of the grid.
@compute @workgroup_size(WG)
fn attention4_part(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let lid = enterLane(lane);
  let head = wid.x;
  let row = wid.y;
  if (row >= p.N) { return; }
  if (wid.z * SPAN > min(Meta[row].y, p.P - 1u)) { return; }
  let rh = loadQuery(head, row, lid);
  writeSplit(rh, head, row, wid.z, lid);
}
