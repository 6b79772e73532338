// The fused decode forward (decode_forward_core.wgsl) with the projection weights read from W,
// the parameters' storage binding.

// decode_sample only (a generation step): each row's sampling parameters (sampling.ts; its step
// counter advances) and the output [steps, N] ids then [steps, N] log-prob bits (generate.ts).
// The plain forward binds 10 storage buffers, SwiftShader's limit in Chromium; these make 12.
@group(0) @binding(11) var<storage, read_write> params: array<RowParams>;
@group(0) @binding(12) var<storage, read_write> Out: array<u32>;

// The vec4 at vec4 offset i of the parameters.
fn weightVec4(i: u32) -> vec4<f32> {
  return W[i];
}

//! include decode_forward_core
