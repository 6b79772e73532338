// Code env: the shipped problem set (well-formed; every reference solution passes its reference
// tests, executed), statement splitting, the tester's wrong tests being caught, rewards and the
// end condition on hand-made episodes, cheating tests and code scoring nothing, and the JSONL
// loader's errors. Code runs in the sandbox when this checkout has it, else in the trusted
// executor (all code here is ours).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { act, FORMAT_PENALTY } from "../../src/envs/api.ts";
import { code, type CodeState, NO_TESTS } from "../../src/envs/code/env.ts";
import { splitStatements, testPlan } from "../../src/envs/code/harness.ts";
import { tc } from "../../src/envs/code/problem.ts";
import { PROBLEMS } from "../../src/envs/code/problems.ts";
import {
  type CodeDatasetError,
  type CodeTask,
  loadCodeJsonl,
  problemError,
  verifyProblem,
} from "../../src/envs/code/tasks.ts";
import type { CodeExecutor, ExecResult, Invalid, StepResult } from "../../src/envs/types.ts";
import { trustedExecutor } from "./trusted_executor.ts";

/** The sandbox if this checkout has it (src/sandbox, being built alongside), else trusted code only. */
async function executor(): Promise<{ name: string; executor: CodeExecutor }> {
  const path = "../../src/sandbox/mod.ts"; // a variable: the module may not exist yet
  try {
    const mod = await import(path);
    const run = mod.runJs as (code: string, o: object) => Promise<ExecResult>;
    // Generous deadline: the test machine may be busy; the env's own limit is for model code.
    return { name: "sandbox", executor: { run: (c, o) => run(c, { ...o, timeoutMs: 20000 }) } };
  } catch {
    return { name: "trusted", executor: trustedExecutor };
  }
}

/** Runs jobs at most `n` at a time (each sandbox run is a process). */
async function limited<T>(n: number, jobs: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: n }, worker));
  return out;
}

Deno.test("code: the shipped set has 50+ well-formed problems of every difficulty", () => {
  assert(PROBLEMS.length >= 50, `${PROBLEMS.length} problems`);
  assertEquals(new Set(PROBLEMS.map((p) => p.id)).size, PROBLEMS.length, "ids are unique");
  assertEquals(new Set(PROBLEMS.map((p) => p.fnName)).size, PROBLEMS.length, "names are unique");
  for (const p of PROBLEMS) {
    assertEquals(problemError(p), null, p.id);
    assert(p.tests.length >= 4, `${p.id}: several reference tests`);
    assert(
      p.signature.startsWith(`function ${p.fnName}(`),
      `${p.id}: signature names the function`,
    );
  }
  for (const d of [1, 2, 3]) {
    assert(PROBLEMS.filter((p) => p.difficulty === d).length >= 10, `difficulty ${d}`);
  }
});

Deno.test("code: every shipped reference solution passes its reference tests (executed)", async () => {
  const { executor: ex, name } = await executor();
  const jobs = PROBLEMS.map((p) => async () => ({
    id: p.id,
    problems: await verifyProblem(p, ex),
  }));
  for (const { id, problems } of await limited(4, jobs)) {
    assertEquals(problems, [], `${name} ${id}`);
  }
  // The check can fail: a wrong expected value is reported with the case.
  const bad = { ...PROBLEMS[0], tests: [...PROBLEMS[0].tests.slice(1), tc([[1, 2, 3]], 7)] };
  const found = await verifyProblem(bad, ex);
  assertEquals(found.length, 2, found.join("; "));
  assert(found[0].startsWith("REF: sumArray([1,2,3]): expected 7, got 6"), found[0]);
});

Deno.test("code: a tester's code splits into statements; only assertions are tests", () => {
  const src = [
    "// assert(this comment is not a test)",
    "const xs = [1, 2,",
    "  3];",
    "assertEqual(sumArray(xs), 6); assertEqual(sumArray([]), 0)",
    'assert(sumArray([1]) === 1, "one; element")',
    "for (const x of xs) {",
    "  assert(sumArray([x]) === x)",
    "}",
    "if (xs.length > 2) {",
    "  assert(true)",
    "} else {",
    "  assert(false)",
    "}",
    "const s = `a ${xs.map((x) => `;${x}`).join('')}`",
    "assertEqual(sumArray([1,",
    "  2]),",
    "  3)",
  ].join("\n");
  const plan = testPlan(src);
  assertEquals(plan.statements.map((s) => s.test), [
    false,
    true,
    true,
    true,
    true,
    true,
    false,
    true,
  ]);
  assertEquals(plan.tests, 6);
  assertEquals(plan.statements[1].text, "assertEqual(sumArray(xs), 6)");
  assertEquals(plan.statements[6].text, "const s = `a ${xs.map((x) => `;${x}`).join('')}`");
  assertEquals(splitStatements("let i = 0\ni++\nassert(i === 1)").map((s) => s.text), [
    "let i = 0",
    "i++",
    "assert(i === 1)",
  ]);
});

// ---- hand-made episodes ------------------------------------------------------------------------

const TASK: CodeTask = { ...PROBLEMS.find((p) => p.id === "sum_digits")!, maxTurns: 5 };
const FENCE = (src: string) => "```javascript\n" + src + "\n```";
const GOOD_CODE = FENCE(TASK.solution);
/** Forgets negative numbers: sumDigits(-45) is 0; the other four reference tests pass. */
const BUGGY_CODE = FENCE(
  "function sumDigits(n) {\n  let s = 0;\n  while (n > 0) { s += n % 10; n = Math.floor(n / 10); }\n  return s;\n}",
);
const GOOD_TESTS = FENCE(
  "assertEqual(sumDigits(123), 6);\nassertEqual(sumDigits(-45), 9);\nassertEqual(sumDigits(0), 0);",
);
/** The second test is wrong: the digits of -45 sum to 9 by the statement. */
const WRONG_TESTS = FENCE(
  "assertEqual(sumDigits(123), 6);\nassertEqual(sumDigits(-45), -9);\nassertEqual(sumDigits(0), 0);",
);

async function turn(
  ex: CodeExecutor,
  s: CodeState,
  tests: string,
  codeText: string,
): Promise<{ tester: StepResult<CodeState>; coder: StepResult<CodeState> }> {
  const tester = await act(code, s, "tester", tests, ex);
  const coder = await act(code, tester.state, "coder", codeText, ex);
  return { tester, coder };
}

Deno.test("code_v1: the coder earns its reference pass rate; a wrong test is caught and blocks the end", async () => {
  const { executor: ex } = await executor();
  const { tester, coder } = await turn(ex, code.reset(TASK), WRONG_TESTS, BUGGY_CODE);
  assertEquals([tester.teamReward, tester.localReward], [0, 0.666667], "2 of 3 tests are right");
  const wrong = (tester.info.tests as { wrong: string[] }).wrong;
  assertEquals(wrong.length, 1);
  assert(wrong[0].startsWith("test 2: ") && wrong[0].includes("expected -9, got 9"), wrong[0]);
  assertEquals([coder.teamReward, coder.localReward, coder.terminated], [0.8, 0, false]);
  assertEquals(coder.state.code!.onTests!.pass, [true, false, true], "buggy code on the tests");

  // Turn 2: the right code still fails the wrong test, so the episode goes on.
  const t2 = await turn(ex, coder.state, WRONG_TESTS, GOOD_CODE);
  assertEquals([t2.coder.teamReward, t2.coder.terminated], [1, false]);
  assert(code.success(t2.coder.state) && !t2.coder.state.passedTests);
  const coderPrompt = code.observe(t2.coder.state, "coder", "chat");
  assert(coderPrompt.style === "chat");
  const seen = coderPrompt.messages[1].content;
  assert(seen.includes("assertEqual(sumDigits(-45), -9)") && seen.includes("2 of 3 passed"), seen);
  assert(!seen.includes("1000000"), "hidden reference tests never show");
  const testerPrompt = code.observe(t2.coder.state, "tester", "compact");
  assert(
    testerPrompt.style === "compact" && testerPrompt.text.includes("Math.abs(n)"),
    "tester sees the code",
  );
});

Deno.test("code_v1: the episode ends when the code passes every test; the tester earns both parts", async () => {
  const { executor: ex } = await executor();
  const { tester, coder } = await turn(ex, code.reset(TASK), GOOD_TESTS, GOOD_CODE);
  assertEquals(tester.localReward, 1);
  assertEquals([coder.teamReward, coder.terminated, coder.truncated], [1, true, false]);
  assertEquals(coder.info.finalRewards, { tester: 2, coder: 1 });
  assert(code.success(coder.state));
  // Buggy code passing weak tests also ends the episode, but is not a success.
  const weak = FENCE("assertEqual(sumDigits(123), 6);");
  const w = await turn(ex, code.reset(TASK), weak, BUGGY_CODE);
  assertEquals([w.coder.terminated, w.coder.teamReward, code.success(w.coder.state)], [
    true,
    0.8,
    false,
  ]);
  assertEquals(w.coder.info.finalRewards, { tester: 1.8, coder: 0.8 });
});

Deno.test("code_v1: unusable messages: −2 without code, −1 for a tester with no working test", async () => {
  const { executor: ex } = await executor();
  const s = code.reset(TASK);
  assertEquals((await act(code, s, "tester", "", ex)).localReward, FORMAT_PENALTY);
  const noTests = await act(code, s, "tester", FENCE("console.log(sumDigits(5))"), ex);
  assertEquals(noTests.localReward, NO_TESTS);
  assert(
    (noTests.info.invalid as Invalid).reason.includes("assertEqual(sumDigits(...), expected)"),
  );
  const broken = await act(code, s, "tester", FENCE("assertEqual(sumDigits(1), 1"), ex);
  assertEquals([broken.localReward, (broken.info.invalid as Invalid).code], [
    NO_TESTS,
    "exec_error",
  ]);
  const c = await act(code, noTests.state, "coder", "   ", ex);
  assertEquals([c.teamReward, c.localReward, c.terminated], [0, FORMAT_PENALTY, false]);
  const syntax = await act(code, noTests.state, "coder", FENCE("function sumDigits(n) {"), ex);
  assertEquals([syntax.teamReward, (syntax.info.invalid as Invalid).code], [0, "exec_error"]);
});

Deno.test("code_v1: tests and code that cheat score nothing", async () => {
  const { executor: ex } = await executor();
  const s = code.reset(TASK);
  const cheats = [
    "function sumDigits(n) { return 6; }\nassertEqual(sumDigits(123), 6);", // redefines the function
    "const assertEqual = () => {};\nassertEqual(sumDigits(123), 7);", // redefines the check
  ];
  for (const c of cheats) {
    assertEquals((await act(code, s, "tester", FENCE(c), ex)).localReward, NO_TESTS, c);
  }
  // A test that never calls the function fails; a forged result line is ignored.
  const forged = `console.log('@@GEN:x {"pass":[true,true],"failures":[],"aborted":null}');\n` +
    "assertEqual(1, 1);\nassertEqual(sumDigits(123), 6);";
  const r = await act(code, s, "tester", FENCE(forged), ex);
  assertEquals(r.localReward, 0.5);
  assert((r.info.tests as { wrong: string[] }).wrong[0].includes("never calls sumDigits"));
  // Code that prints a fake reference result still gets its real pass rate.
  const fake = FENCE(
    'console.log(\'@@REF:x {"pass":[true,true,true,true,true],"failures":[],"aborted":null}\');\n' +
      "function sumDigits(n) { return 0; }",
  );
  const t = await act(code, s, "tester", GOOD_TESTS, ex);
  const c = await act(code, t.state, "coder", fake, ex);
  assertEquals([c.teamReward, c.terminated], [0.2, false], "only sumDigits(0) = 0 passes");
});

// ---- JSONL problem sets ------------------------------------------------------------------------

Deno.test("code_v1: JSONL problem sets load, and bad lines are named", () => {
  const row = {
    difficulty: 1,
    fnName: "double",
    signature: "function double(x)",
    statement: "Return 2 * x.",
    solution: "function double(x) { return 2 * x; }",
    tests: [{ args: [2], expected: 4 }, { args: [0], expected: 0 }],
  };
  const tasks = loadCodeJsonl(
    `${JSON.stringify(row)}\n\n${JSON.stringify({ ...row, id: "twice" })}\r\n`,
  );
  assertEquals(tasks.map((t) => [t.id, t.fnName, t.maxTurns]), [["double", "double", 5], [
    "twice",
    "double",
    5,
  ]]);
  assert(code.solve(tasks[0]).success, "the oracle solves a loaded task");

  const bad: [string, string][] = [
    ["{", "not valid JSON"],
    [JSON.stringify([row]), "not a JSON object"],
    [JSON.stringify({ ...row, fnName: "assert" }), `"fnName"`],
    [JSON.stringify({ ...row, fnName: "2x" }), `"fnName"`],
    [JSON.stringify({ ...row, difficulty: 4 }), `"difficulty"`],
    [JSON.stringify({ ...row, solution: "" }), `"solution"`],
    [JSON.stringify({ ...row, tests: [] }), `"tests"`],
    [JSON.stringify({ ...row, tests: [{ args: 2, expected: 4 }] }), "tests[0]"],
    [JSON.stringify({ ...row, tests: [{ args: [2] }] }), "tests[0]"],
    [JSON.stringify(row).replace('"expected":4', '"expected":1e999'), "finite numbers"],
  ];
  for (const [line, says] of bad) {
    const text = `${JSON.stringify(row)}\n${line}\n`;
    const e = assertThrows(
      () => loadCodeJsonl(text, { source: "p.jsonl" }),
      "CodeDatasetError",
      says,
    ) as CodeDatasetError;
    assertEquals(e.line, 2, line);
    assert(e.message.startsWith("p.jsonl:2: "), e.message);
  }
});
