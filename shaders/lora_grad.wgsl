// Weight gradients of LoRA (see lora.wgsl): per adapter a, over its contiguous rows
// Ranges[a] = (first, end):
//   lora_db: dB[a, o, j] += scale · Σ_rows dY[row, o] · U[row, j]     (In0 = dY, In1 = U)
//   lora_da: dA[a, j, k] += Σ_rows dU[row, j] · X[row, k]             (In0 = dU, In1 = X)

//! include lora_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Ranges: array<vec2<u32>>;  // [count]
@group(0) @binding(2) var<storage, read> In0: array<f32>;
@group(0) @binding(3) var<storage, read> In1: array<f32>;
@group(0) @binding(4) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(WG)
fn lora_db(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let per = p.outDim * p.r;
  if (i >= p.count * per) { return; }
  let a = i / per;
  let o = (i % per) / p.r;
  let j = i % p.r;
  let rg = Ranges[a];
  var s = 0.0;
  for (var row = rg.x; row < rg.y; row++) { s = fma(In0[row * p.outDim + o], In1[row * p.r + j], s); }
  Out[a * p.strideB + o * p.r + j] += p.scale * s;
}

@compute @workgroup_size(WG)
fn lora_da(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let per = p.r * p.inDim;
  if (i >= p.count * per) { return; }
  let a = i / per;
  let j = (i % per) / p.inDim;
  let k = i % p.inDim;
  let rg = Ranges[a];
  var s = 0.0;
  for (var row = rg.x; row < rg.y; row++) { s = fma(In0[row * p.r + j], In1[row * p.inDim + k], s); }
  Out[a * p.strideA + j * p.inDim + k] += s;
}
