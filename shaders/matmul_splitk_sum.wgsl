// The workgroup sum of the split-K kernels (matmul_splitk_core.wgsl, matmul_splitk_group_core.wgsl;
// one piece, so the plain and grouped kernels give the same values): each of the WG lanes holds R
// partial vec4s (4 columns of R rows); sumPartials returns row min(lane, R − 1)'s sum, a tree
// in workgroup memory. matmul_splitk_sum_sg.wgsl is the same sum through subgroup operations. An
// includer declares the overrides WG (a power of 2 ≤ MAXWG) and R (≤ MAXR).

const MAXWG: u32 = 64u;
const MAXR: u32 = 8u;

/** The lane of the workgroup (the entry's input). */
struct Lane {
  @builtin(local_invocation_index) index: u32,
}

var<workgroup> partial: array<vec4<f32>, MAXR * MAXWG>;

fn sumPartials(acc: array<vec4<f32>, MAXR>, lane: Lane) -> vec4<f32> {
  let li = lane.index;
  for (var r = 0u; r < R; r++) { partial[r * MAXWG + li] = acc[r]; }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (li < s) {
      for (var r = 0u; r < R; r++) { partial[r * MAXWG + li] += partial[r * MAXWG + li + s]; }
    }
    workgroupBarrier();
  }
  return partial[min(li, R - 1u) * MAXWG];
}
