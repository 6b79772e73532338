// A·Bᵀ for few rows, K split across a workgroup's lanes: the decode matvec shape on a GPU.
// C[b] = alpha · A[b] · B[b]ᵀ + beta · C[b]; A [M, K], B [N, K], K % 4 == 0 (vec4 loads).
//
// Why: with M ≤ 32 rows the register tiles give one lane 1–8 rows × 4 columns and loop over all
// of K, so a 1×1024×1024 product runs on 256 lanes and leaves most of a discrete GPU idle (the
// lab measured 30 GFLOPS on an H100). Here a workgroup of WG lanes computes R rows × 4 columns:
// lane l reads the vec4s k = l, l + WG, l + 2·WG, ... of its 4 weight rows (adjacent lanes read
// adjacent vec4s, so the loads coalesce), then the workgroup sums the WG partial results in
// workgroup memory. N/4 × ⌈M/R⌉ workgroups of WG lanes each.
//
// Overrides: WG lanes per workgroup (a power of 2, ≤ MAXWG), R rows per workgroup (≤ MAXR).
// Rows ≥ M and columns ≥ N read clamped (in-bounds) addresses and are never written.

//! include matmul_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

override WG: u32 = 64u;
override R: u32 = 1u;

//! include matmul_splitk_sum

//! include matmul_put

@compute @workgroup_size(WG, 1, 1)
fn nt_splitk(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let K4 = p.K / 4u;
  let n0 = wid.x * 4u;
  let m0 = wid.y * R;
  let aBase = wid.z * (p.strideA / 4u);
  let bBase = wid.z * (p.strideB / 4u);
  let last = p.N - 1u;
  let b0 = bBase + min(n0, last) * K4;
  let b1 = bBase + min(n0 + 1u, last) * K4;
  let b2 = bBase + min(n0 + 2u, last) * K4;
  let b3 = bBase + min(n0 + 3u, last) * K4;
  var acc: array<vec4<f32>, MAXR>;
  for (var k = li; k < K4; k += WG) {
    let w0 = B[b0 + k];
    let w1 = B[b1 + k];
    let w2 = B[b2 + k];
    let w3 = B[b3 + k];
    for (var r = 0u; r < R; r++) {
      let a = A[aBase + min(m0 + r, p.M - 1u) * K4 + k];
      acc[r] += vec4<f32>(dot(a, w0), dot(a, w1), dot(a, w2), dot(a, w3));
    }
  }
  sumPartials(acc, li);
  if (li < R) {
    let v = partial[li * MAXWG];
    let cBase = wid.z * p.strideC;
    put(cBase, m0 + li, n0, v.x);
    put(cBase, m0 + li, n0 + 1u, v.y);
    put(cBase, m0 + li, n0 + 2u, v.z);
    put(cBase, m0 + li, n0 + 3u, v.w);
  }
}
