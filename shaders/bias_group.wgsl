// Up to three row-broadcast bias adds in one dispatch (q/k/v's of a Qwen2 layer): Yg[r, c] +=
// Bg[c] for Yg [rows, ng], the value binary_inplace.wgsl's "add" with a row broadcast writes.
// Invocations cover rows × n0 of Y0, then rows × n1 of Y1, then rows × n2 of Y2. A part with
// ng = 0 is never touched; its bindings must still be distinct buffers.

//! include bias_group_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> Y0: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y1: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y2: array<f32>;
@group(0) @binding(4) var<storage, read> B0: array<f32>;
@group(0) @binding(5) var<storage, read> B1: array<f32>;
@group(0) @binding(6) var<storage, read> B2: array<f32>;

@compute @workgroup_size(WG)
fn bias_group(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let e0 = p.rows * p.n0;
  let e1 = p.rows * p.n1;
  if (i < e0) {
    Y0[i] = Y0[i] + B0[i % p.n0];
  } else if (i < e0 + e1) {
    let j = i - e0;
    Y1[j] = Y1[j] + B1[j % p.n1];
  } else if (i < e0 + e1 + p.rows * p.n2) {
    let j = i - e0 - e1;
    Y2[j] = Y2[j] + B2[j % p.n2];
  }
}
