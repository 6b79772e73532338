// matmul_splitk.wgsl with its workgroup sum through subgroup operations (matmul_splitk_sum_sg):
// for adapters with the "subgroups" feature and WGSL's subgroup_id (Gpu.subgroups).
enable subgroups;

//! include matmul_splitk_sum_sg
//! include matmul_splitk_core
