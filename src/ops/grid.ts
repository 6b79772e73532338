// Dispatch-size helpers: spread a 1-D count over a 2-D grid when it exceeds the
// per-dimension workgroup limit (65535 on most adapters).

export function grid1d(workgroups: number, maxPerDim = 65535): [number, number] {
  if (workgroups <= maxPerDim) return [Math.max(1, workgroups), 1];
  const y = Math.ceil(workgroups / maxPerDim);
  return [Math.ceil(workgroups / y), y];
}
