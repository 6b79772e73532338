// Grouped A·Bᵀ with K split across a workgroup's lanes: up to three products sharing A [M, K]
// (q/k/v, or gate/up, of one layer at decode rows on a GPU) in one dispatch, Cg [M, Ng] = A · Bgᵀ
// for Bg [Ng, K]. The arithmetic of matmul_splitk.wgsl's nt_splitk (alpha 1, beta 0), so the same
// values; workgroups along x are split into t0 column quads of C0, then t1 of C1, then C2's
// (matmul_group's layout). K % 4 == 0. A part with Ng = 0 has no quads; its bindings must still
// be distinct buffers. Overrides as nt_splitk's: WG lanes (a power of 2 ≤ 64), R rows (≤ 8).

//! include matmul_splitk_sum
//! include matmul_splitk_group_core
