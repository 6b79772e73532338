// The LoRA forward of a group of projections that share one input (q/k/v, gate/up; o and down
// alone) in one dispatch: one workgroup per ROWS rows does both halves for every module of the
// group, the rank-r intermediate staying in workgroup memory. For module m and a row of adapter a:
//   U_m[row, j]  = Σ_k X[row, k] · A_m[a, j, k]                 (stored too: the backward's input)
//   Y_m[row, o] += scale · Σ_j U_m[row, j] · B_m[a, o, j]
// Adapter ≥ count = base only: U = 0, Y untouched. The split kernels (lora_vec4.wgsl) take two
// dispatches a module, fourteen a Llama layer; on a GPU a decode step's LoRA is latency, not
// arithmetic (17 µs a call on an H100 against µs of work), so this takes four.
// The up half's output columns may be split over nwg.z workgroups per row tile (the host does at
// decode rows, where one workgroup per 4 rows would leave a GPU idle: each then computes its
// rows' U itself, and only the first writes it), each taking a contiguous span of column quads.
// in, out, r and every offset are multiples of 4 (vec4Entry); ROWS · Σ r ≤ UCAP (the host checks).
// Bindings: P is the range of the LoRA parameters that holds the group's A and B stacks, U the
// range of the layer's U buffer that holds the group's; the offsets in GroupParams are floats
// from their starts. Unused Y slots are bound to buffers of their own (no aliasing).

//! include lora_group_params

override WG: u32 = 256u;
override LANES: u32 = 4u;   // lanes per dot product of the down half (a power of two ≤ WG)
const ROWS = 4u;
const UCAP = 1024u;

@group(0) @binding(0) var<uniform> p: GroupParams;
@group(0) @binding(1) var<storage, read> adapterOf: array<u32>;
@group(0) @binding(2) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> P: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> U: array<f32>;
@group(0) @binding(5) var<storage, read_write> Y0: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> Y1: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> Y2: array<vec4<f32>>;

var<workgroup> us: array<f32, UCAP>;      // the tile's U: [ROWS, Σ_m r]
var<workgroup> part: array<f32, WG>;

// Module m's (offA, strideA, offB, strideB) and (outDim, offU).
fn modAB(m: u32) -> vec4<u32> {
  return select(select(vec4(p.offA0, p.strideA0, p.offB0, p.strideB0),
                       vec4(p.offA1, p.strideA1, p.offB1, p.strideB1), m == 1u),
                vec4(p.offA2, p.strideA2, p.offB2, p.strideB2), m == 2u);
}
fn modOut(m: u32) -> u32 { return select(select(p.out0, p.out1, m == 1u), p.out2, m == 2u); }
fn modU(m: u32) -> u32 { return select(select(p.offU0, p.offU1, m == 1u), p.offU2, m == 2u); }

fn addY(m: u32, at: u32, v: vec4<f32>) {
  switch m {
    case 0u: { Y0[at] = Y0[at] + v; }
    case 1u: { Y1[at] = Y1[at] + v; }
    default: { Y2[at] = Y2[at] + v; }
  }
}

@compute @workgroup_size(WG)
fn lora_group_fwd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let row0 = (wid.x + wid.y * nwg.x) * ROWS;
  let rt = p.nMods * p.r;
  let in4 = p.inDim / 4u;

  // Down: LANES lanes per (row, j), each summing a strided quarter of the in dim.
  let lane = lid % LANES;
  let slot = lid / LANES;
  let total = ROWS * rt;
  for (var base = 0u; base < total; base += WG / LANES) {
    let o = base + slot;
    let q = o / rt;
    let j = o % rt;
    let m = j / p.r;
    let jm = j % p.r;
    let row = row0 + q;
    var a = p.count;
    if (o < total && row < p.N) { a = adapterOf[row]; }
    var acc = 0.0;
    if (a < p.count) {
      let ab = modAB(m);
      let aBase = (ab.x + a * ab.y) / 4u + jm * in4;
      let xBase = row * in4;
      // Four steps' loads ahead of their adds, which stay in k order (the same sums as one at a
      // time): a lane that waits for each load in turn makes this loop a latency chain.
      var k = lane;
      for (; k + 3u * LANES < in4; k += 4u * LANES) {
        let x0 = X[xBase + k];
        let x1 = X[xBase + k + LANES];
        let x2 = X[xBase + k + 2u * LANES];
        let x3 = X[xBase + k + 3u * LANES];
        let a0 = P[aBase + k];
        let a1 = P[aBase + k + LANES];
        let a2 = P[aBase + k + 2u * LANES];
        let a3 = P[aBase + k + 3u * LANES];
        acc += dot(x0, a0);
        acc += dot(x1, a1);
        acc += dot(x2, a2);
        acc += dot(x3, a3);
      }
      for (; k < in4; k += LANES) { acc += dot(X[xBase + k], P[aBase + k]); }
    }
    part[lid] = acc;
    workgroupBarrier();
    if (lane == 0u && o < total) {
      var u = 0.0;
      for (var l = 0u; l < LANES; l++) { u += part[lid + l]; }
      us[o] = u;
      if (row < p.N && wid.z == 0u) { U[modU(m) + row * p.r + jm] = u; }
    }
    workgroupBarrier();
  }

  // Up: one invocation per 4 output columns of a module, over the tile's rows.
  let r4 = p.r / 4u;
  let c0 = p.out0 / 4u;
  let c1 = p.out1 / 4u;
  let cols = c0 + c1 + p.out2 / 4u;
  let span = (cols + nwg.z - 1u) / nwg.z;
  let end = min(cols, (wid.z + 1u) * span);
  for (var c = wid.z * span + lid; c < end; c += WG) {
    var m = 0u;
    var n4 = c;
    if (n4 >= c0) {
      n4 -= c0;
      m = 1u;
      if (n4 >= c1) { n4 -= c1; m = 2u; }
    }
    let ab = modAB(m);
    let o4n = modOut(m) / 4u;
    for (var q = 0u; q < ROWS; q++) {
      let row = row0 + q;
      if (row >= p.N) { break; }
      let a = adapterOf[row];
      if (a >= p.count) { continue; }
      // B_m[a] rows 4·n4 … 4·n4 + 3, r floats each.
      let bBase = (ab.z + a * ab.w) / 4u + 4u * n4 * r4;
      let ub = q * rt + m * p.r;
      var acc = vec4(0.0);
      for (var jq = 0u; jq < r4; jq++) {
        let u4 = vec4(us[ub + 4u * jq], us[ub + 4u * jq + 1u], us[ub + 4u * jq + 2u],
                      us[ub + 4u * jq + 3u]);
        acc += vec4(dot(u4, P[bBase + jq]), dot(u4, P[bBase + r4 + jq]),
                    dot(u4, P[bBase + 2u * r4 + jq]), dot(u4, P[bBase + 3u * r4 + jq]));
      }
      addY(m, row * o4n + n4, p.scale * acc);
    }
  }
}
