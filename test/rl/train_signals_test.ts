// Signals as a terminal, a process manager or a CI timeout send them, to the real command
// (`deno task train`, in its own session so the test signals its whole process group as a
// terminal's Ctrl-C does), each interrupted run resumed and compared bit for bit with an
// uninterrupted one: Ctrl-C while sandboxed tool code runs, SIGTERM to the trainer alone, a
// second Ctrl-C (stop at once), and the `deno task` wrapper killed (the trainer must not
// outlive it). Linux only (process trees are read from /proc).

import { assert, assertEquals } from "../assert.ts";
import {
  alive,
  assertSameRun,
  descendants,
  runDirOf,
  runTrain,
  SMALL,
  spawnTrain,
} from "./train_cli_helpers.ts";

const QUICK = "configs/quickstart.json";
const STEPS = 3;
const linux = Deno.build.os === "linux";
const args = (root: string, more: string[] = []) => [
  "--config",
  QUICK,
  "--set",
  [...SMALL, `run.outDir=${root}`, `run.steps=${STEPS}`, ...more].join(","),
];

let reference: Promise<string> | null = null;
/** The uninterrupted run every interrupted one must end identical to (made once). */
function uninterrupted(root: string): Promise<string> {
  reference ??= runTrain(args(root)).then((r) => {
    assertEquals(r.code, 0, r.text);
    return runDirOf(r.text);
  });
  return reference;
}

Deno.test({
  name:
    "train signals: Ctrl-C to the process group while tool code runs in the sandbox: the step completes, exit 130, the resume ends bit-identical to an uninterrupted run",
  ignore: !linux,
  fn: async () => {
    const root = await Deno.makeTempDir();
    const p = spawnTrain(args(root), { task: true });
    try {
      const ref = uninterrupted(root);
      await p.waitFor(/step 1\/3/);
      // Wait for a sandbox process of step 2, then Ctrl-C as a terminal sends it: to the whole
      // group. Training keeps sandbox processes started ahead of their runs (prewarm), and
      // starts a new one when a run takes one: a process not there when step 1 ended means tool
      // code of step 2 has started.
      const before = new Set(descendants(p.pid, "runner_deno"));
      const t0 = Date.now();
      while (!descendants(p.pid, "runner_deno").some((pid) => !before.has(pid))) {
        assert(Date.now() - t0 < 30_000, `no new sandbox process seen:\n${p.text()}`);
        await new Promise((r) => setTimeout(r, 1));
      }
      p.signal("SIGINT");
      const { code, text } = await p.done;
      assertEquals(code, 130, text);
      // The step whose tool code was seen: step 2's, or on a loaded machine (whose polling can
      // miss step 2's short-lived sandbox process) step 3's.
      const step = Number(text.match(/SIGINT: finishing step (\d+)/)?.[1]);
      assert(step === 2 || step === 3, text);
      const dir = runDirOf(text);
      assert(
        text.includes(`checkpoint step-${step} written`) ||
          text.includes(`interrupted: checkpoint step-${step} written`),
        text,
      );
      const r = await runTrain(["--resume", dir]);
      assertEquals(r.code, 0, r.text);
      await assertSameRun(await ref, dir, STEPS);
    } finally {
      await p.kill();
      await reference?.catch(() => {});
      await Deno.remove(root, { recursive: true });
      reference = null;
    }
  },
});

Deno.test({
  name:
    "train signals: SIGTERM to the trainer alone stops it like Ctrl-C (checkpoint, exit 143); the resume ends bit-identical; a second signal stops at once",
  ignore: !linux,
  fn: async () => {
    const root = await Deno.makeTempDir();
    const p = spawnTrain(args(root));
    let q: ReturnType<typeof spawnTrain> | null = null;
    try {
      const ref = uninterrupted(root);
      await p.waitFor(/step 1\/3/);
      p.signal("SIGTERM", false);
      const { code, text } = await p.done;
      assertEquals(code, 143, text);
      assert(
        text.includes("SIGTERM: finishing step 2") &&
          text.includes("interrupted: checkpoint step-2 written"),
        text,
      );
      const dir = runDirOf(text);
      const r = await runTrain(["--resume", dir]);
      assertEquals(r.code, 0, r.text);
      await assertSameRun(await ref, dir, STEPS);

      // Two Ctrl-Cs: the second stops at once, saying so, without a checkpoint of the step.
      // Steps 4× as long as the others' (8 envs, not 2), so the second signal lands inside step 2.
      q = spawnTrain(args(root, ["rollout.envsPerStep=8"]));
      await q.waitFor(/step 1\/3/);
      const qdir = runDirOf(q.text());
      for (let t = 0; t < 600; t++) {
        if (
          await Deno.stat(`${qdir}/checkpoints/step-1/checkpoint.json`).then(
            () => true,
            () => false,
          )
        ) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      q.signal("SIGINT");
      await q.waitFor(/SIGINT: finishing step 2/);
      // A person's second Ctrl-C (one within half a second is taken as the same one delivered twice).
      await new Promise((r) => setTimeout(r, 700));
      q.signal("SIGINT");
      const second = await q.done;
      assertEquals(second.code, 130, second.text);
      assert(second.text.includes("SIGINT again: stopping now without a checkpoint"), second.text);
      const ck = [...Deno.readDirSync(`${qdir}/checkpoints`)].map((e) => e.name).filter((n) =>
        n.startsWith("step-")
      ).sort();
      // The step in progress leaves no checkpoint. On a loaded machine step 2 can end, its
      // checkpoint written whole, before the second signal lands (seen in a fresh-clone run beside
      // another training job): then that checkpoint must be complete.
      const step2Whole = await Deno.stat(`${qdir}/checkpoints/step-2/checkpoint.json`).then(
        () => true,
        () => false,
      );
      assert(
        JSON.stringify(ck) === '["step-1"]' ||
          (JSON.stringify(ck) === '["step-1","step-2"]' && step2Whole),
        `checkpoints ${JSON.stringify(ck)} (step-2 whole: ${step2Whole}):\n${second.text}`,
      );
      assertEquals(await Deno.readTextFile(`${qdir}/run.lock`), "", "the lock is released");
    } finally {
      await p.kill();
      await q?.kill();
      await reference?.catch(() => {});
      await Deno.remove(root, { recursive: true });
      reference = null;
    }
  },
});

Deno.test({
  name:
    "train signals: the trainer does not outlive its `deno task` wrapper (SIGKILL to the wrapper alone)",
  ignore: !linux,
  fn: async () => {
    const root = await Deno.makeTempDir();
    // A long run, so it cannot end on its own within the test's wait.
    const p = spawnTrain([
      "--config",
      QUICK,
      "--set",
      [...SMALL, `run.outDir=${root}`, "run.steps=50"].join(","),
    ], { task: true });
    let trainer = 0;
    try {
      await p.waitFor(/adapter:/);
      [trainer] = descendants(p.pid, "src/cli/train.ts").filter((pid) => pid !== p.pid);
      assert(trainer, "no trainer process under the wrapper");
      p.signal("SIGKILL", false);
      const t0 = Date.now();
      while (alive(trainer) && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 50));
      assert(
        !alive(trainer),
        `the trainer (${trainer}) still runs 5 s after its wrapper was killed: ${
          Deno.readTextFileSync(`/proc/${trainer}/stat`)
        }\n${p.text()}`,
      );
    } finally {
      if (trainer && alive(trainer)) Deno.kill(trainer, "SIGKILL");
      await p.kill();
      await Deno.remove(root, { recursive: true });
    }
  },
});
