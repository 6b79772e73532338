// attention4_rope.wgsl with Qwen2's q, k and v projection biases folded in as well: the
// workgroup adds each bias to its query head, its kv head's new key and new value as it reads
// them (the same one f32 add per element as bias_group.wgsl, so the same values), then rotates,
// attends and writes the cache as attention4_rope does. 10 storage bindings: the biases are one
// range of the parameters (q's [NH·D] first, k's [KV·D] at p.kb_at, v's at p.vb_at, 4-aligned).

//! include attention_fold_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(10) var<storage, read> Biases: array<f32>;

//! include attention4_rope_core

fn prepare(qb: u32, kb: u32, lid: u32) {}
fn qIn(qb: u32, i: u32) -> f32 { return Qr[qb + i] + Biases[qb % (p.NH * p.D) + i]; }
fn kIn(kb: u32, i: u32) -> f32 { return Kr[kb + i] + Biases[p.kb_at + kb % (p.KV * p.D) + i]; }
fn vIn(vb: u32, d: u32) -> vec4<f32> {
  let at = p.vb_at + 4u * (vb % (p.KV * p.D / 4u) + d);
  return Vr[vb + d] + vec4<f32>(Biases[at], Biases[at + 1u], Biases[at + 2u], Biases[at + 3u]);
}
