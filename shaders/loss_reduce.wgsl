// The loss heads' workgroup reductions (shaders/losses.wgsl), as trees in workgroup memory
// (log2(WG) + 1 barriers each): mergeRow combines the lanes' partial softmax sums of a row
// (max, Σe, Σe·z) with losses.wgsl's `merge`; sumPair adds two vec4s a lane (loss_totals).
// loss_reduce_sg.wgsl is the same through subgroup operations, one barrier each: the heads'
// subgroup twins (losses_sg) swap it in where the adapter has subgroups. Every lane calls them
// under uniform control flow and gets the result; the entries take `lane: Lane` and their index
// from enterLane(lane) (workgroup_lane.wgsl).

//! include workgroup_lane

var<workgroup> red: array<vec4<f32>, WG>;
var<workgroup> red2: array<vec4<f32>, WG>;

/** The workgroup's merge of every lane's (max, Σe, Σe·z). */
fn mergeRow(v: vec4<f32>, lid: u32) -> vec4<f32> {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] = merge(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  return red[0];
}

/** The workgroup's sums of every lane's a and b. */
fn sumPair(a: vec4<f32>, b: vec4<f32>, lid: u32) -> Pair {
  red[lid] = a;
  red2[lid] = b;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      red[lid] += red[lid + s];
      red2[lid] += red2[lid + s];
    }
    workgroupBarrier();
  }
  return Pair(red[0], red2[0]);
}
