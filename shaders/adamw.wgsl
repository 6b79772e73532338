// AdamW over flat fp32 buffers (llm.c style: params, grads and both moments share one layout, so
// the optimizer is one loop), with global grad-norm clipping that never leaves the GPU.
//   sumsq_partial: Partials[base + w] = Σ g² over workgroup w's 4096 floats of one range
//   norm_finalize: Stats = [‖g‖·scale, clip coefficient, scale·clip, finite, Σg²] from all partials
//   adamw_step:    p, m, v updated with g·Stats[2] (read from the buffer: no CPU round trip)
//   zero_grads:    g = 0 (after a step, before the next accumulation of micro-batches)
// Every invocation owns one 64-float block (16 vec4s): the weight-decay mask is one f32 per block
// (tensors start on 64-float boundaries), so a mask costs one load per 64 floats. On CPU adapters
// (LANE_CONTIG) a lane walks its own block, on GPUs lanes interleave so loads coalesce; either way
// a workgroup covers the same 4096 floats, and vec4 loads cut llvmpipe's per-lane load loops by 4.
// Each entry point declares only the bindings it uses (WGSL checks binding clashes per entry).

override WG: u32 = 64u;
override LANE_CONTIG: bool = true;

const VEC_PER_LANE: u32 = 16u;

// ---- shared helpers -------------------------------------------------------------------------

/** Index of the vec4 that lane `lid` of workgroup `w` handles in its j-th iteration. */
fn vecIndex(w: u32, lid: u32, j: u32) -> u32 {
  if (LANE_CONTIG) { return (w * WG + lid) * VEC_PER_LANE + j; }
  return w * WG * VEC_PER_LANE + j * WG + lid;
}

/** The components of vec4 `q` that lie below n (a range may end mid-vec4). */
fn inRange(q: u32, n: u32) -> vec4<bool> {
  let idx = vec4<u32>(4u * q) + vec4<u32>(0u, 1u, 2u, 3u);
  return idx < vec4<u32>(n);
}

fn isFinite(x: f32) -> bool {
  // WGSL has no isnan/isinf and may fold x != x away; test the exponent bits instead.
  return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn workgroupIndex(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return wid.x + wid.y * nwg.x;
}

var<workgroup> red: array<f32, WG>;

fn treeSum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] = red[lid] + red[lid + s]; }
    workgroupBarrier();
  }
  return red[0];
}

// ---- sumsq_partial: [uniform, G (read), Partials (rw)] ---------------------------------------

//! include adamw_partial_params

@group(0) @binding(0) var<uniform> pp: PartialParams;
@group(0) @binding(1) var<storage, read> Gsq: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> PartialsOut: array<f32>;

@compute @workgroup_size(WG)
fn sumsq_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  let w = workgroupIndex(wid, nwg);
  let n4 = (pp.n + 3u) / 4u;
  var acc = vec4<f32>(0.0);
  for (var j = 0u; j < VEC_PER_LANE; j++) {
    let q = vecIndex(w, lid, j);
    if (q < n4) {
      let g = select(vec4<f32>(0.0), Gsq[q], inRange(q, pp.n));
      acc += g * g;
    }
  }
  let total = treeSum(acc.x + acc.y + acc.z + acc.w, lid);
  if (lid == 0u && w * WG * VEC_PER_LANE * 4u < pp.n) { PartialsOut[pp.base + w] = total; }
}

// ---- norm_finalize: [uniform, Partials (read), Stats (rw)] -----------------------------------

//! include adamw_finalize_params

@group(0) @binding(0) var<uniform> fp: FinalizeParams;
@group(0) @binding(1) var<storage, read> PartialsIn: array<f32>;
@group(0) @binding(2) var<storage, read_write> StatsOut: array<f32>;

@compute @workgroup_size(WG)
fn norm_finalize(@builtin(local_invocation_index) lid: u32) {
  var acc = 0.0;
  for (var i = lid; i < fp.count; i += WG) { acc += PartialsIn[i]; }
  let sumsq = treeSum(acc, lid);
  if (lid != 0u) { return; }
  // The norm of the gradient the optimizer will use: accumulated grads times 1/accum.
  let norm = sqrt(sumsq) * fp.grad_scale;
  var clip = 1.0;
  // torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied only when < 1.
  if (fp.max_norm > 0.0) { clip = min(1.0, fp.max_norm / (norm + 1e-6)); }
  StatsOut[0] = norm;
  StatsOut[1] = clip;
  StatsOut[2] = fp.grad_scale * clip;
  StatsOut[3] = select(0.0, 1.0, isFinite(norm));
  StatsOut[4] = sumsq;
}

// ---- adamw_step: [uniform, P, G, M, V, Mask, Stats] ------------------------------------------

//! include adamw_step_params

@group(0) @binding(0) var<uniform> sp: StepParams;
@group(0) @binding(1) var<storage, read_write> P: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> G: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> M: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> V: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> Mask: array<f32>;
@group(0) @binding(6) var<storage, read> Stats: array<f32>;

@compute @workgroup_size(WG)
fn adamw_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  // A non-finite norm means some gradient is NaN/Inf: skip the update rather than poison p, m, v
  // (the caller sees Stats[3] = 0 and decides whether to stop).
  if (Stats[3] == 0.0) { return; }
  let coef = Stats[2];
  let w = workgroupIndex(wid, nwg);
  let n4 = (sp.n + 3u) / 4u;
  let first = vecIndex(w, lid, 0u);
  var decay = 1.0 - sp.lr_wd;
  if (LANE_CONTIG && sp.use_mask != 0u && first < n4) {
    decay = 1.0 - sp.lr_wd * Mask[sp.mask_base + first / VEC_PER_LANE];
  }
  for (var j = 0u; j < VEC_PER_LANE; j++) {
    let q = vecIndex(w, lid, j);
    if (q >= n4) { continue; }
    if (!LANE_CONTIG && sp.use_mask != 0u) {
      decay = 1.0 - sp.lr_wd * Mask[sp.mask_base + q / VEC_PER_LANE];
    }
    let keep = inRange(q, sp.n);
    let g = G[q] * coef;
    let m = sp.beta1 * M[q] + (1.0 - sp.beta1) * g;
    let v = sp.beta2 * V[q] + (1.0 - sp.beta2) * g * g;
    let p0 = P[q];
    // torch.optim.AdamW order: decay first, then p -= lr/bc1 · m / (sqrt(v)/sqrt(bc2) + eps).
    let p = p0 * decay - sp.step_size * m / (sqrt(v) / sp.bc2_sqrt + sp.eps);
    // Components past the range end belong to a neighbour (or padding): leave them untouched
    // (select, not a multiply: garbage there may be NaN).
    P[q] = select(p0, p, keep);
    M[q] = select(M[q], m, keep);
    V[q] = select(V[q], v, keep);
  }
}

// ---- zero_grads: [uniform, G (rw)] -----------------------------------------------------------

//! include adamw_zero_params

@group(0) @binding(0) var<uniform> zp: ZeroParams;
@group(0) @binding(1) var<storage, read_write> Gz: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn zero_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let w = workgroupIndex(wid, nwg);
  let n4 = (zp.n + 3u) / 4u;
  for (var j = 0u; j < VEC_PER_LANE; j++) {
    let q = vecIndex(w, lid, j);
    if (q >= n4) { continue; }
    if (4u * q + 3u < zp.n) {
      Gz[q] = vec4<f32>(0.0);
    } else {
      // The last vec4 may be shared with a neighbour's data: clear only our components.
      Gz[q] = select(Gz[q], vec4<f32>(0.0), inRange(q, zp.n));
    }
  }
}
