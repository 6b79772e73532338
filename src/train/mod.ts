// The training engine's front door (browser-safe): optimizer, LR schedules, loss heads, PEFT and
// checkpoint encoding. Deno's atomic checkpoint folders live in checkpoint_dir.ts (disk only).

export * from "./adamw.ts";
export * from "./checkpoint.ts";
export * from "./errors.ts";
export * from "./loss_rows.ts";
export * from "./losses.ts";
export * from "./peft.ts";
export * from "./schedule.ts";
