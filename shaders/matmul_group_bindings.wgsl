// The bindings of the grouped A·Bᵀ kernels (matmul_gen.ts's matmul_group, matmul_splitk_group):
// up to three products Cg [M, Ng] = A · Bgᵀ sharing A, in matmul_group_params' layout.

//! include matmul_group_params

@group(0) @binding(0) var<uniform> gp: GroupParams;
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B0: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> B1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> B2: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> C0: array<f32>;
@group(0) @binding(6) var<storage, read_write> C1: array<f32>;
@group(0) @binding(7) var<storage, read_write> C2: array<f32>;
