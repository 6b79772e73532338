// Oracle demonstrations as SFT records: each env's scripted oracle plays seeded episodes, and every
// agent turn becomes one record — the agent's observation as the prompt, the oracle's message as
// the completion — so `deno task sft` can warm-start a policy before RL. Compact prompts give
// {"prompt","completion"} records (the tiny byte-level presets); chat prompts give {"messages"}
// records (system + user + the assistant reply) for an instruct model's chat template.

import { currentAgent } from "./api.ts";
import type { AgentId, AnyEnvDefinition, ChatMessage, Difficulty, EnvState, PromptStyle, Split } from "./types.ts";

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
}

/** Tool programs that use an environment's predefined helpers, by env id. */
export const HELPER_TOOL_CODE: Readonly<Record<string, string>> = {
  plan_path_v1: 'console.log(bfs(grid, start, goal).join(" "))',
  sokoban_v1: 'console.log(solveSokoban(grid, player, box, goal).join(" "))',
  sudoku4_v1: 'console.log(solveSudoku(grid).map((r) => r.join("")).join(" "))',
};

export interface Demonstrations {
  readonly records: DemoRecord[];
  readonly episodes: number;
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

/** Plays one oracle episode from the task of `seed`, collecting (observation, oracle text) pairs. */
function episode(env: AnyEnvDefinition, seed: number, o: DemoOptions, keep: ReadonlySet<AgentId>): { records: DemoRecord[]; success: boolean } {
  const split = o.split ?? "train", style = o.style ?? "compact";
  let state: EnvState = env.reset(env.generate(seed, { split, difficulty: o.difficulty }));
  const turns: { agent: AgentId; turn: number; prompt: ReturnType<AnyEnvDefinition["observe"]>; text: string }[] = [];
  for (let i = 0; i < MAX_STEPS; i++) {
    const agent = currentAgent(env, state);
    if (agent === null) break;
    // Observe before the oracle moves: the prompt is exactly what a policy would see here.
    const prompt = env.observe(state, agent, style);
    const move = env.oracle(state, agent);
    const helper = o.helperTools && env.toolAgents.includes(agent) ? HELPER_TOOL_CODE[env.id] : undefined;
    if (keep.has(agent)) turns.push({ agent, turn: state.turn, prompt, text: helper ?? move.text });
    state = env.step(state, agent, move.action).state;
  }
  const success = env.success(state) as boolean;
  const records = turns.map(({ agent, turn, prompt, text }): DemoRecord => {
    const meta: DemoMeta = { env: env.id, split, seed, turn, agent, success };
    return prompt.style === "compact"
      ? { prompt: prompt.text, completion: text, meta }
      : { messages: [...prompt.messages, { role: "assistant", content: text }], meta };
  });
  return { records, success };
}

/** Demonstrations of `episodes` consecutive seeds; every agent turn is one record. */
export function demonstrations(env: AnyEnvDefinition, o: DemoOptions): Demonstrations {
  if (!Number.isInteger(o.episodes) || o.episodes < 1) {
    throw new DemoOptionsError(`episodes must be a whole number ≥ 1, got ${o.episodes}`);
  }
  const seed0 = o.seed ?? 0;
  if (!Number.isInteger(seed0) || seed0 < 0) throw new DemoOptionsError(`seed must be a whole number ≥ 0, got ${seed0}`);
  if (o.helperTools && !HELPER_TOOL_CODE[env.id]) {
    throw new DemoOptionsError(`${env.id} has no helper-based tool program; helper tools exist for ${Object.keys(HELPER_TOOL_CODE).join(", ")}`);
  }
  const unknown = (o.agents ?? []).filter((a) => !env.possibleAgents.includes(a));
  if (unknown.length) {
    throw new DemoOptionsError(`${env.id} has no agent ${unknown.map((a) => `"${a}"`).join(", ")}; its agents: ${env.possibleAgents.join(", ")}`);
  }
  const keep = new Set(o.agents?.length ? o.agents : env.possibleAgents);
  const records: DemoRecord[] = [];
  let successes = 0;
  for (let i = 0; i < o.episodes; i++) {
    const ep = episode(env, seed0 + i, o, keep);
    records.push(...ep.records);
    if (ep.success) successes++;
  }
  return { records, episodes: o.episodes, successes };
}

/** JSONL text: one record per line. */
export function demoJsonl(records: readonly DemoRecord[]): string {
  return records.map((r) => JSON.stringify(r) + "\n").join("");
}
