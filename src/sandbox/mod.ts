// The sandbox for model-written JavaScript: `runJs(code, options) → ExecResult`, and
// SandboxPool to run many at once, in-thread or from another worker through comlink. One API
// in Deno and in browsers; the environments parse the code's printed output.
//
// Threat model. The code is untrusted: written by a model under training, it may loop forever,
// allocate without bound, flood its output, probe for the network, files, environment,
// subprocesses and the GPU, or tamper with built-ins. It is not assumed to exploit bugs in V8,
// Deno or the browser.
//
// What is covered
// - A fresh sandbox per execution, so nothing carries from one run into the next: in Deno a new
//   `deno run` subprocess (host_deno.ts), in a browser a new module Worker (host_browser.ts).
// - Deno, at the process level: no permissions at all (no --allow-*, --no-prompt): no network,
//   files, environment variables, subprocesses, FFI or system information; an emptied
//   environment (only Deno's cache location is passed); DENO_WEBGPU_BACKEND=none, so WebGPU has
//   no adapter; no remote or npm modules (--no-remote --no-npm --no-config), and an import map
//   sending every Node built-in to a module that throws. Killing the process cannot hurt the host.
// - Both hosts, inside the sandbox (guest.ts), before the code runs: fetch, XMLHttpRequest,
//   WebSocket, EventSource, WebTransport, Worker, SharedWorker, importScripts, BroadcastChannel,
//   indexedDB, caches, Deno, process, postMessage, close and navigator.gpu/storage/locks/usb/...
//   are deleted from the global object and its prototypes; code containing `import(` or
//   `import.meta` is refused; eval, every Function constructor and setTimeout("string") are
//   disabled once the code is compiled, so the checked source is the only code that runs.
// - Time: at timeoutMs of wall time, counted from the code's first line, the host kills the
//   sandbox (SIGKILL, or worker.terminate()) whatever it is doing: busy loops, Atomics.wait,
//   endless promise chains or timers. The result arrives within a few ms of the limit on an
//   idle host. Start-up (process or Worker, runtime, request), which a loaded host stretches by
//   seconds, has its own limit (startupMs, 30 s) and does not eat the code's time: a correct
//   program is not scored as a timeout because the machine was busy.
// - Output: at most maxOutputBytes UTF-8 bytes are kept; past that the run is stopped, the text
//   ends with "[output truncated at N bytes]" and error is an OutputLimitError.
// - Memory (Deno): the V8 heap is capped at memoryMb (--max-old-space-size; V8 aborts the
//   process, which the host reports as MemoryLimitError), and the host kills the process when
//   its resident memory passes memoryMb + 128 MiB, checked every 20 ms, which catches
//   ArrayBuffers and wasm memories that the heap limit does not count.
// - Signals (Deno): each sandbox process runs in its own session and process group, so a
//   terminal's Ctrl-C or a group SIGTERM meant for the trainer does not kill the code mid-run
//   (it would score as an exec_error); when the host exits through Deno.exit (a second Ctrl-C),
//   its running sandboxes are killed with it.
// - Reports cannot be forged: Deno reports are framed with a per-run random nonce the code never
//   sees; a Worker reports through a postMessage the code no longer has. The host parses them as
//   data and never evaluates anything the sandbox sends.
//
// What is not covered
// - Exploits of V8, Deno or the browser: this is a capability sandbox, not a VM, container,
//   seccomp filter or cgroup.
// - CPU: the code may use a whole core until its deadline; the pool bounds how many run at once.
// - Memory in browsers: there is no per-Worker heap limit. Measured in headless Chromium: a
//   heap blow-up crashes the tab's renderer process; ArrayBuffer floods are refused by the
//   browser and end at the deadline. Training in a tab is for code the model writes in good
//   faith; use the Deno host for anything you would not run in your own tab.
// - The resident-memory watchdog needs Linux and read access to /proc; elsewhere only the heap
//   limit holds. Between two checks, memory can overshoot (at ~1.3 GB/s measured fill rate,
//   by tens of MiB).
// - Network in browsers is closed by removing globals and refusing `import(`; the page's origin
//   policy still applies. Serve pages with a Content-Security-Policy (connect-src, script-src
//   'self' blob:) as a second layer.
// - Timing side channels (performance.now, SharedArrayBuffer) are left in place.
// - A host killed with SIGKILL cannot stop its sandboxes: being in their own session, they run
//   on until their code ends (code that never ends keeps its process; kill it by hand).
//
// Why a subprocess and not a Worker in Deno (measured with Deno 2.9.6): a Worker with
// permissions "none" can still end the host (import("node:process") → kill(pid); signalling
// one's own pid needs no permission); a heap blow-up in any Worker aborts the whole process
// and web Workers have no heap-limit option; worker.terminate() leaves a busy-looping Worker
// spinning on its thread forever (denoland/deno PR #35657); navigator.gpu is not
// permission-gated. A fresh `deno run` costs about what a fresh Worker does (bare process
// ~30 ms, sandboxed run ~35 ms at p50, Worker round trip ~22 ms, on this 2-core box).

export { runJs } from "./run.ts";
export { SandboxPool } from "./pool.ts";
export type { SandboxPoolOptions } from "./pool.ts";
export { connectSandboxPool, startSandboxPoolWorker } from "./remote.ts";
export { SandboxArgumentError, SandboxPoolClosedError, SandboxUnavailableError } from "./errors.ts";
export { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS } from "./types.ts";
export type {
  ExecResult,
  Isolation,
  PoolStats,
  RunOptions,
  SandboxJob,
  SandboxService,
} from "./types.ts";
