// The browser host (blob module Worker) with trusted programs, in a Deno Worker: the same
// Worker source a browser runs. Hostile programs are for Chromium (battery.ts), because Deno
// Workers cannot contain them (see mod.ts).

import { assert, assertEquals } from "../assert.ts";
import type { ExecResult } from "../../src/sandbox/types.ts";
import { runScenario } from "./worker_run.ts";

Deno.test("browser host: stripped scope, cloned globals, errors, fresh Workers, cap, deadline", async () => {
  const r = await runScenario("browserHost") as Record<string, ExecResult> & {
    busyWall: number;
    events: string[];
  };
  assertEquals(r.events, ["start", "out", "end"], "the Worker reports start, output, end");
  assertEquals(r.scope.stdout, "7 v\n" + Array(9).fill("undefined").join(" ") + "\n");
  assertEquals(r.thrown.error, "TypeError: bad (line 2)");
  assert(r.evaluated.error?.startsWith("EvalError"), String(r.evaluated.error));
  assertEquals(
    r.next.stdout,
    "undefined undefined\n",
    "a new run must not see the last one's pollution",
  );
  assert(
    r.busy.timedOut && r.busyWall >= 2995 && r.busyWall <= 18_000, // ends, and not before its limit
    `busy: timedOut=${r.busy.timedOut} after ${r.busyWall} ms`,
  );
  assertEquals(r.busy.stdout, "x\n", "output printed before the deadline is kept");
  assertEquals(r.flood.stdout, "abcdefgh\nabcdefgh\nab\n[output truncated at 20 bytes]\n");
  assert(r.flood.error?.startsWith("OutputLimitError") && !r.flood.timedOut, String(r.flood.error));
});
