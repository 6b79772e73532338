// A workgroup's sum or max of one f32 per lane (`reduce`), as a tree in workgroup memory:
// log2(WG) + 1 barriers. Consecutive reduces use alternate halves of `red`, so a lane still
// reading one reduce's result is never overwritten by the next (a lane passes the next reduce's
// first barrier only after every lane has read the previous result). workgroup_reduce_sg.wgsl is
// the same through subgroup operations, for adapters that have them (Gpu.subgroups): a kernel's
// subgroup twin is its own source with this include swapped for that one (registerSubgroupTwins
// in src/gpu/shaders.ts). The includer declares the override WG (a power of 2) and takes its lane
// at the entry as `lane: Lane`, its index from enterLane(lane) before any reduce
// (workgroup_lane.wgsl). Every lane of the workgroup calls reduce, under uniform control flow, and
// gets the result.

//! include workgroup_lane

// A named override, not `2u * WG` in the type: naga 29 (Deno 2.9) panics compiling an entry
// that leaves an override-sized array unused (attention4_flash, no MAXP) beside that expression.
override RED_LEN: u32 = 2u * WG;
var<workgroup> red: array<f32, RED_LEN>;
var<private> redHalf: u32;

fn reduce(v: f32, lid: u32, isMax: bool) -> f32 {
  let b = redHalf * WG;
  redHalf = 1u - redHalf;
  red[b + lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      let o = red[b + lid + s];
      if (isMax) { red[b + lid] = max(red[b + lid], o); } else { red[b + lid] += o; }
    }
    workgroupBarrier();
  }
  return red[b];
}
