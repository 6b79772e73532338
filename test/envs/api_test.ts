// Generic machinery: difficulty checking, the text→step pipeline, and the gym facade.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { act, advanceClock, resolveDifficulty } from "../../src/envs/api.ts";
import { GymEnv } from "../../src/envs/gym.ts";
import { planPath } from "../../src/envs/plan_path/env.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { trustedExecutor } from "./trusted_executor.ts";

Deno.test("resolveDifficulty: merges, rejects unknown knobs and wrong types", () => {
  assertEquals(resolveDifficulty("x_v1", { a: 1, b: true }, { a: 3 }), { a: 3, b: true });
  assertThrows(
    () => resolveDifficulty("x_v1", { a: 1 }, { c: 2 } as never),
    "DifficultyError",
    "unknown knob",
  );
  assertThrows(
    () => resolveDifficulty("x_v1", { a: 1 }, { a: "2" } as never),
    "DifficultyError",
    "must be a number",
  );
  assertThrows(
    () => planPath.generate(0, { split: "train", difficulty: { size: 11 } }),
    "DifficultyError",
    "[3, 10]",
  );
});

Deno.test("advanceClock: wraps the cursor into the next turn and truncates at the limit", () => {
  const s = { envId: "x", turn: 1, cursor: 1, terminated: false, truncated: false };
  assertEquals(advanceClock(s, 2, 3, false), { turn: 2, cursor: 0, truncated: false });
  assertEquals(advanceClock({ ...s, turn: 2 }, 2, 3, false), {
    turn: 3,
    cursor: 0,
    truncated: true,
  });
  assertEquals(advanceClock({ ...s, turn: 2 }, 2, 3, true), {
    turn: 3,
    cursor: 0,
    truncated: false,
  });
  assertEquals(advanceClock({ ...s, cursor: 0 }, 2, 3, false), {
    turn: 1,
    cursor: 1,
    truncated: false,
  });
});

Deno.test("act: tool agents need an executor; junk is stepped as Invalid", async () => {
  const s = planPath.reset(planPath.generate(0, { split: "train" }));
  await assertRejects(() => act(planPath, s, "tool", "console.log('R')"), "ExecutorMissingError");
  const r = await act(planPath, s, "tool", "throw new Error('x')", trustedExecutor);
  assertEquals((r.info.invalid as { code: string }).code, "exec_error");
});

Deno.test("gym facade: reset/step to the end with oracle texts; reward = α·team + local", async () => {
  const env = getEnv("plan_path_v1");
  const gym = new GymEnv(env, { executor: trustedExecutor, style: "chat", alpha: 0.5 });
  assertThrows(() => gym.state, "NoEpisodeError");
  let obs = gym.reset({ seed: 3 });
  assertEquals(obs.agent, "tool");
  assert(obs.prompt?.style === "chat");
  let done = false, steps = 0;
  while (!done) {
    const text = env.oracle(gym.state, obs.agent!).text;
    const r = await gym.step(text);
    assertEquals(r.reward, 0.5 * r.info.teamReward + r.info.localReward);
    [obs, done] = [r.observation, r.done];
    steps++;
  }
  assertEquals([steps, obs.agent, env.success(gym.state)], [2, null, true]);
  await assertRejects(() => gym.step("#### U"), "EpisodeOverError");
  assert(gym.render().text.includes("reached the goal"));
});
