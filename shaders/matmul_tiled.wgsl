// Shape-agnostic matmuls on plain f32 arrays: any M, N, K, any batch strides, all three forms.
//   tiled:   workgroup-memory tiles (TILE_M × TILE_N per workgroup, TILE_K deep, RM × RN per
//            invocation): the classic GPU kernel.
//   generic: one output per invocation, no workgroup memory: the always-correct fallback.
// C[b] = alpha · op(A[b]) · op(B[b]) + beta · C[b]; FORM 0 = nn (A[M,K]·B[K,N]),
// 1 = nt (A[M,K]·B[N,K]ᵀ), 2 = tn (A[K,M]ᵀ·B[K,N]).

//! include matmul_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

override FORM: u32 = 0u;
override WGX: u32 = 8u;
override WGY: u32 = 8u;

fn aAt(base: u32, m: u32, k: u32) -> f32 {
  if (m >= p.M || k >= p.K) { return 0.0; }
  if (FORM == 2u) { return A[base + k * p.M + m]; }
  return A[base + m * p.K + k];
}

fn bAt(base: u32, k: u32, n: u32) -> f32 {
  if (k >= p.K || n >= p.N) { return 0.0; }
  if (FORM == 1u) { return B[base + n * p.K + k]; }
  return B[base + k * p.N + n];
}

fn storeC(base: u32, m: u32, n: u32, v: f32) {
  if (m >= p.M || n >= p.N) { return; }
  let i = base + m * p.N + n;
  var r = p.alpha * v;
  if (p.beta != 0.0) { r += p.beta * C[i]; }
  C[i] = r;
}

@compute @workgroup_size(WGX, WGY, 1)
fn generic(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  let m = gid.y;
  if (m >= p.M || n >= p.N) { return; }
  let aBase = gid.z * p.strideA;
  let bBase = gid.z * p.strideB;
  var acc = 0.0;
  for (var k = 0u; k < p.K; k++) { acc = fma(aAt(aBase, m, k), bAt(bBase, k, n), acc); }
  storeC(gid.z * p.strideC, m, n, acc);
}

const TS: u32 = 64u;   // tile rows/cols per workgroup
const TK: u32 = 16u;   // tile depth
const R: u32 = 4u;     // rows and cols per invocation (16 × 16 invocations)

var<workgroup> tA: array<array<f32, TS>, TK>;
var<workgroup> tB: array<array<f32, TS>, TK>;

@compute @workgroup_size(16, 16, 1)
fn tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
         @builtin(local_invocation_index) li: u32) {
  let m0 = wid.y * TS;
  let n0 = wid.x * TS;
  let aBase = wid.z * p.strideA;
  let bBase = wid.z * p.strideB;
  var acc: array<array<f32, R>, R>;
  let kTiles = (p.K + TK - 1u) / TK;
  for (var t = 0u; t < kTiles; t++) {
    let k0 = t * TK;
    // 256 invocations load 64×16 values of each operand: 4 each.
    for (var l = 0u; l < 4u; l++) {
      let e = li + l * 256u;
      let kk = e / TS;
      let mm = e % TS;
      tA[kk][mm] = aAt(aBase, m0 + mm, k0 + kk);
      tB[kk][mm] = bAt(bBase, k0 + kk, n0 + mm);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      var a: array<f32, R>;
      var b: array<f32, R>;
      for (var i = 0u; i < R; i++) { a[i] = tA[kk][lid.y * R + i]; b[i] = tB[kk][lid.x * R + i]; }
      for (var i = 0u; i < R; i++) {
        for (var j = 0u; j < R; j++) { acc[i][j] = fma(a[i], b[j], acc[i][j]); }
      }
    }
    workgroupBarrier();
  }
  let cBase = wid.z * p.strideC;
  for (var i = 0u; i < R; i++) {
    for (var j = 0u; j < R; j++) { storeC(cBase, m0 + lid.y * R + i, n0 + lid.x * R + j, acc[i][j]); }
  }
}
