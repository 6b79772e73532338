// Binary elementwise ops with broadcasting; see elementwise.wgsl for the index scheme.
//   binary:         out[i] = g(a·x[i], b·y[j])      OP: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min
//   binary_inplace: x[i]   = g(a·x[i], b·y[j])

//! include elementwise_params

override OP: u32 = 0u;
override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;

fn binaryOp(x: f32, y: f32) -> f32 {
  switch OP {
    case 1u: { return x - y; }
    case 2u: { return x * y; }
    case 3u: { return x / y; }
    case 4u: { return max(x, y); }
    case 5u: { return min(x, y); }
    default: { return x + y; }
  }
}

fn yIndex(i: u32) -> u32 {
  return (i / p.cols) * p.yRowStride + (i % p.cols) * p.yColStride;
}

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Y: array<f32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(WG)
fn binary(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  Out[i] = binaryOp(p.a * X[i], p.b * Y[yIndex(i)]);
}
