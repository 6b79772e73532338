// The end-to-end claim of the trainer, small enough for CI: AT-GRPO from the shipped warm start
// (models/plan_path_warm) on one-turn 5×5 Plan-Path, as configs/quickstart.json but half as long,
// raises held-out success by at least a quarter of the tasks. The warm start's plan agent learned
// with a partner that was wrong in half its episodes, so it takes the tool's path on only some
// tasks; six seeded steps of 8 envs × 4 candidates rolled out at temperature 0.35 (~1 min on 2 CPU
// cores) teach its LoRA adapter to take it (measured on llvmpipe: 53.1% → 84.4%; the quickstart
// itself goes 48.4% → 92.2% at step 6 → 100% at step 12 on 64 tasks). Both agents' held-out
// rewards rise: the tool's includes the team reward its proposal leads to. Everything is seeded,
// so the run is reproducible on this adapter.

import { assert } from "../assert.ts";
import { loadConfigFile } from "../../src/rl/config.ts";
import { train } from "../../src/rl/train.ts";

Deno.test("AT-GRPO from the warm start raises held-out success (Plan-Path, L2)", async () => {
  const outDir = await Deno.makeTempDir();
  try {
    const cfg = await loadConfigFile("configs/quickstart.json", [
      "run.steps=6",
      "eval.everySteps=6",
      "eval.episodes=32",
      "run.checkpointEvery=0",
      "run.saveRollouts=false",
      `run.outDir=${outDir}`,
    ]);
    const s = await train(cfg, { log: () => {} });
    const before = s.before!.successRate, after = s.after!.successRate;
    console.log(
      `held-out success ${(before * 100).toFixed(1)}% -> ${(after * 100).toFixed(1)}% (32 tasks)`,
    );
    assert(
      after - before >= 8 / 32,
      `held-out success did not rise clearly: ${before} -> ${after}`,
    );
    assert(
      s.after!.rewardByAgent.plan > s.before!.rewardByAgent.plan,
      "the plan agent's reward did not improve",
    );
    assert(
      s.after!.rewardByAgent.tool > s.before!.rewardByAgent.tool,
      "the tool agent's reward did not improve",
    );
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});
