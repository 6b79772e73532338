// matmul_splitk_swiglu.wgsl with its workgroup sum through subgroup operations
// (matmul_splitk_sum_sg): for adapters with "subgroups" and WGSL's subgroup_id (Gpu.subgroups).
enable subgroups;

//! include matmul_splitk_sum_sg
//! include matmul_splitk_swiglu_core
