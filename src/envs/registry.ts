// The list of environments, by versioned id. Each env module exports its definition; add one
// import and one entry below to register a new env (the conformance test then covers it).
//
// Single-agent (level L0) variants, `<base>_solo_v1`, are registered beside the multi-agent envs
// they do alone (their `soloOf`); `soloEnvFor` maps either id to the variant.

import { code } from "./code/env.ts";
import { codeSolo } from "./code/solo.ts";
import { DuplicateEnvError, NoSoloVariantError, UnknownEnvError } from "./errors.ts";
import { hanabi } from "./hanabi/env.ts";
import { math } from "./math/env.ts";
import { mathSolo } from "./math/solo.ts";
import { planPath, planPathSolo } from "./plan_path/env.ts";
import { search } from "./search/env.ts";
import { sokoban, sokobanSolo } from "./sokoban/env.ts";
import { sudoku4, sudoku4Solo } from "./sudoku4/env.ts";
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
];

/** Why these multi-agent envs have no single-agent variant. */
const NO_SOLO: Readonly<Record<string, string>> = {
  hanabi_v1:
    "Hanabi is cooperative play with hidden information: each player sees only its partner's " +
    "cards, so the game needs two players (one agent holding both seats would see every card)",
  search_v1:
    "the answer is in documents that only the search agent's tool (BM25 over the corpus) can " +
    "retrieve; a reasoner alone never sees them",
};

const BY_ID = new Map<string, AnyEnvDefinition>();
for (const env of ENVS) {
  if (BY_ID.has(env.id)) throw new DuplicateEnvError(env.id);
  BY_ID.set(env.id, env);
}

/** Multi-agent id → its single-agent variant. */
const SOLO = new Map<string, AnyEnvDefinition>();
for (const env of ENVS) if (env.soloOf !== undefined) SOLO.set(env.soloOf, env);

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
 * plan_path_solo_v1), or the variant itself when given its id. Throws NoSoloVariantError for
 * envs that have none (hanabi_v1, search_v1; the message says why) and UnknownEnvError for ids
 * not registered.
 */
export function soloEnvFor(id: string): AnyEnvDefinition {
  const env = getEnv(id);
  if (env.soloOf !== undefined) return env;
  const solo = SOLO.get(id);
  if (solo) return solo;
  throw new NoSoloVariantError(
    id,
    NO_SOLO[id] ?? "none has been written yet",
    [...SOLO.keys()],
  );
}
