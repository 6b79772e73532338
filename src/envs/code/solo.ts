// Code, single agent (code_solo_v1; level L0, the paper's "single agent" baseline): the coder of
// code_v1 alone, with no tester. Same tasks and splits as code_v1 (its generator), same turn
// limit; the code runs in the sandbox against the hidden reference tests only (refProgram).
//
// Rewards as in code_v1: the code's pass rate on the reference tests is the team reward, emitted
// at every step; a message with no code costs −2. finalRewards names "coder" only. The episode
// ends when the code passes every reference test, or when the turns run out (one agent acts per
// turn, so every step advances the turn).
//
// What the solo coder sees (the honesty rule: nothing about the hidden tests that code_v1's coder
// could not see either). In code_v1 the coder sees the tester's tests and its results on them,
// never the reference tests or their verdicts. The shipped problems have no public examples
// (statement and signature only; every case is hidden), so there are no results to show here:
// from turn 2 the coder sees its previous code and only
//   - why its previous message was unusable (no code block), or
//   - the error when the code did not load at all (a SyntaxError or a throw at the top level:
//     it happens before any test case runs, so it says nothing about the hidden cases; a timeout
//     is not shown, since it may come from a hidden input).
// Never shown: pass counts, failures, what the code printed (it printed it on hidden inputs).
// One bit remains and is stated in the system prompt: being asked again means the previous code
// failed some reference test, because passing them all ends the episode. That is the end
// condition the task asks for; code_v1's coder instead learns whether it passed the tester's
// tests. Success (env.success) is the latest code passing every reference test.

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
import { buildPrompt } from "../prompt.ts";
import { type CodeAction, parseCode } from "../tools.ts";
import type {
  CodeExecutor,
  EnvDefinition,
  EnvState,
  Invalid,
  ParseResult,
  Prompt,
  PromptStyle,
  Rendered,
  StepResult,
} from "../types.ts";
import { type CodeOutput, noCode, run, runProblem } from "./env.ts";
import { casesText, parseSuite, refProgram, suiteLine, suiteTag, userOutput } from "./harness.ts";
import {
  type CodeDifficulty,
  type CodeTask,
  DEFAULT_DIFFICULTY,
  ENV_ID as MAS_ID,
  generate,
  taskKey,
  TEST_FRACTION,
} from "./tasks.ts";

export const SOLO_ID = "code_solo_v1";

export interface CodeSoloState extends EnvState {
  task: CodeTask;
  /** The latest code and its results on the hidden reference tests: hidden from prompts. */
  code: CodeOutput | null;
  /**
   * What the coder is told about its latest message (see the header): why it was unusable, or
   * why the code did not load; null otherwise.
   */
  note: string | null;
  history: string[];
  /** The latest code passes every reference test (the end condition and success). */
  solved: boolean;
}

const AGENTS = ["coder"] as const;

/** Longest code excerpt in a compact prompt, and longest note anywhere. */
const COMPACT_CODE = 300;
const NOTE_MAX = 200;

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n) + "…" : s;
}

function reset(task: CodeTask): CodeSoloState {
  return {
    envId: SOLO_ID,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    code: null,
    note: null,
    history: [],
    solved: false,
  };
}

async function execute(
  s: CodeSoloState,
  _agent: string,
  a: CodeAction,
  executor: CodeExecutor,
): Promise<CodeAction> {
  const t = s.task;
  return { ...a, execution: await run(executor, refProgram(t.fnName, a.code, t.tests)) };
}

/** The code's results on the reference tests, and what the coder may be told (the header). */
function refOutput(t: CodeTask, a: CodeAction): { out: CodeOutput; note: string | null } {
  const e = a.execution!;
  const n = t.tests.length;
  const ref = parseSuite(e.stdout, "REF", suiteTag("REF", t.fnName, a.code, casesText(t.tests)), n);
  const passed = ref?.pass ?? new Array(n).fill(false);
  const out: CodeOutput = {
    code: a.code,
    passed,
    passRate: round6(passed.filter(Boolean).length / n),
    refFailures: ref?.failures ?? [],
    onTests: null,
    output: userOutput(e.stdout),
    problem: ref === null ? runProblem(e) : null,
  };
  // No result line, no timeout, an error: the program stopped before the cases ran (each case
  // runs inside its own try), i.e. the code does not load. Nothing here depends on the cases.
  const loadError = ref === null && !e.timedOut && !e.ok && e.error !== null;
  const note = loadError ? clip(`your code did not load: ${e.error}`, NOTE_MAX) : null;
  return { out, note };
}

function step(
  s: CodeSoloState,
  agent: string,
  a: CodeAction | Invalid,
): StepResult<CodeSoloState> {
  assertTurn(codeSolo, s, agent);
  if (!isInvalid(a) && a.execution === null) throw new NotExecutedError(SOLO_ID, "coder");
  const { out, note } = isInvalid(a)
    ? { out: noCode(s.task, a), note: clip(`your message had no code: ${a.reason}`, NOTE_MAX) }
    : refOutput(s.task, a);
  const solved = out.passRate === 1;
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, solved);
  const n = out.passed.length;
  const line = `t${s.turn + 1} code: ${out.passed.filter(Boolean).length}/${n} reference` +
    (out.problem ? ` (${out.problem})` : "");
  const state: CodeSoloState = {
    ...s,
    ...clock,
    terminated: solved,
    code: out,
    note,
    history: [...s.history, line],
    solved,
  };
  const info: Record<string, unknown> = { passRate: out.passRate };
  if (isInvalid(a)) info.invalid = a;
  else if (out.problem !== null) info.invalid = invalid("exec_error", out.problem, a.code);
  if (state.terminated || state.truncated) info.finalRewards = { coder: out.passRate };
  return {
    state,
    teamReward: out.passRate,
    localReward: isInvalid(a) ? FORMAT_PENALTY : 0,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

const SYSTEM_SOLO =
  `You are writing a JavaScript function alone, with no tester and no tools. Write the requested
function exactly as specified (plain JavaScript: no imports, exports or input reading), in one
\`\`\`javascript block; helper functions are fine. Your reward is the share of hidden reference
tests your function passes; think through normal and edge cases (empty inputs, zero, negatives,
ties) yourself. The episode ends as soon as your function passes every hidden test, so if you are
asked again, your previous function failed at least one of them (you are not told which): find
the mistake and write a corrected function.`;

function observe(s: CodeSoloState, _agent: string, style: PromptStyle): Prompt {
  const t = s.task;
  const head = `Turn ${s.turn + 1} of ${t.maxTurns}.`;
  let past = "\nWrite the function.";
  let compactPast = "";
  if (s.turn > 0) {
    const prev = s.code?.code ?? null;
    const block = prev === null ? "(no code)\n" : "```javascript\n" + prev.trimEnd() + "\n```\n";
    const note = s.note ? `Note: ${s.note}\n` : "";
    past = `\nYour previous code:\n${block}${note}` +
      "It did not pass every hidden test. Revise your code.";
    compactPast = `prev:\n${clip(prev ?? "", COMPACT_CODE)}\n` +
      (s.note ? `err:${clip(s.note, 120)}\n` : "");
  }
  return buildPrompt(style, {
    system: SYSTEM_SOLO,
    user: `${head}\nProblem: ${t.statement}\nSignature: ${t.signature}${past}`,
    compact: `code solo t${s.turn + 1}\n${t.statement}\n${t.signature}\n${compactPast}js:\n`,
  });
}

/** The reference solution, with the result line it prints (it passes its own tests). */
function oracle(s: CodeSoloState): { text: string; action: CodeAction } {
  const t = s.task;
  const tag = suiteTag("REF", t.fnName, t.solution, casesText(t.tests));
  const all = { pass: t.tests.map(() => true), failures: [], aborted: null };
  const stdout = suiteLine("REF", tag, all) + "\n";
  return {
    text: "```javascript\n" + t.solution + "```",
    action: {
      kind: "code",
      code: t.solution,
      execution: { ok: true, stdout, error: null, timedOut: false, ms: 0 },
    },
  };
}

function render(s: CodeSoloState): Rendered {
  const status = s.solved
    ? "passes every reference test"
    : s.truncated
    ? "out of turns; reference not all passed"
    : `turn ${s.turn + 1}`;
  const lines = [
    `code solo ${s.task.id}: ${status}`,
    `${s.task.signature}: ${s.task.statement}`,
    ...s.history,
  ];
  if (s.code?.refFailures.length) {
    lines.push(`reference failures: ${s.code.refFailures.join("; ")}`);
  }
  const text = lines.join("\n");
  return { text, view: { kind: "text", body: text } };
}

export const codeSolo: EnvDefinition<CodeTask, CodeSoloState, CodeAction, CodeDifficulty> = {
  id: SOLO_ID,
  description:
    "Single agent (L0) code: the coder alone (no tester), judged by hidden reference tests; ends when they all pass",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: false,
  symmetric: false,
  toolAgents: ["coder"],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  soloOf: MAS_ID,
  generate,
  taskKey,
  reset,
  observe,
  parseAction: (_agent, text): ParseResult<CodeAction> => parseCode(text),
  execute,
  step,
  success: (s) => s.solved,
  oracle,
  solve: (task) => oracleRollout(codeSolo, task),
  render,
};
