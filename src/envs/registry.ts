// The list of environments, by versioned id. Each env module exports its definition; add one
// import and one entry below to register a new env (the conformance test then covers it).

import { code } from "./code/env.ts";
import { DuplicateEnvError, UnknownEnvError } from "./errors.ts";
import { hanabi } from "./hanabi/env.ts";
import { math } from "./math/env.ts";
import { planPath } from "./plan_path/env.ts";
import { search } from "./search/env.ts";
import { sokoban } from "./sokoban/env.ts";
import { sudoku4 } from "./sudoku4/env.ts";
import { ticTacToe } from "./tic_tac_toe/env.ts";
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
];

const BY_ID = new Map<string, AnyEnvDefinition>();
for (const env of ENVS) {
  if (BY_ID.has(env.id)) throw new DuplicateEnvError(env.id);
  BY_ID.set(env.id, env);
}

export function envIds(): string[] {
  return [...BY_ID.keys()];
}

export function getEnv(id: string): AnyEnvDefinition {
  const env = BY_ID.get(id);
  if (!env) throw new UnknownEnvError(id, envIds());
  return env;
}
