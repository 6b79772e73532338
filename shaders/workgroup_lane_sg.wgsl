// workgroup_lane.wgsl for subgroup twins (WGSL's subgroups and the subgroup_id builtins; the
// kernel's twin enables them): enterLane also keeps the lane's subgroup and the workgroup's
// subgroup count, which the subgroup reduces use to give each subgroup one slot in workgroup
// memory. A subgroup has ≥ 4 invocations (WebGPU's minimum), so a workgroup of ≤ 256 lanes has
// ≤ RED_SLOTS of them.

const RED_SLOTS: u32 = 64u;

struct Lane {
  @builtin(local_invocation_index) index: u32,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) count: u32,
}

var<private> laneSg: u32;
var<private> laneSubgroups: u32;

/** This lane's index in the workgroup; keeps its subgroup's for the reduces. */
fn enterLane(lane: Lane) -> u32 {
  laneSg = min(lane.sg, RED_SLOTS - 1u);
  laneSubgroups = min(lane.count, RED_SLOTS);
  return lane.index;
}
