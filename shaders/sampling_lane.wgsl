// Token sampling for CPU adapters: one invocation per row, no workgroup memory, no barriers.
// Same semantics, bindings and outputs as shaders/sampling.wgsl (read it for the rules):
//   repetition penalty (HF, via the `seen` bitmap) → temperature → top-k → top-p → one Philox
//   draw keyed by (seed, sequence, step) → ids[row], log-probs (full, optionally truncated),
//   optional history append.
// On llvmpipe a workgroup barrier is a coroutine switch through every lane and the workgroup
// kernel pays dozens of them per row; here each lane walks its own row serially with vec4
// loads, and a workgroup of WG lanes is WG rows:
//   stats    online max / Σexp / argmax / key range (greedy and plain temperature stop here).
//   search   top-k and top-p thresholds: each pass splits the candidate key interval [lo, hi]
//            4 ways (value-space splits, key-space ones when those stall) and counts, weighs
//            and bounds each side; the interval snaps to real keys and ends when lo = hi.
//   draw     one walk in token order over the kept tokens {key ≥ τ} until the cumulative mass
//            exceeds u · Σ kept (plus one mass pass for a top-k-only cut).
// Thresholds, tie rules and the draw are those of sampling.wgsl, so ids agree with it except
// where float32 rounding of a sum decides (a draw or a top-p cut within ~1e-6 of a boundary).
//
// llvmpipe (Mesa's gallivm) silently ends every loop of an invocation once their iterations
// together reach 65535 (LP_MAX_TGSI_LOOP_ITERATIONS: one counter shared by all loops of the
// shader, counted per SIMD group of 8 lanes). So passes visit 4 units (16 logits) per
// iteration, nothing else loops per logit, and the host (laneLoopBound in src/model/sampling.ts)
// only picks this kernel where its worst case fits, about V ≤ 10k.

override WG: u32 = 8u;          // rows per workgroup

@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> X4: array<vec4<f32>>;          // logits
@group(0) @binding(2) var<storage, read> params: array<RowParams>;
@group(0) @binding(3) var<storage, read_write> hist_ids: array<u32>;     // [rows, hist_cap]
@group(0) @binding(4) var<storage, read_write> hist_counts: array<u32>;  // [rows]
@group(0) @binding(5) var<storage, read_write> seen: array<atomic<u32>>; // 1 bit per logit
@group(0) @binding(6) var<storage, read_write> out_ids: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_logp: array<f32>;     // [rows] or [2, rows]

// Everything per row (the Philox draw, the passes, sampleRow) is shared with the fused decode step:
//! include sampling_lane_core

fn finish(row: u32, id: u32, z: f32, m: f32, log_z: f32, log_zt: f32) {
  out_ids[row] = id;
  out_logp[row] = z - m - log_z;
  if ((shape.flags & FLAG_TRUNCATED) != 0u) { out_logp[shape.rows + row] = z - m - log_zt; }
  if ((shape.flags & FLAG_APPEND) != 0u) {
    let c = hist_counts[row];
    if (c < shape.hist_cap) { hist_ids[row * shape.hist_cap + c] = id; }
    hist_counts[row] = c + 1u;
  }
}

// ---------------------------------------------------------------------------------------------
// Entry point: invocation i is row i; x-major groups (grid1d), y continues past the x limit.

@compute @workgroup_size(WG)
fn sample_lane(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let row = (wid.x + wid.y * nwg.x) * WG + lid;
  if (row >= shape.rows) { return; }
  sampleRow(row, params[row]);
}
