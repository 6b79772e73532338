// What the grouped split-K kernels (matmul_splitk_group_core.wgsl,
// matmul_splitk_group_norm_core.wgsl) share: their bindings, the workgroup's tile, and the
// part-indexed weight loads and output stores.

//! include matmul_group_bindings
//! include matmul_splitk_quad

override WG: u32 = 64u;
override R: u32 = 1u;

/** A workgroup's part g, its width N, its 4 columns n0.. and R rows m0.., and B's row starts. */
struct Tile {
  g: u32,
  N: u32,
  K4: u32,
  n0: u32,
  m0: u32,
  b: vec4<u32>,
}

// Workgroups along x are t0 column quads of C0, then t1 of C1, then C2's; along y, R-row blocks.
fn groupTile(wid: vec3<u32>) -> Tile {
  var g = 2u;
  var quad = wid.x - gp.t0 - gp.t1;
  if (wid.x < gp.t0) { g = 0u; quad = wid.x; } else if (wid.x < gp.t0 + gp.t1) { g = 1u; quad = wid.x - gp.t0; }
  let N = select(select(gp.N2, gp.N1, g == 1u), gp.N0, g == 0u);
  let K4 = gp.K / 4u;
  let n0 = quad * 4u;
  return Tile(g, N, K4, n0, wid.y * R, quadRows(0u, n0, N, K4));
}

// Part g is the same for the whole workgroup, so these branches never diverge.
fn loadB(g: u32, i: u32) -> vec4<f32> {
  if (g == 0u) { return B0[i]; }
  if (g == 1u) { return B1[i]; }
  return B2[i];
}

fn storeC(g: u32, i: u32, v: f32) {
  if (g == 0u) { C0[i] = v; } else if (g == 1u) { C1[i] = v; } else { C2[i] = v; }
}

// Row `row`'s 4 sums of the tile into its part's C (columns past N not written).
fn storeQuad(t: Tile, row: u32, v: vec4<f32>) {
  if (t.n0 < t.N) { storeC(t.g, row * t.N + t.n0, v.x); }
  if (t.n0 + 1u < t.N) { storeC(t.g, row * t.N + t.n0 + 1u, v.y); }
  if (t.n0 + 2u < t.N) { storeC(t.g, row * t.N + t.n0 + 2u, v.z); }
  if (t.n0 + 3u < t.N) { storeC(t.g, row * t.N + t.n0 + 3u, v.w); }
}
