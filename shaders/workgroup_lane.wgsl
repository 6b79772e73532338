// A workgroup lane's index, taken at a kernel's entry as `lane: Lane` and read with
// enterLane(lane) before any workgroup reduce. workgroup_lane_sg.wgsl is the same for the subgroup
// twins of the reducing kernels (workgroup_reduce_sg.wgsl, loss_reduce_sg.wgsl): it also keeps the
// lane's subgroup and the workgroup's subgroup count.

struct Lane {
  @builtin(local_invocation_index) index: u32,
}

/** This lane's index in the workgroup. */
fn enterLane(lane: Lane) -> u32 {
  return lane.index;
}
