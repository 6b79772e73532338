// attention4_rope.wgsl with Qwen3's per-head q and k RMSNorms folded in as well: the workgroup
// normalizes its query head and its kv head's new key (weights QNorm, KNorm [D]) as
// rmsnorm_pair.wgsl's workgroup form does (the same lane sums and reduction tree at 64 lanes, so
// the same values), then rotates and attends as attention4_rope does. 10 storage bindings: the
// norm weights are one range of the parameters, k's at p.kn_at.

//! include attention_fold_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(10) var<storage, read> Norms: array<f32>;  // q_norm [D], k_norm [D] at p.kn_at

//! include attention4_rope_core

var<workgroup> nQ: array<f32, 256>;
var<workgroup> nK: array<f32, 256>;

/** 1/rms of D floats at base of Qr (`key` false) or Kr, as rmsnorm's workgroup form sums them. */
fn headRstd(base: u32, key: bool, lid: u32) -> f32 {
  var ss = 0.0;
  for (var c = lid; c < p.D; c += WG) {
    var v: f32;
    if (key) { v = Kr[base + c]; } else { v = Qr[base + c]; }
    ss = fma(v, v, ss);
  }
  return inverseSqrt(reduce(ss, lid, false) / f32(p.D) + p.eps);
}

fn prepare(qb: u32, kb: u32, lid: u32) {
  let rq = headRstd(qb, false, lid);
  let rk = headRstd(kb, true, lid);
  for (var c = lid; c < p.D; c += WG) {
    nQ[c] = Qr[qb + c] * rq * Norms[c];
    nK[c] = Kr[kb + c] * rk * Norms[p.kn_at + c];
  }
  workgroupBarrier();
}

fn qIn(qb: u32, i: u32) -> f32 { return nQ[i]; }
fn kIn(kb: u32, i: u32) -> f32 { return nK[i]; }
fn vIn(vb: u32, d: u32) -> vec4<f32> { return Vr[vb + d]; }
