// matmul_splitk_group_norm.wgsl with its workgroup sums through subgroup operations
// (matmul_splitk_sum_sg): for adapters with "subgroups" and WGSL's subgroup_id (Gpu.subgroups).
enable subgroups;

//! include matmul_splitk_sum_sg
//! include matmul_splitk_group_norm_core
