// run.lock (src/rl/run_lock.ts): one holder at a time, named in the error; a released lock is
// free at once, in this process and in another.

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { RunLock } from "../../src/rl/run_lock.ts";

Deno.test("run lock: a second holder is refused by name; a released lock is free at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_lock_" });
  try {
    const a = await RunLock.acquire(dir);
    assertEquals(a.stale, null);
    await assertRejects(() => RunLock.acquire(dir), "RunDirLockedError", `process ${Deno.pid}`);
    await a.release();
    assertEquals(await Deno.readTextFile(`${dir}/run.lock`), "", "a released lock names nobody");
    // Released means free: taken again right away, many times over, with no RunDirLockedError.
    for (let i = 0; i < 200; i++) {
      const l = await RunLock.acquire(dir);
      if (i % 2) l.releaseSync();
      else await l.release();
    }
    // and by another process, while this one holds nothing
    const other = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { RunLock } from ${
          JSON.stringify(new URL("../../src/rl/run_lock.ts", import.meta.url).href)
        };
         const l = await RunLock.acquire(${
          JSON.stringify(dir)
        }); await l.release(); console.log("took it");`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(
      new TextDecoder().decode(other.stdout).includes("took it"),
      new TextDecoder().decode(other.stderr),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
