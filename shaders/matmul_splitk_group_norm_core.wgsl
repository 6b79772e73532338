// The kernel of matmul_splitk_group_norm.wgsl and its subgroup twin (the includer first includes
// the workgroup sum that defines Lane and sumPartials). See matmul_splitk_group_norm.wgsl.

//! include matmul_splitk_group_io

@group(0) @binding(8) var<storage, read> G: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> XN: array<vec4<f32>>;

var<workgroup> rowRstd: array<f32, MAXR>;

@compute @workgroup_size(WG, 1, 1)
fn ntg_splitk_norm(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let li = lane.index;
  let t = groupTile(wid);
  var acc: array<vec4<f32>, MAXR>;
  var sq: array<vec4<f32>, MAXR>;
  for (var k = li; k < t.K4; k += WG) {
    let w0 = loadB(t.g, t.b.x + k);
    let w1 = loadB(t.g, t.b.y + k);
    let w2 = loadB(t.g, t.b.z + k);
    let w3 = loadB(t.g, t.b.w + k);
    let gk = G[k];
    for (var r = 0u; r < R; r++) {
      let a = A[min(t.m0 + r, gp.M - 1u) * t.K4 + k];
      sq[r] = fma(a, a, sq[r]);
      let ag = a * gk;
      acc[r] += vec4<f32>(dot(ag, w0), dot(ag, w1), dot(ag, w2), dot(ag, w3));
    }
  }
  let v = sumPartials(acc, lane);
  workgroupBarrier(); // the second sum reuses the first's workgroup memory
  let s = sumPartials(sq, lane);
  let rstd = inverseSqrt((s.x + s.y + s.z + s.w) / f32(gp.K) + gp.eps);
  let row = t.m0 + li;
  if (li < R && row < gp.M) {
    storeQuad(t, row, v * rstd);
    rowRstd[li] = rstd;
  }
  workgroupBarrier();
  // The normalized rows, for what reads them next (LoRA): the first workgroup of each row block.
  if (wid.x == 0u) {
    for (var k = li; k < t.K4; k += WG) {
      let gk = G[k];
      for (var r = 0u; r < R; r++) {
        let i = t.m0 + r;
        if (i < gp.M) { XN[i * t.K4 + k] = A[i * t.K4 + k] * rowRstd[r] * gk; }
      }
    }
  }
}
