// Token sampling over logits [rows, vocab], one workgroup per row, all in one dispatch (or, for
// large vocabularies on GPUs, a row's passes split over several workgroups and merged: see
// "Split rows" below, sample_chunks then sample_merge):
//   repetition penalty (HF) → temperature → top-k → top-p → one Philox draw keyed by
//   (seed, sequence, step) → ids[row] and logprobs[row] = log softmax(z)[id] over the full
//   vocabulary, z = penalty(x) / T (T = 1 for greedy); optionally also the log-prob under the
//   truncated distribution. Semantics and buffer layouts: src/model/sampling.ts.
//
// llvmpipe turns every storage load with a computed address into a per-lane loop, so the design
// counts passes over the row (vec4 loads, four logits each) and never sorts:
//   stats    online max / Σexp / argmax / key range. Greedy and plain temperature sampling stop
//            here, plus one thread walking the one chunk the draw lands in.
//   split    top-k and top-p thresholds: each pass splits the candidate key interval 16 ways
//            and counts, weighs and bounds each side, so the interval shrinks to real keys
//            (1-3 passes over 152k logits for usual logits).
//   gather   once ≤ CAP candidates are left they are copied to workgroup memory in token order
//            (offsets from per-thread counts, so the copy is deterministic); further split
//            passes run there, and if every kept token was copied the draw is made there too.
//   draw     otherwise one pass sums each thread's kept mass in token order and one thread walks
//            the chunk the draw lands in.
// Every pass over storage loads four units before it works through them in token order (the
// stats pass into four running stats, merged at the end): a GPU lane that waits for each load in
// turn spent ~250 µs a step on a 151k vocabulary's stats pass on an H100, 593 units a lane at 64
// lanes a row.
// Thresholds are found on keys: float bits mapped to an order-preserving u32. Workgroups share
// nothing, so a row's result does not depend on the rest of the batch. Barriers only sit under
// uniform control flow: row parameters from read-only storage, or values broadcast with
// workgroupUniformLoad.

//! include sampling_common

const MAX_PASSES = 40u;         // safety net: key-space splits alone finish within 16 passes

override WG: u32 = 64u;
override CAP: u32 = 1024u;      // candidates held in workgroup memory
override KSLOTS: u32 = 32u;     // split rows: top-k candidates a chunk hands on (chunks ≤ CAP / KSLOTS)
const CHUNK_HEAD = 8u;

@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> X4: array<vec4<f32>>;          // logits
@group(0) @binding(2) var<storage, read> params: array<RowParams>;
@group(0) @binding(3) var<storage, read_write> hist_ids: array<u32>;     // [rows, hist_cap]
@group(0) @binding(4) var<storage, read_write> hist_counts: array<u32>;  // [rows]
@group(0) @binding(5) var<storage, read_write> seen: array<atomic<u32>>; // 1 bit per logit
@group(0) @binding(6) var<storage, read_write> out_ids: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_logp: array<f32>;     // [rows] or [2, rows]
// Split rows (sample_chunks → sample_merge): per (row, chunk), CHUNK_HEAD words (the chunk's
// Stats, its candidate count, its top-k threshold key) then KSLOTS candidate z bits and ids.
@group(0) @binding(8) var<storage, read_write> chunk_out: array<u32>;

// Workgroup memory is declared in as few elements as it can be: Deno's GL backend (naga's GLSL
// writer) zero-initializes it element by element in one block, and llvmpipe compiles that block
// in a time that grows faster than its length (one array of 4096 u32 took 100 s, the same bytes
// as 1024 vec4 15 s). So each candidate is one vec2 and the reduction table is vec4s, each
// written whole by one thread (a write to one component may touch the whole vector).
// cand: gathered candidates, (z bits, id) in token order.
var<workgroup> cand: array<vec2<u32>, CAP>;
// table: reduce16's 16 values per thread, thread-major: thread t's at [4t, 4t + 4); also the
// Stats of reduceStats's tree (putStats).
var<workgroup> table: array<vec4<u32>, 4u * WG>;
var<workgroup> chunk_w: array<f32, WG>;
var<workgroup> offs: array<u32, WG>;
var<workgroup> res_f: array<f32, 32>;
var<workgroup> res_u: array<u32, 32>;
var<workgroup> sh_u: array<u32, 4>;
var<workgroup> sh_f: array<f32, 6>;

// This thread's candidates above hi and within [lo, hi], as of the last pass over storage.
var<private> my_above: u32;
var<private> my_in: u32;

fn weight(z: f32, m: f32) -> f32 { return weight4(vec4(z), m).x; }

// Per-thread view of the row: this thread owns the vec4 units [cs, ce). Chunks are contiguous
// so that token order inside a chunk is storage order and chunk order is thread order.
struct Row { base: u32, vocab: u32, cs: u32, ce: u32, temp: f32, pen: f32, pen_on: bool }
struct Unit { z: vec4<f32>, ok: vec4<bool>, id0: u32 }

fn loadUnit(r: Row, u: u32) -> Unit {
  let e = vec4(4u * u) + vec4(0u, 1u, 2u, 3u);
  var x = X4[u];
  if (r.pen_on) {
    // The four logits of a unit share one bitmap word (bits index the whole logits buffer).
    let bits = (vec4(atomicLoad(&seen[u >> 3u])) >> (e & vec4(31u))) & vec4(1u);
    x = select(x, select(x / r.pen, x * r.pen, x < vec4(0.0)), bits == vec4(1u));
  }
  return Unit(x / r.temp, (e >= vec4(r.base)) & (e < vec4(r.base + r.vocab)), 4u * u - r.base);
}

/**
 * Units u .. u + 3, loaded before any is used: the passes over storage take four at a time and
 * work through them in token order, so a lane does not wait for each load in turn.
 */
fn loadQuad(r: Row, u: u32) -> array<Unit, 4> {
  return array<Unit, 4>(loadUnit(r, u), loadUnit(r, u + 1u), loadUnit(r, u + 2u), loadUnit(r, u + 3u));
}

// ---------------------------------------------------------------------------------------------
// Repetition penalty: mark each seen id in the bitmap. Bits are idempotent, so repeated ids in
// the history need no de-duplication. Only this row's bits are touched: rows share edge words.

// The bits of logits [e0, e1) (a row, or one chunk of it: the split kernels' workgroups each mark
// their own chunk, so no two touch the same bit).
fn markSeen(row: u32, base: u32, e0: u32, e1: u32, lid: u32) {
  let last = (max(e1, e0 + 1u) - 1u) >> 5u;
  for (var w = (e0 >> 5u) + lid; w <= last && e1 > e0; w += WG) {
    let lo = max(e0, w * 32u) - w * 32u;
    let hi = min(e1, w * 32u + 32u) - w * 32u;
    if (hi - lo == 32u) { atomicStore(&seen[w], 0u); } else {
      atomicAnd(&seen[w], ~(((1u << (hi - lo)) - 1u) << lo));
    }
  }
  storageBarrier();
  let n = min(hist_counts[row], shape.hist_cap);
  for (var j = lid; j < n; j += WG) {
    let id = hist_ids[row * shape.hist_cap + j];
    if (id < shape.vocab) {
      let e = base + id;
      if (e >= e0 && e < e1) { atomicOr(&seen[e >> 5u], 1u << (e & 31u)); }
    }
  }
  storageBarrier();
}

// ---------------------------------------------------------------------------------------------
// Stats pass: online softmax (running max m, Σexp(z − m)), argmax (lowest id among ties) and the
// key range, one vec4 at a time.

struct Stats { m: f32, s: f32, arg: u32, kmin: u32, kmax: u32 }

fn statsPass(r: Row) -> Stats {
  // Four running stats, one per unit of a quad, merged at the end (statsMerge keeps the lowest id
  // among tied maxima): one running max and sum made the pass a chain of dependent updates, an
  // exp deep each, of (ce − cs) steps.
  var s0 = Stats(ninf(), 0.0, NONE, NONE, 0u);
  var s1 = s0;
  var s2 = s0;
  var s3 = s0;
  var u = r.cs;
  for (; u + 4u <= r.ce; u += 4u) {
    let t = loadQuad(r, u);
    statsUnit(&s0, t[0]);
    statsUnit(&s1, t[1]);
    statsUnit(&s2, t[2]);
    statsUnit(&s3, t[3]);
  }
  for (; u < r.ce; u++) { statsUnit(&s0, loadUnit(r, u)); }
  return statsMerge(statsMerge(s0, s1), statsMerge(s2, s3));
}

// One unit of the stats pass, in token order.
fn statsUnit(stp: ptr<function, Stats>, t: Unit) {
  var st = *stp;
  let z = select(vec4(ninf()), t.z, t.ok);
  let k = keyOf4(t.z);
  st.kmin = min(st.kmin, min(min(select(NONE, k.x, t.ok.x), select(NONE, k.y, t.ok.y)),
                             min(select(NONE, k.z, t.ok.z), select(NONE, k.w, t.ok.w))));
  st.kmax = max(st.kmax, max(max(select(0u, k.x, t.ok.x), select(0u, k.y, t.ok.y)),
                             max(select(0u, k.z, t.ok.z), select(0u, k.w, t.ok.w))));
  let mu = max(max(z.x, z.y), max(z.z, z.w));
  if (mu > st.m) {
    // Strictly greater: an earlier unit keeps a tie; within the unit the first lane wins.
    st.arg = t.id0 + select(select(select(3u, 2u, z.z == mu), 1u, z.y == mu), 0u, z.x == mu);
    st.s *= exp(st.m - mu);
    st.m = mu;
  }
  if (bitcast<u32>(st.m) != NEG_INF_BITS) { st.s += dot(weight4(z, st.m), vec4(1.0)); }
  *stp = st;
}

fn statsMerge(a: Stats, b: Stats) -> Stats {
  let m = max(a.m, b.m);
  let s = select(a.s * exp(a.m - m), 0.0, a.s == 0.0) + select(b.s * exp(b.m - m), 0.0, b.s == 0.0);
  let arg = select(a.arg, b.arg, b.m > a.m || (b.m == a.m && b.arg < a.arg));
  return Stats(m, s, arg, min(a.kmin, b.kmin), max(a.kmax, b.kmax));
}

// Thread t's Stats in the table: (m, s, arg, kmin) at 4t, kmax at 4t + 1.
fn putStats(t: u32, st: Stats) {
  table[4u * t] = vec4(bitcast<u32>(st.m), bitcast<u32>(st.s), st.arg, st.kmin);
  table[4u * t + 1u] = vec4(st.kmax, 0u, 0u, 0u);
}
fn statsOf(a: vec4<u32>, b: vec4<u32>) -> Stats {
  return Stats(bitcast<f32>(a.x), bitcast<f32>(a.y), a.z, a.w, b.x);
}
fn getStats(t: u32) -> Stats { return statsOf(table[4u * t], table[4u * t + 1u]); }

fn reduceStats(st: Stats, lid: u32) -> Stats {
  workgroupBarrier(); // the table may still be read by an earlier reduce
  putStats(lid, st);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { putStats(lid, statsMerge(getStats(lid), getStats(lid + s))); }
    workgroupBarrier();
  }
  let a = workgroupUniformLoad(&table[0]);
  return statsOf(a, workgroupUniformLoad(&table[1]));
}

// ---------------------------------------------------------------------------------------------
// Split pass: 16 split keys s_0 = lo < s_1 < … ≤ hi. Over the candidates in [lo, hi] each
// thread counts and weighs those ≥ s_j, and takes the min key of those ≥ s_j and the max key
// of those < s_j. The accumulators are unrolled as vec4s: constant-indexed, they stay in
// registers, and ALU work is nearly free on llvmpipe next to loads.

struct Splits { a: vec4<u32>, b: vec4<u32>, c: vec4<u32>, d: vec4<u32>, n: u32 }

struct Acc {
  ca: vec4<f32>, cb: vec4<f32>, cc: vec4<f32>, cd: vec4<f32>,
  wa: vec4<f32>, wb: vec4<f32>, wc: vec4<f32>, wd: vec4<f32>,
  na: vec4<u32>, nb: vec4<u32>, nc: vec4<u32>, nd: vec4<u32>,
  xa: vec4<u32>, xb: vec4<u32>, xc: vec4<u32>, xd: vec4<u32>,
  above: u32, // candidates above hi (storage passes keep per-thread counts for the gather)
}

fn newAcc() -> Acc {
  let z = vec4(0.0); let n = vec4(NONE); let x = vec4(0u);
  return Acc(z, z, z, z, z, z, z, z, n, n, n, n, x, x, x, x, 0u);
}

// Value-space splits follow the shape of the logits; key-space splits (linear in the float bits)
// guarantee a 16× narrower key range per pass whatever the shape. Both are made strictly
// increasing and ≤ hi; unused slots hold NONE, above every candidate.
fn makeSplits(lo: u32, hi: u32, by_value: bool) -> Splits {
  var s = array<u32, 16>(lo, NONE, NONE, NONE, NONE, NONE, NONE, NONE,
                         NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE);
  var n = 1u;
  let a = valueOfKey(lo);
  let b = valueOfKey(hi);
  let value_ok = by_value && abs(a) <= 1.0e38 && abs(b) <= 1.0e38;
  let step = (hi - lo) / 16u + 1u;
  for (var j = 1u; j < 16u; j++) {
    var k: u32;
    if (value_ok) {
      let t = f32(j) / 16.0;
      k = max(keyOf(a * (1.0 - t) + b * t), s[j - 1u] + 1u);
    } else {
      if (j * step > hi - lo) { break; }
      k = lo + j * step;
    }
    if (k > hi) { break; }
    s[j] = k;
    n = j + 1u;
  }
  return Splits(vec4(s[0], s[1], s[2], s[3]), vec4(s[4], s[5], s[6], s[7]),
                vec4(s[8], s[9], s[10], s[11]), vec4(s[12], s[13], s[14], s[15]), n);
}

fn minIf(a: vec4<u32>, k: vec4<u32>, c: vec4<bool>) -> vec4<u32> { return select(a, min(a, k), c); }
fn maxIf(a: vec4<u32>, k: vec4<u32>, c: vec4<bool>) -> vec4<u32> { return select(a, max(a, k), c); }

fn accAdd(acc: ptr<function, Acc>, sp: Splits, k: u32, w: f32) {
  let kv = vec4(k); let one = vec4(1.0); let wv = vec4(w); let zero = vec4(0.0);
  let ga = kv >= sp.a; let gb = kv >= sp.b; let gc = kv >= sp.c; let gd = kv >= sp.d;
  (*acc).ca += select(zero, one, ga); (*acc).cb += select(zero, one, gb);
  (*acc).cc += select(zero, one, gc); (*acc).cd += select(zero, one, gd);
  (*acc).wa += select(zero, wv, ga); (*acc).wb += select(zero, wv, gb);
  (*acc).wc += select(zero, wv, gc); (*acc).wd += select(zero, wv, gd);
  (*acc).na = minIf((*acc).na, kv, ga); (*acc).nb = minIf((*acc).nb, kv, gb);
  (*acc).nc = minIf((*acc).nc, kv, gc); (*acc).nd = minIf((*acc).nd, kv, gd);
  (*acc).xa = maxIf((*acc).xa, kv, !ga); (*acc).xb = maxIf((*acc).xb, kv, !gb);
  (*acc).xc = maxIf((*acc).xc, kv, !gc); (*acc).xd = maxIf((*acc).xd, kv, !gd);
}

// exp() costs about as much as a load on llvmpipe: masses are computed only when a later
// decision reads them (need_mass) and only for units with a candidate in [lo, hi].
fn storagePass(r: Row, sp: Splits, lo: u32, hi: u32, m: f32, need_mass: bool) -> Acc {
  var acc = newAcc();
  var u = r.cs;
  for (; u + 4u <= r.ce; u += 4u) {
    let t = loadQuad(r, u);
    storageUnit(&acc, t[0], sp, lo, hi, m, need_mass);
    storageUnit(&acc, t[1], sp, lo, hi, m, need_mass);
    storageUnit(&acc, t[2], sp, lo, hi, m, need_mass);
    storageUnit(&acc, t[3], sp, lo, hi, m, need_mass);
  }
  for (; u < r.ce; u++) { storageUnit(&acc, loadUnit(r, u), sp, lo, hi, m, need_mass); }
  return acc;
}

// One unit of a storage pass, in token order.
fn storageUnit(acc: ptr<function, Acc>, t: Unit, sp: Splits, lo: u32, hi: u32, m: f32,
               need_mass: bool) {
  let k = keyOf4(t.z);
  let inside = t.ok & (k >= vec4(lo)) & (k <= vec4(hi));
  (*acc).above += dot(select(vec4(0u), vec4(1u), t.ok & (k > vec4(hi))), vec4(1u));
  if (any(inside)) {
    var w = vec4(0.0);
    if (need_mass) { w = weight4(t.z, m); }
    if (inside.x) { accAdd(acc, sp, k.x, w.x); }
    if (inside.y) { accAdd(acc, sp, k.y, w.y); }
    if (inside.z) { accAdd(acc, sp, k.z, w.z); }
    if (inside.w) { accAdd(acc, sp, k.w, w.w); }
  }
}

fn memoryPass(lid: u32, n: u32, sp: Splits, lo: u32, hi: u32, m: f32, need_mass: bool) -> Acc {
  var acc = newAcc();
  for (var i = lid; i < n; i += WG) {
    let z = bitcast<f32>(cand[i].x);
    let k = keyOf(z);
    if (k >= lo && k <= hi) { accAdd(&acc, sp, k, select(0.0, weight(z, m), need_mass)); }
  }
  return acc;
}

// Folds 16 values over the workgroup (kind 0: f32 sum, 1: u32 min, 2: u32 max); threads 0..15
// each fold one row of the table, which costs fewer loads and barriers than a tree.
fn reduce16(lid: u32, a: vec4<u32>, b: vec4<u32>, c: vec4<u32>, d: vec4<u32>, kind: u32) -> u32 {
  table[4u * lid] = a;
  table[4u * lid + 1u] = b;
  table[4u * lid + 2u] = c;
  table[4u * lid + 3u] = d;
  workgroupBarrier();
  var v = 0u;
  if (lid < 16u) {
    let q = lid / 4u;
    let j = lid % 4u;
    var f = 0.0;
    v = select(0u, NONE, kind == 1u);
    for (var i = 0u; i < WG; i++) {
      let x = table[4u * i + q][j];
      if (kind == 0u) { f += bitcast<f32>(x); }
      else if (kind == 1u) { v = min(v, x); }
      else { v = max(v, x); }
    }
    if (kind == 0u) { v = bitcast<u32>(f); }
  }
  workgroupBarrier(); // the next round overwrites the table
  return v;
}

// res_f[0..16): counts ≥ s_j; res_f[16..32): masses ≥ s_j; res_u[0..16): min key ≥ s_j;
// res_u[16..32): max key < s_j.
fn reduceAcc(acc: Acc, lid: u32) {
  workgroupBarrier(); // the table may still be read by the previous broadcast
  let c = reduce16(lid, bitcast<vec4<u32>>(acc.ca), bitcast<vec4<u32>>(acc.cb),
                   bitcast<vec4<u32>>(acc.cc), bitcast<vec4<u32>>(acc.cd), 0u);
  let w = reduce16(lid, bitcast<vec4<u32>>(acc.wa), bitcast<vec4<u32>>(acc.wb),
                   bitcast<vec4<u32>>(acc.wc), bitcast<vec4<u32>>(acc.wd), 0u);
  let n = reduce16(lid, acc.na, acc.nb, acc.nc, acc.nd, 1u);
  let x = reduce16(lid, acc.xa, acc.xb, acc.xc, acc.xd, 2u);
  if (lid < 16u) {
    res_f[lid] = bitcast<f32>(c); res_f[16u + lid] = bitcast<f32>(w);
    res_u[lid] = n; res_u[16u + lid] = x;
  }
  workgroupBarrier();
}

fn pick16(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>, j: u32) -> f32 {
  if (j >= 16u) { return 0.0; }
  return select(select(a, b, j >= 4u), select(c, d, j >= 12u), j >= 8u)[j & 3u];
}

// ---------------------------------------------------------------------------------------------
// Gather: copy the candidates with lo ≤ key ≤ hi to cand in token order. Each thread writes at
// the exclusive prefix of the per-thread counts its last storage pass left (`mine`), so the
// copy is deterministic and needs no atomics. The caller guarantees at most CAP candidates.

struct Mem { on: bool, n: u32, lo: u32, hi: u32 } // cand holds every candidate in [lo, hi]

fn gather(r: Row, lid: u32, lo: u32, hi: u32, mine: u32) -> Mem {
  offs[lid] = mine;
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var t = 0u; t < WG; t++) { let c = offs[t]; offs[t] = acc; acc += c; }
    sh_u[0] = min(acc, CAP);
  }
  let n = workgroupUniformLoad(&sh_u[0]);
  var slot = offs[lid];
  var u = r.cs;
  for (; u + 4u <= r.ce; u += 4u) {
    let t = loadQuad(r, u);
    gatherUnit(t[0], lo, hi, &slot);
    gatherUnit(t[1], lo, hi, &slot);
    gatherUnit(t[2], lo, hi, &slot);
    gatherUnit(t[3], lo, hi, &slot);
  }
  for (; u < r.ce; u++) { gatherUnit(loadUnit(r, u), lo, hi, &slot); }
  workgroupBarrier();
  return Mem(true, n, lo, hi);
}

// One unit of the gather, in token order: its candidates into cand from *slot on.
fn gatherUnit(t: Unit, lo: u32, hi: u32, slot: ptr<function, u32>) {
  let k = keyOf4(t.z);
  let inside = t.ok & (k >= vec4(lo)) & (k <= vec4(hi));
  for (var c = 0u; c < 4u; c++) {
    if (inside[c] && *slot < CAP) {
      cand[*slot] = vec2(bitcast<u32>(t.z[c]), t.id0 + c);
      *slot += 1u;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Threshold search: the largest key τ whose tail {key ≥ τ} reaches the goal count (top-k) or
// mass (top-p). Invariants: tail(≥ lo) reaches the goal, tail(> hi) does not; lo and hi are
// keys of real candidates, so the search ends when they meet.

struct Tail { lo: u32, hi: u32, ge_c: f32, ge_w: f32, ab_c: f32, ab_w: f32 }
struct Found { tail: Tail, mem: Mem, counted: bool }

// Thread 0: picks the highest split whose tail still reaches the goal (its bin is then
// non-empty) and leaves the narrowed tail in sh_u / sh_f; returns the split.
fn decide(t: Tail, n: u32, by_mass: bool, goal: f32) -> u32 {
  var j = 0u;
  for (var i = 1u; i < n; i++) {
    if (select(t.ab_c + res_f[i], t.ab_w + res_f[16u + i], by_mass) >= goal) { j = i; }
  }
  sh_u[1] = j; sh_u[2] = res_u[j]; sh_u[3] = t.hi;
  sh_f[0] = t.ab_c + res_f[j]; sh_f[1] = t.ab_w + res_f[16u + j];
  sh_f[2] = t.ab_c; sh_f[3] = t.ab_w;
  if (j + 1u < n) {
    sh_u[3] = res_u[17u + j];
    sh_f[2] = t.ab_c + res_f[j + 1u]; sh_f[3] = t.ab_w + res_f[17u + j];
  }
  return j;
}

// need_mass: keep tail masses (top-p reads them); a top-k-only search skips every exp().
fn search(r: Row, lid: u32, by_mass: bool, need_mass: bool, goal: f32, t0: Tail, mem0: Mem,
          counted0: bool, m: f32) -> Found {
  var t = t0; var mem = mem0;
  var counted = counted0;  // my_above / my_in describe the current [lo, hi]
  var by_value = true;
  for (var it = 0u; it < MAX_PASSES && t.lo != t.hi; it++) {
    let in_mem = mem.on && mem.lo <= t.lo && t.hi <= mem.hi;
    let fits_all = t.ge_c <= f32(CAP);
    if (!in_mem && counted && (fits_all || t.ge_c - t.ab_c <= f32(CAP))) {
      // Copy everything above lo when it fits, so later stages and the draw can stay in memory.
      let hi = select(t.hi, NONE, fits_all);
      mem = gather(r, lid, t.lo, hi, select(my_in, my_in + my_above, fits_all));
      continue;
    }
    let sp = makeSplits(t.lo, t.hi, by_value);
    var acc: Acc;
    if (in_mem) { acc = memoryPass(lid, mem.n, sp, t.lo, t.hi, m, need_mass); } else {
      acc = storagePass(r, sp, t.lo, t.hi, m, need_mass);
    }
    reduceAcc(acc, lid);
    if (lid == 0u) { decide(t, sp.n, by_mass, goal); }
    let before_n = t.ge_c - t.ab_c;
    let j = workgroupUniformLoad(&sh_u[1]);
    t = Tail(workgroupUniformLoad(&sh_u[2]), workgroupUniformLoad(&sh_u[3]),
             workgroupUniformLoad(&sh_f[0]), workgroupUniformLoad(&sh_f[1]),
             workgroupUniformLoad(&sh_f[2]), workgroupUniformLoad(&sh_f[3]));
    if (!in_mem) {
      let ge = u32(pick16(acc.ca, acc.cb, acc.cc, acc.cd, j));
      let next = u32(pick16(acc.ca, acc.cb, acc.cc, acc.cd, select(16u, j + 1u, j + 1u < sp.n)));
      my_above = acc.above + next;
      my_in = ge - next;
    }
    counted = !in_mem;
    // Value splits again unless the last one kept more than a quarter of the candidates.
    by_value = !(by_value && 4.0 * (t.ge_c - t.ab_c) > before_n);
  }
  return Found(t, mem, counted);
}

// The warpers' thresholds: stage 0 is top-k, stage 1 top-p over the top-k survivors {key ≥ τ_k},
// from the candidates f0 describes (a whole row's, or the split rows' gathered in memory); the
// result's tail.lo is τ. Each entry point has one call site of search through here: llvmpipe
// inlines every call and pays for each copy's coroutine state in every workgroup, run or not.
fn warp(r: Row, lid: u32, rp: RowParams, f0: Found, kmax: u32, m: f32) -> Found {
  let k_on = rp.top_k > 0u && rp.top_k < shape.vocab;
  let p_on = rp.top_p < 1.0;
  var f = f0;
  for (var stage = select(1u, 0u, k_on); stage < select(1u, 2u, p_on); stage++) {
    let by_mass = stage == 1u;
    let goal = select(f32(rp.top_k), rp.top_p * f.tail.ge_w, by_mass);
    f = search(r, lid, by_mass, p_on, goal, f.tail, f.mem, f.counted, m);
    if (f.counted) { my_in += my_above; my_above = 0u; }
    f.tail = Tail(f.tail.lo, kmax, f.tail.ge_c, f.tail.ge_w, 0.0, 0.0);
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// Output and the draw.

struct Pick { id: u32, z: f32 }

fn finish(row: u32, p: Pick, m: f32, log_z: f32, log_zt: f32) {
  out_ids[row] = p.id;
  out_logp[row] = p.z - m - log_z;
  if ((shape.flags & FLAG_TRUNCATED) != 0u) { out_logp[shape.rows + row] = p.z - m - log_zt; }
  if ((shape.flags & FLAG_APPEND) != 0u) {
    let c = hist_counts[row];
    if (c < shape.hist_cap) { hist_ids[row * shape.hist_cap + c] = p.id; }
    hist_counts[row] = c + 1u;
  }
}

// Thread 0, when cand holds every kept token (key ≥ tau) in token order: the draw is a walk.
fn drawMemory(row: u32, n: u32, tau: u32, u: f32, m: f32, log_z: f32) {
  var zt = 0.0;
  for (var i = 0u; i < n; i++) {
    let z = bitcast<f32>(cand[i].x);
    if (keyOf(z) >= tau) { zt += weight(z, m); }
  }
  let goal = u * zt;
  var acc = 0.0;
  var pick = Pick(0u, ninf()); // every kept logit −inf: id 0, log-prob NaN
  for (var i = 0u; i < n; i++) {
    let z = bitcast<f32>(cand[i].x);
    let w = select(0.0, weight(z, m), keyOf(z) >= tau);
    if (w > 0.0) {
      pick = Pick(cand[i].y, z); // rounding past the end keeps the last kept token
      acc += w;
      if (acc > goal) { break; }
    }
  }
  finish(row, pick, m, log_z, log(zt));
}

// The kept set {key ≥ tau} is not in workgroup memory: every thread sums its chunk's kept mass
// in token order (unless the stats pass left it in chunk_w), thread 0 finds the chunk the draw
// lands in, and that chunk's owner walks it. The threads' chunks are the whole row (whole < 0:
// the kept mass is their sum), or one chunk of a split row (sample_merge): the draw's goal in the
// row's mass `whole` less the mass `before` that chunk.
fn drawChunks(r: Row, row: u32, lid: u32, tau: u32, sum_chunks: bool, u: f32, m: f32, log_z: f32,
              before: f32, whole: f32) {
  if (sum_chunks) {
    var w = 0.0;
    var i = r.cs;
    for (; i + 4u <= r.ce; i += 4u) {
      let t = loadQuad(r, i);
      w += keptMass(t[0], tau, m);
      w += keptMass(t[1], tau, m);
      w += keptMass(t[2], tau, m);
      w += keptMass(t[3], tau, m);
    }
    for (; i < r.ce; i++) { w += keptMass(loadUnit(r, i), tau, m); }
    chunk_w[lid] = w;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var zt = 0.0;
    for (var t = 0u; t < WG; t++) { zt += chunk_w[t]; }
    var goal = u * zt;
    if (whole >= 0.0) { goal = u * whole - before; zt = whole; }
    var acc = 0.0; var sel = 0u; var rest = 0.0;
    for (var t = 0u; t < WG; t++) {
      let w = chunk_w[t];
      if (w > 0.0) {
        sel = t; rest = goal - acc;
        acc += w;
        if (acc > goal) { break; }
      }
    }
    sh_u[0] = sel; sh_f[4] = rest; sh_f[5] = zt;
  }
  let sel = workgroupUniformLoad(&sh_u[0]);
  if (lid != sel) { return; }
  let rest = sh_f[4]; let log_zt = log(sh_f[5]);
  var acc = 0.0;
  var pick = Pick(0u, ninf()); // every logit −inf: id 0, log-prob NaN
  var i = r.cs;
  for (; i + 4u <= r.ce; i += 4u) {
    let t = loadQuad(r, i);
    if (walkUnit(t[0], tau, m, rest, &acc, &pick) || walkUnit(t[1], tau, m, rest, &acc, &pick) ||
        walkUnit(t[2], tau, m, rest, &acc, &pick) || walkUnit(t[3], tau, m, rest, &acc, &pick)) {
      finish(row, pick, m, log_z, log_zt);
      return;
    }
  }
  for (; i < r.ce; i++) {
    if (walkUnit(loadUnit(r, i), tau, m, rest, &acc, &pick)) {
      finish(row, pick, m, log_z, log_zt);
      return;
    }
  }
  finish(row, pick, m, log_z, log_zt);
}

// The kept mass of a unit: its tokens with key ≥ tau.
fn keptMass(t: Unit, tau: u32, m: f32) -> f32 {
  return dot(select(vec4(0.0), weight4(t.z, m), t.ok & (keyOf4(t.z) >= vec4(tau))), vec4(1.0));
}

// One unit of the draw's walk, in token order: true once the mass walked passes rest (the pick
// is then the draw).
fn walkUnit(t: Unit, tau: u32, m: f32, rest: f32, acc: ptr<function, f32>,
            pick: ptr<function, Pick>) -> bool {
  let w = select(vec4(0.0), weight4(t.z, m), t.ok & (keyOf4(t.z) >= vec4(tau)));
  for (var c = 0u; c < 4u; c++) {
    if (w[c] > 0.0) {
      *pick = Pick(t.id0 + c, t.z[c]); // rounding past the chunk's end keeps its last kept token
      *acc += w[c];
      if (*acc > rest) { return true; }
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Entry points.

@compute @workgroup_size(WG)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= shape.rows) { return; }
  let rp = params[row];
  let vocab = shape.vocab;
  let base = row * vocab;
  let greedy = rp.temperature <= 0.0;
  let pen_on = rp.penalty != 1.0 && shape.hist_cap > 0u;
  if (pen_on) { markSeen(row, base, base, base + vocab, lid); }

  let u0 = base / 4u;
  let u1 = (base + vocab + 3u) / 4u;
  let per = (u1 - u0 + WG - 1u) / WG;
  let cs = min(u0 + lid * per, u1);
  let ce = min(cs + per, u1);
  let r = Row(base, vocab, cs, ce, select(rp.temperature, 1.0, greedy), rp.penalty, pen_on);

  let st = statsPass(r);
  let tot = reduceStats(st, lid);
  let m = tot.m;
  let log_z = log(tot.s);
  if (greedy) {
    if (lid == 0u) { finish(row, Pick(select(tot.arg, 0u, tot.arg == NONE), m), m, log_z, 0.0); }
    return;
  }
  let u = drawUniform(rp);
  let k_on = rp.top_k > 0u && rp.top_k < vocab;
  let p_on = rp.top_p < 1.0;
  var tau = 0u; // keep every token
  var mem = Mem(false, 0u, 0u, 0u);
  if (k_on || p_on) {
    // Every thread's candidates are its valid logits.
    my_above = 0u;
    my_in = validIn(r);
    let f = warp(r, lid, rp, Found(Tail(tot.kmin, tot.kmax, f32(vocab), tot.s, 0.0, 0.0), mem, true),
                 tot.kmax, m);
    tau = f.tail.lo;
    mem = f.mem;
  } else {
    // Plain temperature sampling: the stats pass already has each chunk's mass.
    chunk_w[lid] = select(st.s * exp(st.m - m), 0.0, st.s == 0.0);
  }
  if (mem.on && mem.lo <= tau && mem.hi == NONE) {
    if (lid == 0u) { drawMemory(row, mem.n, tau, u, m, log_z); }
  } else {
    drawChunks(r, row, lid, tau, k_on || p_on, u, m, log_z, 0.0, -1.0);
  }
}

// ---------------------------------------------------------------------------------------------
// Split rows: a row's stats pass and top-k search spread over shape.chunks workgroups
// (sample_chunks), then one workgroup a row merges them and draws (sample_merge). One workgroup
// of WG threads walks a 151,936-word row in ~600 units a lane; split, each lane walks its chunk's
// share and the merge walks one chunk. Same semantics as sample: greedy and plain temperature
// rows need only the chunks' stats (and one chunk's walk); top-k rows with top_k ≤ KSLOTS draw
// from the union of each chunk's top-k (which holds the row's top-k, ties included); any other
// row (top-p alone, a larger k, a chunk whose ties overflow KSLOTS) searches the whole row as
// sample does, from the merged stats.

// Chunk c of a row's vec4 units [u0, u1): contiguous, in order, ⌈units / chunks⌉ each (the last
// ones may be shorter or empty).
fn chunkUnits(u0: u32, u1: u32, c: u32) -> vec2<u32> {
  let per = (u1 - u0 + shape.chunks - 1u) / shape.chunks;
  let c0 = min(u0 + c * per, u1);
  return vec2(c0, min(c0 + per, u1));
}

// This thread's share of units [c0, c1), as sample splits a whole row.
fn rowPart(base: u32, vocab: u32, c0: u32, c1: u32, lid: u32, temp: f32, pen: f32, pen_on: bool) -> Row {
  let per = (c1 - c0 + WG - 1u) / WG;
  let cs = min(c0 + lid * per, c1);
  return Row(base, vocab, cs, min(cs + per, c1), temp, pen, pen_on);
}

// Valid logits in this thread's units.
fn validIn(r: Row) -> u32 {
  return u32(max(i32(min(4u * r.ce, r.base + r.vocab)) - i32(max(4u * r.cs, r.base)), 0));
}

// Tokens of this thread's units with key ≥ tau (the gather's per-thread count).
fn countAtLeast(r: Row, tau: u32) -> u32 {
  var n = 0u;
  for (var u = r.cs; u < r.ce; u++) {
    let t = loadUnit(r, u);
    n += dot(select(vec4(0u), vec4(1u), t.ok & (keyOf4(t.z) >= vec4(tau))), vec4(1u));
  }
  return n;
}

@compute @workgroup_size(WG)
fn sample_chunks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
  let q = wid.x + wid.y * nwg.x; // (row, chunk) = (q / chunks, q % chunks)
  if (q >= shape.rows * shape.chunks) { return; }
  let row = q / shape.chunks;
  let rp = params[row];
  let vocab = shape.vocab;
  let base = row * vocab;
  let greedy = rp.temperature <= 0.0;
  let pen_on = rp.penalty != 1.0 && shape.hist_cap > 0u;
  let c = chunkUnits(base / 4u, (base + vocab + 3u) / 4u, q % shape.chunks);
  if (pen_on) { markSeen(row, base, max(4u * c.x, base), min(4u * c.y, base + vocab), lid); }
  let r = rowPart(base, vocab, c.x, c.y, lid, select(rp.temperature, 1.0, greedy), rp.penalty, pen_on);
  let tot = reduceStats(statsPass(r), lid);
  let o = q * (CHUNK_HEAD + 2u * KSLOTS);
  if (lid == 0u) {
    chunk_out[o] = bitcast<u32>(tot.m); chunk_out[o + 1u] = bitcast<u32>(tot.s);
    chunk_out[o + 2u] = tot.arg; chunk_out[o + 3u] = tot.kmin; chunk_out[o + 4u] = tot.kmax;
    chunk_out[o + 5u] = NONE; // no candidates handed on
    chunk_out[o + 6u] = NONE;
  }
  if (greedy || rp.top_k == 0u || rp.top_k >= vocab || rp.top_k > KSLOTS) { return; }
  // The chunk's top-k threshold τ (all of it when it holds no more than k tokens), then every
  // token with key ≥ τ in token order, as the sampler's gather copies them.
  let nv = u32(max(i32(min(4u * c.y, base + vocab)) - i32(max(4u * c.x, base)), 0));
  var tau = tot.kmin;
  var mem = Mem(false, 0u, 0u, 0u);
  if (nv > rp.top_k) {
    my_above = 0u;
    my_in = validIn(r);
    let f = search(r, lid, false, false, f32(rp.top_k), Tail(tot.kmin, tot.kmax, f32(nv), tot.s, 0.0, 0.0),
                   mem, true, tot.m);
    tau = f.tail.lo;
    mem = f.mem;
  }
  if (!(mem.on && mem.lo <= tau && mem.hi == NONE)) { mem = gather(r, lid, tau, NONE, countAtLeast(r, tau)); }
  // Hand on cand's tokens with key ≥ τ, in order: each thread counts a slice, offsets by prefix.
  let per = (mem.n + WG - 1u) / WG;
  let i0 = min(lid * per, mem.n);
  let i1 = min(i0 + per, mem.n);
  var mine = 0u;
  for (var i = i0; i < i1; i++) { mine += select(0u, 1u, keyOf(bitcast<f32>(cand[i].x)) >= tau); }
  workgroupBarrier(); // gather's offsets may still be read
  offs[lid] = mine;
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var t = 0u; t < WG; t++) { let n = offs[t]; offs[t] = acc; acc += n; }
    chunk_out[o + 5u] = acc; // > KSLOTS: ties overflowed; the merge searches the whole row
    chunk_out[o + 6u] = tau;
  }
  workgroupBarrier();
  var slot = offs[lid];
  for (var i = i0; i < i1; i++) {
    let z = cand[i];
    if (keyOf(bitcast<f32>(z.x)) >= tau) {
      if (slot < KSLOTS) {
        chunk_out[o + CHUNK_HEAD + slot] = z.x;
        chunk_out[o + CHUNK_HEAD + KSLOTS + slot] = z.y;
      }
      slot += 1u;
    }
  }
}

@compute @workgroup_size(WG)
fn sample_merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= shape.rows) { return; }
  let rp = params[row];
  let vocab = shape.vocab;
  let base = row * vocab;
  let greedy = rp.temperature <= 0.0;
  let pen_on = rp.penalty != 1.0 && shape.hist_cap > 0u; // the chunks marked the history
  let stride = CHUNK_HEAD + 2u * KSLOTS;
  let o0 = row * shape.chunks * stride;
  var st = Stats(ninf(), 0.0, NONE, NONE, 0u);
  var n_c = 0u;
  if (lid < shape.chunks) {
    let o = o0 + lid * stride;
    st = Stats(bitcast<f32>(chunk_out[o]), bitcast<f32>(chunk_out[o + 1u]), chunk_out[o + 2u],
               chunk_out[o + 3u], chunk_out[o + 4u]);
    n_c = chunk_out[o + 5u];
  }
  let tot = reduceStats(st, lid);
  let m = tot.m;
  let log_z = log(tot.s);
  if (greedy) {
    if (lid == 0u) { finish(row, Pick(select(tot.arg, 0u, tot.arg == NONE), m), m, log_z, 0.0); }
    return;
  }
  let u = drawUniform(rp);
  let k_on = rp.top_k > 0u && rp.top_k < vocab;
  let p_on = rp.top_p < 1.0;
  let u0 = base / 4u;
  let u1 = (base + vocab + 3u) / 4u;
  let temp = rp.temperature;
  var r = rowPart(base, vocab, u0, u1, lid, temp, rp.penalty, pen_on);
  var tau = 0u;
  var mem = Mem(false, 0u, 0u, 0u);
  var before = 0.0;
  var whole = -1.0;
  if (!k_on && !p_on) {
    // Plain temperature: the chunk the draw lands in, by the chunks' masses, then a walk of it.
    chunk_w[lid] = select(st.s * exp(st.m - m), 0.0, st.s == 0.0);
    workgroupBarrier();
    if (lid == 0u) {
      let goal = u * tot.s;
      var acc = 0.0; var sel = 0u; var prior = 0.0;
      for (var t = 0u; t < shape.chunks; t++) {
        let w = chunk_w[t];
        if (w > 0.0) {
          sel = t; prior = acc;
          acc += w;
          if (acc > goal) { break; }
        }
      }
      sh_u[0] = sel; sh_f[4] = prior;
    }
    let sel = workgroupUniformLoad(&sh_u[0]);
    before = workgroupUniformLoad(&sh_f[4]);
    whole = tot.s;
    let c = chunkUnits(u0, u1, sel);
    r = rowPart(base, vocab, c.x, c.y, lid, temp, rp.penalty, pen_on);
  } else {
    // Top-k within KSLOTS and no chunk overflowed: the chunks' candidates, in token order, are
    // a superset of the top-k set; the search then runs in workgroup memory. Else the whole
    // row, as sample searches it.
    offs[lid] = select(0u, n_c, lid < shape.chunks);
    workgroupBarrier();
    if (lid == 0u) {
      var acc = 0u; var fits = k_on && rp.top_k <= KSLOTS;
      for (var t = 0u; t < shape.chunks; t++) {
        let n = offs[t]; offs[t] = acc; acc += n;
        fits = fits && n <= KSLOTS;
      }
      sh_u[0] = select(NONE, acc, fits);
    }
    let n_all = workgroupUniformLoad(&sh_u[0]);
    var t0 = Tail(tot.kmin, tot.kmax, f32(vocab), tot.s, 0.0, 0.0);
    var counted = true;
    if (n_all != NONE) {
      var lo = NONE;
      if (lid < shape.chunks && n_c > 0u) {
        let o = o0 + lid * stride;
        lo = chunk_out[o + 6u];
        for (var i = 0u; i < n_c; i++) {
          cand[offs[lid] + i] = vec2(chunk_out[o + CHUNK_HEAD + i], chunk_out[o + CHUNK_HEAD + KSLOTS + i]);
        }
      }
      workgroupBarrier();
      // The candidates' lowest key and their mass (top-p's goal when the top-k stage is done at once).
      var w = 0.0;
      for (var i = lid; i < n_all; i += WG) { w += weight(bitcast<f32>(cand[i].x), m); }
      putStats(lid, Stats(0.0, w, 0u, lo, 0u));
      workgroupBarrier();
      if (lid == 0u) {
        var tw = 0.0; var tl = NONE;
        for (var t = 0u; t < WG; t++) { let st = getStats(t); tw += st.s; tl = min(tl, st.kmin); }
        sh_f[0] = tw; sh_u[1] = tl;
      }
      let lo_all = workgroupUniformLoad(&sh_u[1]);
      t0 = Tail(lo_all, tot.kmax, f32(n_all), workgroupUniformLoad(&sh_f[0]), 0.0, 0.0);
      mem = Mem(true, n_all, lo_all, NONE);
      counted = false;
    } else {
      my_above = 0u;
      my_in = validIn(r);
    }
    let f = warp(r, lid, rp, Found(t0, mem, counted), tot.kmax, m);
    tau = f.tail.lo;
    mem = f.mem;
  }
  if (mem.on && mem.lo <= tau && mem.hi == NONE) {
    if (lid == 0u) { drawMemory(row, mem.n, tau, u, m, log_z); }
  } else {
    drawChunks(r, row, lid, tau, true, u, m, log_z, before, whole);
  }
}

// The uniform draw of each row, for checking the GPU's Philox against the CPU's.
@compute @workgroup_size(1)
fn draws(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = wid.x + wid.y * nwg.x;
  if (row < shape.rows) { out_logp[row] = drawUniform(params[row]); }
}
