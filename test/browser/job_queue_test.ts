// JobQueue (src/browser/job_queue.ts): nothing runs before a drain; a drain runs jobs one at a time
// in queue order, including jobs queued while it runs; a second drain joins the first; a failing
// job rejects its own promise only; idle() waits for a running drain and starts none.

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { JobQueue } from "../../src/browser/job_queue.ts";

/** A job that logs its start and end around a few macrotask turns. */
const job = (log: string[], name: string, turns = 2) => async () => {
  log.push(`${name}:start`);
  for (let i = 0; i < turns; i++) await new Promise((r) => setTimeout(r, 0));
  log.push(`${name}:end`);
  return name;
};

Deno.test("JobQueue", async (t) => {
  await t.step("jobs wait for a drain", async () => {
    const q = new JobQueue(), log: string[] = [];
    const a = q.push(job(log, "a"));
    await new Promise((r) => setTimeout(r, 5));
    assertEquals(log, []);
    assertEquals(q.pending, 1);
    assert(!q.draining);
    await q.drain();
    assertEquals(await a, "a");
    assertEquals(log, ["a:start", "a:end"]);
    assertEquals(q.pending, 0);
  });

  await t.step("one at a time, in queue order, jobs queued mid-drain included", async () => {
    const q = new JobQueue(), log: string[] = [];
    const a = q.push(job(log, "a", 3)), b = q.push(job(log, "b", 1));
    const drained = q.drain();
    assert(q.draining);
    // Queued while a runs: joins this drain, after b.
    const c = q.push(job(log, "c", 1));
    await drained;
    assertEquals(await Promise.all([a, b, c]), ["a", "b", "c"]);
    assertEquals(log, ["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"]);
    assert(!q.draining);
  });

  await t.step("a second drain joins the running one instead of starting another", async () => {
    const q = new JobQueue(), log: string[] = [];
    void q.push(job(log, "a", 3));
    const first = q.drain();
    void q.push(job(log, "b", 1));
    const second = q.drain();
    assert(first === second, "the same drain");
    await second;
    // Had the second call started its own drain, b would have begun before a ended.
    assertEquals(log, ["a:start", "a:end", "b:start", "b:end"]);
  });

  await t.step("a failing job rejects its own promise; the next still runs", async () => {
    const q = new JobQueue(), log: string[] = [];
    const bad = q.push(() => Promise.reject(Object.assign(new Error("no"), { name: "GameError" })));
    const sync = q.push((): Promise<number> => {
      throw Object.assign(new Error("sync"), { name: "NoSessionError" });
    });
    const ok = q.push(job(log, "ok", 1));
    // Handlers first: the rejections happen during the drain.
    const rejected = [
      assertRejects(() => bad, "GameError"),
      assertRejects(() => sync, "NoSessionError"),
    ];
    await q.drain();
    await Promise.all(rejected);
    assertEquals(await ok, "ok");
    assertEquals(log, ["ok:start", "ok:end"]);
  });

  await t.step("idle() waits for a running drain and starts none", async () => {
    const q = new JobQueue(), log: string[] = [];
    void q.push(job(log, "a", 3));
    await q.idle();
    assertEquals(log, [], "idle() started nothing");
    void q.drain();
    await q.idle();
    assertEquals(log, ["a:start", "a:end"], "idle() returned once the drain ended");
    assert(!q.draining);
  });

  await t.step("a job queued as the previous one settles starts a new drain", async () => {
    // Queued 0..5 microtasks after the first job's promise settled: whichever turn the ending
    // drain is in, the new job must not be left behind by it.
    for (let hops = 0; hops < 6; hops++) {
      const q = new JobQueue();
      const first = q.push(() => Promise.resolve(1));
      void q.drain();
      assertEquals(await first, 1);
      for (let i = 0; i < hops; i++) await null;
      const second = q.push(() => Promise.resolve(2));
      void q.drain();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stranded = new Promise((r) => (timer = setTimeout(() => r("stranded"), 200)));
      const got = await Promise.race([second, stranded]);
      clearTimeout(timer);
      assertEquals(got, 2, `queued ${hops} microtasks after the first job settled`);
    }
  });

  await t.step("draining an empty queue resolves and leaves it idle", async () => {
    const q = new JobQueue();
    await q.drain();
    assert(!q.draining);
    const log: string[] = [];
    const a = q.push(job(log, "a", 1));
    await q.drain();
    assertEquals(await a, "a", "a later drain still runs jobs");
  });
});
