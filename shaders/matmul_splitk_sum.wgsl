// The workgroup sum of matmul_splitk.wgsl and matmul_splitk_group.wgsl (one piece, so the plain
// and grouped kernels give the same values): each of the WG lanes holds R partial vec4s (4
// columns of R rows); after sumPartials, partial[r * MAXWG] holds row r's sum. An includer
// declares the overrides WG (a power of 2 ≤ MAXWG) and R (≤ MAXR).

const MAXWG: u32 = 64u;
const MAXR: u32 = 8u;

var<workgroup> partial: array<vec4<f32>, MAXR * MAXWG>;

fn sumPartials(acc: array<vec4<f32>, MAXR>, li: u32) {
  for (var r = 0u; r < R; r++) { partial[r * MAXWG + li] = acc[r]; }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (li < s) {
      for (var r = 0u; r < R; r++) { partial[r * MAXWG + li] += partial[r * MAXWG + li + s]; }
    }
    workgroupBarrier();
  }
}
