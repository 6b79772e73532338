// The part-indexed weight loads and output stores of the grouped split-K kernels
// (matmul_splitk_group_core.wgsl, matmul_splitk_group_norm_core.wgsl): the includer binds B0, B1,
// B2 and C0, C1, C2.

override WG: u32 = 64u;
override R: u32 = 1u;

// Part g is the same for the whole workgroup, so these branches never diverge.
fn loadB(g: u32, i: u32) -> vec4<f32> {
  if (g == 0u) { return B0[i]; }
  if (g == 1u) { return B1[i]; }
  return B2[i];
}

fn storeC(g: u32, i: u32, v: f32) {
  if (g == 0u) { C0[i] = v; } else if (g == 1u) { C1[i] = v; } else { C2[i] = v; }
}
