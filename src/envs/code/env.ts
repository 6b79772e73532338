// Code (code_v1): a coder writes a JavaScript function and a tester writes assertions for it, in
// parallel, up to 5 turns. Both run in the sandbox through the harnesses of harness.ts.
//
// Turn structure: both agents see the turn-start state (their own and the other's previous
// output, and how that code did on those tests). The tester acts first in the bookkeeping order:
// its tests run against the reference solution and are buffered (`pending`); then the coder's
// code runs against the hidden reference tests and against the pending tests, which resolves the
// turn. The episode ends when the code passes every test the tester wrote (at least one);
// otherwise each agent revises its own previous output.
// Rewards (docs/algorithm.md, α = 1): the code's pass rate on the reference tests is the team reward,
// emitted at the coder's step, so the coder scores its pass rate and the tester "its tests vs the
// reference solution + the code's pass rate" (finalRewards). The tester's local reward is the
// share of its tests the reference solution passes (a test it fails is a wrong test); −1 when its
// code finds no test or does not run; −2 (either agent) for a message with no code.
// Ordering the tester first lets the oracle pre-execute honestly: its coder's code is the
// reference solution, whose results on the pending tests are exactly the tester's judged results.

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
  round6,
} from "../api.ts";
import { NotExecutedError } from "../errors.ts";
import { type CodeAction, parseCode } from "../tools.ts";
import type {
  CodeExecutor,
  EnvDefinition,
  EnvState,
  ExecResult,
  Invalid,
  ParseResult,
  Rendered,
  StepResult,
} from "../types.ts";
import {
  casesAsAsserts,
  casesText,
  genProgram,
  parseSuite,
  refProgram,
  suiteLine,
  type SuiteResult,
  suiteTag,
  testPlan,
  userOutput,
} from "./harness.ts";
import { observe } from "./prompts.ts";
import {
  type CodeDifficulty,
  type CodeTask,
  DEFAULT_DIFFICULTY,
  ENV_ID,
  generate,
  taskKey,
  TEST_FRACTION,
} from "./tasks.ts";

/**
 * Deadline of one harness run, counted from the code's first line (the sandbox's start-up has its
 * own limit). Looser than the 2 s TOOL_TIMEOUT_MS: set when start-up still counted, and kept so
 * that results stay comparable.
 */
export const RUN_TIMEOUT_MS = 5000;

/** A tester whose code yields no usable tests (the paper's "−1 if execution fails", as in Math). */
export const NO_TESTS = -1;

export interface TestsOutput {
  code: string | null;
  /** Test statements (those calling assert/assertEqual). */
  count: number;
  /** Per test: the reference solution passes it. */
  valid: boolean[];
  /** The reference solution's failures: hidden from prompts (they reveal the reference). */
  wrong: string[];
  /** Setup code outside the tests threw on the reference solution. */
  aborted: string | null;
  problem: string | null;
  /** The local reward this output earned. */
  score: number;
  /** The coder's code is run against these tests. */
  runnable: boolean;
}

export interface CodeOutput {
  code: string | null;
  /** Per hidden reference test: passed. */
  passed: boolean[];
  passRate: number;
  /** Failures on the reference tests: hidden from prompts. */
  refFailures: string[];
  /** Results on the tester's tests of the same turn; null when there were none to run. */
  onTests: SuiteResult | null;
  /** What the code printed itself (capped). */
  output: string;
  problem: string | null;
}

export interface CodeState extends EnvState {
  task: CodeTask;
  /** This turn's tests: hidden from both prompts until the coder resolves the turn. */
  pending: TestsOutput | null;
  /** Latest resolved outputs (previous turn), shown to both agents. */
  tests: TestsOutput | null;
  code: CodeOutput | null;
  history: string[];
  /** The latest code passes every reference test. */
  solved: boolean;
  /** The latest code passes every test the tester wrote (the end condition). */
  passedTests: boolean;
}

const AGENTS = ["tester", "coder"] as const;

function reset(task: CodeTask): CodeState {
  return {
    envId: ENV_ID,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    pending: null,
    tests: null,
    code: null,
    history: [],
    solved: false,
    passedTests: false,
  };
}

function parseAction(_agent: string, text: string): ParseResult<CodeAction> {
  return parseCode(text);
}

/** Two runs reported as one: outputs concatenated (each carries its own tagged result line). */
function merge(a: ExecResult, b: ExecResult): ExecResult {
  const sep = a.stdout === "" || a.stdout.endsWith("\n") ? "" : "\n";
  return {
    ok: a.ok && b.ok,
    stdout: a.stdout + sep + b.stdout,
    error: a.error ?? b.error,
    timedOut: a.timedOut || b.timedOut,
    ms: a.ms + b.ms,
  };
}

export async function run(executor: CodeExecutor, program: string): Promise<ExecResult> {
  const r = await executor.run(program, { timeoutMs: RUN_TIMEOUT_MS });
  return { ok: r.ok, stdout: r.stdout, error: r.error, timedOut: r.timedOut, ms: r.ms };
}

async function execute(
  s: CodeState,
  agent: string,
  a: CodeAction,
  executor: CodeExecutor,
): Promise<CodeAction> {
  const t = s.task;
  if (agent === "tester") {
    return { ...a, execution: await run(executor, genProgram(t.fnName, t.solution, a.code)) };
  }
  const ref = await run(executor, refProgram(t.fnName, a.code, t.tests));
  const p = s.pending;
  if (p === null || !p.runnable || p.code === null) return { ...a, execution: ref };
  const gen = await run(executor, genProgram(t.fnName, a.code, p.code));
  return { ...a, execution: merge(ref, gen) };
}

/** Why a run gave no result line. */
export function runProblem(e: ExecResult): string {
  if (e.timedOut) return "the code timed out (infinite loop?)";
  if (!e.ok) return `the code threw: ${e.error ?? "unknown error"}`;
  return "the program printed no result (was the output cut off?)";
}

function testsOutput(task: CodeTask, a: CodeAction | Invalid): { out: TestsOutput; bad?: Invalid } {
  const none = { valid: [], wrong: [], aborted: null, runnable: false };
  if (isInvalid(a)) {
    return {
      out: { code: null, count: 0, ...none, problem: a.reason, score: FORMAT_PENALTY },
      bad: a,
    };
  }
  if (a.execution === null) throw new NotExecutedError(ENV_ID, "tester");
  const count = testPlan(a.code).tests;
  const r = parseSuite(
    a.execution.stdout,
    "GEN",
    suiteTag("GEN", task.fnName, task.solution, a.code),
    count,
  );
  const fail = (problem: string) => ({
    out: { code: a.code, count, ...none, problem, score: NO_TESTS },
    bad: invalid("exec_error", problem, a.code),
  });
  if (count === 0) {
    return fail(`no tests found: write statements like assertEqual(${task.fnName}(...), expected)`);
  }
  if (r === null) return fail(runProblem(a.execution));
  const score = round6(r.pass.filter(Boolean).length / count);
  const problem = r.aborted === null ? null : `setup code outside the tests threw: ${r.aborted}`;
  return {
    out: {
      code: a.code,
      count,
      valid: r.pass,
      wrong: r.failures,
      aborted: r.aborted,
      problem,
      score,
      runnable: true,
    },
  };
}

function stepTester(s: CodeState, a: CodeAction | Invalid): StepResult<CodeState> {
  const { out, bad } = testsOutput(s.task, a);
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, false);
  const info: Record<string, unknown> = {
    tests: { count: out.count, valid: out.valid.filter(Boolean).length, wrong: out.wrong },
  };
  if (bad) info.invalid = bad;
  return {
    state: { ...s, ...clock, pending: out },
    teamReward: 0,
    localReward: out.score,
    terminated: false,
    truncated: clock.truncated,
    info,
  };
}

function codeOutput(s: CodeState, a: CodeAction): { out: CodeOutput; bad?: Invalid } {
  const t = s.task, e = a.execution!;
  const n = t.tests.length;
  const ref = parseSuite(e.stdout, "REF", suiteTag("REF", t.fnName, a.code, casesText(t.tests)), n);
  const p = s.pending;
  let onTests: SuiteResult | null = null;
  if (p !== null && p.runnable && p.code !== null) {
    const tag = suiteTag("GEN", t.fnName, a.code, p.code);
    onTests = parseSuite(e.stdout, "GEN", tag, p.count) ?? {
      pass: new Array(p.count).fill(false),
      failures: [`the code did not finish the tests: ${runProblem(e)}`],
      aborted: null,
    };
  }
  const passed = ref?.pass ?? new Array(n).fill(false);
  const out: CodeOutput = {
    code: a.code,
    passed,
    passRate: round6(passed.filter(Boolean).length / n),
    refFailures: ref?.failures ?? [],
    onTests,
    output: userOutput(e.stdout),
    problem: ref === null ? runProblem(e) : null,
  };
  return ref === null ? { out, bad: invalid("exec_error", out.problem!, a.code) } : { out };
}

export function noCode(task: CodeTask, a: Invalid): CodeOutput {
  const passed = task.tests.map(() => false);
  return {
    code: null,
    passed,
    passRate: 0,
    refFailures: [],
    onTests: null,
    output: "",
    problem: a.reason,
  };
}

/** One line per resolved turn, for render and logs. */
function historyLine(s: CodeState, out: CodeOutput): string {
  const p = s.pending, g = out.onTests;
  const count = (xs: boolean[]) => `${xs.filter(Boolean).length}/${xs.length}`;
  const tests = p?.runnable ? `${count(p.valid)} valid` : `(${p?.problem ?? "none"})`;
  return `t${s.turn + 1} tests: ${tests} | code: ${count(out.passed)} reference` +
    (g ? `, ${count(g.pass)} of the tests` : "") + (out.problem ? ` (${out.problem})` : "");
}

function stepCoder(s: CodeState, a: CodeAction | Invalid): StepResult<CodeState> {
  if (!isInvalid(a) && a.execution === null) throw new NotExecutedError(ENV_ID, "coder");
  const { out, bad } = isInvalid(a) ? { out: noCode(s.task, a), bad: a } : codeOutput(s, a);
  const g = out.onTests;
  const passedTests = g !== null && g.pass.length > 0 && g.pass.every(Boolean);
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, passedTests);
  const p = s.pending;
  const state: CodeState = {
    ...s,
    ...clock,
    terminated: passedTests,
    pending: null,
    tests: p,
    code: out,
    history: [...s.history, historyLine(s, out)],
    solved: out.passRate === 1,
    passedTests,
  };
  const info: Record<string, unknown> = { passRate: out.passRate, passedTests };
  if (bad) info.invalid = bad;
  if (state.terminated || state.truncated) {
    info.finalRewards = {
      tester: round6((p?.score ?? 0) + out.passRate),
      coder: out.passRate,
    };
  }
  return {
    state,
    teamReward: out.passRate,
    localReward: isInvalid(a) ? FORMAT_PENALTY : 0,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

function step(s: CodeState, agent: string, a: CodeAction | Invalid): StepResult<CodeState> {
  assertTurn(code, s, agent);
  return agent === "tester" ? stepTester(s, a) : stepCoder(s, a);
}

function allPass(n: number): SuiteResult {
  return { pass: new Array(n).fill(true), failures: [], aborted: null };
}

/**
 * Tester: the reference tests as assertions; coder: the reference solution. Results are stated
 * without running anything: the reference passes its own tests, and its results on the pending
 * tests are the ones the tester's run already measured (same program, same output).
 */
function oracle(s: CodeState, agent: string): { text: string; action: CodeAction } {
  const t = s.task;
  if (agent === "tester") {
    const src = casesAsAsserts(t.fnName, t.tests);
    const line = suiteLine(
      "GEN",
      suiteTag("GEN", t.fnName, t.solution, src),
      allPass(t.tests.length),
    );
    return { text: "```javascript\n" + src + "```", action: executed(src, line + "\n") };
  }
  let stdout = suiteLine(
    "REF",
    suiteTag("REF", t.fnName, t.solution, casesText(t.tests)),
    allPass(t.tests.length),
  ) + "\n";
  const p = s.pending;
  if (p !== null && p.runnable && p.code !== null) {
    const judged: SuiteResult = { pass: p.valid, failures: p.wrong, aborted: p.aborted };
    stdout += suiteLine("GEN", suiteTag("GEN", t.fnName, t.solution, p.code), judged) + "\n";
  }
  return { text: "```javascript\n" + t.solution + "```", action: executed(t.solution, stdout) };
}

function executed(src: string, stdout: string): CodeAction {
  return {
    kind: "code",
    code: src,
    execution: { ok: true, stdout, error: null, timedOut: false, ms: 0 },
  };
}

function render(s: CodeState): Rendered {
  const status = s.passedTests
    ? `code passes the tests; reference ${s.solved ? "all passed" : "not all passed"}`
    : s.truncated
    ? `out of turns; reference ${s.solved ? "all passed" : "not all passed"}`
    : `turn ${s.turn + 1}`;
  const lines = [
    `code ${s.task.id}: ${status}`,
    `${s.task.signature}: ${s.task.statement}`,
    ...s.history,
  ];
  if (s.code?.refFailures.length) {
    lines.push(`reference failures: ${s.code.refFailures.join("; ")}`);
  }
  if (s.tests?.wrong.length) lines.push(`wrong tests: ${s.tests.wrong.join("; ")}`);
  const text = lines.join("\n");
  return { text, view: { kind: "text", body: text } };
}

export const code: EnvDefinition<CodeTask, CodeState, CodeAction, CodeDifficulty> = {
  id: ENV_ID,
  description:
    "JavaScript functions: coder ∥ tester (assertions), judged by hidden reference tests; ends when the code passes the tests",
  possibleAgents: ["coder", "tester"],
  turnOrder: AGENTS,
  parallel: true,
  symmetric: false,
  toolAgents: ["coder", "tester"],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  generate,
  taskKey,
  reset,
  observe,
  parseAction,
  execute,
  step,
  success: (s) => s.solved,
  oracle,
  solve: (task) => oracleRollout(code, task),
  render,
};
