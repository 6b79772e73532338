// SwiGLU folded into the split-K A·Bᵀ (matmul_splitk.wgsl) of the MLP's down projection:
// C = alpha · H · Bᵀ + beta · C for H = silu(GATE) · UP, computed as each lane loads its slice of
// A, the value swiglu.wgsl writes, so the product is the one the unfused pair computes. The
// first column block also writes H (LoRA's input). One batch; K % 4 == 0. Overrides as
// nt_splitk's: WG lanes (a power of 2 ≤ 64), R rows (≤ 8).

//! include matmul_splitk_sum
//! include matmul_splitk_swiglu_core
