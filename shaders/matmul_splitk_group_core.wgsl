// The kernel of matmul_splitk_group.wgsl and its subgroup twin matmul_splitk_group_sg.wgsl (the
// includer first includes the workgroup sum that defines Lane and sumPartials).

//! include matmul_group_bindings
//! include matmul_splitk_group_io

@compute @workgroup_size(WG, 1, 1)
fn ntg_splitk(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let li = lane.index;
  var g = 2u;
  var quad = wid.x - gp.t0 - gp.t1;
  if (wid.x < gp.t0) { g = 0u; quad = wid.x; } else if (wid.x < gp.t0 + gp.t1) { g = 1u; quad = wid.x - gp.t0; }
  let N = select(select(gp.N2, gp.N1, g == 1u), gp.N0, g == 0u);
  let K4 = gp.K / 4u;
  let n0 = quad * 4u;
  let m0 = wid.y * R;
  let last = N - 1u;
  let b0 = min(n0, last) * K4;
  let b1 = min(n0 + 1u, last) * K4;
  let b2 = min(n0 + 2u, last) * K4;
  let b3 = min(n0 + 3u, last) * K4;
  var acc: array<vec4<f32>, MAXR>;
  for (var k = li; k < K4; k += WG) {
    let w0 = loadB(g, b0 + k);
    let w1 = loadB(g, b1 + k);
    let w2 = loadB(g, b2 + k);
    let w3 = loadB(g, b3 + k);
    for (var r = 0u; r < R; r++) {
      let a = A[min(m0 + r, gp.M - 1u) * K4 + k];
      acc[r] += vec4<f32>(dot(a, w0), dot(a, w1), dot(a, w2), dot(a, w3));
    }
  }
  let v = sumPartials(acc, lane);
  let row = m0 + li;
  if (li < R && row < gp.M) {
    if (n0 < N) { storeC(g, row * N + n0, v.x); }
    if (n0 + 1u < N) { storeC(g, row * N + n0 + 1u, v.y); }
    if (n0 + 2u < N) { storeC(g, row * N + n0 + 2u, v.z); }
    if (n0 + 3u < N) { storeC(g, row * N + n0 + 3u, v.w); }
  }
}
