// The body of decode_forward.wgsl and decode_forward_atlas.wgsl (which bind its weights).
//
// A whole forward pass of a small model for one decode step, in one dispatch: the embedding
// lookup, every decoder layer (RMSNorm, q/k/v (+ biases), the Qwen3 per-head q/k RMSNorm,
// rotate-half RoPE with the K/V cache write, causal GQA attention over the cache, o (+ bias)
// into the residual, RMSNorm, gate/up, SwiGLU, down into the residual), the final RMSNorm and
// the LM head. The same HF semantics as GpuModel's per-op path (which training, prefill and
// scoring use); sums run in another order, so results agree to rounding.
//
// Why: on a CPU adapter (llvmpipe) a decode step of a tiny model is ~20 dispatches of a few
// microseconds of work each, and each dispatch costs tens to hundreds of microseconds (more on
// a loaded machine, where waking the driver's worker threads waits on the scheduler). A decode
// step's rows are distinct sequences, so a row depends only on itself and its own slot's cache
// through all layers: a workgroup takes R rows through the whole model with its residual stream
// in its own scratch, and no workgroup waits on another. Every weight vec4 a lane loads serves
// its R rows.
//
// Dims: C = 4·C4 hidden, I = 4·I4 intermediate, D = 4·D4 head_dim (D/2 a multiple of 4), NH
// heads, KV kv heads (G = NH/KV per kv head), V = 4·V4 vocabulary, P cache positions per slot.
// W binds every parameter, found at the vec4 offsets in p. Caches Kc, Vc hold layer l's
// [S, KV, P, D] cache at vec4 offset l·p.cacheStride (layout of rope.wgsl's rope_store).
// Meta [N] (slot, pos); Ids [N] input tokens; Rope the cos and sin tables [maxPos, D/2] (rope_table.ts);
// X4 the logits [N, V].

struct Layer {
  inNorm: u32, wq: u32, wk: u32, wv: u32,
  wo: u32, postNorm: u32, wg: u32, wu: u32,
  wd: u32, bq: u32, bk: u32, bv: u32,
  bo: u32, qNorm: u32, kNorm: u32, flags: u32, // flags: 1 q/k/v biases, 2 o bias, 4 q/k norms
  // LoRA (with LORA): per module q, k, v, o, gate, up, down (bit m of flags >> 8 when targeted)
  // the vec4 offsets in LW of adapter 0's A [rank, in] and B [out, rank] and the vec4 strides
  // between adapters.
  lora: array<vec4<u32>, 7>,                    // (offA, strideA, offB, strideB)
}

// Params (DecodeForwardParams in src/model/cpu_adapter/decode_forward.ts): rows, P, eps, scale,
// the layer count and offsets of embed, finalNorm, head; cacheStride; C4, I4, V4, Q4 = NH·D4;
// rpg rows per workgroup (≤ R); adapters, loraScale; decode_sample steps step .. step + inner − 1
// of `steps`; sinAt where Rope's sines start (vec4s); then `layer: array<Layer, MAXL>`. The
// matrix dims are uniforms, not override constants, so that the loops over them stay loops:
// unrolled, the kernel took 40 s to compile on llvmpipe.
//! include decode_forward_params

override WG: u32 = 16u;
override R: u32 = 8u;    // the most rows a workgroup takes (p.rpg ≤ R of them in a dispatch)
override CG: u32 = 1u;   // groups of four output columns a lane computes in a projection
override D4: u32 = 4u;
override NH: u32 = 4u;
override KV: u32 = 2u;
override NCH: u32 = 2u;  // position chunks per (row, kv head) in attention
// Workgroup array lengths (the host sets them from the above): R·C4, R·NH·D4, R·KV·D4, R·I4,
// R·KV·NCH·G partial sums and their R·KV·NCH·G·D4 accumulators.
override SC: u32 = 64u;
override SQ: u32 = 64u;
override SKV: u32 = 32u;
override SI: u32 = 192u;
override SPART: u32 = 16u;
override SPACC: u32 = 64u;
// LoRA: whether rows' adapters apply (bindings LW and AdapterOf), rank = 4·RANK4; SU = R·3·RANK4.
override LORA: bool = false;
override RANK4: u32 = 1u;
override SU: u32 = 24u;
override WS: u32 = 1u;

const MAXL: u32 = 32u;    // layers (the uniform block holds their offsets)
const MAXR: u32 = 16u;
const MAXCG: u32 = 4u;
const MAXT: u32 = 16u;    // a lane's projection accumulators: R·CG vec4s (more spill on llvmpipe)
const MAXW: u32 = 16u;    // its weight rows per step of k: 4·CG
const MAXD4: u32 = 16u;
const MAXG: u32 = 8u;
const QLEN: u32 = 32u;    // a lane's attention registers: G·D4 vec4s (cpu_adapter/decode_forward.ts)

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> W: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> Meta: array<vec2<u32>>; // written by decode_sample
@group(0) @binding(3) var<storage, read_write> Ids: array<u32>;
@group(0) @binding(4) var<storage, read> Rope: array<vec4<f32>>;     // cos [maxPos, D/2], then sin at p.sinAt
@group(0) @binding(5) var<storage, read_write> Kc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> Vc: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> X4: array<vec4<f32>>;       // the logits [N, V]
@group(0) @binding(8) var<storage, read> LW: array<vec4<f32>>;       // LoRA parameters (lora.ts)
@group(0) @binding(9) var<storage, read> AdapterOf: array<u32>;     // [N]; ≥ p.adapters: none
@group(0) @binding(10) var<storage, read_write> Scr: array<vec4<f32>>;  // per-workgroup scratch, WS vec4s each
// decode_sample's `params` and `Out`, and the projection weights' loads (weightVec4), are the
// wrapper's: decode_forward.wgsl (weights from W) or decode_forward_atlas.wgsl (from a texture).

// ---------------------------------------------------------------------------------------------
// decode_sample: after the LM head, lane r samples row r as sampling_lane.wgsl does (the same
// code, so the same ids and log-probs bit for bit), stores the id and log-prob at this step's
// place in Out, and advances the row as decode.wgsl's advance does: its next input is the sampled
// id, its position moves by one (clamped to the cache) and so does its sampling step. A generation
// step is then one dispatch, not three. No repetition-penalty history (generate passes none).

var<private> shape: Shape;                    // rows, vocab; no history, no flags
var<private> hist_ids: array<u32, 1>;         // (no history: never read)
var<private> hist_counts: array<u32, 1>;
var<workgroup> seen: array<atomic<u32>, 1>;   // (no penalty without history: never touched)

//! include sampling_lane_core

var<private> curStep: u32; // the generation step being run (p.step + the dispatch's iteration)

fn finish(row: u32, id: u32, z: f32, m: f32, log_z: f32, log_zt: f32) {
  Out[curStep * p.rows + row] = id;
  Out[(p.steps + curStep) * p.rows + row] = bitcast<u32>(z - m - log_z);
  Ids[row] = id;
  Meta[row].y = min(Meta[row].y + 1u, p.P - 1u);
  params[row].step += 1u;
}

// The workgroup's arrays live in its WS vec4s of Scr, at these offsets (set first thing):
//   sRes [R, C4] the residual stream of the rows     sX [R, C4] normalized rows (projection input)
//   sQ [R, NH·D4] q, then the attention output       sK, sV [R, KV·D4]
//   sH [R, I4] silu(gate)·up                          pAcc [SPART, D4] attention chunks' sums
//   sU [R, 3, RANK4] LoRA x·Aᵀ of up to 3 modules
// Not workgroup memory: WGSL zero-fills workgroup memory at every workgroup's start, and on
// llvmpipe that fill cost ~0.13 ms a step for tiny-llama's 8-row workgroups, more than the
// loads it saves (measured: 9% of the step). pM and pL (a few floats) stay in workgroup memory.
// Writes reach the workgroup's other lanes through storageBarrier + workgroupBarrier.
var<private> o_sRes: u32;
var<private> o_sX: u32;
var<private> o_sQ: u32;
var<private> o_sK: u32;
var<private> o_sV: u32;
var<private> o_sH: u32;
var<private> o_pAcc: u32;
var<private> o_sU: u32;
// Rows this workgroup takes: min(p.rpg, rows left). Loops over R are unrolled (the accumulators
// stay in registers) and skip rows ≥ rc.
var<private> rc: u32;
var<private> wgId: u32;

// The projections' inputs sX, sQ and sH: in workgroup memory where it holds them (WGIN; the
// host sizes the arrays SCW = SC, SQW = SQ, SIW = SI, else 1), else in Scr. A lane loads each
// input vec4 for every column it computes, and on llvmpipe a workgroup-memory load skips the
// bounds-check branches of a storage load (tiny-llama, 32 rows: 1.12 → 1.00 ms a step on the
// Vulkan backend, 0.99 → 0.96 on GL). Their zero-fill at each workgroup's start is a few KiB.
override WGIN: bool = false;
override SCW: u32 = 1u;
override SQW: u32 = 1u;
override SIW: u32 = 1u;
var<workgroup> wX: array<vec4<f32>, SCW>;
var<workgroup> wQ: array<vec4<f32>, SQW>;
var<workgroup> wH: array<vec4<f32>, SIW>;

fn getX(i: u32) -> vec4<f32> { if (WGIN) { return wX[i]; } return Scr[o_sX + i]; }
fn getQ(i: u32) -> vec4<f32> { if (WGIN) { return wQ[i]; } return Scr[o_sQ + i]; }
fn getH(i: u32) -> vec4<f32> { if (WGIN) { return wH[i]; } return Scr[o_sH + i]; }
fn setX(i: u32, v: vec4<f32>) { if (WGIN) { wX[i] = v; } else { Scr[o_sX + i] = v; } }
fn setQ(i: u32, v: vec4<f32>) { if (WGIN) { wQ[i] = v; } else { Scr[o_sQ + i] = v; } }
fn setH(i: u32, v: vec4<f32>) { if (WGIN) { wH[i] = v; } else { Scr[o_sH + i] = v; } }

var<workgroup> pM: array<f32, SPART>;
var<workgroup> pL: array<f32, SPART>;

// CG groups of four output columns, c0 .. c0 + CG − 1 (weight rows 4·c0 .. 4·(c0 + CG) − 1 of a
// [rows, 4·k4] weight at vec4 offset w; groups past `last` load group `last` again), for the R
// rows of the input: sX (k4 = C4), sQ (k4 = NH·D4) or sH (k4 = I4). Each weight vec4 loaded
// is dotted with every row, and each input vec4 with 4·CG weight rows, before the next is
// loaded: on llvmpipe a load costs a scalar access per lane and component, so the lane's tile
// (R rows × 4·CG columns) sets the loads per multiply-add. Accumulator (r, j) is at r·CG + j.
fn project(w: u32, c0: u32, last: u32, src: u32) -> array<vec4<f32>, MAXT> {
  var acc: array<vec4<f32>, MAXT>;
  var k4 = p.C4;
  if (src == 1u) { k4 = p.Q4; } else if (src == 2u) { k4 = p.I4; }
  var rowAt: array<u32, MAXW>; // the vec4 offset of each weight row's start
  for (var i = 0u; i < 4u * CG; i++) { rowAt[i] = w + (min(c0 + i / 4u, last) * 4u + i % 4u) * k4; }
  for (var k = 0u; k < k4; k++) {
    var wv: array<vec4<f32>, MAXW>;
    for (var i = 0u; i < 4u * CG; i++) { wv[i] = weightVec4(rowAt[i] + k); }
    for (var r = 0u; r < R; r++) {
      if (r < rc) {
        var xv: vec4<f32>;
        if (src == 0u) { xv = getX(r * k4 + k); } else if (src == 1u) { xv = getQ(r * k4 + k); } else { xv = getH(r * k4 + k); }
        for (var j = 0u; j < CG; j++) {
          acc[r * CG + j] += vec4<f32>(dot(wv[4u * j], xv), dot(wv[4u * j + 1u], xv), dot(wv[4u * j + 2u], xv), dot(wv[4u * j + 3u], xv));
        }
      }
    }
  }
  return acc;
}

// LoRA, phase 1: sU[r, slot, ·] = x_r · A_aᵀ (rank values) for module m of layer ly, where x is
// the projection's input (src as in project) and a row r's adapter; lane i covers (row, slot,
// four of the rank). Rows without an adapter get zeros.
fn loraDown(ly: u32, m: u32, slot: u32, src: u32, lid: u32) {
  var k4 = p.C4;
  if (src == 1u) { k4 = p.Q4; } else if (src == 2u) { k4 = p.I4; }
  let e = p.layer[ly].lora[m];
  for (var i = lid; i < rc * RANK4; i += WG) {
    let r = i / RANK4;
    let j4 = i % RANK4;
    let a = AdapterOf[rowOf(wgId, r)];
    var u = vec4<f32>();
    if (a < p.adapters) {
      let b = e.x + a * e.y + j4 * 4u * k4; // A rows 4·j4 .. 4·j4+3
      for (var k = 0u; k < k4; k++) {
        var xv: vec4<f32>;
        if (src == 0u) { xv = getX(r * k4 + k); } else if (src == 1u) { xv = getQ(r * k4 + k); } else { xv = getH(r * k4 + k); }
        u += vec4<f32>(dot(LW[b + k], xv), dot(LW[b + k4 + k], xv), dot(LW[b + 2u * k4 + k], xv), dot(LW[b + 3u * k4 + k], xv));
      }
    }
    Scr[o_sU + (r * 3u + slot) * RANK4 + j4] = u;
  }
}

// LoRA, phase 2: scale · (B_a · u) for four output columns 4·n4.. of module m, row r.
fn loraUp(ly: u32, m: u32, slot: u32, n4: u32, r: u32) -> vec4<f32> {
  let a = AdapterOf[rowOf(wgId, r)];
  if (a >= p.adapters) { return vec4<f32>(); }
  let e = p.layer[ly].lora[m];
  let b = e.z + a * e.w + n4 * 4u * RANK4; // B rows 4·n4 .. 4·n4+3, RANK4 vec4s each
  var y = vec4<f32>();
  for (var j = 0u; j < RANK4; j++) {
    let u = Scr[o_sU + (r * 3u + slot) * RANK4 + j];
    y += vec4<f32>(dot(LW[b + j], u), dot(LW[b + RANK4 + j], u), dot(LW[b + 2u * RANK4 + j], u), dot(LW[b + 3u * RANK4 + j], u));
  }
  return y * p.loraScale;
}

// The residual stream += x · Wᵀ (+ bias) (+ the rows' LoRA of module m) over sRes's C columns,
// x the projection input src (as project): lane n computes CG groups of four columns. o and down.
fn addToResidual(ly: u32, w: u32, bias: u32, hasBias: bool, m: u32, src: u32, lid: u32) {
  let lora = loraOn(ly, m);
  for (var n = lid; n < p.C4 / CG; n += WG) {
    let c0 = n * CG;
    let acc = project(w, c0, p.C4 - 1u, src);
    for (var j = 0u; j < CG; j++) {
      var b = vec4<f32>();
      if (hasBias) { b = W[bias + c0 + j]; }
      for (var r = 0u; r < R; r++) {
        if (r < rc) {
          var y = acc[r * CG + j] + b;
          if (lora) { y += loraUp(ly, m, 0u, c0 + j, r); }
          Scr[o_sRes + r * p.C4 + c0 + j] += y;
        }
      }
    }
  }
}

fn loraOn(ly: u32, m: u32) -> bool {
  return LORA && ((p.layer[ly].flags >> (8u + m)) & 1u) != 0u;
}

// Row r of this workgroup: its index in the dispatch, clamped so that the last workgroup's
// spare rows recompute the last row (never written back) and control flow stays uniform.
fn rowOf(wg: u32, r: u32) -> u32 {
  return min(wg * p.rpg + r, p.rows - 1u);
}

fn valid(wg: u32, r: u32) -> bool {
  return r < rc;
}

// sX row r = RMSNorm of sRes row r: x · rsqrt(mean(x²) + eps) · W[w..].
fn normRow(r: u32, w: u32) {
  var ss = 0.0;
  for (var k = 0u; k < p.C4; k++) { let v = Scr[o_sRes + r * p.C4 + k]; ss += dot(v, v); }
  let rstd = inverseSqrt(ss / f32(4u * p.C4) + p.eps);
  for (var k = 0u; k < p.C4; k++) { setX(r * p.C4 + k, Scr[o_sRes + r * p.C4 + k] * rstd * W[w + k]); }
}

// One forward of the workgroup g's rows (setup first): logits into X4.
fn forwardStep(g: u32, lid: u32) {
  let G = NH / KV;
  let Q4 = NH * D4;
  let K4 = KV * D4;
  let half4 = D4 / 2u;

  // The embedding rows of the input tokens.
  for (var i = lid; i < rc * p.C4; i += WG) {
    let r = i / p.C4;
    Scr[o_sRes + i] = W[p.embed + Ids[rowOf(g, r)] * p.C4 + i % p.C4];
  }
  storageBarrier(); workgroupBarrier();

  for (var l = 0u; l < p.layers; l++) {
    let ly = p.layer[l];
    // 1. RMSNorm, then q/k/v: lane n4 computes four columns of [q | k | v] for the R rows.
    for (var r = lid; r < rc; r += WG) { normRow(r, ly.inNorm); }
    storageBarrier(); workgroupBarrier();
    if (LORA) {
      for (var m = 0u; m < 3u; m++) { if (loraOn(l, m)) { loraDown(l, m, m, 0u, lid); } }
      storageBarrier(); workgroupBarrier();
    }
    for (var n = lid; n < (Q4 + 2u * K4) / CG; n += WG) {
      // Which of q, k, v the columns belong to (CG divides K4 and Q4): its weight, bias and
      // destination; j0 is the first column group within it.
      var w = ly.wq;
      var bias = ly.bq;
      var j0 = n * CG;
      var dst = 0u;
      var last = Q4 - 1u;
      if (n * CG >= Q4 + K4) {
        w = ly.wv; bias = ly.bv; j0 = n * CG - Q4 - K4; dst = 2u; last = K4 - 1u;
      } else if (n * CG >= Q4) {
        w = ly.wk; bias = ly.bk; j0 = n * CG - Q4; dst = 1u; last = K4 - 1u;
      }
      let acc = project(w, j0, last, 0u);
      let lora = loraOn(l, dst);
      for (var jj = 0u; jj < CG; jj++) {
        let j = j0 + jj;
        var b = vec4<f32>();
        if ((ly.flags & 1u) != 0u) { b = W[bias + j]; }
        for (var r = 0u; r < R; r++) {
          if (r >= rc) { continue; }
          var y = acc[r * CG + jj] + b;
          if (lora) { y += loraUp(l, dst, dst, j, r); }
          if (dst == 0u) { setQ(r * Q4 + j, y); } else if (dst == 1u) { Scr[o_sK + r * K4 + j] = y; } else { Scr[o_sV + r * K4 + j] = y; }
        }
      }
    }
    storageBarrier(); workgroupBarrier();

    // 2. Per head: the Qwen3 q/k RMSNorm, RoPE, and for kv heads the K/V cache write.
    let cache = l * p.cacheStride;
    for (var i = lid; i < rc * (NH + KV); i += WG) {
      let r = i / (NH + KV);
      let h = i % (NH + KV);
      let m = Meta[rowOf(g, r)];
      let pos = min(m.y, p.P - 1u);
      let isQ = h < NH;
      var base = r * Q4 + h * D4;
      var hv: array<vec4<f32>, MAXD4>;
      if (isQ) {
        for (var d = 0u; d < D4; d++) { hv[d] = getQ(base + d); }
      } else {
        base = r * K4 + (h - NH) * D4;
        for (var d = 0u; d < D4; d++) { hv[d] = Scr[o_sK + base + d]; }
      }
      if ((ly.flags & 4u) != 0u) {
        var ss = 0.0;
        for (var d = 0u; d < D4; d++) { ss += dot(hv[d], hv[d]); }
        let rstd = inverseSqrt(ss / f32(4u * D4) + p.eps);
        let nw = select(ly.kNorm, ly.qNorm, isQ);
        for (var d = 0u; d < D4; d++) { hv[d] = hv[d] * rstd * W[nw + d]; }
      }
      for (var d = 0u; d < half4; d++) {
        let c = Rope[pos * half4 + d];
        let s = Rope[p.sinAt + pos * half4 + d];
        let x1 = hv[d];
        let x2 = hv[d + half4];
        hv[d] = x1 * c - x2 * s;
        hv[d + half4] = x2 * c + x1 * s;
      }
      if (isQ) {
        for (var d = 0u; d < D4; d++) { setQ(base + d, hv[d]); }
      } else if (valid(g, r)) {
        let dst = cache + ((m.x * KV + (h - NH)) * p.P + pos) * D4;
        for (var d = 0u; d < D4; d++) {
          Kc[dst + d] = hv[d];
          Vc[dst + d] = Scr[o_sV + base + d];
        }
      }
    }
    storageBarrier(); workgroupBarrier();

    // 3. Attention: lane (row, kv head, chunk) runs an online softmax over positions chunk,
    // chunk + NCH, ... for the G query heads of the kv head (K and V loaded once for all G).
    for (var i = lid; i < rc * KV * NCH; i += WG) {
      let ch = i % NCH;
      let rk = i / NCH;
      let r = rk / KV;
      let kvh = rk % KV;
      let m = Meta[rowOf(g, r)];
      let len = min(m.y, p.P - 1u) + 1u;
      let kBase = cache + (m.x * KV + kvh) * p.P * D4;
      var q: array<vec4<f32>, QLEN>; // [G, D4]
      var acc: array<vec4<f32>, QLEN>;
      var mx: array<f32, MAXG>;
      var sum: array<f32, MAXG>;
      for (var h = 0u; h < G; h++) {
        for (var d = 0u; d < D4; d++) {
          q[h * D4 + d] = getQ(r * Q4 + (kvh * G + h) * D4 + d) * p.scale;
          acc[h * D4 + d] = vec4<f32>();
        }
        mx[h] = -3.402823e38;
        sum[h] = 0.0;
      }
      for (var t = ch; t < len; t += NCH) {
        let kb = kBase + t * D4;
        var kv: array<vec4<f32>, MAXD4>;
        for (var d = 0u; d < D4; d++) { kv[d] = Kc[kb + d]; }
        var e: array<f32, MAXG>;
        for (var h = 0u; h < G; h++) {
          var s = 0.0;
          for (var d = 0u; d < D4; d++) { s += dot(q[h * D4 + d], kv[d]); }
          if (s > mx[h]) {
            // The running max moves: rescale what was summed so far (exp(-huge) = 0 at first).
            let c = exp(mx[h] - s);
            sum[h] *= c;
            for (var d = 0u; d < D4; d++) { acc[h * D4 + d] *= c; }
            mx[h] = s;
          }
          e[h] = exp(s - mx[h]);
          sum[h] += e[h];
        }
        for (var d = 0u; d < D4; d++) {
          let v = Vc[kb + d];
          for (var h = 0u; h < G; h++) { acc[h * D4 + d] += e[h] * v; }
        }
      }
      for (var h = 0u; h < G; h++) {
        let j = i * G + h;
        pM[j] = mx[h];
        pL[j] = sum[h];
        for (var d = 0u; d < D4; d++) { Scr[o_pAcc + j * D4 + d] = acc[h * D4 + d]; }
      }
    }
    storageBarrier(); workgroupBarrier();
    // Merge the chunks: lane (row, head, d4) writes the attention output over q in sQ.
    for (var i = lid; i < rc * Q4; i += WG) {
      let d = i % D4;
      let rh = i / D4;
      let r = rh / NH;
      let h = rh % NH;
      let hg = h % G;
      let first = (r * KV + h / G) * NCH;
      var M = -3.402823e38;
      for (var c = 0u; c < NCH; c++) { M = max(M, pM[(first + c) * G + hg]); }
      var L = 0.0;
      var a = vec4<f32>();
      for (var c = 0u; c < NCH; c++) {
        let j = (first + c) * G + hg;
        let e = exp(pM[j] - M);
        L += pL[j] * e;
        a += Scr[o_pAcc + j * D4 + d] * e;
      }
      setQ(i, a / L);
    }
    storageBarrier(); workgroupBarrier();

    // 4. o (+ bias) into the residual: lane n4 computes four columns of C.
    if (LORA) {
      if (loraOn(l, 3u)) { loraDown(l, 3u, 0u, 1u, lid); }
      storageBarrier(); workgroupBarrier();
    }
    addToResidual(l, ly.wo, ly.bo, (ly.flags & 2u) != 0u, 3u, 1u, lid);
    storageBarrier(); workgroupBarrier();

    // 5. RMSNorm, gate and up, SwiGLU into sH: lane n4 computes four columns of I.
    for (var r = lid; r < rc; r += WG) { normRow(r, ly.postNorm); }
    storageBarrier(); workgroupBarrier();
    if (LORA) {
      for (var m = 4u; m < 6u; m++) { if (loraOn(l, m)) { loraDown(l, m, m - 4u, 0u, lid); } }
      storageBarrier(); workgroupBarrier();
    }
    // Gate, then up by the same lane over the same columns (no barrier between): sH holds
    // silu(gate) until up multiplies it in.
    for (var n = lid; n < p.I4 / CG; n += WG) {
      let c0 = n * CG;
      let gAcc = project(ly.wg, c0, p.I4 - 1u, 0u);
      let lg = loraOn(l, 4u);
      for (var j = 0u; j < CG; j++) {
        for (var r = 0u; r < R; r++) {
          if (r >= rc) { continue; }
          var gv = gAcc[r * CG + j];
          if (lg) { gv += loraUp(l, 4u, 0u, c0 + j, r); }
          setH(r * p.I4 + c0 + j, gv / (1.0 + exp(-gv)));
        }
      }
      let uAcc = project(ly.wu, c0, p.I4 - 1u, 0u);
      let lu = loraOn(l, 5u);
      for (var j = 0u; j < CG; j++) {
        for (var r = 0u; r < R; r++) {
          if (r >= rc) { continue; }
          var uv = uAcc[r * CG + j];
          if (lu) { uv += loraUp(l, 5u, 1u, c0 + j, r); }
          setH(r * p.I4 + c0 + j, getH(r * p.I4 + c0 + j) * uv);
        }
      }
    }
    storageBarrier(); workgroupBarrier();

    // 6. down into the residual: lane n4 computes four columns of C.
    if (LORA) {
      if (loraOn(l, 6u)) { loraDown(l, 6u, 0u, 2u, lid); }
      storageBarrier(); workgroupBarrier();
    }
    addToResidual(l, ly.wd, 0u, false, 6u, 2u, lid);
    storageBarrier(); workgroupBarrier();
  }

  // The final RMSNorm and the LM head: lane n4 computes four logits of each row.
  for (var r = lid; r < rc; r += WG) { normRow(r, p.finalNorm); }
  storageBarrier(); workgroupBarrier();
  for (var n = lid; n < (p.V4 + CG - 1u) / CG; n += WG) {
    let c0 = n * CG;
    let acc = project(p.head, c0, p.V4 - 1u, 0u);
    for (var j = 0u; j < CG; j++) {
      for (var r = 0u; r < R; r++) {
        if (valid(g, r) && c0 + j < p.V4) { X4[rowOf(g, r) * p.V4 + c0 + j] = acc[r * CG + j]; }
      }
    }
  }
}

// The workgroup's scratch offsets and rows (first thing in both entry points).
fn setup(g: u32) {
  var at = g * WS;
  o_sRes = at; at += SC;
  o_sX = at; at += SC;
  o_sQ = at; at += SQ;
  o_sK = at; at += SKV;
  o_sV = at; at += SKV;
  o_sH = at; at += SI;
  o_pAcc = at; at += SPACC;
  o_sU = at; at += SU;
  rc = min(p.rpg, p.rows - g * p.rpg);
  wgId = g;
}

// A decode step's forward: logits [N, V] into X4.
@compute @workgroup_size(WG)
fn decode_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  setup(wid.x);
  forwardStep(wid.x, lid);
}

// p.inner chained generation steps (steps p.step .. p.step + p.inner − 1), each the forward,
// then sampling and advancing every row: a workgroup's rows depend only on themselves, so it
// takes them from step to step without waiting for other workgroups, and the per-dispatch cost
// is paid once for all of them.
@compute @workgroup_size(WG)
fn decode_sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x;
  setup(g);
  shape.rows = p.rows; // the rest stay 0: no history, no flags, unsplit rows
  shape.vocab = 4u * p.V4;
  for (var it = 0u; it < max(p.inner, 1u); it++) {
    curStep = p.step + it;
    forwardStep(g, lid);
    storageBarrier(); workgroupBarrier(); // the rows' logits
    for (var r = lid; r < rc; r += WG) {
      let row = rowOf(g, r);
      pen_at = 0xffffffffu;
      sampleRow(row, params[row]);
    }
    storageBarrier(); workgroupBarrier(); // the next step reads the rows' ids, positions and caches
  }
}
