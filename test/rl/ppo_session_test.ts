// PPO with a critic inside an RL session (update.advantage "gae", tic-tac-toe self-play at L1):
// a step trains the value head beside the policy and reports the value loss and the critic's
// explained variance; checkpoints hold the value head and its optimizer, and a resume continues
// bit-identically; a GRPO checkpoint cannot resume a GAE run; the config's rules name the field.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { configWarnings, parseConfig } from "../../src/rl/config.ts";
import { RlSession } from "../../src/rl/session.ts";
import {
  type CheckpointContents,
  checkpointFiles,
  readCheckpoint,
} from "../../src/train/checkpoint.ts";

const modelCfg = parseModelConfig(
  JSON.parse(await Deno.readTextFile("configs/models/tiny-llama.json")),
);

const cfgFor = (advantage: "gae" | "grpo") =>
  parseConfig({
    model: { preset: "tiny-llama" },
    env: { id: "tic_tac_toe_v1" },
    level: "L1",
    rollout: {
      mode: "independent",
      k: 2,
      envsPerStep: 2,
      maxTurns: 2,
      maxPromptTokens: 40,
      maxNewTokens: 6,
    },
    update: {
      mode: "lora",
      advantage,
      miniBatchSize: 4,
      chunkRows: 64,
      lora: { rank: 4, alpha: 8 },
      optimizer: { lr: 0.01 },
      schedule: { kind: "constant", warmupSteps: 0 },
      value: { lr: 0.01 },
    },
    eval: { everySteps: 100, episodes: 2, beforeTraining: false },
    run: { steps: 3, seed: 2 },
  });

const roundTrip = async (c: CheckpointContents) =>
  await readCheckpoint(memoryFolder(await checkpointFiles(c)), { base: modelCfg });
const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

Deno.test("PPO + GAE in an RL session", async (t) => {
  const gpu = await Gpu.create();
  const weights = initModel(modelCfg, { seed: 1 });
  const tokenizer = new ByteTokenizer();
  try {
    await t.step(
      "a step trains the value head; checkpoints hold it; a resume continues bit-identically",
      async () => {
        const a = await RlSession.create(cfgFor("gae"), { gpu, weights, tokenizer });
        let atStep1: CheckpointContents, afterA: CheckpointContents;
        try {
          const { metrics } = await a.trainStep();
          const critic =
            (metrics.critic as Record<string, { tokens: number; valueMean: number }>).shared;
          assert(
            critic.tokens > 0 && Number.isFinite(critic.valueMean),
            `critic stats: ${JSON.stringify(critic)}`,
          );
          const ups = metrics.updates as { valueLoss: number; valueGradNorm: number }[];
          assert(
            ups.length > 0 &&
              ups.every((u) =>
                Number.isFinite(u.valueLoss) && u.valueLoss > 0 && u.valueGradNorm > 0
              ),
            JSON.stringify(ups),
          );
          atStep1 = await a.checkpointContents();
          assertEquals(Object.keys(atStep1.valueHeads ?? {}), ["shared"]);
          assert(
            atStep1.valueHeads!.shared.some((x) => x !== 0),
            "the value head did not move from its zero init",
          );
          assert(
            atStep1.optimizers!["shared.value_head"].moments[0].v.some((x) => x > 0),
            "no value head moments",
          );
          await a.trainStep();
          afterA = await a.checkpointContents();
        } finally {
          a.destroy();
        }
        const b = await RlSession.create(cfgFor("gae"), {
          gpu,
          weights,
          tokenizer,
          resume: await roundTrip(atStep1),
        });
        let afterB: CheckpointContents;
        try {
          assertEquals(b.step, 1);
          await b.trainStep();
          afterB = await b.checkpointContents();
        } finally {
          b.destroy();
        }
        assertEquals(
          bits(afterB.valueHeads!.shared),
          bits(afterA.valueHeads!.shared),
          "value head after resume",
        );
        assert(
          bits(afterA.valueHeads!.shared).join() !== bits(atStep1.valueHeads!.shared).join(),
          "step 2 did not move the value head: the comparison is vacuous",
        );
        for (const name of ["shared", "shared.value_head"]) {
          const [x, y] = [afterA.optimizers![name], afterB.optimizers![name]];
          assertEquals(y.step, x.step);
          x.moments.forEach((mv, i) =>
            assertEquals(bits(y.moments[i].m), bits(mv.m), `${name} m.${i}`)
          );
        }
        const [la, lb] = [
          afterA.adapters!["shared.shared"].adapter,
          afterB.adapters!["shared.shared"].adapter,
        ];
        la.modules.forEach((m, i) =>
          assertEquals(bits(lb.modules[i].b), bits(m.b), `adapter module ${i}`)
        );
      },
    );

    await t.step("a GRPO run's checkpoint cannot resume a GAE run", async () => {
      const g = await RlSession.create(cfgFor("grpo"), { gpu, weights, tokenizer });
      const ck = await roundTrip(await g.checkpointContents());
      g.destroy();
      assertEquals(Object.keys(ck.valueHeads), []);
      await assertRejects(
        () => RlSession.create(cfgFor("gae"), { gpu, weights, tokenizer, resume: ck }),
        "CheckpointMismatchError",
        "no value head",
      );
    });
  } finally {
    gpu.destroy();
  }
});

Deno.test("update.advantage gae: validated against the rollout mode", () => {
  const err = assertThrows(
    () => parseConfig({ update: { advantage: "gae" } }),
    "ConfigError",
    "update.advantage",
  );
  assert(err.message.includes("independent"), err.message);
  // Whole trajectories need no group spread: one trajectory per task is fine under GAE.
  assertEquals(
    parseConfig({ rollout: { mode: "independent", k: 1 }, update: { advantage: "gae" } }).rollout.k,
    1,
  );
  assertThrows(
    () => parseConfig({ rollout: { mode: "independent", k: 1 } }),
    "ConfigError",
    "rollout.k",
  );
  assertThrows(
    () => parseConfig({ update: { advantage: "ppo" } }),
    "ConfigError",
    "update.advantage",
  );
  const warned = (filter: string) =>
    configWarnings(
      parseConfig({
        rollout: { mode: "independent" },
        rewards: { filter },
        update: { advantage: "gae" },
      }),
    ).some((w) => w.includes("GRPO's group filter"));
  assert(
    warned("drop-zero-variance") && !warned("none"),
    "a GRPO group filter under GAE is flagged",
  );
  assertThrows(
    () =>
      parseConfig({
        rollout: { mode: "independent" },
        update: { advantage: "gae", gae: { lambda: 1.5 } },
      }),
    "ConfigError",
    "update.gae.lambda",
  );
  assertThrows(
    () =>
      parseConfig({
        rollout: { mode: "independent" },
        update: { advantage: "gae", value: { clip: 0 } },
      }),
    "ConfigError",
    "update.value.clip",
  );
});
