// What both samplers share (sampling.wgsl, one workgroup per row; sampling_lane_core.wgsl, one
// invocation per row): the row parameters, the Philox draw, and the order-preserving keys of the
// logits. The same code in both is what makes their draws, ties and thresholds agree. Includers
// declare `shape` (a Shape: SamplingShapeParams in src/model/sampling.ts).

//! include sampling_shape_params

// One row's parameters: 8 words, packed by packSamplingParams (src/model/sampling.ts).
struct RowParams {
  temperature: f32,  // 0 → greedy
  top_k: u32,        // 0 → off
  top_p: f32,        // 1 → off
  penalty: f32,      // 1 → off
  seed: u32,
  sequence: u32,
  step: u32,
  reserved: u32,
}

const FLAG_TRUNCATED = 1u;      // write the truncated log-prob to out_logp[rows + row]
const FLAG_APPEND = 2u;         // append the sampled id to the row's history
const NONE = 0xffffffffu;       // no id; above every real key
const NEG_INF_BITS = 0xff800000u;
const RNG_DOMAIN = 0x53414d50u; // "SAMP": second Philox key word

// ---------------------------------------------------------------------------------------------
// Philox-4x32-10 and the draw.

fn mulhilo(a: u32, b: u32) -> vec2<u32> {
  // 32×32 → 64 bits from 16-bit halves (WGSL has no 64-bit integers).
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p01 = a0 * b1; let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), a * b);
}

fn philox(ctr_in: vec4<u32>, key_in: vec2<u32>) -> vec4<u32> {
  var c = ctr_in; var k = key_in;
  for (var r = 0u; r < 10u; r++) {
    let p0 = mulhilo(0xd2511f53u, c.x);
    let p1 = mulhilo(0xcd9e8d57u, c.z);
    c = vec4(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    k += vec2(0x9e3779b9u, 0xbb67ae85u);
  }
  return c;
}

// 24 random bits scaled to [0, 1): exact in f32, the same number as samplingUniform() on the CPU.
fn drawUniform(rp: RowParams) -> f32 {
  let r = philox(vec4(rp.sequence, rp.step, 0u, 0u), vec2(rp.seed, RNG_DOMAIN));
  return f32(r.x >> 8u) * (1.0 / 16777216.0);
}

// ---------------------------------------------------------------------------------------------
// Scores, keys and weights.

// −inf. Built from a runtime value: Tint rejects a constant expression that evaluates to inf.
fn ninf() -> f32 { return bitcast<f32>(NEG_INF_BITS | (shape.flags & 0u)); }

// Order-preserving f32 → u32; −0 joins +0 so that equal floats have equal keys.
fn keyOf4(z: vec4<f32>) -> vec4<u32> {
  let b0 = bitcast<vec4<u32>>(z);
  let b = select(b0, vec4(0u), b0 == vec4(0x80000000u));
  return select(b | vec4(0x80000000u), ~b, (b & vec4(0x80000000u)) != vec4(0u));
}
fn keyOf(z: f32) -> u32 { return keyOf4(vec4(z)).x; }
fn valueOfKey(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u));
}

// exp(z − m), 0 for −inf logits (also when the whole row is −inf and m is too).
fn weight4(z: vec4<f32>, m: f32) -> vec4<f32> {
  return select(exp(z - m), vec4(0.0), bitcast<vec4<u32>>(z) == vec4(NEG_INF_BITS));
}
