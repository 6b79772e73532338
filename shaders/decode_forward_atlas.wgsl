// The fused decode forward (decode_forward_core.wgsl) with the projection weights read from WA,
// the parameter atlas (src/model/cpu_adapter/param_atlas.ts): the parameters' vec4s as the texels of an
// rgba32float texture 2^ATLAS_SHIFT texels wide, vec4 i at texel (i mod width, i / width).
// Why: on llvmpipe a storage-buffer load runs a loop over the lanes with a bounds-check branch
// per component, a storage-texture load is a few vector instructions (pipelines.ts).

@group(0) @binding(11) var WA: texture_storage_2d<rgba32float, read>;
// decode_sample only: as in decode_forward.wgsl, one binding later.
@group(0) @binding(12) var<storage, read_write> params: array<RowParams>;
@group(0) @binding(13) var<storage, read_write> Out: array<u32>;

override ATLAS_SHIFT: u32 = 12u;

// The vec4 at vec4 offset i of the parameters.
fn weightVec4(i: u32) -> vec4<f32> {
  return textureLoad(WA, vec2<i32>(i32(i & ((1u << ATLAS_SHIFT) - 1u)), i32(i >> ATLAS_SHIFT)));
}

//! include decode_forward_core
