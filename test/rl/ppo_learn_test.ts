// PPO with a critic learns a small two-turn environment, seeded, in ~15 s on llvmpipe (2 cores):
// each episode an agent writes one token at turn 1 and one at turn 2, and only the end of turn 2
// is rewarded: one point per even token id of the two. Turn 1 gets its credit only through the
// GAE chain (its last token bootstraps from the value of turn 2's first token): measured, the
// reward goes 1.02 → 1.66 of 2 and turn 1's even rate 0.54 → 0.80; with every turn its own chain
// (the chaining broken) only 1.06 → 1.27 and 0.50 → 0.67, which fails the thresholds. The critic's
// value loss falls and its mean value follows the mean return up from 0. The same code as an RL step of
// update.advantage "gae" (critic.ts: values, GAE, whitening; the trainer's value head and policy
// loss), driven here without an env registry so it stays small.

import { assert } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { Generator } from "../../src/model/generate.ts";
import { initModel } from "../../src/model/init.ts";
import { type CriticItem, gaeSequences } from "../../src/rl/critic.ts";
import { ModelTrainer, type TrainSequence } from "../../src/train/trainer.ts";

const E = 32, STEPS = 10;
const P1 = [116, 49, 58], P2 = [116, 50, 58]; // "t1:", "t2:"
const even = (id: number) => (id % 2 === 0 ? 1 : 0);

function sequence(prompt: number[], id: number, logp: number): TrainSequence {
  return {
    tokens: [...prompt, id],
    weights: [...prompt.slice(1).map(() => 0), 1],
    oldLogp: [...prompt.slice(1).map(() => 0), logp],
  };
}

Deno.test("PPO + GAE learns a two-turn game whose reward comes at the end (credit through the chain)", async () => {
  const gpu = await Gpu.create();
  const cfg = parseModelConfig(
    JSON.parse(await Deno.readTextFile("configs/models/tiny-llama.json")),
  );
  const trainer = await ModelTrainer.create(gpu, initModel(cfg, { seed: 5 }), {
    mode: "full",
    seed: 5,
    optimizer: { weightDecay: 0 },
    schedule: { kind: "constant", lr: 1e-2 },
    loss: { kind: "policy" },
    chunkRows: 2 * E * 5,
    slots: 2 * E,
    maxLen: 8,
    valueHead: { coef: 0.5, clip: 10, lrScale: 3 },
  });
  const gen = await Generator.create(trainer.model);
  const log: {
    reward: number;
    turn1: number;
    valueLoss: number;
    ev: number | null;
    valueError: number;
  }[] = [];
  try {
    for (let step = 0; step < STEPS; step++) {
      const sample = (prompt: (e: number) => number[], turn: number) =>
        gen.generate(Array.from({ length: E }, (_, e) => ({
          prompt: prompt(e),
          maxNewTokens: 1,
          stopIds: [],
          sequence: (step * 2 + turn) * E + e,
          sampling: { temperature: 1, topP: 1, topK: 0, seed: 9 },
        })));
      const r1 = await sample(() => P1, 0);
      // Turn 2's prompt shows the first token (the episode so far), so the critic can tell its worth.
      const p2 = (e: number) => [...P2, r1[e].ids[0]];
      const r2 = await sample(p2, 1);
      const items: CriticItem[] = [];
      for (let e = 0; e < E; e++) {
        const [a, b] = [r1[e].ids[0], r2[e].ids[0]];
        items.push({ seq: sequence(P1, a, r1[e].logprobs[0]), chain: `${e}`, reward: 0 });
        items.push({
          seq: sequence(p2(e), b, r2[e].logprobs[0]),
          chain: `${e}`,
          reward: even(a) + even(b),
        });
      }
      const { seqs, stats } = await gaeSequences(trainer, items, {
        gamma: 1,
        lambda: 0.95,
        whiten: true,
      });
      const m = await trainer.step(seqs);
      log.push({
        reward: items.reduce((s, x) => s + x.reward, 0) / E,
        turn1: r1.reduce((s, r) => s + even(r.ids[0]), 0) / E,
        valueLoss: m.value!.valueLoss,
        ev: stats.explainedVariance,
        valueError: Math.abs(stats.valueMean - stats.returnMean),
      });
    }
  } finally {
    trainer.destroy();
    gpu.destroy();
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = log.slice(0, 3), last = log.slice(-3);
  const f = (
    k: "reward" | "turn1" | "valueLoss" | "valueError",
  ) => [avg(first.map((x) => x[k])), avg(last.map((x) => x[k]))];
  const [r0, r1] = f("reward"),
    [t0, t1] = f("turn1"),
    [v0, v1] = f("valueLoss"),
    [d0, d1] = f("valueError");
  const [e0, e1] = [avg(first.map((x) => x.ev ?? 0)), avg(last.map((x) => x.ev ?? 0))];
  console.log(
    `reward ${r0.toFixed(2)} -> ${r1.toFixed(2)} (of 2), turn-1 even rate ${t0.toFixed(2)} -> ${
      t1.toFixed(2)
    }, ` +
      `value loss ${v0.toFixed(4)} -> ${v1.toFixed(4)}, |mean V − mean R| ${d0.toFixed(3)} -> ${
        d1.toFixed(3)
      }, explained variance ${e0.toFixed(2)} -> ${
        e1.toFixed(2)
      } (first / last 3 of ${STEPS} steps)`,
  );
  assert(r1 - r0 >= 0.5, `reward did not rise clearly: ${r0} -> ${r1}`);
  assert(
    t1 - t0 >= 0.2,
    `turn 1, rewarded only through the chain, did not improve: ${t0} -> ${t1}`,
  );
  assert(v1 < 0.5 * v0, `the value loss did not fall: ${v0} -> ${v1}`);
  // The critic learns the mean return as the policy improves (starting from V = 0). Its explained
  // variance stays near 0 in these few steps: what a state is worth here is the parity of one
  // token, which a linear head on a tiny random trunk does not separate that fast (logged above).
  assert(d1 < 0.5 * d0, `the critic's mean value did not follow the mean return: ${d0} -> ${d1}`);
});
