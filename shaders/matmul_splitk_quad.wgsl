// The starts, in vec4s, of the 4 rows of B [N, K4] (from `base`) that a split-K workgroup's 4
// output columns n0 .. n0 + 3 read: columns past N read the last row (in bounds) and are never
// written. Shared by the split-K kernels.
fn quadRows(base: u32, n0: u32, N: u32, K4: u32) -> vec4<u32> {
  let last = N - 1u;
  return vec4<u32>(base) +
    vec4<u32>(min(n0, last), min(n0 + 1u, last), min(n0 + 2u, last), min(n0 + 3u, last)) * K4;
}
