// GPU time per kernel, from timestamp queries (feature "timestamp-query"). While a profiler is
// active (`activeProfiler(p)`), CommandPlan.run gives every dispatch its own compute pass with
// begin/end timestamps and resolves them at the end of the encoder; `report()` waits for the
// results and sums them per kernel (shader:entry). Profiling changes how work is encoded (one pass
// per dispatch), so totals measure kernels, not the production encoding; use it to find what to
// fix, never in a hot loop that ships.

const QUERIES = 2 * 2048; // timestamps per query set (begin + end of 2048 dispatches)

interface Pending {
  labels: string[];
  read: GPUBuffer;
  scratch: { destroy(): void }[];
}

export interface KernelTime {
  kernel: string;
  calls: number;
  ms: number;
  /** Fraction of all profiled GPU time. */
  share: number;
}

export class GpuProfiler {
  private pending: Pending[] = [];
  private totals = new Map<string, { calls: number; ns: number }>();

  constructor(private device: GPUDevice) {
    if (!device.features.has("timestamp-query")) {
      throw new Error(
        "GpuProfiler needs the adapter feature timestamp-query (Gpu.create requests it where present)",
      );
    }
  }

  /** Encodes `dispatches` (each in its own timed pass) into `enc`; called by CommandPlan.run. */
  encode(
    enc: GPUCommandEncoder,
    dispatches: readonly { label: string; run(pass: GPUComputePassEncoder): void }[],
  ): void {
    for (let first = 0; first < dispatches.length; first += QUERIES / 2) {
      const part = dispatches.slice(first, first + QUERIES / 2);
      const qs = this.device.createQuerySet({ type: "timestamp", count: 2 * part.length });
      part.forEach((d, i) => {
        const pass = enc.beginComputePass({
          timestampWrites: {
            querySet: qs,
            beginningOfPassWriteIndex: 2 * i,
            endOfPassWriteIndex: 2 * i + 1,
          },
        });
        d.run(pass);
        pass.end();
      });
      const bytes = 16 * part.length;
      const resolve = this.device.createBuffer({
        size: bytes,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      });
      const read = this.device.createBuffer({
        size: bytes,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      });
      enc.resolveQuerySet(qs, 0, 2 * part.length, resolve, 0);
      enc.copyBufferToBuffer(resolve, 0, read, 0, bytes);
      // Mapped in report(), after the caller has submitted this encoder.
      this.pending.push({ labels: part.map((d) => d.label), read, scratch: [qs, resolve] });
    }
  }

  /** Waits for every profiled submission (submit them first) and returns time per kernel, largest first. */
  async report(): Promise<KernelTime[]> {
    const done = this.pending;
    this.pending = [];
    await this.device.queue.onSubmittedWorkDone();
    await Promise.all(done.map((p) => p.read.mapAsync(GPUMapMode.READ)));
    for (const p of done) {
      p.scratch.forEach((x) => x.destroy());
      const t = new BigUint64Array(p.read.getMappedRange());
      p.labels.forEach((label, i) => {
        const ns = Number(t[2 * i + 1] - t[2 * i]);
        const e = this.totals.get(label) ?? { calls: 0, ns: 0 };
        e.calls++;
        e.ns += ns > 0 ? ns : 0;
        this.totals.set(label, e);
      });
      p.read.unmap();
      p.read.destroy();
    }
    const all = [...this.totals.values()].reduce((s, e) => s + e.ns, 0) || 1;
    return [...this.totals.entries()]
      .map(([kernel, e]) => ({ kernel, calls: e.calls, ms: e.ns / 1e6, share: e.ns / all }))
      .sort((a, b) => b.ms - a.ms);
  }

  reset(): void {
    this.totals.clear();
  }
}

let active: GpuProfiler | null = null;

/** Sets (or clears, with null) the profiler every CommandPlan.run reports to. */
export function activeProfiler(p?: GpuProfiler | null): GpuProfiler | null {
  if (p !== undefined) active = p;
  return active;
}
