// The environment API every task implements (PettingZoo vocabulary, immutable steps), and the
// executor interface through which tool agents' code runs. Types only: helpers live in api.ts.
//
// Life of one agent action (what a trainer does; `act()` in api.ts does exactly this):
//   text   = model output
//   parsed = env.parseAction(agent, text)            pure, sync; typed Invalid on failure
//   action = await env.execute?.(state, agent, parsed.action, executor)   async, optional:
//            runs tool code (sandbox) and folds the result into the action; pure otherwise
//   result = env.step(state, agent, action | invalid)  pure, sync, never mutates `state`
// Splitting async execution from `step` keeps `step` a pure function that can score K
// candidates on K clones of one state, and lets execution of all candidates run concurrently.

import type { Rng } from "./rng.ts";

/** An agent's name, e.g. "tool", "plan", "player_0". */
export type AgentId = string;

/** Versioned environment id, e.g. "plan_path_v1"; bump the suffix when rewards or prompts change. */
export type EnvId = string;

export type Split = "train" | "test";

/**
 * "compact": short plain text for a tiny byte-level model (no system prompt, terse board).
 * "chat": messages with a system prompt per role, for an instruct model's chat template.
 */
export type PromptStyle = "compact" | "chat";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export type Prompt =
  | { style: "compact"; text: string }
  | { style: "chat"; messages: ChatMessage[] };

/** Why a model's text is not a usable action. `code` is stable for metrics; `reason` is for humans. */
export type InvalidCode =
  | "empty" // nothing but whitespace
  | "no_answer" // the required marker (`####`, `\boxed{}`, a code block...) is missing
  | "malformed" // marker present but the content does not parse
  | "illegal" // parses, but the rules forbid it in this state (found by `step`)
  | "exec_error"; // tool code failed, timed out, or printed nothing usable

export interface Invalid {
  readonly invalid: true;
  readonly code: InvalidCode;
  readonly reason: string;
  /** The offending text (possibly truncated), so logs show what the model actually wrote. */
  readonly text: string;
}

export type ParseResult<A> = { ok: true; action: A } | { ok: false; invalid: Invalid };

/**
 * Fields every state carries so generic code (rollouts, the conformance test, the pool) can drive
 * any env. States are plain data: JSON-like values only (no classes, functions, Maps), so they
 * survive structuredClone and postMessage; treat them as immutable.
 */
export interface EnvState {
  readonly envId: EnvId;
  /** 0-based turn; a turn is one pass over `turnOrder`. */
  readonly turn: number;
  /** Index into `turnOrder` of the agent to act next. */
  readonly cursor: number;
  /** The episode ended by the rules (win, loss, solved, bomb-out...). */
  readonly terminated: boolean;
  /** The episode was cut off (turn limit) before the rules ended it. */
  readonly truncated: boolean;
}

export interface StepResult<S> {
  state: S;
  /** Shared by every agent of the team; AT-GRPO scores r = α·team + local. */
  teamReward: number;
  /** This agent's own reward (format penalties, tool quality, partial credit...). */
  localReward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

export interface StepInfo {
  /** Set when the action was Invalid or illegal here; the turn still advances. */
  invalid?: Invalid;
  /**
   * Final per-agent outcome once the episode is over, for modes that credit whole trajectories
   * (independent GRPO) and for competitive games where the loser's last step is in the past.
   */
  finalRewards?: Record<AgentId, number>;
  /** Env-specific plain data (reward breakdown, tool output...), for logs and the web UI. */
  [key: string]: unknown;
}

/** What a renderer gives: text for the terminal, plain data for web boards. */
export interface Rendered {
  text: string;
  view: BoardView;
}

export type BoardView =
  | {
    kind: "grid";
    /** One string per cell, e.g. "#", ".", "A", "G", "X", "3". */
    cells: string[][];
    /** What each cell symbol means, for a legend. */
    legend: Record<string, string>;
    /** Cells to draw attention to (last move, proposed path), as [row, col]. */
    highlight?: [number, number][];
    caption?: string;
  }
  | { kind: "hanabi"; [key: string]: unknown }
  | { kind: "search"; [key: string]: unknown }
  | { kind: "text"; body: string };

/** Result of running code; the same shape as the sandbox's `runJs`. */
export interface ExecResult {
  ok: boolean;
  stdout: string;
  error: string | null;
  timedOut: boolean;
  ms: number;
}

/**
 * Runs untrusted JavaScript. The real implementation is the sandbox (src/sandbox); envs never
 * construct one, they receive it, so the same env runs in a worker pool, in tests, in a browser.
 * `globals` must be structuredClone-able: helpers are passed as source text in `code`.
 */
export interface CodeExecutor {
  run(
    code: string,
    opts: { globals?: Record<string, unknown>; timeoutMs?: number },
  ): Promise<ExecResult>;
}

/**
 * The action of a tool agent. `parseAction` returns it with `execution: null`; `execute` runs the
 * code and returns a copy with the result; `step` throws NotExecutedError if it is still null.
 * Envs whose tool agents need more (several runs, test inputs) keep this shape and add fields.
 */
export interface CodeAction {
  kind: "code";
  code: string;
  execution: ExecResult | null;
}

/** Difficulty knobs: env-specific numbers/flags (grid size, wall density, opening moves...). */
export type Difficulty = Record<string, number | boolean | string>;

export interface GenerateOptions<D extends Difficulty = Difficulty> {
  split: Split;
  /** Overrides of the env's `defaultDifficulty`; unknown keys are rejected. */
  difficulty?: Partial<D>;
}

/** One agent message an oracle would send, with the action it stands for (already executed). */
export interface OracleMove<A> {
  text: string;
  /**
   * The action `parseAction(text)` (+ `execute`) yields. For tool agents the oracle computes the
   * execution result natively, so `solve` needs no sandbox; tests check the two agree on a sample.
   */
  action: A;
}

export interface TranscriptEntry {
  turn: number;
  agent: AgentId;
  text: string;
  teamReward: number;
  localReward: number;
}

export interface Solution<S> {
  transcript: TranscriptEntry[];
  finalState: S;
  success: boolean;
  /** Sum over the episode of team rewards plus each agent's local rewards, for logs. */
  totalReward: number;
}

/**
 * A run's reward settings for envs that have them (config `rewards.shaping`, `rewards.success`):
 * `shaping` scales the env's shaping term (1 = the paper's weight, 0 = none); `success: "binary"`
 * replaces every reward of a move with 1 when it solves the task and 0 otherwise (no step
 * costs, bonuses, shaping or fail penalty; format penalties for unusable text stay).
 */
export interface RewardKnobs {
  readonly shaping: number;
  readonly success: "shaped" | "binary";
}

/**
 * One environment. `T` task (plain data: what `generate` returns), `S` state, `A` parsed action.
 * Everything is a pure function of its arguments except `execute`, which is async only because
 * the executor is.
 */
export interface EnvDefinition<
  T = unknown,
  S extends EnvState = EnvState,
  A = unknown,
  D extends Difficulty = Difficulty,
> {
  readonly id: EnvId;
  /** One line for menus and logs. */
  readonly description: string;
  readonly possibleAgents: readonly AgentId[];
  /** Order agents act within a turn (a permutation of possibleAgents). */
  readonly turnOrder: readonly AgentId[];
  /**
   * Agents observe the turn-start state (code ∥ tester, tool ∥ reasoner): within a turn every
   * agent's `observe` returns the same prompt whatever earlier agents of the turn did; their
   * actions are buffered in the state and resolved when the last agent of the turn steps.
   */
  readonly parallel: boolean;
  /** Self-play: every agent is the same role (tic-tac-toe); one shared policy is natural. */
  readonly symmetric: boolean;
  /** Agents whose actions are code that `execute` runs (empty for envs without tools). */
  readonly toolAgents: readonly AgentId[];
  readonly defaultDifficulty: D;
  /** Fraction of the task space reserved for the test split (by content hash). */
  readonly testFraction: number;
  /**
   * Single-agent (L0) variants only: the id of the multi-agent env this one does alone. The
   * variant draws its tasks from that env's generator, so it has the same tasks and the same
   * train/test splits (hashed under that id: use `splitOfTask`, not `splitOfKey(env.id, ...)`).
   */
  readonly soloOf?: EnvId;
  /**
   * Single-agent variants only: how many of its turns the variant takes for each of the team's
   * turns (default 1). search_solo_v1 takes 2, a message for each of the team's two roles, so its
   * one agent already fills every agent slot of the team's turns; the paper table then gives it
   * the team's environments per step (A / 2 × them, A the team's agents) rather than A×.
   */
  readonly turnsPerTeamTurn?: number;

  /**
   * Envs with reward knobs: the shaping weight under which success dominates (what a config's
   * `rewards.shaping: null` means), and the env with the knobs applied. Absent: the env's rewards
   * are fixed, and a config that sets the knobs is refused.
   */
  readonly rewardKnobs?: {
    readonly defaultShaping: number;
    withRewards(k: RewardKnobs): EnvDefinition<T, S, A, D>;
  };

  /** Deterministic in (seed, split, difficulty); train and test tasks never coincide. */
  generate(seed: number, opts: GenerateOptions<D>): T;
  /** Canonical content of a task; equal keys = same task (used for split disjointness). */
  taskKey(task: T): string;
  reset(task: T): S;
  observe(state: S, agent: AgentId, style: PromptStyle): Prompt;
  /** Pure and state-free: format checks only; rule checks happen in `step`. */
  parseAction(agent: AgentId, text: string): ParseResult<A>;
  /** Present when some agent's action needs code execution; returns the action with results. */
  execute?(state: S, agent: AgentId, action: A, executor: CodeExecutor): Promise<A>;
  /**
   * Applies `agent`'s action (or an Invalid, which is penalised) and returns a new state.
   * Throws NotYourTurnError for the wrong agent, EpisodeOverError after the end, and
   * NotExecutedError for a tool action that skipped `execute`.
   */
  step(state: S, agent: AgentId, action: A | Invalid): StepResult<S>;
  success(state: S): boolean;
  /** The move a strong scripted player would make here (SFT demonstrations, upper bound). */
  oracle(state: S, agent: AgentId): OracleMove<A>;
  /**
   * A uniformly random move of the right form, legal or not (a hint that touches no card, a
   * play that bombs): exploration for demonstrations (`DemoOptions.explore`), so a policy also
   * sees the states that follow mistakes. Optional; envs without it explore with malformed
   * messages only.
   */
  randomMove?(state: S, agent: AgentId, rng: Rng): OracleMove<A>;
  /** Rolls the oracle out from reset(task) for every agent; needs no executor. */
  solve(task: T): Solution<S>;
  render(state: S): Rendered;
}

// The registry holds envs of different T/S/A; function-parameter variance forces `any` here.
// deno-lint-ignore no-explicit-any
export type AnyEnvDefinition = EnvDefinition<any, any, any, any>;

/** What `reset` accepts through generic front ends (gym facade, pool): a task or a seed. */
export type TaskOrSeed<T> = T | { seed: number; split?: Split; difficulty?: Difficulty };

/** Gym-style single-agent view of a multi-agent episode: the agent to act is implicit. */
export interface GymObservation {
  agent: AgentId | null;
  prompt: Prompt | null;
}

export interface GymStep {
  observation: GymObservation;
  /** α·team + local for the agent that just acted. */
  reward: number;
  done: boolean;
  info: StepInfo & { agent: AgentId; teamReward: number; localReward: number };
}
