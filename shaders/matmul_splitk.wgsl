// A·Bᵀ for few rows, K split across a workgroup's lanes: the decode matvec shape on a GPU.
// C[b] = alpha · A[b] · B[b]ᵀ + beta · C[b]; A [M, K], B [N, K], K % 4 == 0 (vec4 loads).
//
// Why: with M ≤ 32 rows the register tiles give one lane 1–8 rows × 4 columns and loop over all
// of K, so a 1×1024×1024 product runs on 256 lanes and leaves most of a discrete GPU idle (the
// lab measured 30 GFLOPS on an H100). Here a workgroup of WG lanes computes R rows × 4 columns:
// lane l reads the vec4s k = l, l + WG, l + 2·WG, ... of its 4 weight rows (adjacent lanes read
// adjacent vec4s, so the loads coalesce), then the workgroup sums the WG partial results in
// workgroup memory. N/4 × ⌈M/R⌉ workgroups of WG lanes each.
//
// Overrides: WG lanes per workgroup (a power of 2, ≤ MAXWG), R rows per workgroup (≤ MAXR).
// Rows ≥ M and columns ≥ N read clamped (in-bounds) addresses and are never written.

//! include matmul_splitk_sum
//! include matmul_splitk_core
