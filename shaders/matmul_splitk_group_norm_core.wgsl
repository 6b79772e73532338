// The kernel of matmul_splitk_group_norm.wgsl and its subgroup twin (the includer first includes
// the workgroup sum that defines Lane and sumPartials). See matmul_splitk_group_norm.wgsl.

//! include matmul_group_norm_params

@group(0) @binding(0) var<uniform> gp: GroupParams;
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B0: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> B1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> B2: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> C0: array<f32>;
@group(0) @binding(6) var<storage, read_write> C1: array<f32>;
@group(0) @binding(7) var<storage, read_write> C2: array<f32>;
@group(0) @binding(8) var<storage, read> G: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> XN: array<vec4<f32>>;

//! include matmul_splitk_group_io

var<workgroup> rowRstd: array<f32, MAXR>;

@compute @workgroup_size(WG, 1, 1)
fn ntg_splitk_norm(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
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
  var sq: array<vec4<f32>, MAXR>;
  for (var k = li; k < K4; k += WG) {
    let w0 = loadB(g, b0 + k);
    let w1 = loadB(g, b1 + k);
    let w2 = loadB(g, b2 + k);
    let w3 = loadB(g, b3 + k);
    let gk = G[k];
    for (var r = 0u; r < R; r++) {
      let a = A[min(m0 + r, gp.M - 1u) * K4 + k];
      sq[r] = fma(a, a, sq[r]);
      let ag = a * gk;
      acc[r] += vec4<f32>(dot(ag, w0), dot(ag, w1), dot(ag, w2), dot(ag, w3));
    }
  }
  let v = sumPartials(acc, lane);
  workgroupBarrier(); // the second sum reuses the first's workgroup memory
  let s = sumPartials(sq, lane);
  let rstd = inverseSqrt((s.x + s.y + s.z + s.w) / f32(gp.K) + gp.eps);
  let row = m0 + li;
  if (li < R && row < gp.M) {
    let o = v * rstd;
    if (n0 < N) { storeC(g, row * N + n0, o.x); }
    if (n0 + 1u < N) { storeC(g, row * N + n0 + 1u, o.y); }
    if (n0 + 2u < N) { storeC(g, row * N + n0 + 2u, o.z); }
    if (n0 + 3u < N) { storeC(g, row * N + n0 + 3u, o.w); }
    rowRstd[li] = rstd;
  }
  workgroupBarrier();
  // The normalized rows, for what reads them next (LoRA): the first workgroup of each row block.
  if (wid.x == 0u) {
    for (var k = li; k < K4; k += WG) {
      let gk = G[k];
      for (var r = 0u; r < R; r++) {
        let i = m0 + r;
        if (i < gp.M) { XN[i * K4 + k] = A[i * K4 + k] * rowRstd[r] * gk; }
      }
    }
  }
}
