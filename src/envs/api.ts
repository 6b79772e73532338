// Generic machinery shared by every environment: turn bookkeeping, typed invalid results, split
// sampling, difficulty checking, the text→action→step pipeline (`act`) and the oracle rollout.

import {
  DifficultyError,
  EpisodeOverError,
  ExecutorMissingError,
  NotYourTurnError,
  SplitExhaustedError,
} from "./errors.ts";
import { hash32, Rng } from "./rng.ts";
import type {
  AgentId,
  AnyEnvDefinition,
  CodeExecutor,
  Difficulty,
  EnvDefinition,
  EnvState,
  Invalid,
  InvalidCode,
  Solution,
  Split,
  StepResult,
  TaskOrSeed,
  TranscriptEntry,
} from "./types.ts";

/** docs/algorithm.md: "An unparseable or empty action scores −2 for its agent in the original." */
export const FORMAT_PENALTY = -2;

/** Longest excerpt of model text kept inside an Invalid (logs stay readable). */
const INVALID_TEXT_MAX = 200;

export function invalid(code: InvalidCode, reason: string, text: string): Invalid {
  const t = text.length > INVALID_TEXT_MAX ? text.slice(0, INVALID_TEXT_MAX) + "…" : text;
  return { invalid: true, code, reason, text: t };
}

export function isInvalid(x: unknown): x is Invalid {
  return typeof x === "object" && x !== null && (x as { invalid?: unknown }).invalid === true;
}

/** The agent to act now, or null once the episode is over. */
export function currentAgent(env: AnyEnvDefinition, state: EnvState): AgentId | null {
  if (state.terminated || state.truncated) return null;
  return env.turnOrder[state.cursor] ?? null;
}

/** The guard every step() starts with. */
export function assertTurn(env: AnyEnvDefinition, state: EnvState, agent: AgentId): void {
  if (state.terminated || state.truncated) throw new EpisodeOverError(env.id);
  const expected = env.turnOrder[state.cursor];
  if (agent !== expected) throw new NotYourTurnError(env.id, agent, expected);
}

/**
 * Where the clock goes after an agent acts: the next cursor and turn, and whether the turn limit
 * cuts the episode (only when the rules did not already end it).
 */
export function advanceClock(
  state: EnvState,
  nAgents: number,
  maxTurns: number,
  terminated: boolean,
): { turn: number; cursor: number; truncated: boolean } {
  const wraps = state.cursor + 1 >= nAgents;
  const turn = wraps ? state.turn + 1 : state.turn;
  const cursor = wraps ? 0 : state.cursor + 1;
  return { turn, cursor, truncated: !terminated && turn >= maxTurns };
}

/** Which split a task's canonical key belongs to: a fixed hash partition, so splits never meet. */
export function splitOfKey(envId: string, key: string, testFraction: number): Split {
  const u = hash32(`${envId}|split|${key}`) / 4294967296;
  return u < testFraction ? "test" : "train";
}

/**
 * The split a task of `env` is in. A single-agent variant's tasks are its multi-agent env's, so
 * they are partitioned under that env's id (`soloOf`); every other env uses its own id.
 */
export function splitOfTask<T>(
  env: { id: string; soloOf?: string; testFraction: number; taskKey(task: T): string },
  task: T,
): Split {
  return splitOfKey(env.soloOf ?? env.id, env.taskKey(task), env.testFraction);
}

const SPLIT_ATTEMPTS = 2000;

/**
 * Draws candidate tasks from a seed-derived stream until one falls in `split`. `make` may return
 * null to reject a draw (unsolvable, too easy...). Deterministic in (envId, seed, split).
 */
export function generateInSplit<T>(
  env: { id: string; testFraction: number; taskKey(task: T): string },
  seed: number,
  split: Split,
  make: (rng: Rng) => T | null,
): T {
  for (let attempt = 0; attempt < SPLIT_ATTEMPTS; attempt++) {
    const rng = new Rng(hash32(`${env.id}|${split}|${seed}|${attempt}`));
    const task = make(rng);
    if (task === null) continue;
    if (splitOfKey(env.id, env.taskKey(task), env.testFraction) === split) return task;
  }
  throw new SplitExhaustedError(env.id, split, SPLIT_ATTEMPTS);
}

/** Defaults merged with overrides; unknown keys and wrong types fail loudly instead of being ignored. */
export function resolveDifficulty<D extends Difficulty>(
  envId: string,
  defaults: D,
  overrides: Partial<D> | undefined,
): D {
  const out = { ...defaults };
  for (const [k, v] of Object.entries(overrides ?? {})) {
    if (!(k in defaults)) {
      throw new DifficultyError(
        envId,
        `unknown knob "${k}"; knobs: ${Object.keys(defaults).join(", ")}`,
      );
    }
    if (v === undefined) continue;
    if (typeof v !== typeof defaults[k]) {
      throw new DifficultyError(
        envId,
        `knob "${k}" must be a ${typeof defaults[k]}, got ${typeof v}`,
      );
    }
    (out as Difficulty)[k] = v;
  }
  return out;
}

/** Integer knob in [lo, hi], or a DifficultyError naming the range. */
export function intKnob(envId: string, d: Difficulty, key: string, lo: number, hi: number): number {
  const v = d[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) {
    throw new DifficultyError(
      envId,
      `knob "${key}" must be an integer in [${lo}, ${hi}], got ${v}`,
    );
  }
  return v;
}

/** Number knob in [lo, hi]. */
export function numKnob(envId: string, d: Difficulty, key: string, lo: number, hi: number): number {
  const v = d[key];
  if (typeof v !== "number" || !(v >= lo && v <= hi)) {
    throw new DifficultyError(envId, `knob "${key}" must be a number in [${lo}, ${hi}], got ${v}`);
  }
  return v;
}

/** `reset` for generic front ends: a ready task, or a seed to generate one from. */
export function resetFrom<T, S extends EnvState>(
  env: EnvDefinition<T, S, unknown, Difficulty>,
  taskOrSeed: TaskOrSeed<T>,
): S {
  const t = taskOrSeed as { seed?: unknown };
  const isSeedSpec = typeof t === "object" && t !== null && typeof t.seed === "number" &&
    Object.keys(t).every((k) => k === "seed" || k === "split" || k === "difficulty");
  if (!isSeedSpec) return env.reset(taskOrSeed as T);
  const spec = taskOrSeed as { seed: number; split?: Split; difficulty?: Difficulty };
  return env.reset(
    env.generate(spec.seed, { split: spec.split ?? "train", difficulty: spec.difficulty }),
  );
}

/**
 * The whole pipeline for one message: parse, run tool code if the env needs it, step.
 * Invalid text is not an exception: it is stepped as an Invalid, which the env penalises.
 */
export async function act<S extends EnvState>(
  env: AnyEnvDefinition,
  state: S,
  agent: AgentId,
  text: string,
  executor?: CodeExecutor,
): Promise<StepResult<S>> {
  const parsed = env.parseAction(agent, text);
  if (!parsed.ok) return env.step(state, agent, parsed.invalid) as StepResult<S>;
  let action = parsed.action;
  if (env.execute && env.toolAgents.includes(agent)) {
    if (!executor) throw new ExecutorMissingError(env.id, agent);
    action = await env.execute(state, agent, action, executor);
  }
  return env.step(state, agent, action) as StepResult<S>;
}

/** Upper bound on steps of any rollout loop, so a buggy env cannot hang a trainer. */
const MAX_ROLLOUT_STEPS = 10_000;

/**
 * Rolls the env's oracle out from reset(task): the shared implementation of `solve`. Uses the
 * oracle's pre-executed actions, so no executor (and no worker) is needed.
 */
export function oracleRollout<T, S extends EnvState, A>(
  env: EnvDefinition<T, S, A, Difficulty>,
  task: T,
): Solution<S> {
  let state = env.reset(task);
  const transcript: TranscriptEntry[] = [];
  let total = 0;
  for (let i = 0; i < MAX_ROLLOUT_STEPS; i++) {
    const agent = currentAgent(env, state);
    if (agent === null) break;
    const move = env.oracle(state, agent);
    const r = env.step(state, agent, move.action);
    transcript.push({
      turn: state.turn,
      agent,
      text: move.text,
      teamReward: r.teamReward,
      localReward: r.localReward,
    });
    total += r.teamReward + r.localReward;
    state = r.state;
  }
  return { transcript, finalState: state, success: env.success(state), totalReward: total };
}

/** First index of the last occurrence of `marker`, with the text after it; null if absent. */
export function afterMarker(text: string, marker = "####"): string | null {
  const i = text.lastIndexOf(marker);
  return i < 0 ? null : text.slice(i + marker.length);
}

/** Rounds away float noise in reward sums (0.1 + 0.2) so logs and tests see clean numbers. */
export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
