// Chaos: a seeded tiny run (the quickstart made small, 3 steps, a checkpoint every step) killed
// with SIGKILL again and again — while sandboxed tool code runs, in the middle of a checkpoint
// write, and at seeded random moments (start-up, loading, resuming, updating) — and each time
// resumed from its latest complete checkpoint (or started over where none was complete yet) ends
// bit-identical to the same run left alone: every checkpoint file (adapters, optimizer moments,
// trainer state) and every metrics line but its timings. No sandbox process outlives a kill.
// CHAOS_SEED=N picks other moments. Linux only (process trees are read from /proc).

import { assert, assertEquals } from "../assert.ts";
import {
  alive,
  assertSameRun,
  descendants,
  type Proc,
  runDirOf,
  runTrain,
  SMALL,
  spawnTrain,
} from "./train_cli_helpers.ts";

const QUICK = "configs/quickstart.json";
const STEPS = 3;
const SEED = Number(Deno.env.get("CHAOS_SEED") ?? 26);
const args = (
  root: string,
) => ["--config", QUICK, "--set", [...SMALL, `run.outDir=${root}`, `run.steps=${STEPS}`].join(",")];

/**
 * Where each session is killed, in order (once the run has a complete checkpoint of step
 * `after` or later); after the last, the run goes to its end. The first kill, in step 1's
 * checkpoint write, leaves nothing to resume: the run starts over.
 */
type Moment = "sandbox" | "checkpoint" | "random";
const PLAN: { moment: Moment; after: number }[] = [
  { moment: "checkpoint", after: 0 },
  { moment: "sandbox", after: 1 },
  { moment: "checkpoint", after: 1 },
  { moment: "random", after: 0 },
  { moment: "sandbox", after: 2 },
  { moment: "checkpoint", after: 2 },
];

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Half-written checkpoint folders: checkpoints/.step-N.tmp-… or .best.tmp-… (renamed into place when complete). */
function checkpointTemps(dir: string): string[] {
  const out: string[] = [];
  for (const d of [`${dir}/checkpoints`, dir]) {
    try {
      for (const e of Deno.readDirSync(d)) {
        if (/^\.(step-\d+|best)\.(tmp|old|trash)-/.test(e.name)) out.push(`${d}/${e.name}`);
      }
    } catch { /* not made yet */ }
  }
  return out;
}

/** The step of the run directory's latest complete checkpoint (0: none to resume from). */
function latestStep(dir: string | null): number {
  if (!dir) return 0;
  try {
    return Math.max(
      0,
      ...[...Deno.readDirSync(`${dir}/checkpoints`)].map((e) =>
        Number(/^step-(\d+)$/.exec(e.name)?.[1] ?? 0)
      ),
    );
  } catch {
    return 0;
  }
}
const hasCheckpoint = (dir: string | null) => latestStep(dir) > 0;

/**
 * Waits for `moment` in `p`, then SIGKILLs its process group. For "sandbox" and "checkpoint" the
 * group is first stopped (SIGSTOP) and the moment checked again, so the kill surely lands in it.
 * A "random" moment is up to `randomMs` after the start. Returns what was hit, or null when the
 * run ended first.
 */
async function killAt(
  p: Proc,
  moment: Moment,
  after: number,
  stale: Set<string>,
  rand: () => number,
  randomMs: number,
): Promise<string | null> {
  let ended = false;
  p.done.then(() => ended = true);
  const t0 = Date.now();
  const deadline = () =>
    assert(Date.now() - t0 < 90_000, `no ${moment} moment within 90 s:\n${p.text()}`);
  if (moment === "random") {
    const ms = Math.round(rand() * randomMs);
    await sleep(ms);
    if (ended) return null;
    p.signal("SIGKILL");
    return `random (${ms} ms after the start)`;
  }
  const dir = () => p.text().match(/(?:run directory|resuming run): (\S+)/)?.[1] ?? null;
  // a write of this session's, not a folder a killed one left behind (which the resume removes)
  const writingCheckpoint = (d: string) =>
    checkpointTemps(d).find((t) => t.includes(".tmp-") && !stale.has(t)) ?? null;
  for (;;) {
    if (ended) return null;
    deadline();
    const d = dir();
    if (latestStep(d) < after) {
      await sleep(1);
      continue;
    }
    const hit = moment === "sandbox"
      ? descendants(p.pid, "runner_deno").length > 0
      : d !== null && writingCheckpoint(d) !== null;
    if (hit) {
      p.signal("SIGSTOP");
      const sandboxes = descendants(p.pid, "runner_deno");
      const still = moment === "sandbox" ? sandboxes.length > 0 : writingCheckpoint(d!);
      if (still) {
        p.signal("SIGKILL");
        // the sandboxes (in their own process group) must not outlive the trainer
        for (const pid of sandboxes) {
          const t = Date.now();
          while (alive(pid) && Date.now() - t < 10_000) await sleep(20);
          assert(!alive(pid), `sandbox process ${pid} outlived the killed trainer`);
        }
        return moment === "sandbox"
          ? `sandbox (${sandboxes.length} running)`
          : `checkpoint (${String(still).slice(d!.length + 1)} half written)`;
      }
      p.signal("SIGCONT"); // it finished between the look and the stop: wait for the next one
    }
    await sleep(1);
  }
}

Deno.test({
  name:
    "train chaos: SIGKILL during sandbox runs, checkpoint writes and at random moments, resumed each time, ends bit-identical to the uninterrupted run",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "train_chaos_" });
    const rand = mulberry32(SEED);
    const story: string[] = [`seed ${SEED}`];
    let p: Proc | null = null;
    // The uninterrupted run, beside the chaos; its wall time bounds the random moment.
    const tRef = Date.now();
    let refMs = 0;
    const ref = runTrain(args(`${root}/ref`)).then((r) => {
      refMs = Date.now() - tRef;
      assertEquals(r.code, 0, r.text);
      return runDirOf(r.text);
    });
    try {
      let dir: string | null = null;
      for (const { moment, after } of PLAN) {
        const resume = hasCheckpoint(dir), from = latestStep(dir);
        const stale = new Set(resume ? checkpointTemps(dir!) : []);
        // A random moment lands within the first 30% of a whole run's time (at most 5 s): a resume
        // with steps left takes longer than that, however fast the machine (a quiet one ran the
        // whole test in 7 s, and a fixed 5 s window let the resumed run end first).
        if (moment === "random") await ref;
        p = spawnTrain(resume ? ["--resume", dir!] : args(`${root}/chaos`));
        const hit = await killAt(p, moment, after, stale, rand, Math.min(5000, 0.3 * refMs));
        const { code, text } = await p.done;
        dir = text.match(/(?:run directory|resuming run): (\S+)/)?.[1] ?? (resume ? dir : null);
        story.push(
          `${resume ? `resume from step-${from}` : "start"} → ${
            hit ? `killed at ${hit}` : `ended (exit ${code})`
          }`,
        );
        if (!hit) {
          assertEquals(code, 0, `${story.join("\n")}\n${text}`);
          break;
        }
      }
      if (!story.at(-1)!.includes("ended")) {
        const resume = hasCheckpoint(dir), from = latestStep(dir);
        const r = await runTrain(resume ? ["--resume", dir!] : args(`${root}/chaos`));
        story.push(`${resume ? `resume from step-${from}` : "start"} → ended (exit ${r.code})`);
        assertEquals(r.code, 0, `${story.join("\n")}\n${r.text}`);
        if (!resume) dir = runDirOf(r.text);
      }
      const told = story.join("\n");
      assert(
        story.some((s) => s.includes("killed at sandbox")),
        `no kill landed in a sandbox run:\n${told}`,
      );
      assert(
        story.some((s) => s.includes("killed at checkpoint")),
        `no kill landed in a checkpoint write:\n${told}`,
      );
      assert(
        story.filter((s) => s.startsWith("resume")).length >= 3,
        `fewer than 3 resumes:\n${told}`,
      );
      await assertSameRun(await ref, dir!, STEPS, told);
      assertEquals(checkpointTemps(dir!), [], "half-written checkpoints are cleaned up on resume");
      console.log(told);
    } finally {
      await p?.kill();
      await ref.catch(() => {});
      await Deno.remove(root, { recursive: true });
    }
  },
});
