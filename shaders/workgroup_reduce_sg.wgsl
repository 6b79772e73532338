// workgroup_reduce.wgsl through subgroup operations (WGSL's subgroups and the subgroup_id
// builtins; the kernel's twin enables them): each subgroup reduces its lanes with subgroupAdd or
// subgroupMax, one lane of each writes the result at its subgroup_id, and after one barrier every
// lane combines them in subgroup order (a workgroup that is one subgroup, 32 lanes on most GPUs,
// has its result already). One barrier a reduce where the tree takes log2(WG) + 1; consecutive
// reduces write alternate halves of `red`, as the tree's do.

//! include workgroup_lane_sg

var<private> redHalf: u32;

var<workgroup> red: array<f32, 2u * RED_SLOTS>;

fn reduce(v: f32, lid: u32, isMax: bool) -> f32 {
  var t: f32;
  if (isMax) { t = subgroupMax(v); } else { t = subgroupAdd(v); }
  let base = redHalf * RED_SLOTS;
  redHalf = 1u - redHalf;
  if (subgroupElect()) { red[base + laneSg] = t; }
  // num_subgroups is not uniform to WGSL's analysis, so the barrier comes first.
  workgroupBarrier();
  if (laneSubgroups == 1u) { return t; }
  var r = red[base];
  for (var s = 1u; s < laneSubgroups; s++) {
    if (isMax) { r = max(r, red[base + s]); } else { r += red[base + s]; }
  }
  return r;
}
