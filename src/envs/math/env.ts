// Math (math_v1): a tool agent (JavaScript, run in the sandbox; its last printed line is its
// answer) and a reasoner (`\boxed{}` answer) solve the same word problem in parallel, up to 4 turns.
//
// Turn structure: both agents see the turn-start state; the tool's output is buffered (`pending`)
// and the turn resolves when the reasoner steps. The episode ends when the two answers agree
// (canonical forms equal, answer.ts), or when turns run out. From turn 2 each agent sees the other's
// previous output beside its own.
// Rewards (docs/algorithm.md, α = 1): the tool's local reward is its own correctness (1 right, 0 wrong, −1
// when its code throws, times out or prints nothing, −2 for a message with no code); the reasoner's
// correctness (1/0) is the team reward, emitted when the reasoner steps, so the reasoner scores
// "correct" and the tool "own correctness + reasoner correct" (finalRewards); an unusable reasoner
// message costs it −2. Within a turn the tool's K candidates all face the same reasoner answer, so
// the team part cannot change their advantages.

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
} from "../api.ts";
import { NotExecutedError } from "../errors.ts";
import type { Rng } from "../rng.ts";
import { buildPrompt } from "../prompt.ts";
import {
  type CodeAction,
  executionProblem,
  nativeExecution,
  parseCode,
  STDOUT_KEEP,
} from "../tools.ts";
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
import { lastBoxed, normalizeAnswer } from "./answer.ts";
import { TOOL_PRELUDE } from "./problems.ts";
import {
  DEFAULT_DIFFICULTY,
  ENV_ID,
  generate,
  type MathDifficulty,
  type MathTask,
  taskKey,
  TEST_FRACTION,
} from "./tasks.ts";

export type AnswerAction = { kind: "answer"; answer: string; canonical: string; work: string };
export type MathAction = CodeAction | AnswerAction;

/** Tool code that runs but yields no answer (the paper: "−1 if execution fails"). */
export const EXEC_FAIL = -1;

/**
 * Deadline of one tool run, counted from the code's first line (the sandbox's start-up has its
 * own limit). Looser than the 2 s TOOL_TIMEOUT_MS: set when start-up still counted, and kept so
 * that results stay comparable.
 */
export const RUN_TIMEOUT_MS = 5000;

/** Reasoning kept (its end) for the tool agent's next prompt. */
const WORK_KEEP = 400;

export interface ToolOutput {
  code: string | null;
  stdout: string;
  /** The last printed line, as printed. */
  answer: string | null;
  canonical: string | null;
  problem: string | null;
  correct: boolean;
  /** The local reward this output earned. */
  score: number;
}

export interface ReasonerOutput {
  answer: string | null;
  canonical: string | null;
  work: string;
  problem: string | null;
  correct: boolean;
}

export interface MathState extends EnvState {
  task: MathTask;
  /** This turn's tool output: hidden from both prompts until the reasoner resolves the turn. */
  pending: ToolOutput | null;
  /** Latest resolved outputs (previous turn), shown to both agents. */
  tool: ToolOutput | null;
  reasoner: ReasonerOutput | null;
  /** One line per resolved turn, for render and logs. */
  history: string[];
  agreed: boolean;
  /** The reasoner's latest answer is right. */
  correct: boolean;
}

const AGENTS = ["tool", "reasoner"] as const;

function reset(task: MathTask): MathState {
  return {
    envId: ENV_ID,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    pending: null,
    tool: null,
    reasoner: null,
    history: [],
    agreed: false,
    correct: false,
  };
}

/** The reasoner's message: a `\boxed{}` answer (shared with the single-agent math_solo_v1). */
export function parseReasoner(text: string): ParseResult<MathAction> {
  if (text.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the message is empty", text) };
  }
  if (!/\\(?:boxed|fbox)/.test(text)) {
    return {
      ok: false,
      invalid: invalid(
        "no_answer",
        "end with the final answer in \\boxed{}, e.g. \\boxed{12}",
        text,
      ),
    };
  }
  const inner = lastBoxed(text);
  if (inner === null) {
    return { ok: false, invalid: invalid("malformed", "\\boxed{ has no closing brace", text) };
  }
  const canonical = normalizeAnswer(inner);
  if (canonical === null) {
    return { ok: false, invalid: invalid("malformed", "the \\boxed{} is empty", text) };
  }
  let cut = 0;
  for (const m of text.matchAll(/\\(?:boxed|fbox)/g)) cut = m.index!;
  const before = text.slice(0, cut).trim();
  const work = before.length > WORK_KEEP ? "…" + before.slice(-WORK_KEEP) : before;
  return { ok: true, action: { kind: "answer", answer: inner, canonical, work } };
}

function parseAction(agent: string, text: string): ParseResult<MathAction> {
  return agent === "tool" ? parseCode(text) : parseReasoner(text);
}

/** Tool code runs after the helpers, in its own function scope (it may redeclare `gcd`). */
export function toolSource(code: string): string {
  return `${TOOL_PRELUDE}\n;(function () {\n${code}\n})();\n`;
}

async function execute(
  _s: MathState,
  agent: string,
  a: MathAction,
  executor: CodeExecutor,
): Promise<MathAction> {
  if (agent !== "tool" || a.kind !== "code") return a;
  const r = await executor.run(toolSource(a.code), { timeoutMs: RUN_TIMEOUT_MS });
  const stdout = r.stdout.length > STDOUT_KEEP ? r.stdout.slice(0, STDOUT_KEEP) : r.stdout;
  const execution = { ok: r.ok, stdout, error: r.error, timedOut: r.timedOut, ms: r.ms };
  return { ...a, execution };
}

function toolOutput(task: MathTask, a: MathAction | Invalid): { out: ToolOutput; bad?: Invalid } {
  const fail = (code: string | null, stdout: string, bad: Invalid, score: number) => ({
    out: {
      code,
      stdout,
      answer: null,
      canonical: null,
      problem: bad.reason,
      correct: false,
      score,
    },
    bad,
  });
  if (isInvalid(a)) return fail(null, "", a, FORMAT_PENALTY);
  if (a.kind !== "code") {
    return fail(
      null,
      "",
      invalid("malformed", "the tool agent must send code", ""),
      FORMAT_PENALTY,
    );
  }
  if (a.execution === null) throw new NotExecutedError(ENV_ID, "tool");
  const stdout = a.execution.stdout;
  const problem = executionProblem(a.execution);
  if (problem !== null) {
    return fail(a.code, stdout, invalid("exec_error", problem, stdout), EXEC_FAIL);
  }
  const lines = stdout.trim().split("\n");
  const answer = lines[lines.length - 1].trim();
  const canonical = normalizeAnswer(answer);
  const correct = canonical === task.answer;
  return {
    out: {
      code: a.code,
      stdout,
      answer,
      canonical,
      problem: null,
      correct,
      score: correct ? 1 : 0,
    },
  };
}

function stepTool(s: MathState, a: MathAction | Invalid): StepResult<MathState> {
  const { out, bad } = toolOutput(s.task, a);
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, false);
  const info: Record<string, unknown> = {
    tool: { answer: out.answer, correct: out.correct, problem: out.problem },
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

export function reasonerOutput(task: MathTask, a: MathAction | Invalid): ReasonerOutput {
  if (isInvalid(a) || a.kind !== "answer") {
    const problem = isInvalid(a) ? a.reason : "the reasoner must send a \\boxed{} answer";
    return { answer: null, canonical: null, work: "", problem, correct: false };
  }
  const correct = a.canonical === task.answer;
  return { answer: a.answer, canonical: a.canonical, work: a.work, problem: null, correct };
}

function stepReasoner(s: MathState, a: MathAction | Invalid): StepResult<MathState> {
  const r = reasonerOutput(s.task, a);
  const tool = s.pending;
  const agreed = tool !== null && tool.canonical !== null && tool.canonical === r.canonical;
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, agreed);
  const line = `t${s.turn + 1} tool: ${tool?.answer ?? `(${tool?.problem ?? "no output"})`} | ` +
    `reasoner: ${r.answer ?? `(${r.problem})`}${agreed ? " | agree" : ""}`;
  const state: MathState = {
    ...s,
    ...clock,
    terminated: agreed,
    pending: null,
    tool,
    reasoner: r,
    history: [...s.history, line],
    agreed,
    correct: r.correct,
  };
  const team = r.correct ? 1 : 0;
  const info: Record<string, unknown> = { correct: r.correct, agreed };
  if (r.answer === null) {
    info.invalid = isInvalid(a) ? a : invalid("malformed", r.problem ?? "no answer", "");
  }
  if (state.terminated || state.truncated) {
    info.finalRewards = { tool: (tool?.score ?? 0) + team, reasoner: team };
  }
  return {
    state,
    teamReward: team,
    localReward: r.answer === null ? FORMAT_PENALTY : 0,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

function step(s: MathState, agent: string, a: MathAction | Invalid): StepResult<MathState> {
  assertTurn(math, s, agent);
  return agent === "tool" ? stepTool(s, a) : stepReasoner(s, a);
}

const SYSTEM_TOOL =
  `You are the tool agent of a two-agent team solving a math word problem; a reasoner solves the
same problem in parallel. Write a JavaScript program that computes the answer exactly and prints it
with console.log: the last printed line is your answer. Print integers as 12 and fractions as 3/4
(an exact decimal such as 0.75 is fine too). Predefined helpers: gcd(a, b), and frac(n, d), which
returns the reduced fraction n/d as text. Put the program in one \`\`\`javascript block. From the
second turn on you also see the reasoner's previous answer: the episode ends when your answers
agree, so when they differ, work out who is wrong.`;

const SYSTEM_REASONER =
  `You are the reasoner of a two-agent team solving a math word problem; a tool agent solves the
same problem in parallel by running JavaScript. Think step by step, then end with the final answer
in \\boxed{}, e.g. \\boxed{12} or \\boxed{3/4}. Answers are checked exactly: give an integer, a
fraction, or a terminating decimal, without units. From the second turn on you also see the tool
agent's previous program and output: the episode ends when your answers agree, so when they
differ, work out who is wrong.`;

function toolSays(t: ToolOutput | null): string {
  if (t === null) return "none";
  return t.answer ?? `error (${t.problem})`;
}

export function reasonerSays(r: ReasonerOutput | null): string {
  if (r === null) return "none";
  return r.answer ?? `invalid (${r.problem})`;
}

function observeTool(s: MathState, style: PromptStyle, head: string): Prompt {
  const { tool, reasoner } = s;
  let past = "";
  if (s.turn > 0) {
    const code = tool?.code
      ? `\`\`\`javascript\n${tool.code.trimEnd()}\n\`\`\`\n`
      : "(no program)\n";
    const work = reasoner?.work ? `\nThe reasoner's reasoning (end):\n${reasoner.work}` : "";
    past = `\nYour previous program:\n${code}Its answer: ${toolSays(tool)}\n` +
      `The reasoner's answer: ${reasonerSays(reasoner)}${work}\n` +
      `Your answers do not agree yet; check both, then write a corrected program.`;
  }
  return buildPrompt(style, {
    system: SYSTEM_TOOL,
    user: `${head}\nProblem: ${s.task.question}${past || "\nWrite the program."}`,
    compact: `math tool t${s.turn + 1}\nQ: ${s.task.question}\n` +
      (s.turn > 0 ? `you:${toolSays(tool)} rs:${reasonerSays(reasoner)}\n` : "") + "js:\n",
  });
}

function observeReasoner(s: MathState, style: PromptStyle, head: string): Prompt {
  const { tool, reasoner } = s;
  let past = "";
  if (s.turn > 0) {
    const code = tool?.code
      ? `\`\`\`javascript\n${tool.code.trimEnd()}\n\`\`\`\n`
      : "(no program)\n";
    past = `\nYour previous answer: ${reasonerSays(reasoner)}\n` +
      `The tool agent's previous program:\n${code}Its answer: ${toolSays(tool)}\n` +
      `Your answers do not agree yet; check both, then give your final answer.`;
  }
  return buildPrompt(style, {
    system: SYSTEM_REASONER,
    user: `${head}\nProblem: ${s.task.question}${past || "\nSolve it."}`,
    compact: `math reason t${s.turn + 1}\nQ: ${s.task.question}\n` +
      (s.turn > 0 ? `you:${reasonerSays(reasoner)} tool:${toolSays(tool)}\n` : "") + "ans:\n",
  });
}

/** Reads only turn-start fields (never `pending`): both agents of a turn see the same prompt. */
function observe(s: MathState, agent: string, style: PromptStyle): Prompt {
  const head = `Turn ${s.turn + 1} of ${s.task.maxTurns}.`;
  return agent === "tool" ? observeTool(s, style, head) : observeReasoner(s, style, head);
}

function oracle(s: MathState, agent: string): { text: string; action: MathAction } {
  const t = s.task;
  if (agent === "tool") {
    const action: CodeAction = {
      kind: "code",
      code: t.code,
      execution: nativeExecution(t.display + "\n"),
    };
    return { text: "```javascript\n" + t.code + "```", action };
  }
  const text = `\\boxed{${t.display}}`;
  const parsed = parseReasoner(text);
  if (!parsed.ok) throw new Error(`${ENV_ID}: the task's answer "${t.display}" cannot be boxed`);
  return { text, action: parsed.action };
}

/**
 * A wrong answer of the right form (demonstrations' exploration, DemoOptions.explore, so the
 * turn-2 prompts of the demonstrations show a partner that disagreed): an integer within 5 of the
 * task's (integer) answer or anywhere in [0, 40], never the answer itself; the reasoner boxes it,
 * the tool prints it.
 */
function randomMove(s: MathState, agent: string, rng: Rng): { text: string; action: MathAction } {
  const n = Number(s.task.display);
  let wrong = "";
  do {
    const near = Number.isInteger(n) && rng.float() < 0.5;
    wrong = String(near ? n + (rng.int(10) - 5 || 6) : rng.int(41));
  } while (normalizeAnswer(wrong) === s.task.answer);
  if (agent === "tool") {
    const code = `console.log(${wrong});\n`;
    const action: CodeAction = { kind: "code", code, execution: nativeExecution(wrong + "\n") };
    return { text: "```javascript\n" + code + "```", action };
  }
  const text = `\\boxed{${wrong}}`;
  const parsed = parseReasoner(text);
  if (!parsed.ok) throw new Error(`${ENV_ID}: "${text}" does not parse`);
  return { text, action: parsed.action };
}

function render(s: MathState): Rendered {
  const status = s.agreed
    ? `agreed, ${s.correct ? "correct" : "wrong"}`
    : s.truncated
    ? `out of turns, ${s.correct ? "correct" : "wrong"}`
    : `turn ${s.turn + 1}`;
  const lines = [
    `math: ${status}`,
    `Q: ${s.task.question}`,
    `answer: ${s.task.display}`,
    ...s.history,
  ];
  const text = lines.join("\n");
  return { text, view: { kind: "text", body: text } };
}

export const math: EnvDefinition<MathTask, MathState, MathAction, MathDifficulty> = {
  id: ENV_ID,
  description:
    "Math word problems: tool agent (JavaScript, printed answer) ∥ reasoner (\\boxed{} answer); ends when they agree",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: true,
  symmetric: false,
  toolAgents: ["tool"],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  generate,
  taskKey,
  reset,
  observe,
  parseAction,
  execute,
  step,
  success: (s) => s.correct,
  oracle,
  randomMove,
  solve: (task) => oracleRollout(math, task),
  render,
};
