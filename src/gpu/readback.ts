// Readback: copies GPU buffer ranges to the CPU through staging buffers kept per device, and
// reads them as soon as they are mapped rather than when mapAsync's promise says so.
//
// Why: Deno's mapAsync (ext/webgpu/buffer.rs) polls the device with Maintain::Wait during the
// call, so the buffer is mapped (in wgpu-core) by the time mapAsync returns, and then sleeps
// 10 ms in its polling loop before resolving. That sleep was a fixed ~11 ms on every readback
// and `sync()`: decode chunks, loss statistics, optimizer stats. Reading the mapped range right
// after the call returns the same bytes without the sleep. wgpu-core guards correctness: the
// range is readable only once the map has completed (after the copy's submission finished);
// before that getMappedRange throws, and we await the promise as usual. Browsers map truly
// asynchronously, so the early read is only tried in Deno.
//
// One trap: Deno's getMappedRange unwraps the buffer's last map mode, which is unset until a
// map has completed through the promise, and a read then panics the process. So each staging
// buffer is primed with one ordinary mapAsync when it is created, and buffers are reused.
//
// And a cost: an early read resolves without a macrotask, so a loop of them (a decode of 512
// tokens, minutes on a CPU adapter) never lets the event loop turn; timers (train's heartbeat)
// and signal listeners (Ctrl-C) waited for the end of the whole phase. So an early read that
// comes EVENT_LOOP_TURN_MS after the last turn first yields one (setTimeout 0).

import { isDeno } from "../runtime.ts";

/** How the reads of a device went: early reads, and reads that awaited the promise. */
export interface ReadbackStats {
  early: number;
  awaited: number;
}

const MIN_CLASS = 256;
/** The longest run of early reads without a turn of the event loop. */
export const EVENT_LOOP_TURN_MS = 100;
let lastTurn = performance.now();
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Free staging buffers kept per size class (more are destroyed on release). */
const KEEP_PER_CLASS = 4;

function stagingClass(bytes: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(MIN_CLASS, bytes)));
}

export class Readback {
  readonly stats: ReadbackStats = { early: 0, awaited: 0 };
  private free = new Map<number, GPUBuffer[]>();
  private syncSource: GPUBuffer | null = null;

  constructor(private device: GPUDevice, readonly earlyReads: boolean) {}

  /** Copies `size` bytes (a multiple of 4) at `offset` of `buffer` to a new ArrayBuffer. */
  async read(buffer: GPUBuffer, offset: number, size: number): Promise<ArrayBuffer> {
    const staging = await this.acquire(size);
    let out: ArrayBuffer;
    try {
      const enc = this.device.createCommandEncoder({ label: "readback" });
      enc.copyBufferToBuffer(buffer, offset, staging, 0, size);
      this.device.queue.submit([enc.finish()]);
      out = await this.map(staging, size);
    } catch (e) {
      staging.destroy(); // its map state is unknown: never reuse it
      throw e;
    }
    this.release(staging);
    return out;
  }

  /**
   * Resolves when every submission so far has finished: a 4-byte readback submitted after them
   * (queue order), which takes the early read in Deno, where onSubmittedWorkDone measured ~12 ms.
   */
  async sync(): Promise<void> {
    if (!this.earlyReads) return await this.device.queue.onSubmittedWorkDone();
    this.syncSource ??= this.device.createBuffer({
      size: 16,
      usage: GPUBufferUsage.COPY_SRC,
      label: "readback.sync",
    });
    await this.read(this.syncSource, 0, 4);
  }

  /** Destroys the staging buffers (the device's own destruction also frees them). */
  destroy(): void {
    for (const list of this.free.values()) list.forEach((b) => b.destroy());
    this.free.clear();
    this.syncSource?.destroy();
    this.syncSource = null;
  }

  private async map(staging: GPUBuffer, size: number): Promise<ArrayBuffer> {
    const mapped = staging.mapAsync(GPUMapMode.READ, 0, size);
    if (this.earlyReads) {
      let out: ArrayBuffer | null = null;
      try {
        out = staging.getMappedRange(0, size).slice(0);
      } catch {
        // not mapped yet: fall through to the promise
      }
      if (out) {
        staging.unmap();
        this.stats.early++;
        // The promise still resolves (10 ms later) and must not surface as unhandled.
        mapped.catch(() => {});
        if (performance.now() - lastTurn >= EVENT_LOOP_TURN_MS) {
          await nextTurn();
          lastTurn = performance.now();
        }
        return out;
      }
    }
    await mapped;
    lastTurn = performance.now();
    this.stats.awaited++;
    const out = staging.getMappedRange(0, size).slice(0);
    staging.unmap();
    return out;
  }

  private async acquire(bytes: number): Promise<GPUBuffer> {
    const cls = stagingClass(bytes);
    const reuse = this.free.get(cls)?.pop();
    if (reuse) return reuse;
    const b = this.device.createBuffer({
      size: cls,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: "readback.staging",
    });
    if (this.earlyReads) {
      await b.mapAsync(GPUMapMode.READ); // priming: see the header
      b.unmap();
    }
    return b;
  }

  private release(b: GPUBuffer): void {
    const list = this.free.get(b.size) ?? [];
    if (list.length >= KEEP_PER_CLASS) return b.destroy();
    list.push(b);
    this.free.set(b.size, list);
  }
}

const perDevice = new WeakMap<GPUDevice, Readback>();

/** The device's readback (created on first use; early reads in Deno). */
export function readbackFor(device: GPUDevice): Readback {
  let r = perDevice.get(device);
  if (!r) {
    r = new Readback(device, isDeno());
    perDevice.set(device, r);
  }
  return r;
}
