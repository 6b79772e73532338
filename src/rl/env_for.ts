// The environment a config runs: the env named by env.id, or at level L0 its single-agent variant
// (one agent doing the whole task, the paper's "single agent" baseline; env.id stays the team's id).

import { getEnv, soloEnvFor } from "../envs/registry.ts";
import type { AnyEnvDefinition } from "../envs/types.ts";
import type { RunConfig } from "./config.ts";

export function envForConfig(cfg: Pick<RunConfig, "env" | "level">): AnyEnvDefinition {
  return cfg.level === "L0" ? soloEnvFor(cfg.env.id) : getEnv(cfg.env.id);
}
