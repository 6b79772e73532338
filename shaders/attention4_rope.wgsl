// A decode step's attention with RoPE and the cache write folded in (GPU adapters): attention4's
// attention of one (head, row) per workgroup, where every row is its own sequence's one new
// position (a decode step), reading the raw projections instead of what rope.wgsl's rope_store
// leaves. The workgroup rotates its query (q [N, NH·D]) and its kv head's new key (k [N, KV·D])
// by the row's position as rope_store does (cos/sin tables [P, D/2]), keeps them and the new value
// (v [N, KV·D]) in workgroup memory, and takes position pos's key and value from there; the
// positions before it come from the cache [S, KV, P, D]. The workgroup of the kv head's first
// query head (in the split form, of the split holding pos) writes the new key and value into the
// cache at (slot, pos) for later steps. No workgroup of the dispatch reads the cache at pos, so
// the write races with nothing; a prefill, whose rows attend to each other's new keys, takes
// rope_store and attention4.

//! include attention_fold_params

@group(0) @binding(0) var<uniform> p: Params;

//! include attention4_rope_core

fn prepare(qb: u32, kb: u32, lid: u32) {}
fn qIn(qb: u32, i: u32) -> f32 { return Qr[qb + i]; }
fn kIn(kb: u32, i: u32) -> f32 { return Kr[kb + i]; }
fn vIn(vb: u32, d: u32) -> vec4<f32> { return Vr[vb + d]; }
