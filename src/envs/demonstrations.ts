// Oracle demonstrations as SFT records: each env's scripted oracle plays seeded episodes, and every
// agent turn becomes one record — the agent's observation as the prompt, the oracle's message as
// the completion — so `deno task sft` can warm-start a policy before RL. Compact prompts give
// {"prompt","completion"} records (the tiny byte-level presets); chat prompts give {"messages"}
// records (system + user + the assistant reply) for an instruct model's chat template.

import { currentAgent } from "./api.ts";
import { MOVES } from "./grid.ts";
import {
  SEARCH_DRILL_ENV as SEARCH_ENV,
  SEARCH_DRILL_KINDS,
  searchCopyDrill,
  type SearchDrillKind,
} from "./search/drills.ts";
import { hash32, Rng } from "./rng.ts";
import type {
  AgentId,
  AnyEnvDefinition,
  ChatMessage,
  CodeAction,
  Difficulty,
  EnvState,
  PromptStyle,
  Split,
} from "./types.ts";

/** Where a record came from; `deno task sft` ignores it, people filter on it. */
export interface DemoMeta {
  readonly env: string;
  readonly split: Split;
  /** The task seed: env.generate(seed, { split, difficulty }) rebuilds the episode. */
  readonly seed: number;
  readonly turn: number;
  readonly agent: AgentId;
  /** Whether the oracle's episode ended in success (games and Hanabi are not always won). */
  readonly success: boolean;
  /** Search's copy drills only: the drill's kind (agent is "drill"; see search/drills.ts). */
  readonly drill?: SearchDrillKind;
}

export type DemoRecord =
  | { readonly prompt: string; readonly completion: string; readonly meta: DemoMeta }
  | { readonly messages: readonly ChatMessage[]; readonly meta: DemoMeta };

export interface DemoOptions {
  readonly episodes: number;
  readonly split?: Split;
  readonly style?: PromptStyle;
  /** Seed of the first episode; episode i uses seed + i (default 0). */
  readonly seed?: number;
  /** Keep only these agents' turns (default: every agent). */
  readonly agents?: readonly AgentId[];
  /** Overrides of the env's difficulty knobs (match the RL config's env.difficulty). */
  readonly difficulty?: Partial<Difficulty>;
  /**
   * Demonstrate tool turns with a short program that calls the environment's predefined helper
   * (where it has one, see HELPER_TOOL_CODE) instead of the oracle's full algorithm: what a
   * tiny model can learn to write. The printed result, and so the episode, is the same.
   */
  readonly helperTools?: boolean;
  /**
   * Copy drills instead of oracle play (envs in COPY_DRILL_ANSWERS): every tool turn prints a
   * random answer of the form the env's tool prints, and the plan turn's completion copies it
   * after `####`. Only the plan agents' turns are kept. The plan agent's job in these teams is to
   * pass on the tool's answer; a tiny model trained on oracle play alone learns to write answers
   * that look right for the board instead (the tool's answer there is a function of the board),
   * so drills, where only copying predicts the completion, teach the copy itself.
   * For search_v1 (no tool) the drills are short copy records of their own (search/drills.ts):
   * `episodes` of them, copying random letters or names, or finding a name by its [id].
   */
  readonly copyDrills?: boolean;
  /**
   * Exploration (noise injection, as DART): the fraction of non-tool turns, in [0, 1), on which
   * a random move replaces the oracle's: the env's `randomMove` (a random action of the right
   * form, legal or not) or, for a quarter of them and for envs without one, the oracle's
   * message cut short at a random length (usually malformed). Those turns are not recorded; the
   * oracle labels every state after them, so a policy also learns to recover from the misplays,
   * wasted turns and garbled messages it will make itself. Default 0.
   */
  readonly explore?: number;
  /**
   * An unreliable partner: the fraction of episodes, in [0, 1), whose tool turn prints a wrong
   * answer of the right form (NOISY_TOOL_ANSWERS: for move lists, random moves as many as the
   * oracle's, so the length gives nothing away) instead of the oracle's, and that tool turn is not
   * recorded; the plan turn's completion is the oracle's own answer, found without the tool. A
   * plan agent trained so has seen its partner be wrong and cannot always tell when: it takes
   * the tool's answer on some tasks and plans alone on others, so a team that trains together
   * has a partner to learn to trust (envs in NOISY_TOOL_ANSWERS; not with copyDrills). Default 0.
   */
  readonly toolNoise?: number;
  /** search_v1's copy drills only: the kinds to draw (default all three, see SEARCH_DRILL_MIX). */
  readonly drillKinds?: readonly SearchDrillKind[];
}

/** Tool programs that use an environment's predefined helpers, by env id. */
export const HELPER_TOOL_CODE: Readonly<Record<string, string>> = {
  plan_path_v1: 'console.log(bfs(grid, start, goal).join(" "))',
  sokoban_v1: 'console.log(solveSokoban(grid, player, box, goal).join(" "))',
  sudoku4_v1: 'console.log(solveSudoku(grid).map((r) => r.join("")).join(" "))',
};

const randomMoves = (rng: Rng): string =>
  Array.from({ length: 1 + rng.int(10) }, () => rng.pick(MOVES)).join(" ");

/** Random answers in the form each env's tool prints them (see HELPER_TOOL_CODE), by env id. */
export const COPY_DRILL_ANSWERS: Readonly<Record<string, (rng: Rng) => string>> = {
  plan_path_v1: randomMoves,
  sokoban_v1: randomMoves,
  sudoku4_v1: (rng) =>
    Array.from({ length: 4 }, () => Array.from({ length: 4 }, () => 1 + rng.int(4)).join("")).join(
      " ",
    ),
};

const sameLengthRandomMoves = (rng: Rng, oracle: string): string => {
  const n = Math.max(1, oracle.trim().split(/\s+/).filter(Boolean).length);
  return Array.from({ length: n }, () => rng.pick(MOVES)).join(" ");
};

/**
 * Wrong tool answers for DemoOptions.toolNoise, by env id: given the oracle's printed answer, one
 * of the same form and size that (almost always) differs from it.
 */
export const NOISY_TOOL_ANSWERS: Readonly<Record<string, (rng: Rng, oracle: string) => string>> = {
  plan_path_v1: sameLengthRandomMoves,
  sokoban_v1: sameLengthRandomMoves,
  sudoku4_v1: (rng) => COPY_DRILL_ANSWERS.sudoku4_v1(rng),
};

export interface Demonstrations {
  readonly records: DemoRecord[];
  readonly episodes: number;
  /** Turns on which exploration replaced the oracle's move (not recorded). */
  readonly explored: number;
  /** Episodes whose tool printed a wrong answer (DemoOptions.toolNoise; tool turn not recorded). */
  readonly noisyTools: number;
  /** Episodes the oracle won or solved. */
  readonly successes: number;
}

/** Options that cannot produce demonstrations; the message says what to pass instead. */
export class DemoOptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DemoOptionsError";
  }
}

/** Upper bound on turns of one episode, so a buggy env cannot hang the export. */
const MAX_STEPS = 10_000;

/** A random move for exploration: see DemoOptions.explore. */
function exploreMove(env: AnyEnvDefinition, state: EnvState, agent: AgentId, rng: Rng): unknown {
  if (env.randomMove && rng.float() >= 0.25) return env.randomMove(state, agent, rng).action;
  const text = env.oracle(state, agent).text;
  const parsed = env.parseAction(agent, text.slice(0, rng.int(text.length)));
  return parsed.ok ? parsed.action : parsed.invalid;
}

/**
 * DemoOptions.toolNoise: the state after `tool` prints a wrong answer (one that, copied by the plan
 * agent, would not solve the task; a random answer that happens to solve it is drawn again, so
 * the plan agent is never taught to reject a right answer).
 */
function wrongToolAnswer(
  env: AnyEnvDefinition,
  state: EnvState,
  tool: AgentId,
  rng: Rng,
): EnvState {
  const oracle = env.oracle(state, tool).action as CodeAction;
  for (let tries = 0;; tries++) {
    const printed = NOISY_TOOL_ANSWERS[env.id](rng, oracle.execution?.stdout ?? "");
    const code = `console.log(${JSON.stringify(printed)})`;
    const action: CodeAction = {
      kind: "code",
      code,
      execution: { ok: true, stdout: `${printed}\n`, error: null, timedOut: false, ms: 0 },
    };
    const next = env.step(state, tool, action).state;
    const plan = currentAgent(env, next);
    const copy = plan === null ? null : env.parseAction(plan, `#### ${printed}`);
    const solves = plan !== null && copy !== null && copy.ok &&
      env.success(env.step(next, plan, copy.action).state);
    if (!solves) return next;
    if (tries === 100) {
      throw new DemoOptionsError(
        `${env.id}: 100 random tool answers in a row solved the task; toolNoise cannot make this partner wrong`,
      );
    }
  }
}

/** Plays one oracle episode from the task of `seed`, collecting (observation, oracle text) pairs. */
function episode(
  env: AnyEnvDefinition,
  seed: number,
  o: DemoOptions,
  keep: ReadonlySet<AgentId>,
): { records: DemoRecord[]; success: boolean; explored: number; noisy: boolean } {
  const split = o.split ?? "train", style = o.style ?? "compact";
  let state: EnvState = env.reset(env.generate(seed, { split, difficulty: o.difficulty }));
  const turns: {
    agent: AgentId;
    turn: number;
    prompt: ReturnType<AnyEnvDefinition["observe"]>;
    text: string;
  }[] = [];
  const drill = o.copyDrills ? COPY_DRILL_ANSWERS[env.id] : undefined;
  const rng = new Rng(hash32(`${env.id}:copy-drill:${seed}`));
  const explorer = new Rng(hash32(`${env.id}:explore:${seed}`));
  const noiseRng = new Rng(hash32(`${env.id}:tool-noise:${seed}`));
  const noisy = (o.toolNoise ?? 0) > 0 && noiseRng.float() < o.toolNoise!;
  let printed = "", explored = 0;
  for (let i = 0; i < MAX_STEPS; i++) {
    const agent = currentAgent(env, state);
    if (agent === null) break;
    if (o.explore && !env.toolAgents.includes(agent) && explorer.float() < o.explore) {
      state = env.step(state, agent, exploreMove(env, state, agent, explorer)).state;
      explored++;
      continue;
    }
    // Observe before the oracle moves: the prompt is exactly what a policy would see here.
    const prompt = env.observe(state, agent, style);
    let text: string, action: unknown;
    if (drill && env.toolAgents.includes(agent)) {
      printed = drill(rng);
      text = `console.log(${JSON.stringify(printed)})`;
      action = {
        kind: "code",
        code: text,
        execution: { ok: true, stdout: `${printed}\n`, error: null, timedOut: false, ms: 0 },
      } satisfies CodeAction;
    } else if (noisy && env.toolAgents.includes(agent)) {
      // The wrong answer is the partner's noise, not behaviour to imitate: not recorded.
      state = wrongToolAnswer(env, state, agent, noiseRng);
      continue;
    } else if (drill) {
      text = `#### ${printed}`;
      const parsed = env.parseAction(agent, text);
      if (!parsed.ok) {
        throw new DemoOptionsError(
          `${env.id}: the copy drill "${text}" does not parse: ${parsed.invalid.reason}`,
        );
      }
      action = parsed.action;
    } else {
      const move = env.oracle(state, agent);
      text = o.helperTools && env.toolAgents.includes(agent) ? HELPER_TOOL_CODE[env.id] : move.text;
      action = move.action;
    }
    if (keep.has(agent)) turns.push({ agent, turn: state.turn, prompt, text });
    state = env.step(state, agent, action).state;
  }
  const success = env.success(state) as boolean;
  const records = turns.map(({ agent, turn, prompt, text }): DemoRecord => {
    const meta: DemoMeta = { env: env.id, split, seed, turn, agent, success };
    return prompt.style === "compact"
      ? { prompt: prompt.text, completion: text, meta }
      : { messages: [...prompt.messages, { role: "assistant", content: text }], meta };
  });
  return { records, success, explored, noisy };
}

/**
 * Search's copy drills (search/drills.ts): `episodes` records, record i drawn from seed + i, not
 * episodes of the env (there is no tool whose answer to copy: names come from the question and
 * the documents).
 */
function searchDrills(o: DemoOptions, seed0: number): Demonstrations {
  if (o.agents?.length) {
    throw new DemoOptionsError(
      `${SEARCH_ENV}'s copy drills are not agent turns (they drill the copy both agents use); drop agents`,
    );
  }
  if (o.helperTools || o.explore) {
    throw new DemoOptionsError(
      `${SEARCH_ENV}'s copy drills are not oracle play; drop helperTools and explore`,
    );
  }
  if ((o.style ?? "compact") !== "compact") {
    throw new DemoOptionsError(
      `${SEARCH_ENV}'s copy drills are compact prompt/completion records; drop style "chat"`,
    );
  }
  const kinds = o.drillKinds ?? SEARCH_DRILL_KINDS;
  const bad = kinds.filter((k) => !SEARCH_DRILL_KINDS.includes(k));
  if (bad.length || kinds.length === 0) {
    throw new DemoOptionsError(
      `drill kinds must be some of ${SEARCH_DRILL_KINDS.join(", ")}; got ${
        kinds.join(", ") || "none"
      }`,
    );
  }
  const records = Array.from({ length: o.episodes }, (_, i): DemoRecord => {
    const seed = seed0 + i;
    const d = searchCopyDrill(new Rng(hash32(`${SEARCH_ENV}:copy-drill:${seed}`)), kinds);
    const meta: DemoMeta = {
      env: SEARCH_ENV,
      split: o.split ?? "train",
      seed,
      turn: 0,
      agent: "drill",
      success: true,
      drill: d.kind,
    };
    return { prompt: d.prompt, completion: d.completion, meta };
  });
  return { records, episodes: o.episodes, successes: o.episodes, explored: 0, noisyTools: 0 };
}

/** Demonstrations of `episodes` consecutive seeds; every agent turn is one record. */
export function demonstrations(env: AnyEnvDefinition, o: DemoOptions): Demonstrations {
  if (!Number.isInteger(o.episodes) || o.episodes < 1) {
    throw new DemoOptionsError(`episodes must be a whole number ≥ 1, got ${o.episodes}`);
  }
  const seed0 = o.seed ?? 0;
  if (!Number.isInteger(seed0) || seed0 < 0) {
    throw new DemoOptionsError(`seed must be a whole number ≥ 0, got ${seed0}`);
  }
  if (o.helperTools && !HELPER_TOOL_CODE[env.id]) {
    throw new DemoOptionsError(
      `${env.id} has no helper-based tool program; helper tools exist for ${
        Object.keys(HELPER_TOOL_CODE).join(", ")
      }`,
    );
  }
  const unknown = (o.agents ?? []).filter((a) => !env.possibleAgents.includes(a));
  if (unknown.length) {
    throw new DemoOptionsError(
      `${env.id} has no agent ${unknown.map((a) => `"${a}"`).join(", ")}; its agents: ${
        env.possibleAgents.join(", ")
      }`,
    );
  }
  if (o.copyDrills && env.id === SEARCH_ENV) return searchDrills(o, seed0);
  if (o.drillKinds) {
    throw new DemoOptionsError(
      `drill kinds choose among ${SEARCH_ENV}'s copy drills; pass them with copyDrills for ${SEARCH_ENV} only`,
    );
  }
  if (o.copyDrills) {
    if (!COPY_DRILL_ANSWERS[env.id]) {
      throw new DemoOptionsError(
        `${env.id} has no copy drills; they exist for ${
          [...Object.keys(COPY_DRILL_ANSWERS), SEARCH_ENV].join(", ")
        }`,
      );
    }
    const tools = (o.agents ?? []).filter((a) => env.toolAgents.includes(a));
    if (tools.length) {
      throw new DemoOptionsError(
        `copy drills keep only plan turns (their tool turns print random answers); drop ${
          tools.join(", ")
        } from agents`,
      );
    }
    if (o.helperTools) {
      throw new DemoOptionsError(
        "copy drills replace the tool turns; pass either copyDrills or helperTools, not both",
      );
    }
    if (o.explore) {
      throw new DemoOptionsError(
        "copy drills are not oracle play; pass either copyDrills or explore, not both",
      );
    }
  }
  const toolNoise = o.toolNoise ?? 0;
  if (!(toolNoise >= 0 && toolNoise < 1)) {
    throw new DemoOptionsError(
      `toolNoise is the fraction of episodes whose tool prints a wrong answer, in [0, 1); got ${o.toolNoise}`,
    );
  }
  if (toolNoise > 0 && !NOISY_TOOL_ANSWERS[env.id]) {
    throw new DemoOptionsError(
      `${env.id} has no noisy tool answers; toolNoise exists for ${
        Object.keys(NOISY_TOOL_ANSWERS).join(", ")
      }`,
    );
  }
  if (toolNoise > 0 && o.copyDrills) {
    throw new DemoOptionsError(
      "copy drills already print random tool answers; pass either copyDrills or toolNoise, not both",
    );
  }
  const explore = o.explore ?? 0;
  if (!(explore >= 0 && explore < 1)) {
    throw new DemoOptionsError(
      `explore is the fraction of turns played at random, in [0, 1); got ${o.explore}`,
    );
  }
  const defaultAgents = o.copyDrills
    ? env.possibleAgents.filter((a) => !env.toolAgents.includes(a))
    : env.possibleAgents;
  const keep = new Set(o.agents?.length ? o.agents : defaultAgents);
  const records: DemoRecord[] = [];
  let successes = 0, explored = 0, noisyTools = 0;
  for (let i = 0; i < o.episodes; i++) {
    const ep = episode(env, seed0 + i, o, keep);
    records.push(...ep.records);
    if (ep.success) successes++;
    explored += ep.explored;
    if (ep.noisy) noisyTools++;
  }
  return { records, episodes: o.episodes, successes, explored, noisyTools };
}

/** JSONL text: one record per line. */
export function demoJsonl(records: readonly DemoRecord[]): string {
  return records.map((r) => JSON.stringify(r) + "\n").join("");
}
