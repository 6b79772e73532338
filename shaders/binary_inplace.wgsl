// In-place binary op with broadcasting: x[i] = g(a·x[i], b·y[j]). See binary.wgsl.

//! include elementwise_params

override OP: u32 = 0u;
override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read> Y: array<f32>;

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

@compute @workgroup_size(WG)
fn binary_inplace(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let j = (i / p.cols) * p.yRowStride + (i % p.cols) * p.yColStride;
  X[i] = binaryOp(p.a * X[i], p.b * Y[j]);
}
