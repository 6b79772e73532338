// LR schedules at their boundary steps (first step, end of warmup, mid-decay, end, past the end)
// and the step counter through accumulation and resume.

import { assert, assertThrows } from "../assert.ts";
import { lrAt, type LrSchedule, StepCounter } from "../../src/train/schedule.ts";

function near(got: number, want: number, what: string): void {
  assert(
    Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)),
    `${what}: ${got}, expected ${want}`,
  );
}

Deno.test("schedules at boundary steps", () => {
  const cases: Array<[LrSchedule, Array<[number, number]>]> = [
    [{ kind: "constant", lr: 2 }, [[0, 2], [1, 2], [1000, 2]]],
    [{ kind: "constant", lr: 2, warmupSteps: 4 }, [[0, 0], [1, 0.5], [3, 1.5], [4, 2], [5, 2]]],
    // The paper's released config: lr 5e-6, cosine, 10 warmup steps, min ratio 0.3.
    [{ kind: "cosine", lr: 5e-6, warmupSteps: 10, totalSteps: 110, minRatio: 0.3 }, [
      [0, 0],
      [5, 2.5e-6],
      [10, 5e-6],
      [60, 5e-6 * 0.65], // half way: cos(π/2) = 0 → (1 + 0.3) / 2
      [85, 5e-6 * (0.65 + 0.35 * Math.cos(0.75 * Math.PI))],
      [110, 1.5e-6],
      [500, 1.5e-6], // held at the floor past totalSteps (verl's cosine would rise again)
    ]],
    [{ kind: "cosine", lr: 1, totalSteps: 4 }, [[0, 1], [2, 0.5], [4, 0]]],
    [{ kind: "linear", lr: 1, warmupSteps: 2, totalSteps: 12, minRatio: 0.1 }, [
      [1, 0.5],
      [2, 1],
      [7, 0.55],
      [12, 0.1],
      [20, 0.1],
    ]],
    [{ kind: "linear", lr: 3, totalSteps: 3 }, [[0, 3], [1, 2], [3, 0]]],
  ];
  for (const [s, points] of cases) {
    for (const [k, want] of points) {
      near(lrAt(s, k), want, `${s.kind} ${JSON.stringify(s)} at step ${k}`);
    }
  }
});

Deno.test("schedule settings are checked with named errors", () => {
  assertThrows(
    () => lrAt({ kind: "cosine", lr: 1, totalSteps: 10, minRatio: 1.5 }, 0),
    "TrainConfigError",
    "min_lr_ratio",
  );
  assertThrows(
    () => new StepCounter({ kind: "cosine", lr: 1, totalSteps: 10, minRatio: 1.5 }),
    "TrainConfigError",
    "min_lr_ratio",
  );
  assertThrows(
    () => new StepCounter({ kind: "linear", lr: 1, warmupSteps: 20, totalSteps: 10 }),
    "TrainConfigError",
    "total_steps",
  );
  assertThrows(() => lrAt({ kind: "constant", lr: 1 }, -1), "TrainConfigError", "step");
  assertThrows(
    () => new StepCounter({ kind: "constant", lr: 1 }, 0),
    "TrainConfigError",
    "gradient_accumulation_steps",
  );
  assertThrows(
    () => new StepCounter({ kind: "exponential", lr: 1 } as unknown as LrSchedule),
    "TrainConfigError",
    "unknown kind",
  );
});

Deno.test("step counter: accumulation windows, Adam's t, resume", () => {
  const s: LrSchedule = { kind: "cosine", lr: 1, warmupSteps: 2, totalSteps: 10, minRatio: 0.3 };
  const c = new StepCounter(s, 3);
  assert(c.gradScale === 1 / 3, "gradScale is 1/accum");
  const flags = [c.microBatchDone(), c.microBatchDone(), c.microBatchDone()];
  assert(flags.join() === "false,false,true", `window flags ${flags}`);
  const first = c.next();
  assert(first.t === 1 && first.lr === 0, `first step ${JSON.stringify(first)}`);
  c.stepDone();
  assert(!c.microBatchDone(), "a new window starts after stepDone");
  assert(c.next().t === 2 && c.next().lr === 0.5, `second step ${JSON.stringify(c.next())}`);
  const resumed = new StepCounter(s, 3, 7);
  assert(resumed.completedSteps === 7, "resume keeps the completed steps");
  near(resumed.next().lr, lrAt(s, 7), "resumed lr");
  assert(resumed.next().t === 8, "resumed t");
});
