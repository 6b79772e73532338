// The per-row sampling of shaders/sampling_lane.wgsl, shared by that kernel and the fused decode
// step (decode_forward.wgsl's decode_sample): everything but the bindings, the output (`finish`) and
// the entry point. Read sampling_lane.wgsl for the rules and llvmpipe's loop limit.
// An includer declares: shape (a Shape, uniform or private), X4 (the logits as vec4s), seen
// (atomic penalty bitmap words), hist_ids and hist_counts (the history), and
//   fn finish(row: u32, id: u32, z: f32, m: f32, log_z: f32, log_zt: f32)
// which stores the sampled id of row and its log-probs (z − m − log_z, truncated z − m − log_zt).

//! include sampling_common

// Search passes per stage (laneLoopBound in src/model/sampling.ts counts them). Enough for any
// vocabulary up to 2^16: a key-space pass leaves ≤ 1/4 of the key range (≤ 16 of them), a value
// pass either halves the candidates (≤ 16 of them) or is followed by a key-space pass.
const MAX_PASSES = 48u;

// One lane's row: the vec4 units [u0, u1) cover it (edge units are shared with the neighbours,
// `ok` masks their logits out).
struct Row { base: u32, vocab: u32, u0: u32, u1: u32, temp: f32, pen: f32, pen_on: bool }
struct Unit { z: vec4<f32>, ok: vec4<bool>, id0: u32 }

// The penalty bitmap word pen_at (32 logits = 8 units a word): loaded once per word visited.
var<private> pen_word: u32;
var<private> pen_at: u32 = 0xffffffffu;

// Units past the row's end (the unrolled loops overrun by up to 3) load its last unit again,
// masked out.
fn loadUnit(r: Row, u_in: u32) -> Unit {
  let u = min(u_in, r.u1 - 1u);
  let e = select(vec4(NONE), vec4(4u * u) + vec4(0u, 1u, 2u, 3u), u_in == u);
  var x = X4[u];
  if (r.pen_on) {
    if ((u >> 3u) != pen_at) { pen_at = u >> 3u; pen_word = atomicLoad(&seen[pen_at]); }
    let bits = (vec4(pen_word) >> (e & vec4(31u))) & vec4(1u);
    x = select(x, select(x / r.pen, x * r.pen, x < vec4(0.0)), bits == vec4(1u));
  }
  return Unit(x / r.temp, (e >= vec4(r.base)) & (e < vec4(r.base + r.vocab)), 4u * u - r.base);
}

// ---------------------------------------------------------------------------------------------
// Repetition penalty: this row's bits of the bitmap are cleared, then each seen id's bit set.
// Rows share edge words, so partial words are touched only with atomics on this row's bits;
// one invocation's atomics on one word stay in program order.

fn markSeen(row: u32, base: u32, vocab: u32) {
  let last = (base + vocab - 1u) >> 5u;
  for (var w = base >> 5u; w <= last; w++) {
    let lo = max(base, w * 32u) - w * 32u;
    let hi = min(base + vocab, w * 32u + 32u) - w * 32u;
    if (hi - lo == 32u) { atomicStore(&seen[w], 0u); } else {
      atomicAnd(&seen[w], ~(((1u << (hi - lo)) - 1u) << lo));
    }
  }
  let n = min(hist_counts[row], shape.hist_cap);
  for (var j = 0u; j < n; j++) {
    let id = hist_ids[row * shape.hist_cap + j];
    if (id < vocab) { let e = base + id; atomicOr(&seen[e >> 5u], 1u << (e & 31u)); }
  }
}

// ---------------------------------------------------------------------------------------------
// Stats pass: online softmax (running max m, Σexp(z − m)), argmax (lowest id among ties) and the
// key range of the row.

// Sums of weights are blocked (f32 sums of thousands of equal small terms drift by ~n·ε, as
// the workgroup kernel's per-thread chunks do not): each loop iteration's ≤ 16 terms form a
// partial, partials go into `mid`, and `mid` into the total every 32 iterations.
fn flushMid(u: u32, r: Row) -> bool { return (((u - r.u0) >> 2u) & 31u) == 31u; }

struct Stats { m: f32, s: f32, mid: f32, tot: f32, arg: u32, kmin: u32, kmax: u32 }

fn statsUnit(st: ptr<function, Stats>, r: Row, u: u32) {
  let t = loadUnit(r, u);
  let z = select(vec4(ninf()), t.z, t.ok);
  let k = keyOf4(t.z);
  let kn = select(vec4(NONE), k, t.ok);
  let kx = select(vec4(0u), k, t.ok);
  (*st).kmin = min((*st).kmin, min(min(kn.x, kn.y), min(kn.z, kn.w)));
  (*st).kmax = max((*st).kmax, max(max(kx.x, kx.y), max(kx.z, kx.w)));
  let mu = max(max(z.x, z.y), max(z.z, z.w));
  if (mu > (*st).m) {
    // Strictly greater: an earlier unit keeps a tie; within the unit the first lane wins.
    (*st).arg = t.id0 + select(select(select(3u, 2u, z.z == mu), 1u, z.y == mu), 0u, z.x == mu);
    let c = exp((*st).m - mu);
    (*st).s *= c; (*st).mid *= c; (*st).tot *= c;
    (*st).m = mu;
  }
  if (bitcast<u32>((*st).m) != NEG_INF_BITS) { (*st).s += dot(weight4(z, (*st).m), vec4(1.0)); }
}

// The total Σexp(z − m) is left in s.
fn statsPass(r: Row) -> Stats {
  var st = Stats(ninf(), 0.0, 0.0, 0.0, NONE, NONE, 0u);
  for (var u = r.u0; u < r.u1; u += 4u) {
    statsUnit(&st, r, u); statsUnit(&st, r, u + 1u);
    statsUnit(&st, r, u + 2u); statsUnit(&st, r, u + 3u);
    st.mid += st.s; st.s = 0.0;
    if (flushMid(u, r)) { st.tot += st.mid; st.mid = 0.0; }
  }
  st.s = st.tot + st.mid;
  return st;
}

// ---------------------------------------------------------------------------------------------
// Threshold search: the largest key τ whose tail {key ≥ τ} reaches the goal count (top-k) or
// mass (top-p). Invariants: tail(≥ lo) reaches the goal, tail(> hi) does not; lo and hi are keys
// of real candidates, so the search ends when they meet. ge_*: count and mass of {key ≥ lo};
// ab_*: of {key > hi}.

struct Tail { lo: u32, hi: u32, ge_c: u32, ge_w: f32, ab_c: u32, ab_w: f32 }

// Split keys s.x = lo < s.y < s.z < s.w ≤ hi; unused slots hold NONE (above every candidate).
// Value-space splits follow the shape of the logits, key-space ones (linear in the float bits)
// guarantee a 4× narrower key range per pass whatever the shape.
struct Splits { s: vec4<u32>, n: u32 }

fn makeSplits(lo: u32, hi: u32, by_value: bool) -> Splits {
  let a = valueOfKey(lo);
  let b = valueOfKey(hi);
  let value_ok = by_value && abs(a) <= 1.0e38 && abs(b) <= 1.0e38;
  let step = (hi - lo) / 4u + 1u;
  // Candidate j: interpolated value (at least one above the previous split) or lo + j·step;
  // the first candidate above hi (or, by key, past the range) ends the list.
  let vk = vec4(lo, keyOf(a * 0.75 + b * 0.25), keyOf(a * 0.5 + b * 0.5), keyOf(a * 0.25 + b * 0.75));
  var s = vec4(lo, NONE, NONE, NONE);
  var n = 1u;
  var prev = lo;
  var open = true;
  for (var j = 1u; j < 4u; j++) { // constant trip count: counted in laneLoopBound
    let kk = select(lo + j * step, max(vk[j], prev + 1u), value_ok);
    let past = select(j * step > hi - lo, false, value_ok) || kk > hi;
    open = open && !past;
    if (open) {
      s = select(s, vec4(kk), vec4(j) == vec4(0u, 1u, 2u, 3u));
      prev = kk;
      n = j + 1u;
    }
  }
  return Splits(s, n);
}

// Per split j: count and mass of candidates ≥ s_j, min key ≥ s_j, max key < s_j.
struct Acc { c: vec4<u32>, w: vec4<f32>, nmin: vec4<u32>, xmax: vec4<u32> }

fn accAdd(acc: ptr<function, Acc>, s: vec4<u32>, k: u32, w: f32) {
  let kv = vec4(k);
  let ge = kv >= s;
  (*acc).c += select(vec4(0u), vec4(1u), ge);
  (*acc).w += select(vec4(0.0), vec4(w), ge);
  (*acc).nmin = select((*acc).nmin, min((*acc).nmin, kv), ge);
  (*acc).xmax = select(max((*acc).xmax, kv), (*acc).xmax, ge);
}

fn splitUnit(acc: ptr<function, Acc>, r: Row, s: vec4<u32>, lo: u32, hi: u32, m: f32,
             need_mass: bool, u: u32) {
  let t = loadUnit(r, u);
  let k = keyOf4(t.z);
  let inside = t.ok & (k >= vec4(lo)) & (k <= vec4(hi));
  if (any(inside)) {
    var w = vec4(0.0);
    if (need_mass) { w = weight4(t.z, m); }
    if (inside.x) { accAdd(acc, s, k.x, w.x); }
    if (inside.y) { accAdd(acc, s, k.y, w.y); }
    if (inside.z) { accAdd(acc, s, k.z, w.z); }
    if (inside.w) { accAdd(acc, s, k.w, w.w); }
  }
}

fn splitPass(r: Row, s: vec4<u32>, lo: u32, hi: u32, m: f32, need_mass: bool) -> Acc {
  var acc = Acc(vec4(0u), vec4(0.0), vec4(NONE), vec4(0u));
  var mid = vec4(0.0);
  var tot = vec4(0.0);
  for (var u = r.u0; u < r.u1; u += 4u) {
    splitUnit(&acc, r, s, lo, hi, m, need_mass, u);
    splitUnit(&acc, r, s, lo, hi, m, need_mass, u + 1u);
    splitUnit(&acc, r, s, lo, hi, m, need_mass, u + 2u);
    splitUnit(&acc, r, s, lo, hi, m, need_mass, u + 3u);
    mid += acc.w; acc.w = vec4(0.0);
    if (flushMid(u, r)) { tot += mid; mid = vec4(0.0); }
  }
  acc.w = tot + mid;
  return acc;
}

fn pickU(v: vec4<u32>, j: u32) -> u32 {
  return select(select(v.x, v.y, j == 1u), select(v.z, v.w, j == 3u), j >= 2u);
}
fn pickF(v: vec4<f32>, j: u32) -> f32 {
  return select(select(v.x, v.y, j == 1u), select(v.z, v.w, j == 3u), j >= 2u);
}

// need_mass: keep tail masses (top-p reads them); a top-k-only search skips every exp().
fn search(r: Row, by_mass: bool, need_mass: bool, goal_c: u32, goal_w: f32, t0: Tail, m: f32) -> Tail {
  var t = t0;
  var by_value = true;
  for (var it = 0u; it < MAX_PASSES && t.lo != t.hi; it++) {
    let sp = makeSplits(t.lo, t.hi, by_value);
    let acc = splitPass(r, sp.s, t.lo, t.hi, m, need_mass);
    // The highest split whose tail still reaches the goal (its bin is then non-empty).
    let cc = vec4(t.ab_c) + acc.c;
    let ww = vec4(t.ab_w) + acc.w;
    let reach = select(cc >= vec4(goal_c), ww >= vec4(goal_w), by_mass) &
                (vec4(sp.n) > vec4(0u, 1u, 2u, 3u));
    let j = select(select(select(0u, 1u, reach.y), 2u, reach.z), 3u, reach.w);
    let before_n = t.ge_c - t.ab_c;
    var nt = Tail(pickU(acc.nmin, j), t.hi, pickU(cc, j), pickF(ww, j), t.ab_c, t.ab_w);
    if (j + 1u < sp.n) {
      nt.hi = pickU(acc.xmax, j + 1u);
      nt.ab_c = pickU(cc, j + 1u);
      nt.ab_w = pickF(ww, j + 1u);
    }
    t = nt;
    // Value splits again unless the last one kept more than half of the candidates.
    by_value = !(by_value && 2u * (t.ge_c - t.ab_c) > before_n);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Output and the draw.

// Weights of a unit's kept tokens {key ≥ tau}.
struct Kept { w: vec4<f32>, z: vec4<f32>, id0: u32 }

fn keptUnit(r: Row, tau: u32, m: f32, u: u32) -> Kept {
  let t = loadUnit(r, u);
  return Kept(select(vec4(0.0), weight4(t.z, m), t.ok & (keyOf4(t.z) >= vec4(tau))), t.z, t.id0);
}

// Kept mass of the 4 units from u.
fn blockMass(r: Row, tau: u32, m: f32, u: u32) -> f32 {
  return (dot(keptUnit(r, tau, m, u).w, vec4(1.0)) + dot(keptUnit(r, tau, m, u + 1u).w, vec4(1.0))) +
         (dot(keptUnit(r, tau, m, u + 2u).w, vec4(1.0)) + dot(keptUnit(r, tau, m, u + 3u).w, vec4(1.0)));
}

fn keptMass(r: Row, tau: u32, m: f32) -> f32 {
  var mid = 0.0;
  var tot = 0.0;
  for (var u = r.u0; u < r.u1; u += 4u) {
    mid += blockMass(r, tau, m, u);
    if (flushMid(u, r)) { tot += mid; mid = 0.0; }
  }
  return tot + mid;
}

// The walk through one block: the first kept token whose cumulative mass exceeds the goal, or
// else the block's last kept token.
struct Walk { acc: f32, goal: f32, id: u32, z: f32, done: bool }

fn walkOne(wk: ptr<function, Walk>, w: f32, id: u32, z: f32) {
  if (!(*wk).done && w > 0.0) {
    (*wk).id = id; (*wk).z = z;
    (*wk).acc += w;
    (*wk).done = (*wk).acc > (*wk).goal;
  }
}

fn walkUnit(wk: ptr<function, Walk>, r: Row, tau: u32, m: f32, u: u32) {
  let t = keptUnit(r, tau, m, u);
  walkOne(wk, t.w.x, t.id0, t.z.x); walkOne(wk, t.w.y, t.id0 + 1u, t.z.y);
  walkOne(wk, t.w.z, t.id0 + 2u, t.z.z); walkOne(wk, t.w.w, t.id0 + 3u, t.z.w);
}

// The draw: the first kept token, in token order, whose cumulative mass exceeds u · zt. Blocks
// of 4 units are skipped by their mass (blocked sums, as above); the block the draw lands in is
// walked token by token. Rounding past the end keeps the last kept token; every kept logit −inf:
// id 0, log-prob NaN.
fn draw(r: Row, row: u32, tau: u32, zt: f32, u: f32, m: f32, log_z: f32) {
  let goal = u * zt;
  var mid = 0.0;
  var tot = 0.0;
  var hit = NONE;   // the block the draw lands in
  var last = NONE;  // the last block with kept mass
  var before = 0.0; // mass before it
  for (var i = r.u0; i < r.u1 && hit == NONE; i += 4u) {
    let b = blockMass(r, tau, m, i);
    if (b > 0.0) {
      let acc = tot + mid;
      last = i; before = acc;
      if (acc + b > goal) { hit = i; }
    }
    mid += b;
    if (flushMid(i, r)) { tot += mid; mid = 0.0; }
  }
  var wk = Walk(before, select(goal, 3.4e38, hit == NONE), 0u, ninf(), false);
  if (last != NONE) {
    walkUnit(&wk, r, tau, m, last); walkUnit(&wk, r, tau, m, last + 1u);
    walkUnit(&wk, r, tau, m, last + 2u); walkUnit(&wk, r, tau, m, last + 3u);
  }
  finish(row, wk.id, wk.z, m, log_z, log(zt));
}

// ---------------------------------------------------------------------------------------------
// One row: its parameters rp, its logits at X4 units from row · vocab / 4.

fn sampleRow(row: u32, rp: RowParams) {
  let vocab = shape.vocab;
  let base = row * vocab;
  let greedy = rp.temperature <= 0.0;
  let pen_on = rp.penalty != 1.0 && shape.hist_cap > 0u;
  if (pen_on) { markSeen(row, base, vocab); }

  let r = Row(base, vocab, base / 4u, (base + vocab + 3u) / 4u,
              select(rp.temperature, 1.0, greedy), rp.penalty, pen_on);
  let st = statsPass(r);
  let m = st.m;
  let log_z = log(st.s);
  if (greedy) {
    finish(row, select(st.arg, 0u, st.arg == NONE), m, m, log_z, 0.0);
    return;
  }
  let u = drawUniform(rp);
  let k_on = rp.top_k > 0u && rp.top_k < vocab;
  let p_on = rp.top_p < 1.0;
  var tau = 0u;   // keep every token
  var zt = st.s;  // their mass
  if (k_on || p_on) {
    // Stage 0 is top-k, stage 1 top-p over the top-k survivors {key ≥ τ_k}; one call site.
    var t = Tail(st.kmin, st.kmax, vocab, st.s, 0u, 0.0);
    for (var stage = select(1u, 0u, k_on); stage < select(1u, 2u, p_on); stage++) {
      let by_mass = stage == 1u;
      t = search(r, by_mass, p_on, rp.top_k, rp.top_p * t.ge_w, t, m);
      t = Tail(t.lo, st.kmax, t.ge_c, t.ge_w, 0u, 0.0);
    }
    tau = t.lo;
    // With top-p the search weighed the kept set; a top-k-only search only counted it.
    if (p_on) { zt = t.ge_w; } else { zt = keptMass(r, tau, m); }
  }
  draw(r, row, tau, zt, u, m, log_z);
}
