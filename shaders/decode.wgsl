// Chains decode steps on the GPU so S steps need one readback, not S: after sampling, each
// row's sampled id and its log-prob are saved at this step's place in the output, and the row
// advances: its next input is the sampled token, its position moves by one (clamped to the
// cache) and so does its sampling step counter (word 6 of its params row, see
// src/model/sampling.ts).

//! include decode_params

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Sampled: array<u32>;     // [rows]
@group(0) @binding(2) var<storage, read> Logprob: array<f32>;     // [rows]
@group(0) @binding(3) var<storage, read_write> Ids: array<u32>;   // [rows] model input ids
@group(0) @binding(4) var<storage, read_write> Meta: array<u32>;  // [rows, 2] (slot, pos)
@group(0) @binding(5) var<storage, read_write> SParams: array<u32>; // [rows, paramWords]
@group(0) @binding(6) var<storage, read_write> Out: array<u32>;   // [steps, rows] ids, then [steps, rows] log-prob bits

@compute @workgroup_size(WG)
fn advance(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x;
  if (r >= p.rows) { return; }
  let id = Sampled[r];
  Out[p.step * p.rows + r] = id;
  Out[(p.steps + p.step) * p.rows + r] = bitcast<u32>(Logprob[r]);
  Ids[r] = id;
  Meta[2u * r + 1u] = min(Meta[2u * r + 1u] + 1u, p.maxPos - 1u);
  SParams[r * p.paramWords + 6u] += 1u;
}
