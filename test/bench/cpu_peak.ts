// Theoretical fp32 peak of this CPU, for reporting CPU-adapter results as a fraction of it:
// cores × GHz × 2 FMA units × SIMD lanes × 2 flops. An estimate from /proc/cpuinfo; the
// assumptions are printed with the figure.

export interface CpuPeak {
  gflops: number;
  cores: number;
  ghz: number;
  lanes: number;
  model: string;
  assumption: string;
}

export async function cpuPeak(): Promise<CpuPeak | null> {
  let info: string;
  try {
    info = await Deno.readTextFile("/proc/cpuinfo");
  } catch {
    return null;
  }
  const cores = navigator.hardwareConcurrency || 1;
  const mhz = [...info.matchAll(/^cpu MHz\s*:\s*([\d.]+)/gm)].map((m) => Number(m[1]));
  const ghz = mhz.length ? Math.max(...mhz) / 1000 : 0;
  const flags = /^flags\s*:(.*)$/m.exec(info)?.[1] ?? "";
  const model = /^model name\s*:\s*(.*)$/m.exec(info)?.[1]?.trim() ?? "unknown";
  const lanes = / avx512f/.test(flags) ? 16 : / avx2/.test(flags) ? 8 : 4;
  if (!ghz) return null;
  return {
    gflops: Math.round(cores * ghz * 2 * lanes * 2),
    cores,
    ghz: Number(ghz.toFixed(2)),
    lanes,
    model,
    assumption: "cores × GHz (cpuinfo) × 2 FMA units × SIMD fp32 lanes × 2 flops",
  };
}
