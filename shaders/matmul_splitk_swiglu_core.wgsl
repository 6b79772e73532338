// The kernel of matmul_splitk_swiglu.wgsl and its subgroup twin (the includer first includes the
// workgroup sum that defines Lane and sumPartials). See matmul_splitk_swiglu.wgsl.

//! include matmul_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> GATE: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> UP: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;
@group(0) @binding(5) var<storage, read_write> H: array<vec4<f32>>;

override WG: u32 = 64u;
override R: u32 = 1u;

//! include matmul_put
//! include matmul_splitk_quad

// swiglu.wgsl's value, four at a time: silu(gate) · up.
fn swiglu4(i: u32) -> vec4<f32> {
  let g = GATE[i];
  return g / (vec4<f32>(1.0) + exp(-g)) * UP[i];
}

@compute @workgroup_size(WG, 1, 1)
fn nt_splitk_swiglu(@builtin(workgroup_id) wid: vec3<u32>, lane: Lane) {
  let li = lane.index;
  let K4 = p.K / 4u;
  let n0 = wid.x * 4u;
  let m0 = wid.y * R;
  let b = quadRows(0u, n0, p.N, K4);
  var acc: array<vec4<f32>, MAXR>;
  for (var k = li; k < K4; k += WG) {
    let w0 = B[b.x + k];
    let w1 = B[b.y + k];
    let w2 = B[b.z + k];
    let w3 = B[b.w + k];
    for (var r = 0u; r < R; r++) {
      let i = min(m0 + r, p.M - 1u) * K4 + k;
      let a = swiglu4(i);
      // The activation itself, for what reads it next (LoRA): the first column block writes it.
      if (wid.x == 0u && m0 + r < p.M) { H[i] = a; }
      acc[r] += vec4<f32>(dot(a, w0), dot(a, w1), dot(a, w2), dot(a, w3));
    }
  }
  let v = sumPartials(acc, lane);
  if (li < R) {
    put(0u, m0 + li, n0, v.x);
    put(0u, m0 + li, n0 + 1u, v.y);
    put(0u, m0 + li, n0 + 2u, v.z);
    put(0u, m0 + li, n0 + 3u, v.w);
  }
}
