// Each specialization level trains exactly the right parameters, in a real RL step from a
// Plan-Path warm start. With seed 1 and one env, the tool agent's K candidates tie (every
// advantage 0: its helper call is right either way) and the plan agent's differ (L0: the single
// agent, from the warm start also taught the single-agent variant, on two envs), so:
//   L0: the single policy's adapter moves; L1: the one shared adapter moves (plan's samples);
//   L2: plan's adapter moves, tool's does not, the base stays frozen bit for bit;
//   L3: plan's full model moves, tool's does not.

import { assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { type Level, parseConfig } from "../../src/rl/config.ts";
import { RlSession } from "../../src/rl/session.ts";
import { loadBase } from "../../src/rl/train.ts";

const tool = {
  run: () => Promise.resolve({ ok: true, stdout: "R\n", error: null, timedOut: false, ms: 0 }),
};

const cfgFor = (level: Level) =>
  parseConfig({
    // L0 from the warm start that was also taught the single agent (plan_path_tiny was not).
    model: {
      preset: null,
      folder: level === "L0" ? "models/plan_path_warm" : "models/plan_path_tiny",
    },
    env: {
      id: "plan_path_v1",
      difficulty: { size: level === "L0" ? 5 : 4, wallDensity: 0.1, maxTurns: 1 },
    },
    level,
    rollout: {
      mode: level === "L0" ? "single-agent" : "tree",
      k: 2,
      envsPerStep: level === "L0" ? 2 : 1,
      maxTurns: 1,
      maxPromptTokens: 192,
      maxNewTokens: level === "L0" ? 48 : 12,
    },
    update: {
      mode: level === "L3" ? "full" : "lora",
      miniBatchSize: 8,
      chunkRows: 256,
      lora: { rank: 4, alpha: 8 },
      // No weight decay: AdamW decays every parameter it steps, gradient or not (as torch does), so
      // with decay on an adapter whose samples all have advantage 0 moves too.
      optimizer: { lr: 0.02, weightDecay: 0 },
      schedule: { kind: "constant", warmupSteps: 0 },
    },
    // The tool's own reward only: with the lookahead credit its candidates' team rewards would
    // follow the plan agent's samples, and the tie this test rests on would not hold.
    rewards: { toolCredit: "none" },
    eval: { everySteps: 100, episodes: 2, beforeTraining: false },
    run: { steps: 1, seed: 1 },
  });

/** Every trainable or frozen tensor of the session, by name: adapters, full models and each trainer's base. */
async function snapshot(s: RlSession): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  const ck = await s.checkpointContents();
  for (const [name, a] of Object.entries(ck.adapters ?? {})) {
    out.set(
      `adapter ${name}`,
      Float32Array.from(a.adapter.modules.flatMap((m) => [...m.a, ...m.b])),
    );
  }
  for (const [name, m] of Object.entries(ck.models ?? {})) out.set(`model ${name}`, m.weights.data);
  for (const [i, t] of s.policies.trainers.entries()) {
    if (t.lora) out.set(`base of trainer ${i}`, (await t.readWeights()).data);
  }
  return out;
}

const same = (a: Float32Array, b: Float32Array) =>
  a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

Deno.test("each level trains exactly its agents' parameters", async (t) => {
  const gpu = await Gpu.create();
  try {
    const want: Record<Level, Record<string, boolean>> = {
      L0: { "adapter single.single": true, "base of trainer 0": false },
      L1: { "adapter shared.shared": true, "base of trainer 0": false },
      L2: { "adapter base.tool": false, "adapter base.plan": true, "base of trainer 0": false },
      L3: { "model tool": false, "model plan": true },
    };
    for (const level of ["L0", "L1", "L2", "L3"] as Level[]) {
      await t.step(level, async () => {
        const cfg = cfgFor(level);
        const warm = await loadBase(cfg);
        const s = await RlSession.create(cfg, {
          gpu,
          weights: warm.weights,
          tokenizer: warm.tokenizer,
          executor: tool,
        });
        try {
          const before = await snapshot(s);
          const { stats } = await s.trainStep();
          const signal: Record<string, boolean> = {};
          for (const g of stats) {
            g.members.forEach((m, i) =>
              signal[m.agent] = (signal[m.agent] ?? false) || g.advantages[i] !== 0
            );
          }
          // The setting the expectations rest on (see the top of the file).
          assertEquals(signal, level === "L0" ? { plan: true } : { tool: false, plan: true });
          const after = await snapshot(s);
          assertEquals([...after.keys()].sort(), Object.keys(want[level]).sort());
          for (const [name, moves] of Object.entries(want[level])) {
            assertEquals(
              !same(before.get(name)!, after.get(name)!),
              moves,
              `${level}: ${name} ${moves ? "did not move" : "moved"}`,
            );
          }
        } finally {
          s.destroy();
        }
      });
    }
  } finally {
    gpu.destroy();
  }
});
