// Loss heads over logits Z [rows, V]: each writes dL/dlogits for every row (zeros for rows outside
// the loss, so the backward can start from the whole [rows, V] block) and one stats row per row.
//   cross_entropy: ℓ = −log softmax(z)[tgt]                                   (SFT)
//   policy_loss:   ℓ = PPO-clip / dual-clip surrogate (verl) + β · k3 KL to a reference policy
//   loss_totals:   T = Σ_rows of the stats rows (optionally added to T: micro-batch accumulation)
// L = Σ_rows coef · ℓ: the per-row coefficient carries the aggregation (token-mean, seq-mean, ...),
// computed on the CPU from the mask, so one kernel serves every aggregation mode.
// One workgroup per row (WG lanes: 64 on CPU adapters, 256 on GPUs; src/train/losses.ts). The
// row's max, Σe^(z−max) and Σe^(z−max)·z come from one online pass (one load per logit, four
// loaded ahead into four running sums); the gradient pass loads each logit once more. With
// in_place the gradient overwrites the logits (halving memory for large vocabularies); G is then
// a dummy. Where the adapter has subgroups the heads run their subgroup twin (losses_sg: the
// workgroup reductions of loss_reduce.wgsl through subgroup operations, loss_reduce_sg.wgsl).
//
// Stats row (8 f32): 0 coef·ℓ_pg | 1 coef·k3 | 2 mask·clipped | 3 mask·dual-clipped
//                    4 mask·(old_logp − logp) | 5 mask·entropy | 6 mask | 7 logp(tgt)
// With a temperature T (Params.inv_temp = 1/T) every softmax, log-prob and entropy is of z/T, as
// the sampler's log-probs are; the gradient is still w.r.t. z.
// Dims: V vocabulary (cols), rows = tokens whose logits are in Z.

struct Row {
  tgt: u32,
  /** Aggregation weight of this token in L (0 for tokens outside the loss). */
  coef: f32,
  adv: f32,
  old_logp: f32,
  ref_logp: f32,
  /** Response mask (metrics are averaged over it). */
  mask: f32,
  _p0: f32,
  _p1: f32,
}

//! include loss_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> R: array<Row>;
@group(0) @binding(2) var<storage, read_write> Z: array<f32>;
@group(0) @binding(3) var<storage, read_write> G: array<f32>;
@group(0) @binding(4) var<storage, read_write> S: array<f32>;

// mergeRow and sumPair: trees in workgroup memory; the subgroup twin (losses_sg) swaps in
// loss_reduce_sg for subgroup operations.
//! include loss_reduce

struct Pair { a: vec4<f32>, b: vec4<f32> }

const NEG_BIG: f32 = -3.402823e38;

/** Merges two (max, Σe, Σe·z) partial softmax sums. */
fn merge(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  let m = max(a.x, b.x);
  let ea = exp(a.x - m);
  let eb = exp(b.x - m);
  return vec4<f32>(m, a.y * ea + b.y * eb, a.z * ea + b.z * eb, 0.0);
}

/** (max, Σe, Σe·z) of the logits so far, with one more logit z. */
fn online(acc: vec4<f32>, z: f32) -> vec4<f32> {
  let m = max(acc.x, z);
  let scale = exp(acc.x - m);
  let e = exp(z - m);
  // e·z is 0·(−inf) = NaN for masked-out logits; they contribute nothing.
  return vec4<f32>(m, acc.y * scale + e, acc.z * scale + select(e * z, 0.0, e == 0.0), 0.0);
}

/** A lane's four logits c, c + WG, c + 2·WG, c + 3·WG of a row, loaded before any is used. */
fn loadFour(base: u32, c: u32) -> vec4<f32> {
  return vec4<f32>(Z[base + c], Z[base + c + WG], Z[base + c + 2u * WG], Z[base + c + 3u * WG]);
}

struct RowStats { lse: f32, entropy: f32, logp: f32 }

fn rowStats(base: u32, tgt: u32, lid: u32) -> RowStats {
  // Read before the barriers below: in place, another lane overwrites it right after them.
  let zt = Z[base + tgt] * p.inv_temp;
  // Four logits loaded ahead into four running sums, merged at the end: a lane that waits for
  // each load, or for each update before the next (two exps deep), makes the pass a latency chain
  // of cols / WG steps (an H100 took 2.3 ms for 1,024 rows of 151,936 words at WG 64, ~4× the
  // time the head's memory traffic needs).
  var a0 = vec4<f32>(NEG_BIG, 0.0, 0.0, 0.0);
  var a1 = a0;
  var a2 = a0;
  var a3 = a0;
  var c = lid;
  for (; c + 3u * WG < p.cols; c += 4u * WG) {
    let z = loadFour(base, c) * p.inv_temp;
    a0 = online(a0, z.x);
    a1 = online(a1, z.y);
    a2 = online(a2, z.z);
    a3 = online(a3, z.w);
  }
  for (; c < p.cols; c += WG) { a0 = online(a0, Z[base + c] * p.inv_temp); }
  let t = mergeRow(merge(merge(a0, a1), merge(a2, a3)), lid);
  let lse = t.x + log(t.y);
  // H = −Σ p log p = lse − E_p[z]
  return RowStats(lse, lse - t.z / t.y, zt - lse);
}

fn storeGrad(i: u32, v: f32) {
  if (p.in_place != 0u) { Z[i] = v; } else { G[i] = v; }
}

/** dL/dz_j = scale/T · (δ_j,tgt − softmax(z/T)_j), scale = coef · dℓ/dlogp (lse is of z/T). */
fn writeGrad(base: u32, tgt: u32, lse: f32, scale: f32, lid: u32) {
  let s = scale * p.inv_temp;
  // Four logits loaded before any is written (each lane reads and writes only its own columns,
  // so in place is safe): one load in flight at a time made this pass a latency chain too.
  var c = lid;
  for (; c + 3u * WG < p.cols; c += 4u * WG) {
    let z = loadFour(base, c);
    gradAt(base, c, tgt, z.x, lse, s);
    gradAt(base, c + WG, tgt, z.y, lse, s);
    gradAt(base, c + 2u * WG, tgt, z.z, lse, s);
    gradAt(base, c + 3u * WG, tgt, z.w, lse, s);
  }
  for (; c < p.cols; c += WG) { gradAt(base, c, tgt, Z[base + c], lse, s); }
}

fn gradAt(base: u32, c: u32, tgt: u32, z: f32, lse: f32, s: f32) {
  storeGrad(base + c, s * (select(0.0, 1.0, c == tgt) - exp(z * p.inv_temp - lse)));
}

fn writeStats(row: u32, a: vec4<f32>, b: vec4<f32>) {
  for (var i = 0u; i < 4u; i++) {
    S[row * 8u + i] = a[i];
    S[row * 8u + 4u + i] = b[i];
  }
}

/** Rows outside the loss: zero gradient, zero stats, no softmax needed. */
fn skipRow(row: u32, base: u32, lid: u32) {
  for (var c = lid; c < p.cols; c += WG) { storeGrad(base + c, 0.0); }
  if (lid == 0u) { writeStats(row, vec4<f32>(0.0), vec4<f32>(0.0)); }
}

fn rowIndex(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(WG)
fn cross_entropy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 lane: Lane) {
  let lid = enterLane(lane);
  let row = rowIndex(wid, nwg);
  if (row >= p.rows) { return; }
  let r = R[row];
  let base = row * p.cols;
  if (r.coef == 0.0 && r.mask == 0.0) { skipRow(row, base, lid); return; }
  let st = rowStats(base, r.tgt, lid);
  // ℓ = −logp, so dℓ/dlogp = −1. Stats are read before the gradient may overwrite them.
  writeGrad(base, r.tgt, st.lse, -r.coef, lid);
  if (lid == 0u) {
    writeStats(row, vec4<f32>(-r.coef * st.logp, 0.0, 0.0, 0.0), vec4<f32>(0.0, r.mask * st.entropy, r.mask, st.logp));
  }
}

struct Terms { pg: f32, k3: f32, dl: f32, clipped: f32, lower: f32, neg_log_ratio: f32 }

/** verl compute_policy_loss_vanilla for one token, plus the k3 KL, with dℓ/dlogp. */
fn policyTerms(r: Row, logp: f32) -> Terms {
  let raw = logp - r.old_logp;
  let log_ratio = clamp(raw, -20.0, 20.0);
  let ratio = exp(log_ratio);
  // Where the ±20 clamp is active the ratio is constant: no gradient.
  let dratio = select(0.0, ratio, raw > -20.0 && raw < 20.0);
  let a = r.adv;
  let l1 = -a * ratio;
  let l2 = -a * clamp(ratio, 1.0 - p.eps_low, 1.0 + p.eps_high);
  var pg = max(l1, l2);
  // l2 > l1 only when the ratio is outside the clip range, where l2 is flat.
  var dpg = select(-a * dratio, 0.0, l2 > l1);
  let clipped = select(0.0, 1.0, l2 > l1);
  var lower = 0.0;
  if (a < 0.0) {
    let l3 = -a * p.clip_c;
    if (pg > l3) {
      pg = l3;
      dpg = 0.0;
      lower = 1.0;
    }
  }
  var k3 = 0.0;
  var dk = 0.0;
  if (p.use_ref != 0u) {
    // verl kl_penalty "low_var_kl": kl = clamp(ref − logp, ±20); k3 = clamp(e^kl − kl − 1, ±10)
    let kraw = r.ref_logp - logp;
    let kl = clamp(kraw, -20.0, 20.0);
    let kr = exp(kl);
    let kd = kr - kl - 1.0;
    k3 = clamp(kd, -10.0, 10.0);
    let live = kraw > -20.0 && kraw < 20.0 && kd < 10.0;
    dk = select(0.0, 1.0 - kr, live);
  }
  return Terms(pg, k3, dpg + p.kl_coef * dk, clipped, lower, -log_ratio);
}

@compute @workgroup_size(WG)
fn policy_loss(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               lane: Lane) {
  let lid = enterLane(lane);
  let row = rowIndex(wid, nwg);
  if (row >= p.rows) { return; }
  let r = R[row];
  let base = row * p.cols;
  if (r.coef == 0.0 && r.mask == 0.0) { skipRow(row, base, lid); return; }
  let st = rowStats(base, r.tgt, lid);
  let t = policyTerms(r, st.logp);
  writeGrad(base, r.tgt, st.lse, r.coef * t.dl, lid);
  if (lid == 0u) {
    writeStats(
      row,
      vec4<f32>(r.coef * t.pg, r.coef * t.k3, r.mask * t.clipped, r.mask * t.lower),
      vec4<f32>(r.mask * t.neg_log_ratio, r.mask * st.entropy, r.mask, st.logp),
    );
  }
}

// ---- loss_totals: [uniform, stats rows (read), totals (rw)] ----------------------------------

//! include loss_totals_params

@group(0) @binding(0) var<uniform> tp: TotalsParams;
@group(0) @binding(1) var<storage, read> Srows: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> T: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn loss_totals(lane: Lane) {
  let lid = enterLane(lane);
  var a = vec4<f32>(0.0);
  var b = vec4<f32>(0.0);
  for (var i = lid; i < tp.rows; i += WG) {
    a += Srows[2u * i];
    let s = Srows[2u * i + 1u];
    // Column 7 is the raw logp; its total is the masked sum.
    b += vec4<f32>(s.x, s.y, s.z, s.w * s.z);
  }
  let t = sumPair(a, b, lid);
  if (lid == 0u) {
    if (tp.accumulate != 0u) {
      T[0] += t.a;
      T[1] += t.b;
    } else {
      T[0] = t.a;
      T[1] = t.b;
    }
  }
}
