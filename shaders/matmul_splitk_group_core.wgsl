// The kernel of matmul_splitk_group.wgsl and its subgroup twin matmul_splitk_group_sg.wgsl (the
// includer first includes the workgroup sum that defines Lane and sumPartials).

//! include matmul_splitk_group_io

@compute @workgroup_size(WG, 1, 1)
fn ntg_splitk(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let li = lane.index;
  let t = groupTile(wid);
  var acc: array<vec4<f32>, MAXR>;
  for (var k = li; k < t.K4; k += WG) {
    let w0 = loadB(t.g, t.b.x + k);
    let w1 = loadB(t.g, t.b.y + k);
    let w2 = loadB(t.g, t.b.z + k);
    let w3 = loadB(t.g, t.b.w + k);
    for (var r = 0u; r < R; r++) {
      let a = A[min(t.m0 + r, gp.M - 1u) * t.K4 + k];
      acc[r] += vec4<f32>(dot(a, w0), dot(a, w1), dot(a, w2), dot(a, w3));
    }
  }
  let v = sumPartials(acc, lane);
  let row = t.m0 + li;
  if (li < R && row < gp.M) { storeQuad(t, row, v); }
}
