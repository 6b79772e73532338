// attention.wgsl with vec4 loads, for head_dim a multiple of 4 (≤ 4·MAXD4): the same causal GQA
// attention and Lse, one workgroup per (head, row). The query row sits in workgroup memory; the
// output phase gives each lane a group of 4 dims and a share of the positions (the plain kernel
// keeps only D of WG lanes busy there) and adds the shares at the end.

//! include attention_params

override WG: u32 = 64u;
override MAXP: u32 = 1024u;
const MAXD4: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Meta: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> Q: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> Kc: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> Vc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> Out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> Lse: array<f32>;

var<workgroup> sc: array<f32, MAXP>;
var<workgroup> red: array<f32, WG>;
var<workgroup> tQ: array<vec4<f32>, MAXD4>;
var<workgroup> part4: array<vec4<f32>, WG>;

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

/** A workgroup's (head, row): the row's causal length and bases, its query row loaded into tQ. */
struct RowHead { len: u32, D4: u32, qBase: u32, kBase: u32 }

fn loadQuery(head: u32, row: u32, lid: u32) -> RowHead {
  let m = Meta[row];
  let kvh = head / (p.NH / p.KV);
  let D4 = p.D / 4u;
  let rh = RowHead(min(m.y, p.P - 1u) + 1u, D4, (row * p.NH + head) * D4, (m.x * p.KV + kvh) * p.P * D4);
  for (var d = lid; d < D4; d += WG) { tQ[d] = Q[rh.qBase + d]; }
  workgroupBarrier();
  return rh;
}

/**
 * The lanes' partial outputs (lane = part · D4 + g, `parts` = max(1, WG / D4) lanes per group of
 * 4 dims) summed, times `scale`, into Out[at .. at + D4).
 */
fn writeShares(D4: u32, at: u32, acc: vec4<f32>, scale: f32, lid: u32) {
  let parts = max(1u, WG / D4);
  part4[lid] = acc;
  workgroupBarrier();
  for (var d = lid; d < D4; d += WG) {
    var o = vec4<f32>();
    for (var q = 0u; q < parts; q++) { o += part4[q * D4 + d]; }
    Out[at + d] = o * scale;
  }
}

/** The row's output, the shares divided by l, and Lse[rh] = m + log(l): the kernels' last phase. */
fn writeOut(rh: RowHead, lseAt: u32, acc: vec4<f32>, m: f32, l: f32, lid: u32) {
  writeShares(rh.D4, rh.qBase, acc, 1.0 / l, lid);
  if (lid == 0u) { Lse[lseAt] = m + log(l); }
}

@compute @workgroup_size(WG)
fn attention4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let rh = loadQuery(head, row, lid);
  let len = rh.len;
  let D4 = rh.D4;
  let kBase = rh.kBase;
  var mx = -3.402823e38;
  for (var t = lid; t < len; t += WG) {
    var s = 0.0;
    for (var d = 0u; d < D4; d++) { s += dot(tQ[d], Kc[kBase + t * D4 + d]); }
    s *= p.scale;
    sc[t] = s;
    mx = max(mx, s);
  }
  mx = reduce(mx, lid, true);
  var sum = 0.0;
  for (var t = lid; t < len; t += WG) { let e = exp(sc[t] - mx); sc[t] = e; sum += e; }
  sum = reduce(sum, lid, false);
  // lane = part · D4 + g: `parts` lanes share each group of 4 dims.
  let parts = max(1u, WG / D4);
  let g = lid % D4;
  var acc = vec4<f32>();
  if (lid < parts * D4) {
    for (var t = lid / D4; t < len; t += parts) { acc += sc[t] * Vc[kBase + t * D4 + g]; }
  }
  writeOut(rh, row * p.NH + head, acc, mx, sum, lid);
}

// attention4_flash: the same attention with the scores streamed through workgroup memory TILE
// positions at a time (flash-attention's online softmax: a running max and sum, the output
// rescaled when the max grows), so the context is not bounded by workgroup memory (attention4
// holds all P scores). GPU adapters take it where P scores do not fit (ModelKernels).

override TILE: u32 = 256u;

var<workgroup> tileSc: array<f32, TILE>;

/** A lane's share of the unnormalized output over some positions, their max and Σ exp. */
struct Partial { acc: vec4<f32>, m: f32, l: f32 }

/**
 * The online softmax over positions [t0, t1) of a (head, row): this lane's partial output (lane =
 * part · D4 + g, as in attention4) scaled by exp(−m), m the running max and l = Σ exp(s − m).
 * An empty range gives (0, −3.4e38, 0).
 */
fn flashRange(rh: RowHead, t0: u32, t1: u32, lid: u32) -> Partial {
  let D4 = rh.D4;
  let kBase = rh.kBase;
  let parts = max(1u, WG / D4);
  let g = lid % D4;
  var mRun = -3.402823e38;
  var lRun = 0.0;
  var acc = vec4<f32>();
  for (var ts = t0; ts < t1; ts += TILE) {
    let n = min(TILE, t1 - ts);
    var mx = -3.402823e38;
    for (var i = lid; i < n; i += WG) {
      var s = 0.0;
      for (var d = 0u; d < D4; d++) { s += dot(tQ[d], Kc[kBase + (ts + i) * D4 + d]); }
      s *= p.scale;
      tileSc[i] = s;
      mx = max(mx, s);
    }
    let mNew = max(mRun, reduce(mx, lid, true));
    var sum = 0.0;
    for (var i = lid; i < n; i += WG) { let e = exp(tileSc[i] - mNew); tileSc[i] = e; sum += e; }
    sum = reduce(sum, lid, false);
    // The first tile's correction is exp(−huge) = 0: nothing accumulated yet.
    let corr = exp(mRun - mNew);
    lRun = lRun * corr + sum;
    acc *= corr;
    if (lid < parts * D4) {
      for (var i = lid / D4; i < n; i += parts) { acc += tileSc[i] * Vc[kBase + (ts + i) * D4 + g]; }
    }
    mRun = mNew;
    workgroupBarrier(); // the next tile overwrites tileSc
  }
  return Partial(acc, mRun, lRun);
}

@compute @workgroup_size(WG)
fn attention4_flash(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y + wid.z * 65535u;
  if (row >= p.N) { return; }
  let rh = loadQuery(head, row, lid);
  let f = flashRange(rh, 0u, rh.len, lid);
  writeOut(rh, row * p.NH + head, f.acc, f.m, f.l, lid);
}

// attention4_part: decode attention split over positions (flash-decoding), for few rows × heads
// over a long cache, where one workgroup per (head, row) would leave most of a GPU idle. Workgroup
// (head, row, s) takes positions [s · SPAN, (s + 1) · SPAN) of the row's context and writes its
// unnormalized output to Out (here the partial outputs [N, NH, S, D]) and its (max, Σ exp) to Lse
// (here [N, NH, S, 2]), S = ⌈P / SPAN⌉ (the grid may hold fewer splits: the host bounds the
// context); splits past a row's context write nothing. attention4_merge.wgsl combines them.

override SPAN: u32 = 256u;

@compute @workgroup_size(WG)
fn attention4_part(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let head = wid.x;
  let row = wid.y;
  if (row >= p.N) { return; }
  let t0 = wid.z * SPAN;
  if (t0 > min(Meta[row].y, p.P - 1u)) { return; }
  let rh = loadQuery(head, row, lid);
  let f = flashRange(rh, t0, min(rh.len, t0 + SPAN), lid);
  let at = (row * p.NH + head) * ((p.P + SPAN - 1u) / SPAN) + wid.z;
  writeShares(rh.D4, at * rh.D4, f.acc, 1.0, lid);
  if (lid == 0u) {
    Lse[2u * at] = f.m;
    Lse[2u * at + 1u] = f.l;
  }
}
