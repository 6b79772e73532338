// Chains decode steps on the GPU so S steps need one readback, not S: after sampling, each
// row's next input is its sampled token, its position advances by one (clamped to the cache)
// and its sampling step counter (word 6 of its params row, see src/model/sampling.ts) too.

struct Params { rows: u32, maxPos: u32, paramWords: u32, _p: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Sampled: array<u32>;     // [rows]
@group(0) @binding(2) var<storage, read_write> Ids: array<u32>;   // [rows] model input ids
@group(0) @binding(3) var<storage, read_write> Meta: array<u32>;  // [rows, 2] (slot, pos)
@group(0) @binding(4) var<storage, read_write> SParams: array<u32>; // [rows, paramWords]

@compute @workgroup_size(WG)
fn advance(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x;
  if (r >= p.rows) { return; }
  Ids[r] = Sampled[r];
  Meta[2u * r + 1u] = min(Meta[2u * r + 1u] + 1u, p.maxPos - 1u);
  SParams[r * p.paramWords + 6u] += 1u;
}
