// The list of environments, by versioned id. Each env module exports its definition; add one
// import and one entry below to register a new env (the conformance test then covers it).
//
// Single-agent (level L0) variants, `<base>_solo_v1`, are registered beside the multi-agent envs
// they do alone (their `soloOf`); `soloEnvFor` maps either id to the variant. A team env may have
// more than one, one per role that can work alone (the tool → plan games' `<base>_tool_solo_v1`:
// the tool agent alone); the first registered is the default, the others are chosen by role.

import { code } from "./code/env.ts";
import { codeSolo } from "./code/solo.ts";
import { DuplicateEnvError, NoSoloVariantError, UnknownEnvError } from "./errors.ts";
import { hanabi } from "./hanabi/env.ts";
import { math } from "./math/env.ts";
import { mathSolo } from "./math/solo.ts";
import { planPath, planPathSolo, planPathToolSolo } from "./plan_path/env.ts";
import { search } from "./search/env.ts";
import { searchSolo } from "./search/solo.ts";
import { sokoban, sokobanSolo, sokobanToolSolo } from "./sokoban/env.ts";
import { sudoku4, sudoku4Solo, sudoku4ToolSolo } from "./sudoku4/env.ts";
import { ticTacToe } from "./tic_tac_toe/env.ts";
import { ticTacToeSolo } from "./tic_tac_toe/solo.ts";
import type { AnyEnvDefinition } from "./types.ts";

export const ENVS: readonly AnyEnvDefinition[] = [
  ticTacToe,
  hanabi,
  planPath,
  sokoban,
  sudoku4,
  search,
  math,
  code,
  // Single-agent (L0) variants.
  ticTacToeSolo,
  planPathSolo,
  sokobanSolo,
  sudoku4Solo,
  mathSolo,
  codeSolo,
  searchSolo,
  // The other role alone, for the paper's "each agent trained alone" ablation.
  planPathToolSolo,
  sokobanToolSolo,
  sudoku4ToolSolo,
];

/** Why these multi-agent envs have no single-agent variant. */
const NO_SOLO: Readonly<Record<string, string>> = {
  hanabi_v1:
    "Hanabi is cooperative play with hidden information: each player sees only its partner's " +
    "cards, so the game needs two players (one agent holding both seats would see every card)",
};

const BY_ID = new Map<string, AnyEnvDefinition>();
for (const env of ENVS) {
  if (BY_ID.has(env.id)) throw new DuplicateEnvError(env.id);
  BY_ID.set(env.id, env);
}

/** Multi-agent id → its single-agent variants, the default first. */
const SOLO = new Map<string, AnyEnvDefinition[]>();
for (const env of ENVS) {
  if (env.soloOf === undefined) continue;
  (SOLO.get(env.soloOf) ?? SOLO.set(env.soloOf, []).get(env.soloOf)!).push(env);
}

export function envIds(): string[] {
  return [...BY_ID.keys()];
}

export function getEnv(id: string): AnyEnvDefinition {
  const env = BY_ID.get(id);
  if (!env) throw new UnknownEnvError(id, envIds());
  return env;
}

/**
 * The single-agent (level L0) variant of a multi-agent env id (plan_path_v1 →
 * plan_path_solo_v1), or the variant itself when given its id. `agent` picks the variant in which
 * that role works alone (plan_path_v1, "tool" → plan_path_tool_solo_v1); without it, the default.
 * Throws NoSoloVariantError for envs that have none (hanabi_v1; the message says why)
 * or no variant for that role, and UnknownEnvError for ids not registered.
 */
export function soloEnvFor(id: string, agent?: string): AnyEnvDefinition {
  const env = getEnv(id);
  if (env.soloOf !== undefined) {
    if (agent === undefined || env.possibleAgents[0] === agent) return env;
    return soloEnvFor(env.soloOf, agent);
  }
  const variants = SOLO.get(id);
  if (!variants) {
    throw new NoSoloVariantError(id, NO_SOLO[id] ?? "none has been written yet", [...SOLO.keys()]);
  }
  if (agent === undefined) return variants[0];
  const v = variants.find((e) => e.possibleAgents[0] === agent);
  if (v) return v;
  throw new NoSoloVariantError(
    id,
    `no role "${agent}" works alone in it; roles with a variant: ${
      variants.map((e) => e.possibleAgents[0]).join(", ")
    }`,
    [...SOLO.keys()],
  );
}

/** The roles of a multi-agent env that have a single-agent variant, the default's first. */
export function soloAgentsOf(id: string): string[] {
  return (SOLO.get(id) ?? []).map((e) => e.possibleAgents[0]);
}
