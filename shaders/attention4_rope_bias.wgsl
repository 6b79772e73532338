// attention4_rope.wgsl with Qwen2's q, k and v projection biases folded in as well: the
// workgroup adds each bias to its query head, its kv head's new key and new value as it reads
// them (the same one f32 add per element as bias_group.wgsl, so the same values), then rotates,
// attends and writes the cache as attention4_rope does. 13 storage bindings.

//! include attention_params

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(11) var<storage, read> QB: array<f32>;        // [NH·D]
@group(0) @binding(12) var<storage, read> KB: array<f32>;        // [KV·D]
@group(0) @binding(13) var<storage, read> VB: array<vec4<f32>>;  // [KV·D / 4]

//! include attention4_rope_core

fn prepare(qb: u32, kb: u32, lid: u32) {}
fn qIn(qb: u32, i: u32) -> f32 { return Qr[qb + i] + QB[qb % (p.NH * p.D) + i]; }
fn kIn(kb: u32, i: u32) -> f32 { return Kr[kb + i] + KB[kb % (p.KV * p.D) + i]; }
fn vIn(vb: u32, d: u32) -> vec4<f32> { return Vr[vb + d] + VB[vb % (p.KV * p.D / 4u) + d]; }
