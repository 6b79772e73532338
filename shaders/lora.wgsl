// LoRA with several adapters over one frozen base, chosen per row (per sequence), so agents
// with different adapters share one forward. For a Linear y = x·Wᵀ with W [out, in], adapter a
// adds scale · (x·A_aᵀ)·B_aᵀ with A_a [r, in], B_a [out, r], scale = alpha / r.
// Adapters of one (layer, module) are stacked: A at a·strideA, B at a·strideB. AdapterOf[row]
// ≥ count means "base only" (e.g. the reference policy).
//   lora_down: U[row, j]   = Σ_k X[row, k] · A[a, j, k]                     (row, j)
//   lora_up:   Y[row, o]  += scale · Σ_j U[row, j] · B[a, o, j]             (row, o)
//   lora_dU:   dU[row, j]  = scale · Σ_o dY[row, o] · B[a, o, j]            (row, j)
//   lora_dX:   dX[row, k] += Σ_j dU[row, j] · A[a, j, k]                     (row, k)
//   lora_dB:   dB[a, o, j] += scale · Σ_{rows of a} dY[row, o] · U[row, j]   (a, o, j)
//   lora_dA:   dA[a, j, k] += Σ_{rows of a} dU[row, j] · X[row, k]           (a, j, k)
// The weight gradients need each adapter's rows contiguous: Ranges[a] = (first, end).

//! include lora_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> AdapterOf: array<u32>;   // [N]
@group(0) @binding(2) var<storage, read> In0: array<f32>;
@group(0) @binding(3) var<storage, read> In1: array<f32>;
@group(0) @binding(4) var<storage, read_write> Out: array<f32>;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 { return gid.x + gid.y * nwg.x * WG; }

// In0 = X [N, in], In1 = A stack; Out = U [N, r]
@compute @workgroup_size(WG)
fn lora_down(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.N * p.r) { return; }
  let row = i / p.r;
  let j = i % p.r;
  let a = AdapterOf[row];
  if (a >= p.count) { Out[i] = 0.0; return; }
  let aB = a * p.strideA + j * p.inDim;
  var s = 0.0;
  for (var k = 0u; k < p.inDim; k++) { s = fma(In0[row * p.inDim + k], In1[aB + k], s); }
  Out[i] = s;
}

// In0 = U [N, r], In1 = B stack; Out = Y [N, out] (accumulated)
@compute @workgroup_size(WG)
fn lora_up(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.N * p.outDim) { return; }
  let row = i / p.outDim;
  let o = i % p.outDim;
  let a = AdapterOf[row];
  if (a >= p.count) { return; }
  let bB = a * p.strideB + o * p.r;
  var s = 0.0;
  for (var j = 0u; j < p.r; j++) { s = fma(In0[row * p.r + j], In1[bB + j], s); }
  Out[i] += p.scale * s;
}

// In0 = dY [N, out], In1 = B stack; Out = dU [N, r]
@compute @workgroup_size(WG)
fn lora_du(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.N * p.r) { return; }
  let row = i / p.r;
  let j = i % p.r;
  let a = AdapterOf[row];
  if (a >= p.count) { Out[i] = 0.0; return; }
  var s = 0.0;
  for (var o = 0u; o < p.outDim; o++) { s = fma(In0[row * p.outDim + o], In1[a * p.strideB + o * p.r + j], s); }
  Out[i] = p.scale * s;
}

// In0 = dU [N, r], In1 = A stack; Out = dX [N, in] (accumulated)
@compute @workgroup_size(WG)
fn lora_dx(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.N * p.inDim) { return; }
  let row = i / p.inDim;
  let k = i % p.inDim;
  let a = AdapterOf[row];
  if (a >= p.count) { return; }
  var s = 0.0;
  for (var j = 0u; j < p.r; j++) { s = fma(In0[row * p.r + j], In1[a * p.strideA + j * p.inDim + k], s); }
  Out[i] += s;
}
