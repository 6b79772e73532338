// `deno task eval` end to end on the tiny Plan-Path warm start: the --json result line (each
// task's success in order, the split), the same tasks at every evaluation, and usage errors.

import { assert, assertEquals } from "../assert.ts";

const CONFIG = {
  model: { folder: "models/plan_path_tiny" },
  env: { id: "plan_path_v1", difficulty: { size: 4, wallDensity: 0.1, maxTurns: 1 } },
  level: "L2",
  rollout: { mode: "tree", k: 2, envsPerStep: 2, maxTurns: 1, maxPromptTokens: 128, maxNewTokens: 12 },
  update: { mode: "lora", miniBatchSize: 8, chunkRows: 160, lora: { rank: 4, alpha: 8 } },
  eval: { episodes: 2 },
};

async function evalCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["run", "-A", "src/cli/eval.ts", ...args], stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("eval CLI: --json result with per-task successes, --split, usage errors", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cfg = `${dir}/config.json`;
    await Deno.writeTextFile(cfg, JSON.stringify(CONFIG));
    const results = [];
    for (const split of ["train", "train", "test"]) {
      const r = await evalCli(["--config", cfg, "--episodes", "6", "--split", split, "--json"]);
      assertEquals(r.code, 0, r.stderr);
      const res = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
      assertEquals(res.split, split);
      assertEquals(res.episodes, 6);
      assertEquals(res.successes.length, 6);
      assert(res.successes.every((s: number) => s === 0 || s === 1), `successes ${res.successes}`);
      assertEquals(res.successRate, res.successes.reduce((a: number, b: number) => a + b, 0) / 6);
      results.push(res);
    }
    // Greedy on the same tasks: the same per-task results.
    assertEquals(results[0].successes, results[1].successes);
    const bad = await evalCli(["--config", cfg, "--split", "validation"]);
    assertEquals(bad.code, 2);
    assert(bad.stderr.includes("--split must be test or train"), bad.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
