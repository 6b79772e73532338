// workgroup_reduce.wgsl through subgroup operations (WGSL's subgroups and the subgroup_id
// builtins; the kernel's twin enables them): each subgroup reduces its lanes with subgroupAdd or
// subgroupMax, one lane of each writes the result at its subgroup_id, and after one barrier every
// lane combines them in subgroup order (a workgroup that is one subgroup, 32 lanes on most GPUs,
// has its result already). One barrier a reduce where the tree takes log2(WG) + 1; consecutive
// reduces write alternate halves of `red`, as the tree's do. A subgroup has ≥ 4 invocations (WebGPU's minimum), so a
// workgroup of ≤ 256 lanes has ≤ RED_SLOTS of them.

const RED_SLOTS: u32 = 64u;

struct Lane {
  @builtin(local_invocation_index) index: u32,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) count: u32,
}

var<private> laneSg: u32;
var<private> laneSubgroups: u32;
var<private> redHalf: u32;

/** This lane's index in the workgroup; keeps its subgroup's for reduce. */
fn enterLane(lane: Lane) -> u32 {
  laneSg = min(lane.sg, RED_SLOTS - 1u);
  laneSubgroups = min(lane.count, RED_SLOTS);
  return lane.index;
}

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
