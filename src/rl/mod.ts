// The RL layer's front door (browser-safe apart from loadConfigFile): the AT-GRPO run config,
// the advantage math and the specialization-level policy map.

export * from "./advantages.ts";
export * from "./config.ts";
export * from "./policy_map.ts";
