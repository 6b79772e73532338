// The tool → plan pattern shared by Plan-Path, Sokoban and Sudoku (docs/algorithm.md): each turn a tool
// agent writes JavaScript, run in the sandbox with the task's variables, whose printed answer is
// parsed; then a plan agent commits a final answer after `####`. A game supplies its rules as a
// ToolPlanGame; this module turns them into an EnvDefinition.
//
// The same game also yields its single-agent (level L0) variant, `defineSoloPlanEnv`: the plan
// agent alone ("plan", so a policy or adapter trained for that role carries over), with no tool
// agent and no tool output in its prompt, answering after `####` from the board. One agent acts
// per turn, so the turn clock advances on every step; rewards, fail penalty and turn limit are the
// multi-agent env's, and `finalRewards` names "plan" only. Its id is the game's with `_solo`
// before the version (plan_path_v1 → plan_path_solo_v1) and it shares the game's tasks and splits.
//
// The tool agent alone is a second single-agent variant, `defineSoloToolEnv` (the paper's Plan-Path
// ablation trains each role in single-agent mode, then evaluates them as a team): the "tool" agent
// with its team prompt unchanged (so an adapter trained for the role carries over), its program
// run in the sandbox and its printed answer committed as the plan agent would commit it. Its id
// is the game's with `_tool_solo` (plan_path_v1 → plan_path_tool_solo_v1); config env.soloAgent
// "tool" selects it at level L0.
//
// Credit assignment: the tool's step changes nothing in the game; its local reward is what its
// proposal would earn if the plan agent committed it (plus the fail penalty if it would not solve
// the task), so its K candidates get distinct rewards. The plan agent's commit earns the team
// reward. Unusable text or tool output scores FORMAT_PENALTY (−2, docs/algorithm.md) for its agent.
//
// Reward knobs (config `rewards.shaping`, `rewards.success`; types.ts RewardKnobs): a game names
// its shaping term (a key of its evaluation's breakdown) and the weight under which success
// dominates; `withRewards` rescales that term or makes every move's reward binary (1 if it solves
// the task). The registered envs keep the paper's weights (shaping 1, shaped).

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
  round6,
} from "./api.ts";
import { NotExecutedError } from "./errors.ts";
import { buildPrompt } from "./prompt.ts";
import { type CodeAction, executionProblem, nativeExecution, parseCode, runTool } from "./tools.ts";
import type {
  CodeExecutor,
  Difficulty,
  EnvDefinition,
  EnvState,
  GenerateOptions,
  Invalid,
  OracleMove,
  ParseResult,
  Prompt,
  PromptStyle,
  Rendered,
  RewardKnobs,
  StepResult,
} from "./types.ts";

export type ToolPlanAction<Ans> = CodeAction | { kind: "answer"; answer: Ans };

export interface ToolReport<Ans> {
  answer: Ans | null;
  stdout: string;
  problem: string | null;
}

/** `game` is the rules' own part of the state (position, grid...). */
export interface ToolPlanState<T, G, Ans> extends EnvState {
  task: T;
  game: G;
  solved: boolean;
  /** The tool agent's latest output, shown to the plan agent. */
  tool: ToolReport<Ans> | null;
  /** One line per past action, shown to both agents in later turns. */
  log: string[];
}

export interface Evaluation<G> {
  game: G;
  reward: number;
  solved: boolean;
  /** The task can no longer be solved (e.g. a box stuck in a corner): the episode ends. */
  dead: boolean;
  breakdown: Record<string, number>;
  /** Short description for the history log. */
  summary: string;
}

export interface ToolPlanGame<T, G, Ans, D extends Difficulty> {
  id: string;
  description: string;
  defaultDifficulty: D;
  testFraction: number;
  /** Added to the team reward when the episode ends unsolved (the paper's "fail"). */
  failPenalty: number;
  /**
   * The shaping term: its key in Evaluation.breakdown (already at the paper's weight), and the
   * weight under which a solving move always out-scores the rest of a group by a clear margin.
   */
  shaping: { key: string; successDominant: number };
  generate(seed: number, opts: GenerateOptions<D>): T;
  taskKey(task: T): string;
  maxTurns(task: T): number;
  initialGame(task: T): G;
  /** The answer in a piece of text (after `####`, or a tool's last printed line); null if none. */
  parseAnswer(text: string): Ans | null;
  /** What committing `answer` in this state does; pure. */
  evaluate(task: T, game: G, answer: Ans): Evaluation<G>;
  formatAnswer(answer: Ans): string;
  /**
   * The tool's answer as the plan agent's compact prompt shows it (default formatAnswer). A
   * fixed width puts each part of the answer at a constant distance from where the plan's copy of
   * it goes, a copy a tiny model can learn (Sudoku's 16 cells have it by nature).
   */
  formatToolCompact?(answer: Ans, task: T): string;
  toolPrelude: string;
  toolGlobals(task: T, game: G): Record<string, unknown>;
  /** Board and situation as text, for both prompt styles. */
  describe(task: T, game: G): { full: string; compact: string };
  systemTool: string;
  systemPlan: string;
  /** The single-agent variant's system prompt: the plan agent working alone, without a tool. */
  systemSolo: string;
  /** Example of the plan agent's answer format, for error messages. */
  answerExample: string;
  /** The ideal answer from here, and a self-contained program that prints it. */
  oracleAnswer(task: T, game: G): Ans;
  oracleToolCode: string;
  render(state: ToolPlanState<T, G, Ans>): Rendered;
}

/** The paper's rewards: what the registered envs use. */
export const PAPER_REWARDS: RewardKnobs = { shaping: 1, success: "shaped" };

/** A move's reward under the knobs: the shaping term rescaled, or 1/0 for solved/not. */
function score<G>(shapingKey: string, e: Evaluation<G>, k: RewardKnobs): number {
  if (k.success === "binary") return e.solved ? 1 : 0;
  return round6(e.reward + (k.shaping - 1) * (e.breakdown[shapingKey] ?? 0));
}

/** The fail penalty under the knobs (none with binary rewards). */
const failOf = <T, G, Ans, D extends Difficulty>(g: ToolPlanGame<T, G, Ans, D>, k: RewardKnobs) =>
  k.success === "binary" ? 0 : g.failPenalty;

const AGENTS = ["tool", "plan"] as const;
const SOLO_AGENTS = ["plan"] as const;
const TOOL_SOLO_AGENTS = ["tool"] as const;

/** plan_path_v1 → plan_path_solo_v1. */
export function soloIdOf(id: string): string {
  const m = /^(.*)_v(\d+)$/.exec(id);
  if (!m) throw new Error(`"${id}" is not a versioned env id like plan_path_v1`);
  return `${m[1]}_solo_v${m[2]}`;
}

/** plan_path_v1 → plan_path_tool_solo_v1. */
export function toolSoloIdOf(id: string): string {
  return soloIdOf(id).replace(/_solo_v(\d+)$/, "_tool_solo_v$1");
}

function reset<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  task: T,
  envId: string = g.id,
): ToolPlanState<T, G, Ans> {
  return {
    envId,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    game: g.initialGame(task),
    solved: false,
    tool: null,
    log: [],
  };
}

function parseAction<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  agent: string,
  text: string,
): ParseResult<ToolPlanAction<Ans>> {
  if (agent === "tool") return parseCode(text);
  if (text.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the message is empty", text) };
  }
  const i = text.lastIndexOf("####");
  if (i < 0) {
    return {
      ok: false,
      invalid: invalid("no_answer", "no `####` before the final answer", text),
    };
  }
  const answer = g.parseAnswer(text.slice(i + 4));
  if (answer === null) {
    return {
      ok: false,
      invalid: invalid(
        "malformed",
        `after \`####\` write the answer only, e.g. \`${g.answerExample}\``,
        text,
      ),
    };
  }
  return { ok: true, action: { kind: "answer", answer } };
}

async function execute<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  s: ToolPlanState<T, G, Ans>,
  agent: string,
  a: ToolPlanAction<Ans>,
  executor: CodeExecutor,
): Promise<ToolPlanAction<Ans>> {
  if (agent !== "tool" || a.kind !== "code") return a;
  return await runTool(executor, a, g.toolPrelude, g.toolGlobals(s.task, s.game));
}

function readTool<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  a: ToolPlanAction<Ans> | Invalid,
): ToolReport<Ans> {
  if (isInvalid(a)) return { answer: null, stdout: "", problem: a.reason };
  if (a.kind !== "code") {
    return { answer: null, stdout: "", problem: "the tool agent must send code" };
  }
  if (a.execution === null) throw new NotExecutedError(g.id, "tool");
  const stdout = a.execution.stdout;
  const problem = executionProblem(a.execution);
  if (problem !== null) return { answer: null, stdout, problem };
  // The last line is the answer by contract; the whole output is a fallback for programs
  // that print one row or one move per line.
  const lines = stdout.trim().split("\n");
  const answer = g.parseAnswer(lines[lines.length - 1]) ?? g.parseAnswer(stdout);
  return answer === null
    ? { answer: null, stdout, problem: "the last printed line is not an answer" }
    : { answer, stdout, problem: null };
}

function stepTool<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  s: ToolPlanState<T, G, Ans>,
  a: ToolPlanAction<Ans> | Invalid,
  k: RewardKnobs,
): StepResult<ToolPlanState<T, G, Ans>> {
  const report = readTool(g, a);
  const info: Record<string, unknown> = { tool: report };
  let local = FORMAT_PENALTY;
  if (report.answer !== null) {
    const e = g.evaluate(s.task, s.game, report.answer);
    local = round6(score(g.shaping.key, e, k) + (e.solved ? 0 : failOf(g, k)));
    info.proposal = e.breakdown;
    info.proposalSolves = e.solved;
  } else {
    info.invalid = isInvalid(a)
      ? a
      : invalid("exec_error", report.problem ?? "no output", report.stdout);
  }
  const clock = advanceClock(s, AGENTS.length, g.maxTurns(s.task), false);
  const line = report.answer !== null
    ? `tool: ${g.formatAnswer(report.answer)}`
    : `tool failed: ${report.problem}`;
  const state: ToolPlanState<T, G, Ans> = {
    ...s,
    ...clock,
    tool: report,
    log: [...s.log, `t${s.turn + 1} ${line}`],
  };
  return {
    state,
    teamReward: 0,
    localReward: local,
    terminated: false,
    truncated: clock.truncated,
    info,
  };
}

/**
 * A commit of the answer in `a`. `agents`: the env's agents (the clock's turn length, and who
 * gets finalRewards); `role`: who commits ("plan"; "tool" when it works alone).
 */
function stepPlan<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  s: ToolPlanState<T, G, Ans>,
  a: ToolPlanAction<Ans> | Invalid,
  agents: readonly string[],
  k: RewardKnobs,
  role = "plan",
): StepResult<ToolPlanState<T, G, Ans>> {
  const answer = !isInvalid(a) && a.kind === "answer" ? a.answer : null;
  const e = answer === null ? null : g.evaluate(s.task, s.game, answer);
  const terminated = e !== null && (e.solved || e.dead);
  const clock = advanceClock(s, agents.length, g.maxTurns(s.task), terminated);
  const solved = e?.solved ?? false;
  const fail = !solved && (terminated || clock.truncated) ? failOf(g, k) : 0;
  const info: Record<string, unknown> = { evaluation: e?.breakdown ?? null, fail };
  if (answer === null) {
    info.invalid = isInvalid(a)
      ? a
      : invalid("malformed", `the ${role} agent must send an answer`, "");
  }
  const line = e
    ? `${role}: ${g.formatAnswer(answer!)} -> ${e.summary}`
    : `${role} sent no valid answer`;
  const state: ToolPlanState<T, G, Ans> = {
    ...s,
    ...clock,
    terminated,
    solved,
    game: e?.game ?? s.game,
    log: [...s.log, `t${s.turn + 1} ${line}`],
  };
  if (state.terminated || state.truncated) {
    info.finalRewards = Object.fromEntries(agents.map((x) => [x, solved ? 1 : 0]));
  }
  return {
    state,
    teamReward: round6((e === null ? 0 : score(g.shaping.key, e, k)) + fail),
    localReward: answer === null ? FORMAT_PENALTY : 0,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

function observe<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  s: ToolPlanState<T, G, Ans>,
  agent: string,
  style: PromptStyle,
): Prompt {
  const d = g.describe(s.task, s.game);
  const head = `Turn ${s.turn + 1} of ${g.maxTurns(s.task)}.`;
  const hist = s.log.length ? `\nHistory:\n${s.log.join("\n")}` : "";
  const short = g.id.replace(/_v\d+$/, "");
  if (agent === "tool") {
    return buildPrompt(style, {
      system: g.systemTool,
      user: `${head}\n${d.full}${hist}\nWrite the program.`,
      compact: `${short} tool t${s.turn + 1}\n${d.compact}\njs:\n`,
    });
  }
  const tool = s.tool === null
    ? "none yet"
    : s.tool.answer !== null
    ? g.formatAnswer(s.tool.answer)
    : `error (${s.tool.problem})`;
  const toolCompact = s.tool?.answer != null && g.formatToolCompact
    ? g.formatToolCompact(s.tool.answer, s.task)
    : tool;
  return buildPrompt(style, {
    system: g.systemPlan,
    user: `${head}\n${d.full}${hist}\nTool output: ${tool}\nGive the final answer.`,
    compact: `${short} plan t${s.turn + 1}\n${d.compact}\ntool:${toolCompact}\n`,
  });
}

function oracle<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  s: ToolPlanState<T, G, Ans>,
  agent: string,
): OracleMove<ToolPlanAction<Ans>> {
  const answer = g.oracleAnswer(s.task, s.game);
  const printed = g.formatAnswer(answer);
  if (agent === "tool") {
    const action: CodeAction = {
      kind: "code",
      code: g.oracleToolCode,
      execution: nativeExecution(printed + "\n"),
    };
    return { text: "```javascript\n" + g.oracleToolCode + "```", action };
  }
  return { text: `#### ${printed}`, action: { kind: "answer", answer } };
}

export function defineToolPlanEnv<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  knobs: RewardKnobs = PAPER_REWARDS,
): EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D> {
  const env: EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D> = {
    id: g.id,
    description: g.description,
    possibleAgents: AGENTS,
    turnOrder: AGENTS,
    parallel: false,
    symmetric: false,
    toolAgents: ["tool"],
    defaultDifficulty: g.defaultDifficulty,
    testFraction: g.testFraction,
    generate: g.generate,
    taskKey: g.taskKey,
    reset: (task) => reset(g, task),
    observe: (s, agent, style) => observe(g, s, agent, style),
    parseAction: (agent, text) => parseAction(g, agent, text),
    execute: (s, agent, a, executor) => execute(g, s, agent, a, executor),
    step: (s, agent, a) => {
      assertTurn(env, s, agent);
      return agent === "tool" ? stepTool(g, s, a, knobs) : stepPlan(g, s, a, AGENTS, knobs);
    },
    success: (s) => s.solved,
    oracle: (s, agent) => oracle(g, s, agent),
    solve: (task) => oracleRollout(env, task),
    render: g.render,
    rewardKnobs: rewardKnobsOf(g, (k) => defineToolPlanEnv(g, k)),
  };
  return env;
}

function rewardKnobsOf<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  make: (k: RewardKnobs) => EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D>,
) {
  return { defaultShaping: g.shaping.successDominant, withRewards: make };
}

/** The single-agent view: the MAS plan prompt without the tool's output, under its own header. */
function observeSolo<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  s: ToolPlanState<T, G, Ans>,
  style: PromptStyle,
): Prompt {
  const d = g.describe(s.task, s.game);
  const head = `Turn ${s.turn + 1} of ${g.maxTurns(s.task)}.`;
  const hist = s.log.length ? `\nHistory:\n${s.log.join("\n")}` : "";
  const short = g.id.replace(/_v\d+$/, "");
  return buildPrompt(style, {
    system: g.systemSolo,
    user: `${head}\n${d.full}${hist}\nGive the final answer.`,
    compact: `${short} solo t${s.turn + 1}\n${d.compact}\n`,
  });
}

const shortOf = <T, G, Ans, D extends Difficulty>(g: ToolPlanGame<T, G, Ans, D>) =>
  g.id.replace(/_v\d+$/, "");

/** What both single-agent variants share: one agent, the game's tasks and splits, its own id. */
function soloBase<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  id: string,
  agents: readonly string[],
) {
  return {
    id,
    possibleAgents: agents,
    turnOrder: agents,
    parallel: false,
    symmetric: false,
    defaultDifficulty: g.defaultDifficulty,
    testFraction: g.testFraction,
    soloOf: g.id,
    generate: g.generate,
    taskKey: g.taskKey,
    reset: (task: T) => reset(g, task, id),
  };
}

/**
 * The single-agent (L0) variant of a tool → plan game: the "plan" agent alone, no tool, no
 * executor. Same tasks, splits, rewards, fail penalty and turn limit as `defineToolPlanEnv(g)`.
 */
export function defineSoloPlanEnv<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  knobs: RewardKnobs = PAPER_REWARDS,
): EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D> {
  const id = soloIdOf(g.id);
  const env: EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D> = {
    ...soloBase(g, id, SOLO_AGENTS),
    description: `Single agent (L0) ${shortOf(g)}: the plan agent alone answers after ` +
      `\`####\` from the board, with no tool agent`,
    toolAgents: [],
    observe: (s, _agent, style) => observeSolo(g, s, style),
    // Every message is the plan agent's answer: code is not an answer here.
    parseAction: (_agent, text) => parseAction(g, "plan", text),
    step: (s, agent, a) => {
      assertTurn(env, s, agent);
      return stepPlan(g, s, a, SOLO_AGENTS, knobs);
    },
    success: (s) => s.solved,
    oracle: (s) => oracle(g, s, "plan"),
    solve: (task) => oracleRollout(env, task),
    render: g.render,
    rewardKnobs: rewardKnobsOf(g, (k) => defineSoloPlanEnv(g, k)),
  };
  return env;
}

/**
 * The tool agent alone (level L0 with env.soloAgent "tool"): each turn its program runs and its
 * printed answer is committed, with the rewards, fail penalty and turn limit of
 * `defineToolPlanEnv(g)`; unusable code or output scores the format penalty and uses the turn.
 */
export function defineSoloToolEnv<T, G, Ans, D extends Difficulty>(
  g: ToolPlanGame<T, G, Ans, D>,
  knobs: RewardKnobs = PAPER_REWARDS,
): EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D> {
  const id = toolSoloIdOf(g.id);
  const env: EnvDefinition<T, ToolPlanState<T, G, Ans>, ToolPlanAction<Ans>, D> = {
    ...soloBase(g, id, TOOL_SOLO_AGENTS),
    description: `Single agent (L0) ${shortOf(g)}: the tool agent alone; its program's ` +
      `printed answer is committed, with no plan agent`,
    toolAgents: ["tool"],
    // The team's tool prompt, unchanged: what the role learns alone carries over to the team.
    observe: (s, _agent, style) => observe(g, s, "tool", style),
    parseAction: (_agent, text) => parseAction(g, "tool", text),
    execute: (s, _agent, a, executor) => execute(g, s, "tool", a, executor),
    step: (s, agent, a) => {
      assertTurn(env, s, agent);
      const report = readTool(g, a);
      const commit: ToolPlanAction<Ans> | Invalid = report.answer !== null
        ? { kind: "answer", answer: report.answer }
        : isInvalid(a)
        ? a
        : invalid("exec_error", report.problem ?? "no output", report.stdout);
      const r = stepPlan(g, s, commit, TOOL_SOLO_AGENTS, knobs, "tool");
      return { ...r, state: { ...r.state, tool: report }, info: { ...r.info, tool: report } };
    },
    success: (s) => s.solved,
    oracle: (s) => oracle(g, s, "tool"),
    solve: (task) => oracleRollout(env, task),
    render: g.render,
    rewardKnobs: rewardKnobsOf(g, (k) => defineSoloToolEnv(g, k)),
  };
  return env;
}
