// Math, single agent (math_solo_v1; level L0, the paper's "single agent" baseline): the reasoner
// of math_v1 alone, with no tool agent and no tool section in its prompt. Same tasks and splits
// as math_v1 (its generator), same turn limit.
//
// With no partner to agree with, the episode ends as soon as the reasoner gives a parseable
// `\boxed{}` answer, right or wrong; a message without one costs −2 (as in math_v1) and the next
// turn asks again, until the turns run out. One agent acts per turn, so every step advances the
// turn. Rewards as in math_v1: the answer's correctness (1/0) is the team reward; finalRewards
// names "reasoner" only.

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
} from "../api.ts";
import { buildPrompt } from "../prompt.ts";
import type {
  EnvDefinition,
  EnvState,
  Invalid,
  ParseResult,
  Prompt,
  PromptStyle,
  Rendered,
  StepResult,
} from "../types.ts";
import {
  type AnswerAction,
  type MathAction,
  parseReasoner,
  type ReasonerOutput,
  reasonerOutput,
  reasonerSays,
} from "./env.ts";
import {
  DEFAULT_DIFFICULTY,
  ENV_ID as MAS_ID,
  generate,
  type MathDifficulty,
  type MathTask,
  taskKey,
  TEST_FRACTION,
} from "./tasks.ts";

export const SOLO_ID = "math_solo_v1";

export interface MathSoloState extends EnvState {
  task: MathTask;
  /** The latest message's outcome (an unusable one, unless the episode is over). */
  reasoner: ReasonerOutput | null;
  /** One line per turn, for render and logs. */
  history: string[];
  /** The reasoner gave a parseable answer (the end condition). */
  answered: boolean;
  correct: boolean;
}

const AGENTS = ["reasoner"] as const;

function reset(task: MathTask): MathSoloState {
  return {
    envId: SOLO_ID,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    reasoner: null,
    history: [],
    answered: false,
    correct: false,
  };
}

function step(
  s: MathSoloState,
  agent: string,
  a: MathAction | Invalid,
): StepResult<MathSoloState> {
  assertTurn(mathSolo, s, agent);
  const r = reasonerOutput(s.task, a);
  const answered = r.answer !== null;
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, answered);
  const state: MathSoloState = {
    ...s,
    ...clock,
    terminated: answered,
    reasoner: r,
    history: [...s.history, `t${s.turn + 1} reasoner: ${reasonerSays(r)}`],
    answered,
    correct: r.correct,
  };
  const team = r.correct ? 1 : 0;
  const info: Record<string, unknown> = { correct: r.correct };
  if (!answered) {
    info.invalid = isInvalid(a) ? a : invalid("malformed", r.problem ?? "no answer", "");
  }
  if (state.terminated || state.truncated) info.finalRewards = { reasoner: team };
  return {
    state,
    teamReward: team,
    localReward: answered ? 0 : FORMAT_PENALTY,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

const SYSTEM_SOLO = `You are solving a math word problem alone, with no tools. Think step by step,
then end with the final answer in \\boxed{}, e.g. \\boxed{12} or \\boxed{3/4}. Answers are checked
exactly: give an integer, a fraction, or a terminating decimal, without units. Your first
\\boxed{} answer is final.`;

function observe(s: MathSoloState, _agent: string, style: PromptStyle): Prompt {
  const head = `Turn ${s.turn + 1} of ${s.task.maxTurns}.`;
  // Only an unusable message leads to another turn: say what was wrong with it.
  const retry = s.reasoner?.problem
    ? `\nYour previous message had no usable answer (${s.reasoner.problem}). Solve it again.`
    : "\nSolve it.";
  return buildPrompt(style, {
    system: SYSTEM_SOLO,
    user: `${head}\nProblem: ${s.task.question}${retry}`,
    compact: `math solo t${s.turn + 1}\nQ: ${s.task.question}\n` +
      (s.turn > 0 ? `prev:${reasonerSays(s.reasoner)}\n` : "") + "ans:\n",
  });
}

function oracle(s: MathSoloState): { text: string; action: AnswerAction } {
  const text = `\\boxed{${s.task.display}}`;
  const parsed = parseReasoner(text);
  if (!parsed.ok || parsed.action.kind !== "answer") {
    throw new Error(`${SOLO_ID}: the task's answer "${s.task.display}" cannot be boxed`);
  }
  return { text, action: parsed.action };
}

function render(s: MathSoloState): Rendered {
  const status = s.answered
    ? `answered, ${s.correct ? "correct" : "wrong"}`
    : s.truncated
    ? "out of turns, no answer"
    : `turn ${s.turn + 1}`;
  const text = [
    `math solo: ${status}`,
    `Q: ${s.task.question}`,
    `answer: ${s.task.display}`,
    ...s.history,
  ].join("\n");
  return { text, view: { kind: "text", body: text } };
}

export const mathSolo: EnvDefinition<MathTask, MathSoloState, MathAction, MathDifficulty> = {
  id: SOLO_ID,
  description:
    "Single agent (L0) math: the reasoner alone (\\boxed{} answer, no tool); ends at its first answer",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: false,
  symmetric: false,
  toolAgents: [],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  soloOf: MAS_ID,
  generate,
  taskKey,
  reset,
  observe,
  parseAction: (_agent, text): ParseResult<MathAction> => parseReasoner(text),
  step,
  success: (s) => s.correct,
  oracle,
  solve: (task) => oracleRollout(mathSolo, task),
  render,
};
