// Spawning `train` as a user does, for the CLI tests: the real command in its own session (so a
// test signals its whole process group, as a terminal does), output collected as it comes, and
// bit-for-bit comparison of two runs' last checkpoints and metrics.

import { assert, assertEquals } from "../assert.ts";

export const DENO = Deno.execPath();

/** The quickstart, small: 2 envs x 2 candidates, a checkpoint every step, no validation before training. */
export const SMALL = [
  "rollout.envsPerStep=2",
  "rollout.k=2",
  "eval.episodes=2",
  "eval.everySteps=100",
  "eval.beforeTraining=false",
  "run.checkpointEvery=1",
  "run.keepLast=20",
  "update.schedule.warmupSteps=0",
];

export interface Proc {
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  /** stdout and stderr so far, interleaved as they arrived. */
  text(): string;
  /** Resolves once the output matches `re`; rejects after `ms` or if the process ends first. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** The exit code and the whole output. */
  done: Promise<{ code: number; signal: Deno.Signal | null; text: string }>;
  /** Signals the process group (as a terminal does) or only the process. */
  signal(sig: Deno.Signal, group?: boolean): void;
  /** SIGKILL to the group and wait: for `finally`. */
  kill(): Promise<void>;
}

/** `deno run -A src/cli/train.ts ...args` (or `deno task train ...args`) in a new session. */
export function spawnTrain(args: string[], opts: { task?: boolean } = {}): Proc {
  const cmdArgs = opts.task
    ? ["task", "--quiet", "train", ...args]
    : ["run", "-A", "src/cli/train.ts", ...args];
  const child = new Deno.Command(DENO, {
    args: cmdArgs,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    detached: true,
    env: { NO_COLOR: "1" },
  }).spawn();
  let text = "";
  const waiters: (() => void)[] = [];
  const pump = async (s: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of s) {
      text += dec.decode(chunk, { stream: true });
      for (const w of waiters.splice(0)) w();
    }
  };
  let ended = false;
  const done = (async () => {
    const [status] = await Promise.all([child.status, pump(child.stdout), pump(child.stderr)]);
    ended = true;
    for (const w of waiters.splice(0)) w();
    return { code: status.code, signal: status.signal, text };
  })();
  const proc: Proc = {
    child,
    pid: child.pid,
    text: () => text,
    done,
    waitFor(re, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${re}; output:\n${text}`)),
          ms,
        );
        const check = () => {
          const m = text.match(re);
          if (m) {
            clearTimeout(timer);
            resolve(m);
          } else if (ended) {
            clearTimeout(timer);
            reject(new Error(`the process ended before ${re}; output:\n${text}`));
          } else waiters.push(check);
        };
        check();
      });
    },
    signal(sig, group = true) {
      Deno.kill(group ? -child.pid : child.pid, sig);
    },
    async kill() {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch { /* already gone */ }
      await done;
    },
  };
  return proc;
}

/** Runs train to the end. */
export async function runTrain(args: string[]): Promise<{ code: number; text: string }> {
  const p = spawnTrain(args);
  try {
    return await p.done;
  } finally {
    await p.kill();
  }
}

/** The run directory a train process printed. */
export function runDirOf(text: string): string {
  const m = text.match(/run directory: (\S+)/);
  assert(m, `no run directory in the output:\n${text}`);
  return m[1];
}

export async function readMetrics(dir: string): Promise<Record<string, unknown>[]> {
  const text = await Deno.readTextFile(`${dir}/metrics.jsonl`);
  return text.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** A metrics line without what may differ between equal runs: timings and why a checkpoint was written. */
export function stripTimes(m: Record<string, unknown>): string {
  const { seconds: _s, rolloutTokensPerS: _r, updateTokensPerS: _u, checkpoint: _c, ...rest } = m;
  return JSON.stringify(rest);
}

async function filesUnder(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`${dir}/${prefix}`)) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory) out.push(...await filesUnder(dir, rel));
    else out.push(rel);
  }
  return out.sort();
}

/**
 * Two runs ended the same, bit for bit: every metrics line but its timings (compared first, so
 * a failure names the first step where they part) and every file of their step-`step`
 * checkpoint (adapters, optimizer moments, trainer state). `context` goes into the message.
 */
export async function assertSameRun(a: string, b: string, step: number, context = "") {
  const [ma, mb] = [await readMetrics(a), await readMetrics(b)];
  assertEquals(mb.map((m) => m.step), ma.map((m) => m.step), `metrics steps differ\n${context}`);
  const [sa, sb] = [ma.map(stripTimes), mb.map(stripTimes)];
  const i = sa.findIndex((x, k) => x !== sb[k]);
  assert(
    i < 0,
    `metrics part at line ${i + 1} (step ${ma[i]?.step}) between ${a} and ${b}:\n${sa[i]}\n` +
      `${sb[i]}\n${context}`,
  );
  const ca = `${a}/checkpoints/step-${step}`, cb = `${b}/checkpoints/step-${step}`;
  const fa = await filesUnder(ca), fb = await filesUnder(cb);
  assertEquals(fb, fa, `checkpoint files differ\n${context}`);
  for (const f of fa) {
    const [x, y] = [await Deno.readFile(`${ca}/${f}`), await Deno.readFile(`${cb}/${f}`)];
    assert(
      x.length === y.length && x.every((v, i) => v === y[i]),
      `${f} of step-${step} differs between ${a} and ${b}\n${context}`,
    );
  }
}

/** Whether something listens on 127.0.0.1:port. */
export async function listening(port: number): Promise<boolean> {
  try {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    c.close();
    return true;
  } catch {
    return false;
  }
}

// Process trees, read from /proc (Linux only).

/** pid → [ppid, command line] of every process. */
export function processes(): Map<number, [number, string]> {
  const out = new Map<number, [number, string]>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).replaceAll("\0", " ");
      out.set(Number(e.name), [ppid, cmd]);
    } catch { /* gone */ }
  }
  return out;
}

/** Descendants of `root` whose command line contains `needle`. */
export function descendants(root: number, needle: string): number[] {
  const ps = processes();
  const isUnder = (pid: number): boolean => {
    for (let p = pid, n = 0; p > 1 && n < 64; n++) {
      p = ps.get(p)?.[0] ?? 0;
      if (p === root) return true;
    }
    return false;
  };
  return [...ps].filter(([pid, [, cmd]]) => cmd.includes(needle) && isUnder(pid)).map(([pid]) =>
    pid
  );
}

export const alive = (pid: number) => {
  try {
    return !Deno.readTextFileSync(`/proc/${pid}/stat`).includes(") Z ");
  } catch {
    return false;
  }
};
