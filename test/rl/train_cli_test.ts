// `deno task train` as a user runs it, on the quickstart made small: one process per run
// directory (a lock with its holder's pid, stale locks taken over), a manual save on SIGUSR1/2
// that opens no debugger port and shows in the metrics, metrics.jsonl and summary.log whole and
// without repeats across a SIGKILL and a resume, `--resume RUN_DIR` on the run's own config with
// overrides shown and recorded, and the exit codes of bad input.

import { assert, assertEquals } from "../assert.ts";
import {
  DENO,
  listening,
  readMetrics,
  runDirOf,
  runTrain,
  SMALL,
  spawnTrain,
} from "./train_cli_helpers.ts";

const QUICK = "configs/quickstart.json";
const sets = (
  root: string,
  steps: number,
  extra: string[] = [],
) => ["--set", [...SMALL, `run.outDir=${root}`, `run.steps=${steps}`, ...extra].join(",")];

Deno.test("train CLI: a second process on a run directory gets RunDirLockedError and exit 2; a dead holder's lock is taken over", async () => {
  const root = await Deno.makeTempDir();
  let holder: Deno.ChildProcess | null = null;
  try {
    const first = await runTrain(["--config", QUICK, ...sets(root, 1)]);
    assertEquals(first.code, 0, first.text);
    const dir = runDirOf(first.text);
    // Another process holds the run (as a train process resuming it would).
    const code = `import { RunLock } from "./src/rl/run_lock.ts"; await RunLock.acquire(${
      JSON.stringify(dir)
    }); console.log("locked"); await new Promise(() => setInterval(() => {}, 1000));`;
    holder = new Deno.Command(DENO, { args: ["eval", code], stdout: "piped", stderr: "inherit" })
      .spawn();
    const reader = holder.stdout.getReader();
    assertEquals(new TextDecoder().decode((await reader.read()).value).trim(), "locked");
    reader.releaseLock();
    const second = await runTrain(["--resume", dir, "--set", "run.steps=2"]);
    assertEquals(second.code, 2, second.text);
    assert(
      second.text.includes("RunDirLockedError") && second.text.includes(`process ${holder.pid}`),
      second.text,
    );
    assertEquals(
      (await readMetrics(dir)).map((m) => m.step),
      [1],
      "the refused process wrote metrics",
    );
    // The holder dies without releasing (SIGKILL): its lock is stale, and the next resume takes it.
    holder.kill("SIGKILL");
    await holder.status;
    await holder.stdout.cancel().catch(() => {});
    holder = null;
    const third = await runTrain(["--resume", dir, "--set", "run.steps=2"]);
    assertEquals(third.code, 0, third.text);
    assert(/took over the lock of process \d+/.test(third.text), third.text);
    assertEquals((await readMetrics(dir)).map((m) => m.step), [1, 2]);
    assertEquals(
      await Deno.readTextFile(`${dir}/run.lock`),
      "",
      "a finished run leaves its lock released",
    );
  } finally {
    if (holder) {
      holder.kill("SIGKILL");
      await holder.status;
      await holder.stdout.cancel().catch(() => {});
    }
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name:
    "train CLI: SIGUSR1 and SIGUSR2 write a checkpoint after the step, said on the console and in the metrics; no debugger port stays open",
  ignore: Deno.build.os === "windows",
  fn: async () => {
    const root = await Deno.makeTempDir();
    const portBusy = await listening(9229);
    const p = spawnTrain(["--config", QUICK, ...sets(root, 4, ["run.checkpointEvery=0"])]);
    try {
      await p.waitFor(/step 1\/4/);
      p.signal("SIGUSR1", false);
      await p.waitFor(/SIGUSR1: a checkpoint will be written after step 2/);
      await p.waitFor(/checkpoint step-2 written \(requested by SIGUSR1\)/);
      await p.waitFor(/closed the inspector/);
      // While the run goes on, nothing listens on the inspector's port.
      if (!portBusy) {
        assert(!(await listening(9229)), "SIGUSR1 left a debugger listening on 127.0.0.1:9229");
      }
      p.signal("SIGUSR2", false);
      await p.waitFor(/checkpoint step-3 written \(requested by SIGUSR2\)/);
      const { code, text } = await p.done;
      assertEquals(code, 0, text);
      const dir = runDirOf(text);
      const m = await readMetrics(dir);
      assertEquals(m.map((x) => x.step), [1, 2, 3, 4]);
      assertEquals(
        m.map((x) => (x.checkpoint as { requestedBy?: string } | undefined)?.requestedBy ?? null),
        [null, "SIGUSR1", "SIGUSR2", null],
      );
      for (const s of [2, 3, 4]) await Deno.stat(`${dir}/checkpoints/step-${s}/checkpoint.json`);
      const summary = await Deno.readTextFile(`${dir}/summary.log`);
      assert(summary.includes("checkpoint step-2 written (requested by SIGUSR1)"), summary);
    } finally {
      await p.kill();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test("train CLI: after a SIGKILL, summary.log holds the run so far; the resume cuts metrics.jsonl back to its checkpoint, so every step appears once, and summary.log covers the whole run", async () => {
  const root = await Deno.makeTempDir();
  const p = spawnTrain(["--config", QUICK, ...sets(root, 3, ["eval.beforeTraining=true"])]);
  try {
    await p.waitFor(/step 2\/3/);
    await p.kill();
    const dir = runDirOf(p.text());
    // A kill after step 2's metrics line but before its checkpoint: step-2 never got written.
    await Deno.remove(`${dir}/checkpoints/step-2`, { recursive: true }).catch(() => {});
    await Deno.remove(`${dir}/checkpoints/step-3`, { recursive: true }).catch(() => {});
    assertEquals((await readMetrics(dir)).map((m) => m.step).slice(0, 3), [0, 1, 2]);
    const crashed = await Deno.readTextFile(`${dir}/summary.log`);
    assert(
      crashed.includes("step 0: held-out success") && crashed.includes("step 2/3"),
      `summary.log after the crash:\n${crashed}`,
    );
    // The setup's GPU memory by kind, said once (the quickstart's KV cache and weights are small).
    const mem = /GPU memory after setup: (\d+\.\d+) (GiB|MiB|KiB) \((.*)\)/.exec(crashed);
    assert(mem && Number(mem[1]) > 0, `no GPU memory line:\n${crashed}`);
    assert(/params \d/.test(mem[3]) && /KV cache \d/.test(mem[3]), mem[3]);

    const r = await runTrain(["--resume", dir]);
    assertEquals(r.code, 0, r.text);
    assert(/dropped \d line\(s\) after step 1/.test(r.text), r.text);
    assertEquals((await readMetrics(dir)).map((m) => m.step), [0, 1, 2, 3]);
    const log = await Deno.readTextFile(`${dir}/summary.log`);
    assert(log.startsWith(crashed), "the resume rewrote the first session's lines");
    const last = JSON.parse(log.trim().split("\n").at(-1)!.replace(/^\S+ summary: /, ""));
    assertEquals(last.status, "completed");
    assertEquals(last.steps, 3, "summary.log's summary counts the whole run");
    assert(
      last.before && typeof last.before.successRate === "number",
      "the whole run's validation before training is in the summary",
    );
    // The result table shows it too.
    assert(/held-out success\s+\d+\.\d%\s+\d+\.\d%/.test(r.text), r.text);
  } finally {
    await p.kill();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("train CLI: --resume RUN_DIR alone continues with the run's own config; overrides are shown and recorded; a differing --config is refused", async () => {
  const root = await Deno.makeTempDir();
  try {
    // Started with an lr and a length that differ from the config file.
    const first = await runTrain([
      "--config",
      QUICK,
      ...sets(root, 1, ["update.optimizer.lr=0.0005", "update.schedule.kind=constant"]),
    ]);
    assertEquals(first.code, 0, first.text);
    const dir = runDirOf(first.text);
    // The original file says lr 0.001 and 12 steps: resuming with it would change the run.
    const clash = await runTrain(["--config", QUICK, "--resume", dir]);
    assertEquals(clash.code, 2, clash.text);
    assert(
      clash.text.includes("update.optimizer.lr") && clash.text.includes("run.steps (1 → 12)"),
      clash.text,
    );
    const r = await runTrain(["--resume", dir, "--set", "run.steps=2"]);
    assertEquals(r.code, 0, r.text);
    assert(r.text.includes("resume overrides: run.steps (1 → 2)"), r.text);
    const m = await readMetrics(dir);
    assertEquals(m.map((x) => x.step), [1, 2]);
    assert(
      (m[1].updates as { lr: number }[]).every((u) => u.lr === 0.0005),
      "the resume changed the lr",
    );
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
    assertEquals(saved.run.steps, 2, "config.json keeps the override for later resumes");
    assert(
      (await Deno.readTextFile(`${dir}/summary.log`)).includes(
        "resume overrides: run.steps (1 → 2)",
      ),
    );
    // A setting a resume cannot change is refused, with what to do.
    const k = await runTrain(["--resume", dir, "--set", "rollout.k=3"]);
    assertEquals(k.code, 2, k.text);
    assert(k.text.includes("rollout.k (2 → 3)"), k.text);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("train CLI: bad input exits 2 — a missing config file, an empty --set, neither --config nor --resume, a directory that is no run", async () => {
  const root = await Deno.makeTempDir();
  try {
    for (
      const args of [["--config", `${root}/missing.json`], ["--config", QUICK, "--set", ""], [], [
        "--resume",
        root,
      ]]
    ) {
      const r = await runTrain(args);
      assertEquals(r.code, 2, `${args.join(" ")}: ${r.text}`);
      assert(r.text.includes("error"), r.text);
    }
    // Nothing was created for them.
    assertEquals([...Deno.readDirSync(root)].length, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
