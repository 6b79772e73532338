// The store every plain matmul kernel ends with: C[base + row·N + col] = alpha·v, plus beta·C
// when beta ≠ 0 (C is not read otherwise), nothing outside M × N. Needs matmul_params' Params as
// `p` and C bound as array<f32>.
fn put(base: u32, row: u32, col: u32, v: f32) {
  if (row >= p.M || col >= p.N) { return; }
  let i = base + row * p.N + col;
  var r = p.alpha * v;
  if (p.beta != 0.0) { r += p.beta * C[i]; }
  C[i] = r;
}
