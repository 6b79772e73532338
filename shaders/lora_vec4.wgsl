// The LoRA kernels of lora.wgsl and lora_grad.wgsl (same math, same bindings and Params) as
// register tiles of 4×4 outputs with vec4 loads, for in, out and r all multiples of 4. On CPU
// adapters every storage load is a per-lane scalar loop, so loads per FMA set the speed: the
// scalar kernels load 2 floats per FMA; these load 0.5. Per-row adapters: a 4-row tile whose
// rows share an adapter runs once; a tile straddling adapters (at most one per boundary) runs
// once per adapter present, each pass writing only its own rows. Adapter ≥ count = base only.
//   lora4_down: U[row, j]   = Σ_k X[row, k] · A[a, j, k]              tile (4 rows, 4 j)
//   lora4_up:   Y[row, o]  += scale · Σ_j U[row, j] · B[a, o, j]      tile (4 rows, 4 o)
//   lora4_du:   dU[row, j]  = scale · Σ_o dY[row, o] · B[a, o, j]     tile (4 rows, 4 j)
//   lora4_dx:   dX[row, k] += Σ_j dU[row, j] · A[a, j, k]             tile (4 rows, 4 k)
//   lora4_db:   dB[a, o, j] += scale · Σ_{rows of a} dY[row, o] · U[row, j]   tile (4 o, 4 j)
//   lora4_da:   dA[a, j, k] += Σ_{rows of a} dU[row, j] · X[row, k]           tile (4 j, 4 k)

//! include lora_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
// AdapterOf [N] (row kernels) or Ranges [count] as (first, end) pairs (weight-gradient kernels)
@group(0) @binding(1) var<storage, read> Aux: array<u32>;
@group(0) @binding(2) var<storage, read> In0: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> In1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> Out: array<vec4<f32>>;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 { return gid.x + gid.y * nwg.x * WG; }

// The tile's rows (clamped into range for loads), their adapters, and which are real rows.
struct RowTile { rows: vec4<u32>, ads: vec4<u32>, live: vec4<bool> }

fn rowTile(row0: u32) -> RowTile {
  var t: RowTile;
  let last = p.N - 1u;
  t.rows = vec4<u32>(min(row0, last), min(row0 + 1u, last), min(row0 + 2u, last), min(row0 + 3u, last));
  t.live = vec4<bool>(row0 < p.N, row0 + 1u < p.N, row0 + 2u < p.N, row0 + 3u < p.N);
  t.ads = vec4<u32>(Aux[t.rows.x], Aux[t.rows.y], Aux[t.rows.z], Aux[t.rows.w]);
  return t;
}

// Pass s of a tile runs adapter ads[s] unless an earlier row already ran it.
fn firstOf(t: RowTile, s: u32) -> bool {
  let a = t.ads[s];
  for (var q = 0u; q < s; q++) { if (t.ads[q] == a) { return false; } }
  return true;
}

// Σ over a contiguous reduction dim of length 4·len: acc[t][c] = Σ dot(L[t rows], R[c rows]).
fn dots(lBase: vec4<u32>, lStride: u32, rBase: u32, rStride: u32, len: u32) -> mat4x4<f32> {
  var acc = mat4x4<f32>();
  for (var q = 0u; q < len; q++) {
    let r0 = In1[rBase + q];
    let r1 = In1[rBase + rStride + q];
    let r2 = In1[rBase + 2u * rStride + q];
    let r3 = In1[rBase + 3u * rStride + q];
    // Unrolled by hand: a loop-indexed accumulator would live in memory on CPU adapters.
    let l0 = In0[lBase.x * lStride + q];
    let l1 = In0[lBase.y * lStride + q];
    let l2 = In0[lBase.z * lStride + q];
    let l3 = In0[lBase.w * lStride + q];
    acc[0] += vec4<f32>(dot(l0, r0), dot(l0, r1), dot(l0, r2), dot(l0, r3));
    acc[1] += vec4<f32>(dot(l1, r0), dot(l1, r1), dot(l1, r2), dot(l1, r3));
    acc[2] += vec4<f32>(dot(l2, r0), dot(l2, r1), dot(l2, r2), dot(l2, r3));
    acc[3] += vec4<f32>(dot(l3, r0), dot(l3, r1), dot(l3, r2), dot(l3, r3));
  }
  return acc;
}

// acc[t] (vec4 over the output's 4 columns) = Σ_q L[t, q] · R[q, cols]: L rows contiguous in q,
// R rows indexed by q with the 4 columns contiguous.
fn axpys(lBase: vec4<u32>, lStride: u32, rBase: u32, rStride: u32, len: u32) -> mat4x4<f32> {
  var acc = mat4x4<f32>();
  for (var q = 0u; q < len; q++) {
    let r0 = In1[rBase + (4u * q) * rStride];
    let r1 = In1[rBase + (4u * q + 1u) * rStride];
    let r2 = In1[rBase + (4u * q + 2u) * rStride];
    let r3 = In1[rBase + (4u * q + 3u) * rStride];
    let l0 = In0[lBase.x * lStride + q];
    let l1 = In0[lBase.y * lStride + q];
    let l2 = In0[lBase.z * lStride + q];
    let l3 = In0[lBase.w * lStride + q];
    acc[0] += l0.x * r0 + l0.y * r1 + l0.z * r2 + l0.w * r3;
    acc[1] += l1.x * r0 + l1.y * r1 + l1.z * r2 + l1.w * r3;
    acc[2] += l2.x * r0 + l2.y * r1 + l2.z * r2 + l2.w * r3;
    acc[3] += l3.x * r0 + l3.y * r1 + l3.z * r2 + l3.w * r3;
  }
  return acc;
}

// In0 = X [N, in], In1 = A stack; Out = U [N, r]
@compute @workgroup_size(WG)
fn lora4_down(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r4 = p.r / 4u;
  let i = flat(gid, nwg);
  if (i >= ((p.N + 3u) / 4u) * r4) { return; }
  let j4 = i % r4;
  let row0 = (i / r4) * 4u;
  let t = rowTile(row0);
  let in4 = p.inDim / 4u;
  for (var s = 0u; s < 4u; s++) {
    if (!t.live[s] || !firstOf(t, s)) { continue; }
    let a = t.ads[s];
    var acc = mat4x4<f32>();
    if (a < p.count) { acc = dots(t.rows, in4, (a * p.strideA + j4 * 4u * p.inDim) / 4u, in4, in4); }
    for (var q = 0u; q < 4u; q++) {
      if (t.live[q] && t.ads[q] == a) { Out[(row0 + q) * r4 + j4] = acc[q]; }
    }
  }
}

// In0 = U [N, r], In1 = B stack; Out = Y [N, out] (accumulated)
@compute @workgroup_size(WG)
fn lora4_up(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let o4n = p.outDim / 4u;
  let i = flat(gid, nwg);
  if (i >= ((p.N + 3u) / 4u) * o4n) { return; }
  let o4 = i % o4n;
  let row0 = (i / o4n) * 4u;
  let t = rowTile(row0);
  let r4 = p.r / 4u;
  for (var s = 0u; s < 4u; s++) {
    if (!t.live[s] || !firstOf(t, s)) { continue; }
    let a = t.ads[s];
    if (a >= p.count) { continue; }
    let acc = dots(t.rows, r4, (a * p.strideB + o4 * 4u * p.r) / 4u, r4, r4);
    for (var q = 0u; q < 4u; q++) {
      if (t.live[q] && t.ads[q] == a) {
        let at = (row0 + q) * o4n + o4;
        Out[at] = Out[at] + p.scale * acc[q];
      }
    }
  }
}

// In0 = dY [N, out], In1 = B stack; Out = dU [N, r]
@compute @workgroup_size(WG)
fn lora4_du(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r4 = p.r / 4u;
  let i = flat(gid, nwg);
  if (i >= ((p.N + 3u) / 4u) * r4) { return; }
  let j4 = i % r4;
  let row0 = (i / r4) * 4u;
  let t = rowTile(row0);
  let o4n = p.outDim / 4u;
  for (var s = 0u; s < 4u; s++) {
    if (!t.live[s] || !firstOf(t, s)) { continue; }
    let a = t.ads[s];
    var acc = mat4x4<f32>();
    if (a < p.count) { acc = axpys(t.rows, o4n, (a * p.strideB) / 4u + j4, r4, o4n); }
    for (var q = 0u; q < 4u; q++) {
      if (t.live[q] && t.ads[q] == a) { Out[(row0 + q) * r4 + j4] = p.scale * acc[q]; }
    }
  }
}

// In0 = dU [N, r], In1 = A stack; Out = dX [N, in] (accumulated)
@compute @workgroup_size(WG)
fn lora4_dx(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let in4 = p.inDim / 4u;
  let i = flat(gid, nwg);
  if (i >= ((p.N + 3u) / 4u) * in4) { return; }
  let k4 = i % in4;
  let row0 = (i / in4) * 4u;
  let t = rowTile(row0);
  let r4 = p.r / 4u;
  for (var s = 0u; s < 4u; s++) {
    if (!t.live[s] || !firstOf(t, s)) { continue; }
    let a = t.ads[s];
    if (a >= p.count) { continue; }
    let acc = axpys(t.rows, r4, (a * p.strideA) / 4u + k4, in4, r4);
    for (var q = 0u; q < 4u; q++) {
      if (t.live[q] && t.ads[q] == a) {
        let at = (row0 + q) * in4 + k4;
        Out[at] = Out[at] + acc[q];
      }
    }
  }
}

// Σ over rows [first, end): acc[t] (vec4 over 4 columns) += L[row, 4·lc + t] · R[row, 4·rc..].
fn outer(first: u32, end: u32, lStride: u32, lc: u32, rStride: u32, rc: u32) -> mat4x4<f32> {
  var acc = mat4x4<f32>();
  for (var row = first; row < end; row++) {
    let l = In0[row * lStride + lc];
    let r = In1[row * rStride + rc];
    acc[0] += l.x * r;
    acc[1] += l.y * r;
    acc[2] += l.z * r;
    acc[3] += l.w * r;
  }
  return acc;
}

// In0 = dY [N, out], In1 = U [N, r]; Out = dB stack (accumulated)
@compute @workgroup_size(WG)
fn lora4_db(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r4 = p.r / 4u;
  let o4n = p.outDim / 4u;
  let per = o4n * r4;
  let i = flat(gid, nwg);
  if (i >= p.count * per) { return; }
  let a = i / per;
  let o4 = (i % per) / r4;
  let j4 = i % r4;
  let acc = outer(Aux[2u * a], Aux[2u * a + 1u], o4n, o4, r4, j4);
  for (var q = 0u; q < 4u; q++) {
    let at = (a * p.strideB + (o4 * 4u + q) * p.r) / 4u + j4;
    Out[at] = Out[at] + p.scale * acc[q];
  }
}

// In0 = dU [N, r], In1 = X [N, in]; Out = dA stack (accumulated)
@compute @workgroup_size(WG)
fn lora4_da(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r4 = p.r / 4u;
  let in4 = p.inDim / 4u;
  let per = r4 * in4;
  let i = flat(gid, nwg);
  if (i >= p.count * per) { return; }
  let a = i / per;
  let j4 = (i % per) / in4;
  let k4 = i % in4;
  let acc = outer(Aux[2u * a], Aux[2u * a + 1u], r4, j4, in4, k4);
  for (var q = 0u; q < 4u; q++) {
    let at = (a * p.strideA + (j4 * 4u + q) * p.inDim) / 4u + k4;
    Out[at] = Out[at] + acc[q];
  }
}

// ---------------------------------------------------------------------------------------------
// The weight gradients for GPUs: one workgroup of WG (≤ 64) lanes per 4×4 tile, the lanes
// splitting the adapter's rows (lane l takes rows first + l, first + l + WG, ...), their partial
// tiles summed in workgroup memory. lora4_db / lora4_da give one invocation a tile and loop over
// every row: a 135M model's q projection at rank 16 is 576 invocations, a sliver of a GPU (on an
// H100 they took half of a LoRA train step's GPU time). CPU adapters keep those: a barrier there
// is a coroutine switch through every lane.
//   lora4_db_wg: same output as lora4_db; lora4_da_wg: as lora4_da.

var<workgroup> part: array<mat4x4<f32>, 64>;

fn outerSplit(first: u32, end: u32, lStride: u32, lc: u32, rStride: u32, rc: u32, lane: u32) -> mat4x4<f32> {
  var acc = mat4x4<f32>();
  for (var row = first + lane; row < end; row += WG) {
    let l = In0[row * lStride + lc];
    let r = In1[row * rStride + rc];
    acc[0] += l.x * r;
    acc[1] += l.y * r;
    acc[2] += l.z * r;
    acc[3] += l.w * r;
  }
  return acc;
}

// The workgroup's sum of acc, left in part[0].
fn sumTile(acc: mat4x4<f32>, lane: u32) {
  part[lane] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lane < s) { part[lane] = part[lane] + part[lane + s]; }
    workgroupBarrier();
  }
}

@compute @workgroup_size(WG)
fn lora4_db_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
  let r4 = p.r / 4u;
  let o4n = p.outDim / 4u;
  let per = o4n * r4;
  let i = wid.x + wid.y * nwg.x;
  if (i >= p.count * per) { return; }
  let a = i / per;
  let o4 = (i % per) / r4;
  let j4 = i % r4;
  sumTile(outerSplit(Aux[2u * a], Aux[2u * a + 1u], o4n, o4, r4, j4, lane), lane);
  if (lane < 4u) {
    let at = (a * p.strideB + (o4 * 4u + lane) * p.r) / 4u + j4;
    Out[at] = Out[at] + p.scale * part[0][lane];
  }
}

@compute @workgroup_size(WG)
fn lora4_da_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
  let r4 = p.r / 4u;
  let in4 = p.inDim / 4u;
  let per = r4 * in4;
  let i = wid.x + wid.y * nwg.x;
  if (i >= p.count * per) { return; }
  let a = i / per;
  let j4 = (i % per) / in4;
  let k4 = i % in4;
  sumTile(outerSplit(Aux[2u * a], Aux[2u * a + 1u], r4, j4, in4, k4, lane), lane);
  if (lane < 4u) {
    let at = (a * p.strideA + (j4 * 4u + lane) * p.inDim) / 4u + k4;
    Out[at] = Out[at] + part[0][lane];
  }
}

// The row kernels lora4_down and lora4_du for GPUs: one workgroup per tile of 4 rows × 4 j, its
// lanes splitting the reduction (in for down, out for du). The lane kernels loop over all of it
// in one invocation: at decode rows a module's U is 4–16 invocations each walking the whole
// hidden size (on an H100, lora4_down was 28% of an RL step's rollout GPU time). A tile's
// adapter passes (one per adapter among its rows, as above) are made workgroup-uniform through
// workgroup memory, so the reductions' barriers stay in uniform control flow.

var<workgroup> pass_on: u32;

// Σ over the lane's share of a contiguous reduction dim (q = lane, lane + WG, ...): as dots.
fn dotsSplit(lBase: vec4<u32>, lStride: u32, rBase: u32, rStride: u32, len: u32, lane: u32) -> mat4x4<f32> {
  var acc = mat4x4<f32>();
  for (var q = lane; q < len; q += WG) {
    let r0 = In1[rBase + q];
    let r1 = In1[rBase + rStride + q];
    let r2 = In1[rBase + 2u * rStride + q];
    let r3 = In1[rBase + 3u * rStride + q];
    let l0 = In0[lBase.x * lStride + q];
    let l1 = In0[lBase.y * lStride + q];
    let l2 = In0[lBase.z * lStride + q];
    let l3 = In0[lBase.w * lStride + q];
    acc[0] += vec4<f32>(dot(l0, r0), dot(l0, r1), dot(l0, r2), dot(l0, r3));
    acc[1] += vec4<f32>(dot(l1, r0), dot(l1, r1), dot(l1, r2), dot(l1, r3));
    acc[2] += vec4<f32>(dot(l2, r0), dot(l2, r1), dot(l2, r2), dot(l2, r3));
    acc[3] += vec4<f32>(dot(l3, r0), dot(l3, r1), dot(l3, r2), dot(l3, r3));
  }
  return acc;
}

// The lane's share of axpys (q = lane, lane + WG, ...).
fn axpysSplit(lBase: vec4<u32>, lStride: u32, rBase: u32, rStride: u32, len: u32, lane: u32) -> mat4x4<f32> {
  var acc = mat4x4<f32>();
  for (var q = lane; q < len; q += WG) {
    let r0 = In1[rBase + (4u * q) * rStride];
    let r1 = In1[rBase + (4u * q + 1u) * rStride];
    let r2 = In1[rBase + (4u * q + 2u) * rStride];
    let r3 = In1[rBase + (4u * q + 3u) * rStride];
    let l0 = In0[lBase.x * lStride + q];
    let l1 = In0[lBase.y * lStride + q];
    let l2 = In0[lBase.z * lStride + q];
    let l3 = In0[lBase.w * lStride + q];
    acc[0] += l0.x * r0 + l0.y * r1 + l0.z * r2 + l0.w * r3;
    acc[1] += l1.x * r0 + l1.y * r1 + l1.z * r2 + l1.w * r3;
    acc[2] += l2.x * r0 + l2.y * r1 + l2.z * r2 + l2.w * r3;
    acc[3] += l3.x * r0 + l3.y * r1 + l3.z * r2 + l3.w * r3;
  }
  return acc;
}

// Whether pass s of the tile runs, the same value in every lane.
fn passRuns(t: RowTile, s: u32, lane: u32) -> bool {
  if (lane == 0u) { pass_on = select(0u, 1u, t.live[s] && firstOf(t, s)); }
  return workgroupUniformLoad(&pass_on) == 1u;
}

// In0 = X [N, in], In1 = A stack; Out = U [N, r]
@compute @workgroup_size(WG)
fn lora4_down_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
  let r4 = p.r / 4u;
  let i = wid.x + wid.y * nwg.x;
  if (i >= ((p.N + 3u) / 4u) * r4) { return; }
  let j4 = i % r4;
  let row0 = (i / r4) * 4u;
  let t = rowTile(row0);
  let in4 = p.inDim / 4u;
  for (var s = 0u; s < 4u; s++) {
    if (!passRuns(t, s, lane)) { continue; }
    let a = t.ads[s];
    var acc = mat4x4<f32>();
    if (a < p.count) { acc = dotsSplit(t.rows, in4, (a * p.strideA + j4 * 4u * p.inDim) / 4u, in4, in4, lane); }
    sumTile(acc, lane);
    if (lane < 4u && t.live[lane] && t.ads[lane] == a) { Out[(row0 + lane) * r4 + j4] = part[0][lane]; }
    workgroupBarrier(); // part is reused by the next pass
  }
}

// In0 = dY [N, out], In1 = B stack; Out = dU [N, r]
@compute @workgroup_size(WG)
fn lora4_du_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
  let r4 = p.r / 4u;
  let i = wid.x + wid.y * nwg.x;
  if (i >= ((p.N + 3u) / 4u) * r4) { return; }
  let j4 = i % r4;
  let row0 = (i / r4) * 4u;
  let t = rowTile(row0);
  let o4n = p.outDim / 4u;
  for (var s = 0u; s < 4u; s++) {
    if (!passRuns(t, s, lane)) { continue; }
    let a = t.ads[s];
    var acc = mat4x4<f32>();
    if (a < p.count) { acc = axpysSplit(t.rows, o4n, (a * p.strideB) / 4u + j4, r4, o4n, lane); }
    sumTile(acc, lane);
    if (lane < 4u && t.live[lane] && t.ads[lane] == a) {
      Out[(row0 + lane) * r4 + j4] = p.scale * part[0][lane];
    }
    workgroupBarrier(); // part is reused by the next pass
  }
}
