// The generated Code family (`folds: 1`): reference solutions pass their tests when executed,
// statements are split by content, and the knob is validated.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  drawFold,
  foldProblem,
  foldSolution,
  foldStatement,
  foldStatementCount,
  foldValue,
} from "../../src/envs/code/folds.ts";
import { generate, taskKey, verifyProblem } from "../../src/envs/code/tasks.ts";
import { Rng } from "../../src/envs/rng.ts";
import { trustedExecutor } from "./trusted_executor.ts";

Deno.test("code folds: 300 generated reference solutions pass their tests (executed)", async () => {
  const rng = new Rng(7);
  const reduces = new Set<string>();
  for (let i = 0; i < 300; i++) {
    const p = foldProblem(rng);
    reduces.add(p.id);
    assertEquals(await verifyProblem(p, trustedExecutor), [], `${p.statement}\n${p.solution}`);
    assertEquals(p.tests.length, 6);
    assertEquals(p.tests[0].args, [[]], "an empty array is always a case");
  }
  assertEquals(reduces.size, 5, [...reduces].join(" "));
  // The check can fail: a solution with the wrong filter is caught.
  const p = foldProblem(new Rng(3));
  const wrong = {
    ...p,
    solution: p.solution.replace("for (const x of nums)", "for (const x of [])"),
  };
  assert((await verifyProblem(wrong, trustedExecutor)).length > 0, "a wrong solution passed");
});

Deno.test("code folds: statements, solutions and values on hand-checked cases", () => {
  const rng = new Rng(11);
  const seen = new Map<string, string>();
  for (let i = 0; i < 20_000; i++) {
    const f = drawFold(rng);
    const s = foldStatement(f);
    const prev = seen.get(s);
    // One statement, one meaning: the same words never come with different code.
    if (prev !== undefined) assertEquals(foldSolution(f), prev, s);
    seen.set(s, foldSolution(f));
  }
  assert(seen.size > 2_500 && seen.size <= foldStatementCount(), `${seen.size} statements`);
  assert(
    seen.has("Return the sum of x squared over the numbers x in nums that are even."),
    "the example statement exists",
  );
  const f = {
    reduce: "maximum" as const,
    map: { words: "", code: "-x", apply: (x: number) => -x },
    filter: { words: "", code: "x > 2", test: (x: number) => x > 2 },
  };
  assertEquals(foldValue(f, [1, 3, 5]), -3);
  assertEquals(foldValue(f, [1, 2]), 0, "none: 0");
  assertEquals(foldValue({ ...f, reduce: "product" }, []), 1);
  assertEquals(foldValue({ ...f, reduce: "product" }, [0, 3]), -3);
  assertEquals(
    Object.is(
      foldValue({
        ...f,
        reduce: "sum",
        filter: { words: "", code: "", test: () => true },
      }, [0]),
      0,
    ),
    true,
    "no -0",
  );
});

Deno.test("code folds: train and test statements are disjoint; the knob is checked", () => {
  const d = { folds: 1, maxTurns: 1 };
  const train = new Set<string>(), test = new Set<string>();
  for (let s = 0; s < 400; s++) {
    train.add(taskKey(generate(s, { split: "train", difficulty: d })));
    test.add(taskKey(generate(s, { split: "test", difficulty: d })));
  }
  for (const k of test) assert(!train.has(k), `held-out statement in train: ${k}`);
  assert(test.size > 200 && train.size > 200, `${train.size} train, ${test.size} test`);
  const t = generate(0, { split: "test", difficulty: d });
  assertEquals([t.fnName, t.signature, t.maxTurns], ["compute", "function compute(nums)", 1]);
  assertThrows(
    () => generate(0, { split: "train", difficulty: { folds: 1, level: 2 } }),
    "DifficultyError",
    'leave "level" at 0',
  );
  assertThrows(
    () => generate(0, { split: "train", difficulty: { folds: 2 } }),
    "DifficultyError",
    "folds",
  );
});
