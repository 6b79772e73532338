// One process per run directory: `run.lock` holds an exclusive flock(2) for as long as a train
// process has the run open, and names that process (pid, host, start time, command line). The
// kernel drops the lock when its process ends in any way — SIGKILL, a crash, a power-off of a
// container — so a lock file left behind is stale exactly when nobody holds its flock; the next
// process takes it over and says whose it was. (flock is per open file: two opens in one process
// conflict too. On network file systems without flock support the lock may not hold.)

import { joinPath } from "../io/deno_files.ts";

/** Who holds (or held) a run directory's lock, as written in run.lock. */
export interface LockHolder {
  pid: number;
  hostname: string;
  started: string;
  command: string;
}

/** Another process has this run directory open (a bad input: exit code 2). */
export class RunDirLockedError extends Error {
  override name = "RunDirLockedError";
  constructor(readonly dir: string, readonly holder: LockHolder | null) {
    super(
      `run directory ${dir} is in use by ${
        holder
          ? `process ${holder.pid} on ${holder.hostname} (started ${holder.started}: ${holder.command})`
          : "another process"
      }; ` +
        "wait for it to finish or stop it (Ctrl-C or kill -TERM checkpoints it), then resume",
    );
  }
}

const LOCK_FILE = "run.lock";

function parseHolder(text: string): LockHolder | null {
  try {
    const h = JSON.parse(text);
    return typeof h?.pid === "number" ? h as LockHolder : null;
  } catch {
    return null;
  }
}

async function readAll(f: Deno.FsFile): Promise<string> {
  await f.seek(0, Deno.SeekMode.Start);
  const dec = new TextDecoder(), buf = new Uint8Array(4096);
  let text = "";
  for (let n; (n = await f.read(buf)) !== null;) {
    text += dec.decode(buf.subarray(0, n), { stream: true });
  }
  return text + dec.decode();
}

export class RunLock {
  private constructor(
    readonly path: string,
    private file: Deno.FsFile | null,
    readonly stale: LockHolder | null,
  ) {}

  /**
   * Takes the run directory's lock or throws RunDirLockedError naming its holder. `stale` is the
   * holder a previous process left in run.lock without releasing it (it was killed), if any.
   */
  static async acquire(dir: string): Promise<RunLock> {
    const path = joinPath(dir, LOCK_FILE);
    const f = await Deno.open(path, { read: true, write: true, create: true });
    try {
      if (!(await f.tryLock(true))) throw new RunDirLockedError(dir, parseHolder(await readAll(f)));
      const stale = parseHolder(await readAll(f));
      const me: LockHolder = {
        pid: Deno.pid,
        hostname: Deno.hostname(),
        started: new Date().toISOString(),
        command: [Deno.execPath(), ...Deno.args].join(" "),
      };
      await f.truncate(0);
      await f.seek(0, Deno.SeekMode.Start);
      await f.write(new TextEncoder().encode(JSON.stringify(me) + "\n"));
      return new RunLock(path, f, stale);
    } catch (e) {
      f.close();
      throw e;
    }
  }

  /** release(), synchronously (for an exit from a signal handler). */
  releaseSync(): void {
    const f = this.file;
    if (!f) return;
    this.file = null;
    try {
      f.truncateSync(0);
      f.unlockSync();
    } finally {
      f.close();
    }
  }

  /** Empties run.lock (a released lock names nobody) and drops the flock. */
  async release(): Promise<void> {
    const f = this.file;
    if (!f) return;
    this.file = null;
    try {
      await f.truncate(0);
      // Unlocked explicitly: closing alone can leave the flock held for a moment (seen under
      // load: a resume in the same process right after a run ended got RunDirLockedError).
      await f.unlock();
    } finally {
      f.close();
    }
  }
}
