// The vec4 attention kernels' shared body (attention4.wgsl, attention4_rope.wgsl): causal GQA
// attention of one (head, row) per workgroup, head_dim a multiple of 4 (≤ 4·MAXD4). The including
// shader declares the bindings (p, Meta, Out, Lse and its K/V source), fills tQ with the row's
// query, and defines
//   fn score(rh: RowHead, t: u32) -> f32        q · k_t · scale, from tQ
//   fn value(rh: RowHead, t: u32, g: u32) -> vec4<f32>   dims 4g .. 4g + 3 of v_t
// so the loops below are the same arithmetic whichever way a position's key and value are read.
// The entries take their lane as `lane: Lane` and its index from enterLane(lane)
// (workgroup_reduce.wgsl, or workgroup_reduce_sg.wgsl in a subgroup twin).

override WG: u32 = 64u;
override MAXP: u32 = 1024u;
const MAXD4: u32 = 64u;
// head_dim / 4 (the host's p.D / 4), a constant of the pipeline so that the driver can unroll the
// loops over a head's vec4s: a score's loads then go out together instead of one per iteration,
// each waiting for the last (on an H100 a decode step's attention4 took ~39 µs a call for a
// 100-position context, a latency chain rather than work).
override HD4: u32;

var<workgroup> sc: array<f32, MAXP>;
var<workgroup> tQ: array<vec4<f32>, MAXD4>;
var<workgroup> part4: array<vec4<f32>, WG>;

// reduce(v, lid, isMax), the workgroup's sum or max; the entries take `lane: Lane` (enterLane).
// The subgroup twins (attention4_sg, ...) swap in workgroup_reduce_sg.
//! include workgroup_reduce

/**
 * A workgroup's (head, row): the row's causal length (its position + 1), head_dim / 4, and the
 * bases of its query row and of its kv head's cache rows.
 */
struct RowHead { len: u32, D4: u32, qBase: u32, kBase: u32 }

/** The (head, row) of a row whose meta is m (kv head = head / (NH / KV)). */
fn rowHead(head: u32, row: u32, m: vec2<u32>) -> RowHead {
  let kvh = head / (p.NH / p.KV);
  let D4 = HD4;
  return RowHead(min(m.y, p.P - 1u) + 1u, D4, (row * p.NH + head) * D4, (m.x * p.KV + kvh) * p.P * D4);
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

/** A lane's share of the unnormalized output over some positions, their max and Σ exp. */
struct Partial { acc: vec4<f32>, m: f32, l: f32 }

/**
 * attention4's softmax over all of a (head, row)'s positions, every score held in workgroup
 * memory (sc): this lane's share of the unnormalized output, the max and Σ exp(score − max).
 */
fn attendAll(rh: RowHead, lid: u32) -> Partial {
  let len = rh.len;
  let D4 = rh.D4;
  var mx = -3.402823e38;
  for (var t = lid; t < len; t += WG) {
    let s = score(rh, t);
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
    // Four positions' values loaded before their adds, which stay one at a time in position
    // order (the same sums as a plain loop): a loop that waits for each load is latency-bound.
    var t = lid / D4;
    for (; t + 3u * parts < len; t += 4u * parts) {
      let v0 = value(rh, t, g);
      let v1 = value(rh, t + parts, g);
      let v2 = value(rh, t + 2u * parts, g);
      let v3 = value(rh, t + 3u * parts, g);
      acc += sc[t] * v0;
      acc += sc[t + parts] * v1;
      acc += sc[t + 2u * parts] * v2;
      acc += sc[t + 3u * parts] * v3;
    }
    for (; t < len; t += parts) { acc += sc[t] * value(rh, t, g); }
  }
  return Partial(acc, mx, sum);
}

// The flash form: the scores streamed through workgroup memory TILE positions at a time
// (flash-attention's online softmax: a running max and sum, the output rescaled when the max
// grows), so the context is not bounded by workgroup memory (attendAll holds all P scores).

override TILE: u32 = 256u;

var<workgroup> tileSc: array<f32, TILE>;

/**
 * The online softmax over positions [t0, t1) of a (head, row): this lane's partial output (lane =
 * part · D4 + g, as in attendAll) scaled by exp(−m), m the running max and l = Σ exp(s − m).
 * An empty range gives (0, −3.4e38, 0).
 */
fn flashRange(rh: RowHead, t0: u32, t1: u32, lid: u32) -> Partial {
  let D4 = rh.D4;
  let parts = max(1u, WG / D4);
  let g = lid % D4;
  var mRun = -3.402823e38;
  var lRun = 0.0;
  var acc = vec4<f32>();
  for (var ts = t0; ts < t1; ts += TILE) {
    let n = min(TILE, t1 - ts);
    var mx = -3.402823e38;
    for (var i = lid; i < n; i += WG) {
      let s = score(rh, ts + i);
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
      // As attendAll's loop: four positions' loads ahead of their adds.
      var i = lid / D4;
      for (; i + 3u * parts < n; i += 4u * parts) {
        let v0 = value(rh, ts + i, g);
        let v1 = value(rh, ts + i + parts, g);
        let v2 = value(rh, ts + i + 2u * parts, g);
        let v3 = value(rh, ts + i + 3u * parts, g);
        acc += tileSc[i] * v0;
        acc += tileSc[i + parts] * v1;
        acc += tileSc[i + 2u * parts] * v2;
        acc += tileSc[i + 3u * parts] * v3;
      }
      for (; i < n; i += parts) { acc += tileSc[i] * value(rh, ts + i, g); }
    }
    mRun = mNew;
    workgroupBarrier(); // the next tile overwrites tileSc
  }
  return Partial(acc, mRun, lRun);
}

// The split form (flash-decoding), for few rows × heads over a long cache, where one workgroup per
// (head, row) would leave most of a GPU idle: workgroup (head, row, s) takes positions
// [s · SPAN, (s + 1) · SPAN) of the row's context and writes its unnormalized output to Out (there
// the partial outputs [N, NH, S, D]) and its (max, Σ exp) to Lse (there [N, NH, S, 2]), S =
// ⌈P / SPAN⌉ (the grid may hold fewer splits: the host bounds the context); splits past a row's
// context write nothing. attention4_merge.wgsl combines them.

override SPAN: u32 = 256u;

/** Split s of a (head, row) (its positions start at or before the row's last): its partials. */
fn writeSplit(rh: RowHead, head: u32, row: u32, s: u32, lid: u32) {
  let f = flashRange(rh, s * SPAN, min(rh.len, (s + 1u) * SPAN), lid);
  let at = (row * p.NH + head) * ((p.P + SPAN - 1u) / SPAN) + s;
  writeShares(rh.D4, at * rh.D4, f.acc, 1.0, lid);
  if (lid == 0u) {
    Lse[2u * at] = f.m;
    Lse[2u * at + 1u] = f.l;
  }
}
