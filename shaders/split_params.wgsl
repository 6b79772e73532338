// Kernels for parameters stored as row chunks (src/model/gpu_params.ts): a weight W [R, K] over
// one storage binding is bound chunk by chunk, rows [base, base + count) at a time.
//   gather_rows_range    out[r, c] = W_chunk[idx[r] − base, c] for rows whose id lies in the chunk
//                        (the embedding; other rows are left as they are)
//   copy_cols            Dst[r, off + c] = Src[r, c]: a chunk's [rows, cols] matmul result into
//                        its columns of a wider output (logits, or any linear's output)
//   gather_cols          Dst[r, c] = Src[r, off + c]: the chunk's columns of a wider gradient
//   embedding_bwd_range  dE_chunk[tokens[u] − base, c] += Σ dX[rows of u, c] for unique tokens
//                        u in [uStart, uStart + count) (the CPU sorts them by id, so each chunk's
//                        tokens are contiguous)
// One invocation per output element, 2-D grid for large counts.

//! include split_chunk_params

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Src: array<f32>;
@group(0) @binding(2) var<storage, read> Idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.x + gid.y * nwg.x * WG;
}

// rows: output rows, cols: row width, base/count: the chunk's rows of the source.
@compute @workgroup_size(WG)
fn gather_rows_range(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.rows * p.cols) { return; }
  let r = i / p.cols;
  let c = i % p.cols;
  let id = Idx[r];
  if (id < p.base || id - p.base >= p.count) { return; }
  Out[i] = Src[(id - p.base) * p.cols + c];
}

// rows × cols elements; stride: the wide side's row length, off: the chunk's first column there.
@group(0) @binding(1) var<storage, read> Narrow: array<f32>;
@group(0) @binding(2) var<storage, read_write> Wide: array<f32>;

@compute @workgroup_size(WG)
fn copy_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.rows * p.cols) { return; }
  let r = i / p.cols;
  let c = i % p.cols;
  Wide[r * p.stride + p.off + c] = Narrow[i];
}

@group(0) @binding(1) var<storage, read> WideIn: array<f32>;
@group(0) @binding(2) var<storage, read_write> NarrowOut: array<f32>;

@compute @workgroup_size(WG)
fn gather_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.rows * p.cols) { return; }
  let r = i / p.cols;
  let c = i % p.cols;
  NarrowOut[i] = WideIn[r * p.stride + p.off + c];
}

// rows: the first unique token of the chunk (uStart); count: its unique tokens; cols: row width.
@group(0) @binding(1) var<storage, read> Dx: array<f32>;
@group(0) @binding(2) var<storage, read> Tokens: array<u32>;
@group(0) @binding(3) var<storage, read> Offsets: array<u32>;
@group(0) @binding(4) var<storage, read> CsrRows: array<u32>;
@group(0) @binding(5) var<storage, read_write> DE: array<f32>;

@compute @workgroup_size(WG)
fn embedding_bwd_range(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= p.count * p.cols) { return; }
  let u = p.rows + i / p.cols;
  let c = i % p.cols;
  var s = 0.0;
  for (var k = Offsets[u]; k < Offsets[u + 1u]; k++) { s += Dx[CsrRows[k] * p.cols + c]; }
  DE[(Tokens[u] - p.base) * p.cols + c] += s;
}
