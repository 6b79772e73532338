// The AT-GRPO train loop end to end on a tiny model: the run directory and its files, and an
// exact resume (1 step + resume 1 step = 2 steps straight: same metrics, same adapters).

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { loadConfigFile, parseConfig } from "../../src/rl/config.ts";
import { train } from "../../src/rl/train.ts";
import { latestCheckpoint, loadCheckpoint } from "../../src/train/checkpoint_dir.ts";
import { parseModelConfig } from "../../src/model/config.ts";

const tiny = (outDir: string, steps: number) =>
  parseConfig({
    // The warm start, so candidates get different rewards and the updates move the adapters.
    model: { folder: "models/plan_path_tiny" },
    env: { id: "plan_path_v1", difficulty: { size: 4, wallDensity: 0.1, maxTurns: 1 } },
    level: "L2",
    rollout: {
      mode: "tree",
      k: 2,
      envsPerStep: 2,
      maxTurns: 1,
      maxPromptTokens: 128,
      maxNewTokens: 12,
    },
    update: {
      mode: "lora",
      miniBatchSize: 8,
      chunkRows: 160,
      lora: { rank: 4, alpha: 8 },
      optimizer: { lr: 1e-3 },
      schedule: { kind: "constant", warmupSteps: 0 },
    },
    eval: { everySteps: 100, episodes: 1, beforeTraining: false },
    run: { outDir, name: "t", steps, checkpointEvery: 1, keepLast: 2, seed: 3 },
  });

async function metrics(dir: string) {
  const text = await Deno.readTextFile(`${dir}/metrics.jsonl`);
  return text.trim().split("\n").map((l) => JSON.parse(l));
}

Deno.test("train loop: run directory and bit-identical resume", async () => {
  const root = await Deno.makeTempDir();
  const quiet = () => {};
  try {
    const straight = await train(tiny(`${root}/a`, 2), { log: quiet });
    for (
      const f of [
        "config.json",
        "metrics.jsonl",
        "summary.log",
        "rollouts/step-1.jsonl",
        "rollouts/step-2.jsonl",
      ]
    ) {
      await Deno.stat(`${straight.runDir}/${f}`);
    }
    // Rollout files hold the conversation: each sample's prompt as the agent saw it, and its reply.
    const lines = (await Deno.readTextFile(`${straight.runDir}/rollouts/step-1.jsonl`)).trim()
      .split("\n").map((l) => JSON.parse(l));
    assert(
      lines.length > 0 &&
        lines.every((l) =>
          typeof l.prompt === "string" && l.prompt.length > 0 && typeof l.text === "string"
        ),
      "rollout lines lack prompts",
    );
    assert(
      lines.some((l) => l.prompt.includes("plan_path")),
      `prompts do not name the task: ${lines[0].prompt}`,
    );
    // The run's config.json is the resolved config, readable as a config file (eval --config).
    const again = await loadConfigFile(`${straight.runDir}/config.json`);
    assertEquals(JSON.stringify(again), JSON.stringify(tiny(`${root}/a`, 2)));
    await Deno.stat(`${straight.runDir}/config.txt`);
    const ma = await metrics(straight.runDir);
    assertEquals(ma.map((m) => m.step), [1, 2]);
    assert(ma[0].groups > 0 && ma[0].samples === ma[0].groups * 2, "K=2 samples per group");
    assert(
      ma.some((m) =>
        m.zeroVarianceGroups < 1 && m.updates.some((u: { gradNorm: number }) => u.gradNorm > 0)
      ),
      "no step had a gradient: the resume check below would be vacuous",
    );

    const first = await train(tiny(`${root}/b`, 1), { log: quiet });
    // A resume with other training settings is refused before anything is written; run.steps may grow.
    const other = parseConfig({
      ...JSON.parse(JSON.stringify(tiny(`${root}/b`, 2))),
      rollout: { ...tiny("", 2).rollout, k: 3 },
    });
    await assertRejects(
      () => train(other, { log: quiet, resume: first.runDir }),
      "CheckpointMismatchError",
      "rollout.k (2 → 3)",
    );
    assertEquals((await metrics(first.runDir)).length, 1);
    await train(tiny(`${root}/b`, 2), { log: quiet, resume: first.runDir });
    const mb = await metrics(first.runDir);
    assertEquals(mb.map((m) => m.step), [1, 2]);
    const strip = (m: Record<string, unknown>) =>
      JSON.stringify({ ...m, seconds: 0, rolloutTokensPerS: 0, updateTokensPerS: 0 });
    assertEquals(strip(mb[1]), strip(ma[1]), "the resumed step differs from the uninterrupted one");
    const base = parseModelConfig(
      JSON.parse(await Deno.readTextFile("models/plan_path_tiny/config.json")),
    );
    const load = async (dir: string) =>
      loadCheckpoint((await latestCheckpoint(`${dir}/checkpoints`))!, { base });
    const [ca, cb] = await Promise.all([load(straight.runDir), load(first.runDir)]);
    for (const name of Object.keys(ca.adapters)) {
      const a = ca.adapters[name].modules, b = cb.adapters[name].modules;
      assert(
        a.every((m, i) =>
          m.a.every((x, j) => Object.is(x, b[i].a[j])) &&
          m.b.every((x, j) => Object.is(x, b[i].b[j]))
        ),
        `adapter ${name} differs after resume`,
      );
    }
    for (const name of Object.keys(ca.optimizers)) {
      const a = ca.optimizers[name].moments, b = cb.optimizers[name].moments;
      assert(
        a.every((mv, i) => mv.m.every((x, j) => Object.is(x, b[i].m[j]))),
        `optimizer ${name} differs after resume`,
      );
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
