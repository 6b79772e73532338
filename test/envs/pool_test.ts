// The env pool round trip: the same episodes driven through LocalEnvPool (in-thread) and
// WorkerEnvPool (2 workers behind comlink, tool code executed back in the main thread) give the
// same views, rewards and final states; errors keep their names across the worker boundary.

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { type EnvPool, type EpisodeSpec, LocalEnvPool } from "../../src/envs/pool.ts";
import { WorkerEnvPool } from "../../src/envs/worker_pool.ts";
import type { EnvState } from "../../src/envs/types.ts";
import { trustedExecutor } from "./trusted_executor.ts";

const SPECS: EpisodeSpec[] = [
  { envId: "plan_path_v1", task: { seed: 0 }, style: "compact" },
  { envId: "plan_path_v1", task: { seed: 1, split: "test" }, style: "chat" },
  { envId: "tic_tac_toe_v1", task: { seed: 2 }, style: "compact" },
  { envId: "sokoban_v1", task: { seed: 3 }, style: "chat" },
  { envId: "search_v1", task: { seed: 4 }, style: "compact" },
  { envId: "hanabi_v1", task: { seed: 5 }, style: "compact" },
];

/** AT-GRPO's inner loop: K = 2 candidates (oracle, junk) per step, continue from the oracle's. */
async function drive(pool: EnvPool) {
  const views = await pool.create(SPECS);
  const ids = views.map((v) => v.id);
  const log: unknown[] = [];
  for (let round = 0; round < 200; round++) {
    const live = (await pool.views(ids)).filter((v) => !v.done);
    if (live.length === 0) break;
    const states = await pool.states(live.map((v) => v.id));
    const prompts = await pool.prompts(live.map((v) => ({ id: v.id, agent: v.agent! })));
    assertEquals(prompts, live.map((v) => v.prompt), "prompts() agrees with views()");
    const requests = live.map((v, i) => ({
      id: v.id,
      texts: [getEnv(v.envId).oracle(states[i], v.agent!).text, "no idea"],
    }));
    const results = await pool.branch(requests);
    for (const [i, cands] of results.entries()) {
      const [good, junk] = cands.map((c) => c.teamReward + c.localReward);
      assert(
        good > junk,
        `${live[i].envId}: the oracle candidate should outscore junk (${good} vs ${junk})`,
      );
      log.push([live[i].envId, live[i].agent, live[i].prompt, cands]);
    }
    await pool.commit(live.map((v) => ({ id: v.id, index: 0 })));
  }
  const final = await pool.views(ids);
  const states: EnvState[] = await pool.states(ids);
  const renders = await pool.renders(ids);
  await pool.close(ids);
  return { log, final: final.map((v) => [v.envId, v.done, v.success]), states, renders };
}

Deno.test("env pool: in-thread and comlink workers give identical episodes", async () => {
  const local = await drive(new LocalEnvPool(trustedExecutor));
  const workers = await WorkerEnvPool.start({ workers: 2, executor: trustedExecutor });
  try {
    assertEquals(workers.size, 2);
    const remote = await drive(workers);
    assertEquals(remote.log, local.log);
    assertEquals(remote.states, local.states);
    assertEquals(remote.renders, local.renders);
    assertEquals(
      local.final.filter(([id]) => id !== "hanabi_v1" && id !== "tic_tac_toe_v1").every((
        [, done, ok],
      ) => done && ok),
      true,
    );
  } finally {
    await workers.dispose();
  }
});

Deno.test("env pool: errors cross comlink with their names", async () => {
  const pool = await WorkerEnvPool.start({ workers: 1 });
  try {
    await assertRejects(
      () => pool.create([{ envId: "nope_v1", task: { seed: 0 }, style: "compact" }]),
      "UnknownEnvError",
    );
    const [v] = await pool.create([{
      envId: "tic_tac_toe_v1",
      task: { seed: 0 },
      style: "compact",
    }]);
    await assertRejects(() => pool.commit([{ id: v.id, index: 0 }]), "CommitWithoutBranchError");
    await assertRejects(() => pool.views([v.id + 5]), "UnknownEpisodeError");
    await assertRejects(() => pool.views([123_000_000_000]), "UnknownEpisodeError");
    // A tool env without an executor cannot run its tool agent.
    const [pp] = await pool.create([{
      envId: "plan_path_v1",
      task: { seed: 0 },
      style: "compact",
    }]);
    await assertRejects(
      () => pool.branch([{ id: pp.id, texts: ["console.log('R')"] }]),
      "ExecutorMissingError",
    );
  } finally {
    await pool.dispose();
  }
});
