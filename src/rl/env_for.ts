// The environment a config runs: the env named by env.id, or at level L0 its single-agent variant
// (one agent doing the whole task, the paper's "single agent" baseline; env.id stays the team's id;
// env.soloAgent picks which role works alone where several can),
// with the config's reward knobs applied.

import { getEnv, soloEnvFor } from "../envs/registry.ts";
import type { AnyEnvDefinition } from "../envs/types.ts";
import type { RunConfig } from "./config.ts";

export function envForConfig(cfg: Pick<RunConfig, "env" | "level" | "rewards">): AnyEnvDefinition {
  const env = cfg.level === "L0"
    ? soloEnvFor(cfg.env.id, cfg.env.soloAgent ?? undefined)
    : getEnv(cfg.env.id);
  // Reward knobs (rewards.shaping, rewards.success) where the env has them; parseConfig resolved
  // a null shaping to the env's success-dominant weight.
  const k = env.rewardKnobs;
  if (!k) return env;
  return k.withRewards({
    shaping: cfg.rewards.shaping ?? k.defaultShaping,
    success: cfg.rewards.success,
  });
}
