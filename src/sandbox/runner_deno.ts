// Entry point of the sandbox subprocess that host_deno.ts starts (`deno run` with no
// permissions): reads one request from stdin, strips the runtime, runs the code, and writes
// nonce-framed reports to stdout. Never imported by anything else.

import { guestMain, sandboxStripList, stripGlobals } from "./guest.ts";
import type { GuestEmit, GuestRequest } from "./guest.ts";
import { decodeWire } from "./wire.ts";

interface Envelope extends GuestRequest {
  /** Unguessable per run: a line without it is not a report, whatever it says. */
  nonce: string;
}

// Everything the reports need is captured before the code can touch a prototype or a global.
const { stdout, exit } = Deno;
const writeSync = stdout.writeSync.bind(stdout);
const apply = Reflect.apply;
const encode = TextEncoder.prototype.encode;
const subarray = Uint8Array.prototype.subarray;
const stringify = JSON.stringify;
const encoder = new TextEncoder();

function writeLine(line: string): void {
  const bytes = apply(encode, encoder, [line]) as Uint8Array;
  // writeSync may write part of the buffer when the pipe is full.
  for (let off = 0; off < bytes.length;) off += writeSync(apply(subarray, bytes, [off]));
}

/** The whole request, read synchronously: an async stream read would wait for the event
 * loop's first turn, which costs a fresh Deno process 10–30 ms (measured). */
function readRequest(): Envelope {
  const chunks: Uint8Array[] = [];
  const buf = new Uint8Array(1 << 16);
  for (let n = Deno.stdin.readSync(buf); n !== null; n = Deno.stdin.readSync(buf)) {
    chunks.push(buf.slice(0, n));
  }
  const all = new Uint8Array(chunks.reduce((sum, c) => sum + c.length, 0));
  chunks.reduce((off, c) => (all.set(c, off), off + c.length), 0);
  return decodeWire(new TextDecoder().decode(all)) as Envelope;
}

const req = readRequest();
const frame = req.nonce + " ";
const emit: GuestEmit = (kind, text, ok) =>
  writeLine(
    kind === "s"
      ? `${frame}s\n`
      : kind === "o"
      ? `${frame}o ${stringify(text)}\n`
      : `${frame}e ${ok ? 1 : 0} ${stringify(text)}\n`,
  );

stripGlobals(globalThis, sandboxStripList());
await guestMain(
  globalThis,
  {
    code: req.code,
    helpers: req.helpers,
    globals: req.globals,
    maxOutputBytes: req.maxOutputBytes,
  },
  emit,
);
exit(0);
