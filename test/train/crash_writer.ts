// Child process of the crash test: starts writing a checkpoint over `dir`, announces each
// file on stdout and, after the first, stalls until the parent kills it with SIGKILL — a crash
// in the middle of a checkpoint write. Usage: deno run -A crash_writer.ts <dir> <seed>

import { writeCheckpoint } from "../../src/train/checkpoint_dir.ts";
import { contents } from "./ckpt_fixtures.ts";

const [dir, seed] = Deno.args;
await writeCheckpoint(dir, await contents(Number(seed)), {
  async onFile(name) {
    console.log(`WROTE ${name}`);
    // Keep the event loop alive so only the parent's kill ends this process.
    await new Promise(() => setInterval(() => {}, 1000));
  },
});
console.log("FINISHED");
