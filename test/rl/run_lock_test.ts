// run.lock (src/rl/run_lock.ts): one holder at a time, named in the error; a released lock is
// free at once, in this process and in another. Run directories (src/rl/run_dir.ts) are made
// exclusively, so runs started together never share one.

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { RunLock } from "../../src/rl/run_lock.ts";
import { RunDir } from "../../src/rl/run_dir.ts";
import { defaultConfig } from "../../src/rl/config.ts";

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

Deno.test("run directory: runs started in the same millisecond each get their own, locked", async () => {
  const root = await Deno.makeTempDir({ prefix: "run_dir_" });
  try {
    const base = defaultConfig();
    const cfg = { ...base, run: { ...base.run, outDir: root, name: "same_ms" } };
    const now = new Date("2026-11-27T18:00:00.123Z");
    const runs = await Promise.all([0, 1, 2].map(() => RunDir.create(cfg, () => {}, now)));
    const stamp = "2026-11-27T18-00-00-123Z";
    assertEquals(
      runs.map((r) => r.dir.slice(`${root}/same_ms/`.length)).sort(),
      [stamp, `${stamp}-2`, `${stamp}-3`],
    );
    for (const r of runs) {
      assertEquals((await Deno.stat(`${r.dir}/checkpoints`)).isDirectory, true);
      await r.close({ status: "completed" });
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
