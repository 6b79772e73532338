// The workgroup sum of the split-K kernels through subgroup operations (WGSL's subgroups and
// the subgroup_id builtins): sumPartials returns row min(lane, R − 1)'s sum, as
// matmul_splitk_sum.wgsl's does. Each subgroup adds its lanes' partials with subgroupAdd; one
// lane of each writes its R sums to workgroup memory at its subgroup_id, and after one barrier
// the sums are added in subgroup order (a workgroup that is one subgroup, 32 lanes on most GPUs,
// has its sums already). The tree of the workgroup form takes log2(WG) + 1 barriers.
// A subgroup has ≥ 4 invocations (WebGPU's minimum), so a workgroup has ≤ MAXWG / 4 of them.

const MAXWG: u32 = 64u;
const MAXR: u32 = 8u;
const MAXSG: u32 = MAXWG / 4u;

/** The lane of the workgroup and its subgroup (the entry's input). */
struct Lane {
  @builtin(local_invocation_index) index: u32,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) count: u32,
}

var<workgroup> partial: array<vec4<f32>, MAXR * MAXSG>;

fn sumPartials(acc: array<vec4<f32>, MAXR>, lane: Lane) -> vec4<f32> {
  let mine = min(lane.index, R - 1u);
  var own = vec4<f32>();
  for (var r = 0u; r < R; r++) {
    let t = subgroupAdd(acc[r]);
    if (r == mine) { own = t; }
    if (subgroupElect()) { partial[r * MAXSG + min(lane.sg, MAXSG - 1u)] = t; }
  }
  // num_subgroups is not uniform to WGSL's analysis, so the barrier comes first.
  workgroupBarrier();
  if (lane.count == 1u) { return own; }
  var v = partial[mine * MAXSG];
  for (var s = 1u; s < min(lane.count, MAXSG); s++) { v += partial[mine * MAXSG + s]; }
  return v;
}
