// An RMSNorm folded into the grouped split-K A·Bᵀ (matmul_splitk_group.wgsl): Cg = XN · Bgᵀ for
// XN = RMSNorm(A) with weight G (HF: A · 1/sqrt(mean(A²) + eps) · G per row), the q/k/v or
// gate/up products of a decode step without the norm's own dispatch. Each workgroup already reads
// its R rows of A whole, so it also sums their squares, takes G into A as it loads it, and scales
// its sums by each row's 1/rms: Cg = rstd · (A ∘ G) · Bgᵀ, the same product up to rounding. The
// first workgroup of each row block also writes XN (x · rstd · G, as rmsnorm.wgsl does), which
// LoRA reads; 1/rms is not kept (inference only: a training forward saves it for the backward).
// K % 4 == 0. Overrides as ntg_splitk's: WG lanes (a power of 2 ≤ 64), R rows (≤ 8).

//! include matmul_splitk_sum
//! include matmul_splitk_group_norm_core
