// The kernel of matmul_splitk.wgsl and its subgroup twin matmul_splitk_sg.wgsl (the includer
// first includes the workgroup sum that defines Lane and sumPartials). See matmul_splitk.wgsl.

//! include matmul_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

override WG: u32 = 64u;
override R: u32 = 1u;

//! include matmul_put
//! include matmul_splitk_quad

@compute @workgroup_size(WG, 1, 1)
fn nt_splitk(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let li = lane.index;
  let K4 = p.K / 4u;
  let n0 = wid.x * 4u;
  let m0 = wid.y * R;
  let aBase = wid.z * (p.strideA / 4u);
  let bBase = wid.z * (p.strideB / 4u);
  let b = quadRows(bBase, n0, p.N, K4);
  var acc: array<vec4<f32>, MAXR>;
  for (var k = li; k < K4; k += WG) {
    let w0 = B[b.x + k];
    let w1 = B[b.y + k];
    let w2 = B[b.z + k];
    let w3 = B[b.w + k];
    for (var r = 0u; r < R; r++) {
      let a = A[aBase + min(m0 + r, p.M - 1u) * K4 + k];
      acc[r] += vec4<f32>(dot(a, w0), dot(a, w1), dot(a, w2), dot(a, w3));
    }
  }
  let v = sumPartials(acc, lane);
  if (li < R) {
    let cBase = wid.z * p.strideC;
    put(cBase, m0 + li, n0, v.x);
    put(cBase, m0 + li, n0 + 1u, v.y);
    put(cBase, m0 + li, n0 + 2u, v.z);
    put(cBase, m0 + li, n0 + 3u, v.w);
  }
}
