// The contract between run.ts (deadline, output cap, result) and a host file that knows how
// to start one fresh sandbox: host_deno.ts (a `deno run` subprocess) or host_browser.ts (a
// blob Worker). A host only starts, relays and kills; it makes no policy decisions.

import type { GuestRequest } from "./guest.ts";

export type GuestEvent =
  | { kind: "start" } // the code starts running: its deadline counts from here
  | { kind: "out"; text: string }
  | { kind: "end"; ok: boolean; error: string | null };

export interface GuestLaunch {
  request: GuestRequest;
  /** V8 heap limit in MiB (a host that cannot enforce one ignores it; see mod.ts). */
  memoryMb: number;
  onEvent(event: GuestEvent): void;
}

export interface GuestHandle {
  /** Stops the sandbox now, whatever it is doing. Idempotent. */
  kill(): void;
  /**
   * Settles once the sandbox is gone and its resources released: with an error text
   * ("MemoryLimitError: …") when it died on its own, null when it was killed or had ended.
   */
  readonly exited: Promise<string | null>;
}

export interface SandboxHost {
  readonly name: string;
  /** Starts one fresh sandbox. Throws SandboxUnavailableError when this host cannot. */
  launch(launch: GuestLaunch): GuestHandle;
  /**
   * Keeps `count` fresh sandboxes with this heap limit started ahead of their runs (0: none),
   * each still used for one run; resolves once a lowered count's surplus is gone. Optional: a
   * host without it starts every sandbox at its run.
   */
  stock?(count: number, memoryMb: number): Promise<void>;
}
