// Math env: exact answer normalisation, the reasoner's \boxed{} parsing, rewards and turn structure
// on hand-made states, the generated problems' oracle programs executed (in the sandbox when it is
// present, else in the trusted executor: they are our own code), and the JSONL loader's errors.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { FORMAT_PENALTY, splitOfKey } from "../../src/envs/api.ts";
import { answersEqual, lastBoxed, normalizeAnswer } from "../../src/envs/math/answer.ts";
import { EXEC_FAIL, math, type MathState, toolSource } from "../../src/envs/math/env.ts";
import { drawProblem, fracText } from "../../src/envs/math/problems.ts";
import {
  datasetTask,
  loadMathJsonl,
  type MathDatasetError,
  type MathTask,
  pickTask,
  TEST_FRACTION,
} from "../../src/envs/math/tasks.ts";
import { Rng } from "../../src/envs/rng.ts";
import type { CodeExecutor, ExecResult, Invalid, StepResult } from "../../src/envs/types.ts";
import { trustedExecutor } from "./trusted_executor.ts";

/** The sandbox if this checkout has it (src/sandbox, being built alongside), else trusted code only. */
async function executor(): Promise<{ name: string; executor: CodeExecutor }> {
  const path = "../../src/sandbox/mod.ts"; // a variable: the module may not exist yet
  try {
    const mod = await import(path);
    const run = mod.runJs as (code: string, o: object) => Promise<ExecResult>;
    // Generous deadline: the test machine may be busy; the env's own limit is for model code.
    return {
      name: "sandbox",
      executor: { run: (code, o) => run(code, { ...o, timeoutMs: 20000 }) },
    };
  } catch {
    return { name: "trusted", executor: trustedExecutor };
  }
}

Deno.test("math answers: equivalent forms share one canonical form", () => {
  const groups: [string, string[]][] = [
    ["3/4", [
      "3/4",
      "0.75",
      ".75",
      "0.750",
      "6/8",
      "75/100",
      "\\frac{3}{4}",
      "\\dfrac{3}{4}",
      "\\tfrac34",
    ]],
    ["3/4", ["\\boxed{0.75}", "$0.75$", "\\(\\frac{3}{4}\\)", "x = 3/4", "Answer: 0.75", "0.75."]],
    ["-1/2", [
      "-1/2",
      "-0.5",
      "-\\frac{1}{2}",
      "\\frac{-1}{2}",
      "\u22120.5",
      "\\frac{1}{-2}",
      "-.5",
    ]],
    ["1000", ["1000", "1,000", "1 000", "1{,}000", "1000.0", "1e3", "1.0 \\times 10^{3}", "01000"]],
    ["1000", [
      "+1000",
      "1000 apples",
      "\\text{1000}",
      "1000\\%",
      "1000%",
      "1000^\\circ",
      "1000 square cm",
    ]],
    ["3/2", [
      "3/2",
      "1 1/2",
      "1\\frac{1}{2}",
      "1.5",
      "\\boxed{\\frac{3}{2}}",
      "\\frac{1.5}{1}",
      "3 / 2",
    ]],
    ["-3/2", ["-1 1/2", "-1\\frac{1}{2}", "-1.5"]],
    ["0", ["0", "-0", "0.0", "0/7", "\\boxed{0}"]],
    ["33", ["033", "33", "\\boxed{033}"]],
    ["123456789012345678901234567890", [
      "123456789012345678901234567890",
      "1.2345678901234567890123456789e29",
    ]],
  ];
  for (const [canonical, forms] of groups) {
    for (const f of forms) assertEquals(normalizeAnswer(f), canonical, `"${f}"`);
  }
});

Deno.test("math answers: different values and non-answers stay apart", () => {
  const apart: [string, string][] = [
    ["0.333", "1/3"], // exact: a rounded decimal is not the fraction
    ["25%", "0.25"], // a trailing % is dropped, not divided by 100
    ["2\\pi", "2"],
    ["5x", "5"],
    ["3 m", "3"], // one-letter tails are not unit words
    ["1 3/2", "13/2"], // not a mixed number (improper part), and text never equals a number
    ["1,2", "12"], // not a thousands group
    ["123456789012345678901234567890", "123456789012345678901234567891"],
    ["\\sqrt{2}", "1.41421356"],
  ];
  for (const [a, b] of apart) assert(!answersEqual(a, b), `"${a}" should differ from "${b}"`);
  assert(answersEqual("\\sqrt{2}", "\\sqrt{ 2 }"), "symbolic answers match as text, spaces aside");
  for (const x of ["", "   ", "\\boxed{}", "\\boxed{3", "$$"]) {
    assertEquals(normalizeAnswer(x), null, x);
  }
  assertEquals(lastBoxed("so \\boxed{1}; no: \\boxed{\\frac{1}{2}} done"), "\\frac{1}{2}");
});

Deno.test("math_v1: the reasoner's \\boxed{} is parsed strictly; the tool sends code", () => {
  const bad = (text: string) => {
    const p = math.parseAction("reasoner", text);
    assert(!p.ok, text);
    return p.invalid.code;
  };
  assertEquals(bad("   "), "empty");
  assertEquals(bad("the answer is 12"), "no_answer");
  assertEquals(bad("\\boxed{12"), "malformed");
  assertEquals(bad("\\boxed{ }"), "malformed");
  const p = math.parseAction("reasoner", "3 + 4 = 7, so half of it is \\boxed{\\frac{7}{2}}.");
  assert(p.ok && p.action.kind === "answer");
  assertEquals(p.action, {
    kind: "answer",
    answer: "\\frac{7}{2}",
    canonical: "7/2",
    work: "3 + 4 = 7, so half of it is",
  });
  const t = math.parseAction("tool", "```js\nconsole.log(frac(7, 2))\n```");
  assert(t.ok && t.action.kind === "code" && t.action.execution === null);
  assertEquals(t.action.code, "console.log(frac(7, 2))\n");
});

// ---- rewards and turns on hand-made states ------------------------------------------------------

const TASK: MathTask = datasetTask("What is 1/2 + 1/4?", "3/4")!;

function ran(stdout: string, ok = true, error: string | null = null, timedOut = false): ExecResult {
  return { ok, stdout, error, timedOut, ms: 1 };
}

function toolStep(s: MathState, exec: ExecResult | string): StepResult<MathState> {
  if (typeof exec === "string") {
    const p = math.parseAction("tool", exec);
    return math.step(s, "tool", p.ok ? p.action : p.invalid);
  }
  return math.step(s, "tool", { kind: "code", code: "/* hand-made */", execution: exec });
}

function reasonerStep(s: MathState, text: string): StepResult<MathState> {
  const p = math.parseAction("reasoner", text);
  return math.step(s, "reasoner", p.ok ? p.action : p.invalid);
}

Deno.test("math_v1: agreement on the right answer ends the episode; the tool earns own + reasoner", () => {
  const t = toolStep(math.reset(TASK), ran("thinking...\n0.75\n"));
  assertEquals([t.teamReward, t.localReward, t.terminated], [0, 1, false]);
  const r = reasonerStep(t.state, "1/2 + 1/4 = \\boxed{\\frac{3}{4}}");
  assertEquals([r.teamReward, r.localReward, r.terminated, r.truncated], [1, 0, true, false]);
  assertEquals(r.info.finalRewards, { tool: 2, reasoner: 1 });
  assert(math.success(r.state) && r.state.agreed);
});

Deno.test("math_v1: agreeing on a wrong answer also ends it, unsuccessfully", () => {
  const t = toolStep(math.reset(TASK), ran("2/6\n"));
  assertEquals(t.localReward, 0);
  const r = reasonerStep(t.state, "\\boxed{1/3}");
  assertEquals([r.teamReward, r.terminated], [0, true]);
  assertEquals(r.info.finalRewards, { tool: 0, reasoner: 0 });
  assert(!math.success(r.state));
});

Deno.test("math_v1: failed executions cost −1, messages without code −2", () => {
  const s = math.reset(TASK);
  for (
    const e of [
      ran("", false, "ReferenceError: x is not defined"),
      ran("", false, "timeout", true),
      ran(""),
    ]
  ) {
    const r = toolStep(s, e);
    assertEquals(r.localReward, EXEC_FAIL);
    assertEquals((r.info.invalid as Invalid).code, "exec_error");
  }
  assertEquals(toolStep(s, "").localReward, FORMAT_PENALTY);
  const t = toolStep(s, ran("0.75\n"));
  const r = reasonerStep(t.state, "I think it is 3/4");
  assertEquals([r.teamReward, r.localReward, r.terminated], [0, FORMAT_PENALTY, false]);
});

Deno.test("math_v1: parallel turns: the tool's output appears only in the next turn, to both", () => {
  const s0 = math.reset(TASK);
  const t = toolStep(s0, ran("0.5\n"));
  for (const agent of ["tool", "reasoner"]) {
    for (const style of ["compact", "chat"] as const) {
      const before = JSON.stringify(math.observe(s0, agent, style));
      assertEquals(
        JSON.stringify(math.observe(t.state, agent, style)),
        before,
        "same turn, same prompt",
      );
    }
  }
  assert(!JSON.stringify(math.observe(t.state, "reasoner", "chat")).includes("0.5"));
  const r = reasonerStep(t.state, "\\boxed{0.75}");
  assertEquals([r.teamReward, r.terminated, r.state.turn, r.state.cursor], [1, false, 1, 0]);
  const toolPrompt = math.observe(r.state, "tool", "compact");
  assert(
    toolPrompt.style === "compact" && toolPrompt.text.includes("you:0.5 rs:0.75"),
    "tool sees both",
  );
  const reasonerPrompt = math.observe(r.state, "reasoner", "chat");
  assert(reasonerPrompt.style === "chat");
  assert(
    reasonerPrompt.messages[1].content.includes("Its answer: 0.5"),
    "reasoner sees the tool's output",
  );
});

Deno.test("math_v1: four turns without agreement truncate the episode", () => {
  let s = math.reset(TASK);
  let last: StepResult<MathState> | null = null;
  for (let turn = 0; turn < 4; turn++) {
    assert(!s.terminated && !s.truncated, `turn ${turn} should be playable`);
    s = toolStep(s, ran("1\n")).state;
    last = reasonerStep(s, "\\boxed{3/4}");
    s = last.state;
  }
  assertEquals([last!.truncated, last!.terminated, last!.teamReward], [true, false, 1]);
  assertEquals(last!.info.finalRewards, { tool: 1, reasoner: 1 });
  assert(math.success(s), "the reasoner's last answer is right");
  assertEquals(s.history.length, 4);
});

// ---- generated problems -------------------------------------------------------------------------

Deno.test("math_v1: generated problems' programs print their native answers (executed)", async () => {
  const { executor: ex, name } = await executor();
  const problems = [];
  for (let level = 1; level <= 3; level++) {
    const rng = new Rng(1000 + level);
    while (problems.length < 80 * level) {
      const p = drawProblem(rng, level, level === 2 ? 50 : 200);
      if (p !== null) problems.push(p);
    }
  }
  for (const p of problems) {
    // Two computations agree: the template's exact rational and the displayed answer.
    assertEquals(normalizeAnswer(p.display), normalizeAnswer(fracText(p.num, p.den)), p.question);
  }
  // One sandbox run for all programs: each runs in its own scope after the helpers, as in execute.
  const r = await ex.run(problems.map((p) => toolSource(p.code)).join("\n"), {});
  assert(r.ok, `${name}: ${r.error}`);
  assertEquals(r.stdout.trimEnd().split("\n"), problems.map((p) => p.display), `${name} output`);
});

Deno.test("math_v1: levels and knobs", () => {
  for (let level = 1; level <= 3; level++) {
    const t = math.generate(5, { split: "test", difficulty: { level } });
    assertEquals(t.level, level);
  }
  const e = assertThrows(() => math.generate(0, { split: "train", difficulty: { level: 4 } }));
  assertEquals(e.name, "DifficultyError");
});

// ---- JSONL datasets ----------------------------------------------------------------------------

Deno.test("math_v1: JSONL datasets load, and bad lines are named", () => {
  const text = [
    `{"question": "What is 2 + 2?", "answer": "4", "source": "mine"}`,
    "",
    `{"question": "Half of 3?", "answer": 1.5}\r`,
    `{"question": "Boxed?", "answer": "\\\\boxed{\\\\frac{1}{3}}"}`,
  ].join("\n");
  const tasks = loadMathJsonl(text, { source: "mine.jsonl" });
  assertEquals(tasks.map((t) => [t.answer, t.display]), [["4", "4"], ["3/2", "1.5"], [
    "1/3",
    "\\frac{1}{3}",
  ]]);
  const solved = math.solve(tasks[2]);
  assert(solved.success, "the oracle solves a dataset task");

  const cases: [string, string][] = [
    [`{"question": "q", "answer": "1"`, "not valid JSON"],
    [`["q", "1"]`, "not a JSON object"],
    [`{"question": "", "answer": "1"}`, `"question"`],
    [`{"question": 5, "answer": "1"}`, `"question"`],
    [`{"question": "q"}`, `"answer"`],
    [`{"question": "q", "answer": "  "}`, `"answer"`],
    [`{"question": "q", "answer": "{1"}`, "unbalanced"],
  ];
  for (const [line, says] of cases) {
    const e = assertThrows(
      () => loadMathJsonl(`{"question": "ok", "answer": "1"}\n\n${line}\n`, { source: "d.jsonl" }),
      "MathDatasetError",
      says,
    ) as MathDatasetError;
    assertEquals(e.line, 3, line);
    assert(e.message.startsWith("d.jsonl:3: "), e.message);
  }
});

Deno.test("math_v1: dataset tasks split like generated ones: disjoint and deterministic", () => {
  const tasks = Array.from(
    { length: 60 },
    (_, i) => datasetTask(`What is ${i} + ${i}?`, `${2 * i}`)!,
  );
  const train = new Set<string>(), test = new Set<string>();
  for (let seed = 0; seed < 200; seed++) {
    train.add(pickTask(tasks, seed, "train").question);
    test.add(pickTask(tasks, seed, "test").question);
  }
  assertEquals([...train].filter((q) => test.has(q)), []);
  assert(test.size > 3 && train.size > 30, `${test.size} test, ${train.size} train`);
  assertEquals(pickTask(tasks, 7, "test"), pickTask(tasks, 7, "test"));
  for (const q of test) {
    assertEquals(splitOfKey("math_v1", q, TEST_FRACTION), "test");
  }
});
