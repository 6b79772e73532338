// The PPO critic's value head on the final norm's output H [N, C]: v = H·w + b, the clipped value
// loss and its gradient, and the backward into w, b and H. Parameters P hold w at [0, C) and b at
// P[b_off] (b_off a 64-float block after w, so the optimizer's decay mask can spare the bias).
//   value_forward:  V[r] = Σ_c H[r, c]·w[c] + b                  one workgroup per row
//   value_loss:     ℓ_r = ½·max((v − R)², (clip(v, v_old ± ε) − R)²),  DV[r] = coef_r · dℓ_r/dv
//                   stats row: coef·ℓ | mask·[clipped term larger] | mask·(v − R)² | mask
//   value_totals:   T (+)= Σ_rows of the stats rows               one workgroup
//   value_bwd_x:    DH[r, c] += DV[r]·w[c]                         (added to the LM head's dH)
//   value_bwd_w:    G[c] += Σ_r DV[r]·H[r, c];  G[b_off] += Σ_r DV[r]
// Where the clipped term is the larger one it is constant in v (v outside v_old ± ε), so its
// gradient is 0; on a tie the unclipped branch's v − R is taken (both are then equal).
// Dims: N rows, C hidden.

//! include value_head_params

/** One token's value-loss inputs (packed on the CPU: packValueRows). */
struct Row {
  old_value: f32,
  ret: f32,
  /** Aggregation weight of this token in the loss (vf coefficient included); 0 outside it. */
  coef: f32,
  mask: f32,
}

override WG: u32 = 64u;

var<workgroup> red: array<f32, WG>;

fn rowIndex(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return wid.x + wid.y * nwg.x;
}

// ---- value_forward: [uniform, H (read), P (read), V (rw)] -------------------------------------

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> H: array<f32>;
@group(0) @binding(2) var<storage, read> P: array<f32>;
@group(0) @binding(3) var<storage, read_write> V: array<f32>;

@compute @workgroup_size(WG)
fn value_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  let row = rowIndex(wid, nwg);
  if (row >= p.rows) { return; }
  var s = 0.0;
  for (var c = lid; c < p.cols; c += WG) { s += H[row * p.cols + c] * P[c]; }
  red[lid] = s;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k /= 2u) {
    if (lid < k) { red[lid] += red[lid + k]; }
    workgroupBarrier();
  }
  if (lid == 0u) { V[row] = red[0] + P[p.b_off]; }
}

// ---- value_loss: [uniform, rows (read), V (read), DV (rw), S (rw)] -----------------------------

@group(0) @binding(1) var<storage, read> LR: array<Row>;
@group(0) @binding(2) var<storage, read> LV: array<f32>;
@group(0) @binding(3) var<storage, read_write> DV: array<f32>;
@group(0) @binding(4) var<storage, read_write> S: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn value_loss(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= p.rows) { return; }
  let r = LR[row];
  let v = LV[row];
  let vc = clamp(v, r.old_value - p.clip, r.old_value + p.clip);
  let e1 = v - r.ret;
  let e2 = vc - r.ret;
  let clipped = e2 * e2 > e1 * e1;
  let l = 0.5 * max(e1 * e1, e2 * e2);
  DV[row] = select(r.coef * e1, 0.0, clipped);
  S[row] = vec4<f32>(r.coef * l, r.mask * select(0.0, 1.0, clipped), r.mask * e1 * e1, r.mask);
}

// ---- value_totals: [uniform, S (read), T (rw)] --------------------------------------------------

@group(0) @binding(1) var<storage, read> TS: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> T: array<vec4<f32>>;

var<workgroup> redv: array<vec4<f32>, WG>;

@compute @workgroup_size(WG)
fn value_totals(@builtin(local_invocation_index) lid: u32) {
  var a = vec4<f32>(0.0);
  for (var i = lid; i < p.rows; i += WG) { a += TS[i]; }
  redv[lid] = a;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k /= 2u) {
    if (lid < k) { redv[lid] += redv[lid + k]; }
    workgroupBarrier();
  }
  if (lid == 0u) { T[0] = redv[0] + select(vec4<f32>(0.0), T[0], p.accumulate == 1u); }
}

// ---- value_bwd_x: [uniform, DV (read), P (read), DH (rw)] ---------------------------------------

@group(0) @binding(1) var<storage, read> XDV: array<f32>;
@group(0) @binding(2) var<storage, read> XP: array<f32>;
@group(0) @binding(3) var<storage, read_write> DH: array<f32>;

@compute @workgroup_size(WG)
fn value_bwd_x(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * p.cols) { return; }
  DH[i] += XDV[i / p.cols] * XP[i % p.cols];
}

// ---- value_bwd_w: [uniform, DV (read), H (read), G (rw)] ----------------------------------------

@group(0) @binding(1) var<storage, read> WDV: array<f32>;
@group(0) @binding(2) var<storage, read> WH: array<f32>;
@group(0) @binding(3) var<storage, read_write> G: array<f32>;

@compute @workgroup_size(WG)
fn value_bwd_w(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c > p.cols) { return; }
  var s = 0.0;
  if (c == p.cols) {
    for (var r = 0u; r < p.rows; r++) { s += WDV[r]; }
    G[p.b_off] += s;
    return;
  }
  for (var r = 0u; r < p.rows; r++) { s += WDV[r] * WH[r * p.cols + c]; }
  G[c] += s;
}
