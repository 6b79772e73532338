// loss_reduce.wgsl through subgroup operations (the loss heads' subgroup twins, losses_sg): each
// subgroup reduces its lanes, one lane of each writes the result at its subgroup_id, and after
// one barrier every lane combines the subgroups' results in subgroup order (a workgroup that is
// one subgroup has its result already). mergeRow's subgroup step takes the lanes' largest max M,
// scales each lane's sums by e^(max − M) as `merge` does, and adds them.

//! include workgroup_lane_sg

var<workgroup> red: array<vec4<f32>, RED_SLOTS>;
var<workgroup> red2: array<vec4<f32>, RED_SLOTS>;

/** The workgroup's merge of every lane's (max, Σe, Σe·z). */
fn mergeRow(v: vec4<f32>, lid: u32) -> vec4<f32> {
  let m = subgroupMax(v.x);
  let s = subgroupAdd(v.yz * exp(v.x - m));
  let t = vec4<f32>(m, s, 0.0);
  if (subgroupElect()) { red[laneSg] = t; }
  // num_subgroups is not uniform to WGSL's analysis, so the barrier comes first.
  workgroupBarrier();
  if (laneSubgroups == 1u) { return t; }
  var r = red[0];
  for (var i = 1u; i < laneSubgroups; i++) { r = merge(r, red[i]); }
  return r;
}

/** The workgroup's sums of every lane's a and b. */
fn sumPair(a: vec4<f32>, b: vec4<f32>, lid: u32) -> Pair {
  let sa = subgroupAdd(a);
  let sb = subgroupAdd(b);
  if (subgroupElect()) {
    red[laneSg] = sa;
    red2[laneSg] = sb;
  }
  workgroupBarrier();
  if (laneSubgroups == 1u) { return Pair(sa, sb); }
  var r = Pair(red[0], red2[0]);
  for (var i = 1u; i < laneSubgroups; i++) {
    r.a += red[i];
    r.b += red2[i];
  }
  return r;
}
