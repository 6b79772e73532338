// Unary elementwise ops: out[i] = f(a·x[i] + b) over n elements.
//   OP: 0 affine, 1 exp, 2 log, 3 silu, 4 square, 5 sqrt, 6 tanh, 7 relu
// Binary ops with broadcasting live in binary.wgsl and binary_inplace.wgsl: they index the
// second operand as j = (i / cols)·yRowStride + (i % cols)·yColStride, so strides (cols, 1)
// mean same shape, (0, 1) a broadcast row vector, (1, 0) a column vector, (0, 0) a scalar.
// Large n is covered with a 2-D grid: i = gid.x + gid.y · (num_workgroups.x · WG).

//! include elementwise_params

override OP: u32 = 0u;
override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;

fn flatIndex(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * WG;
}

fn unaryOp(v: f32) -> f32 {
  switch OP {
    case 1u: { return exp(v); }
    case 2u: { return log(v); }
    case 3u: { return v / (1.0 + exp(-v)); }
    case 4u: { return v * v; }
    case 5u: { return sqrt(v); }
    case 6u: { return tanh(v); }
    case 7u: { return max(v, 0.0); }
    default: { return v; }
  }
}

@compute @workgroup_size(WG)
fn unary(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flatIndex(gid, nwg);
  if (i >= p.n) { return; }
  Out[i] = unaryOp(fma(p.a, X[i], p.b));
}
