// Rollout structure on hand-made candidates: a scripted sampler answers each request with a
// fixed text per candidate (real moves with different outcomes), so the test controls rewards.
// Checked: groups are keyed (env, agent, turn) and never span environments; a later agent's
// candidates are scored on the state after the earlier agent's chosen action and get distinct
// rewards; the chosen candidate is the best; independent mode credits whole trajectories.

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { getEnv } from "../../src/envs/registry.ts";
import type { GenerateRequest, GenerateResult } from "../../src/model/generate.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import {
  clipPrompt,
  type CompletionSampler,
  rolloutIndependent,
  rolloutTree,
} from "../../src/rl/rollout.ts";
import { act } from "../../src/envs/api.ts";

const tok = new ByteTokenizer();

/** Candidate c of every request gets texts[agent][c % n]; log-probs are made up (unused here). */
function scripted(texts: string[]): CompletionSampler {
  return {
    generate(reqs: readonly GenerateRequest[]): Promise<GenerateResult[]> {
      return Promise.resolve(reqs.map((_, i) => {
        const ids = tok.encode(texts[i % texts.length], { addSpecialTokens: false });
        return { ids, logprobs: ids.map(() => -1), finish: "stop" as const };
      }));
    },
  };
}

const env = getEnv("tic_tac_toe_v1");
const tasks = [0, 1, 2].map((s) => env.generate(s, { split: "train", difficulty: {} }));
// Three candidates: two legal cells and one junk reply.
const moves = ["1", "5", "no idea"];

Deno.test("tree rollouts", async (t) => {
  const deps = {
    env,
    tokenizer: tok,
    policyOf: () => ({ generator: scripted(moves.map((m) => `#### ${m}`)) }),
  };
  const opts = {
    mode: "tree" as const,
    K: 3,
    alpha: 1,
    maxNewTokens: 8,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
  };
  const r = await rolloutTree(deps, tasks, opts);

  await t.step("one group per (env, agent, turn), never across environments", () => {
    const keys = r.groups.map((g) => g.key);
    assertEquals(new Set(keys).size, keys.length);
    for (const g of r.groups) {
      assertEquals(g.samples.length, 3);
      assert(
        g.samples.every((s) => s.env === g.env && s.agent === g.agent && s.turn === g.turn),
        `group ${g.key} mixes samples`,
      );
    }
  });

  await t.step("candidates get distinct rewards and the best one is chosen", () => {
    const distinct = r.groups.filter((g) => new Set(g.samples.map((s) => s.reward)).size > 1);
    assert(
      distinct.length >= r.groups.length / 2,
      `only ${distinct.length}/${r.groups.length} groups have distinct rewards`,
    );
    for (const g of r.groups) {
      const chosen = g.samples.filter((s) => s.chosen);
      assertEquals(chosen.length, 1);
      assert(
        g.samples.every((s) => s.reward <= chosen[0].reward),
        `group ${g.key}: chosen is not the best`,
      );
    }
  });

  await t.step("each episode replays: the env continued from the chosen candidates", async () => {
    for (const [e, task] of tasks.entries()) {
      let state = env.reset(task);
      for (const m of r.episodes[e].transcript) {
        state = (await act(env, state, m.agent, m.text)).state;
      }
      assertEquals(env.success(state), r.episodes[e].success);
      // The second agent's groups were scored on a state after the first agent moved.
      const later = r.groups.filter((g) => g.env === e && g.agent === env.turnOrder[1]);
      assert(later.length > 0, "the second player never moved");
    }
  });

  await t.step(
    "independent mode: one group per task, every action credited with its return",
    async () => {
      const ind = await rolloutIndependent(deps, tasks, { ...opts, mode: "independent" });
      assertEquals(ind.groups.length, tasks.length);
      for (const g of ind.groups) {
        assert(g.samples.every((s) => s.env === g.env), "group spans environments");
        const byTraj = new Map<number, number>();
        for (const s of g.samples) {
          const prev = byTraj.get(s.candidate);
          assert(
            prev === undefined || prev === s.reward,
            "a trajectory's actions have different rewards",
          );
          byTraj.set(s.candidate, s.reward);
        }
        assertEquals(byTraj.size, 3);
      }
    },
  );
});

Deno.test("prompts over maxPromptTokens lose their middle, are counted, and reach the sampler clipped", async () => {
  assertEquals(clipPrompt([1, 2, 3], 5), [1, 2, 3]);
  const long = Array.from({ length: 300 }, (_, i) => i);
  const c = clipPrompt(long, 100);
  assertEquals(c.length, 100);
  assertEquals(c.slice(0, 25), long.slice(0, 25)); // head: a quarter of the budget (≤ 32)
  assertEquals(c.slice(25), long.slice(225)); // the most recent 75 tokens
  const seen: number[] = [];
  const gen = scripted(["#### 1"]);
  const spy: CompletionSampler = {
    generate: (reqs) => (reqs.forEach((r) => seen.push(r.prompt.length)), gen.generate(reqs)),
  };
  const deps = { env, tokenizer: tok, policyOf: () => ({ generator: spy }) };
  const full = tok.encode(
    (env.observe(env.reset(tasks[0]), env.turnOrder[0], "compact") as { text: string }).text,
  ).length;
  const max = full - 5;
  const opts = {
    mode: "tree" as const,
    K: 2,
    alpha: 1,
    maxNewTokens: 8,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
    maxPromptTokens: max,
  };
  const r = await rolloutTree(deps, tasks.slice(0, 1), opts);
  assert(r.clippedPrompts > 0, "no prompt was clipped");
  assert(
    seen.every((n) => n <= max),
    `a prompt of ${Math.max(...seen)} tokens reached the sampler (max ${max})`,
  );
  assert(
    r.groups.every((g) => g.samples.every((s) => s.promptIds.length <= max)),
    "training samples keep the clipped prompt",
  );
});

Deno.test("rollout.maxTurns ends episodes after that many rounds, in both modes", async () => {
  // Hanabi: a garbled message wastes the turn, so only a turn limit ends these games.
  const hanabi = getEnv("hanabi_v1");
  const deals = [0, 1].map((s) => hanabi.generate(s, { split: "train", difficulty: {} }));
  const deps = {
    env: hanabi,
    tokenizer: tok,
    policyOf: () => ({ generator: scripted(["no idea"]) }),
  };
  const opts = {
    mode: "tree" as const,
    K: 2,
    alpha: 1,
    maxNewTokens: 8,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
  };
  const uncapped = await rolloutTree(deps, deals, opts);
  assert(
    uncapped.episodes.every((e) => e.turns > 3),
    `uncapped turns ${uncapped.episodes.map((e) => e.turns)}`,
  );
  for (const mode of ["tree", "independent"] as const) {
    const run = mode === "tree" ? rolloutTree : rolloutIndependent;
    const r = await run(deps, deals, { ...opts, mode, maxTurns: 3 });
    assertEquals(r.episodes.map((e) => e.turns), deals.map(() => 3), mode);
    assert(
      r.groups.every((g) => g.samples.every((s) => s.turn < 3)),
      `${mode}: a sample from round 4 or later`,
    );
    assertEquals(
      r.groups.flatMap((g) => g.samples).length,
      deals.length * 3 * 2 * 2,
      `${mode}: 3 rounds × 2 players × K 2 per deal`,
    );
  }
  // Rounds count from the reset state: a tic-tac-toe task's two opening moves are its round 1,
  // which the engine did not drive, so one round here is the players' next moves.
  assertEquals(tasks.map((t) => env.reset(t).turn), [1, 1, 1]);
  const ttt = await rolloutTree(
    {
      env,
      tokenizer: tok,
      policyOf: () => ({ generator: scripted(moves.map((m) => `#### ${m}`)) }),
    },
    tasks,
    { ...opts, K: 3, maxTurns: 1 },
  );
  assert(
    ttt.groups.length > 0 && ttt.groups.every((g) => g.turn === 1),
    `turns ${ttt.groups.map((g) => g.turn)}`,
  );
});

Deno.test("env steps start as each candidate's sequence ends, before the batch's generation returns", async () => {
  const log: string[] = [];
  const spyEnv = {
    ...env,
    step: (...a: Parameters<typeof env.step>) => (log.push("step"), env.step(...a)),
  } as typeof env;
  const base = scripted(["#### 1", "#### 5"]);
  const sampler: CompletionSampler = {
    async generate(reqs, opts) {
      const results = await base.generate(reqs);
      // The first request ends early; the rest at the end of the batch.
      opts?.onFinish?.(0, results[0]);
      await new Promise((r) => setTimeout(r, 5));
      log.push("generated");
      results.slice(1).forEach((r, i) => opts?.onFinish?.(i + 1, r));
      return results;
    },
  };
  const deps = { env: spyEnv, tokenizer: tok, policyOf: () => ({ generator: sampler }) };
  const opts = {
    mode: "tree" as const,
    K: 2,
    alpha: 1,
    maxNewTokens: 8,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
    maxTurns: 1,
  };
  const r = await rolloutTree(deps, tasks.slice(0, 2), opts);
  // Per agent turn: one step before the generation returned, then the other three.
  const firstTurn = log.slice(0, log.indexOf("generated") + 1);
  assertEquals(firstTurn, ["step", "generated"]);
  assertEquals(
    log.filter((x) => x === "step").length,
    2 * 2 * 2,
    "2 envs × 2 players × K 2 steps, each once",
  );
  // Same groups as with a sampler that reports nothing early.
  const plain = await rolloutTree(
    { env, tokenizer: tok, policyOf: () => ({ generator: base }) },
    tasks.slice(0, 2),
    opts,
  );
  assertEquals(
    r.groups.map((g) => g.samples.map((s) => [s.text, s.reward])),
    plain.groups.map((g) => g.samples.map((s) => [s.text, s.reward])),
  );
});

Deno.test("an env step that fails while the GPU still decodes fails the rollout, not the process", async () => {
  const failing = {
    ...env,
    step: () => {
      throw new Error("env step failed");
    },
  } as typeof env;
  const base = scripted(["#### 1"]);
  const sampler: CompletionSampler = {
    async generate(reqs, opts) {
      const results = await base.generate(reqs);
      opts?.onFinish?.(0, results[0]);
      await new Promise((r) => setTimeout(r, 10)); // an unhandled rejection would surface here
      return results;
    },
  };
  const opts = {
    mode: "tree" as const,
    K: 2,
    alpha: 1,
    maxNewTokens: 8,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
  };
  await assertRejects(
    () =>
      rolloutTree(
        { env: failing, tokenizer: tok, policyOf: () => ({ generator: sampler }) },
        tasks.slice(0, 1),
        opts,
      ),
    "Error",
    "env step failed",
  );
});

/** One-turn 3×3 Plan-Path (shortest path R R D D) at shaping 0.1, and the trusted executor. */
async function tinyPlanPath() {
  const { planPath } = await import("../../src/envs/plan_path/env.ts");
  const { trustedExecutor } = await import("../envs/trusted_executor.ts");
  const pp = planPath.rewardKnobs!.withRewards({ shaping: 0.1, success: "shaped" });
  const task = {
    size: 3,
    grid: ["...", ".#.", "..."],
    start: [0, 0] as [number, number],
    goal: [2, 2] as [number, number],
    shortest: 4,
    maxTurns: 1,
  };
  return { pp, task, trustedExecutor };
}

Deno.test("tool credit by lookahead: each tool candidate gets the team reward of its partner's next step", async () => {
  // One-turn 3×3 Plan-Path: tool candidate 0 prints the shortest path, candidate 1 a move that
  // stops short. The plan agent copies whatever the tool printed, so its step on candidate 0's
  // state solves the task (team reward at the config's weights) and on candidate 1's fails.
  const { pp, task, trustedExecutor } = await tinyPlanPath();
  const toolTexts = [
    '```javascript\nconsole.log("R R D D")\n```',
    '```javascript\nconsole.log("D")\n```',
  ];
  const planPrompts: string[] = [];
  const copier: CompletionSampler = {
    generate(reqs) {
      return Promise.resolve(reqs.map((r) => {
        const text = tok.decode(r.prompt, { skipSpecialTokens: true });
        planPrompts.push(text);
        const ids = tok.encode(`#### ${/tool:(.*)\n/.exec(text)![1]}`, { addSpecialTokens: false });
        return { ids, logprobs: ids.map(() => -1), finish: "stop" as const };
      }));
    },
  };
  const deps = {
    env: pp,
    tokenizer: tok,
    executor: trustedExecutor,
    policyOf: (a: string) => ({ generator: a === "tool" ? scripted(toolTexts) : copier }),
  };
  const opts = {
    mode: "tree" as const,
    K: 2,
    alpha: 1,
    maxNewTokens: 16,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
  };
  const solve = 0.1 * (1.03 + 1.02 + 1.01 + 1.0) - 0.04 + 1 + 0.5; // shaping, steps, goal, shortest
  const short = 0.1 * 1.03 - 0.01 - 1; // one move closer, then out of turns

  const look = await rolloutTree(deps, [task], { ...opts, toolCredit: "lookahead" });
  const tool = look.groups.find((g) => g.agent === "tool")!.samples;
  near(tool[0].team, solve, "team credit of the solving proposal");
  near(tool[1].team, short, "team credit of the short proposal");
  for (const s of tool) near(s.reward, s.team + s.local, "r = α·team + local");
  assert(tool[0].chosen, "the solving proposal is chosen");
  // The lookahead samples (one per tool candidate) are not group members: the plan's group is
  // its K candidates on the chosen state, and only those were prompted with the chosen output.
  assertEquals(planPrompts.length, 2 + 2);
  assertEquals(look.groups.find((g) => g.agent === "plan")!.samples.length, 2);
  assertEquals(look.episodes[0].success, true);

  // One candidate (evaluation): the partner's real step is the lookahead, credited when it comes,
  // in the group, the episode's rewards and its transcript; no extra generation.
  for (const [i, tool1] of [[0, toolTexts[0]], [1, toolTexts[1]]] as const) {
    planPrompts.length = 0;
    const one = await rolloutTree(
      {
        ...deps,
        policyOf: (a: string) => ({ generator: a === "tool" ? scripted([tool1]) : copier }),
      },
      [task],
      { ...opts, K: 1, toolCredit: "lookahead" },
    );
    const t = one.groups.find((g) => g.agent === "tool")!.samples[0];
    near(t.team, i === 0 ? solve : short, `K = 1 credit of proposal ${i}`);
    near(t.reward, t.team + t.local, "K = 1: r = α·team + local");
    near(one.episodes[0].rewardByAgent.tool, t.reward, "the episode's tool reward");
    near(
      one.episodes[0].transcript.find((x) => x.agent === "tool")!.reward,
      t.reward,
      "the transcript's tool reward",
    );
    assertEquals(planPrompts.length, 1, "no lookahead generation with one candidate");
  }
  const oneNone = await rolloutTree(deps, [task], { ...opts, K: 1, toolCredit: "none" });
  assertEquals(oneNone.groups.find((g) => g.agent === "tool")!.samples[0].team, 0);

  planPrompts.length = 0;
  const none = await rolloutTree(deps, [task], { ...opts, toolCredit: "none" });
  assertEquals(none.groups.find((g) => g.agent === "tool")!.samples.map((s) => s.team), [0, 0]);
  assertEquals(planPrompts.length, 2, "no lookahead samples without it");
});

function near(a: number, b: number, what: string) {
  assert(Math.abs(a - b) < 1e-6, `${what}: ${a} != ${b}`);
}

Deno.test("tool credit by lookahead: candidates that wrote the same text share one credit (the mean of their lookaheads)", async () => {
  // Both tool candidates print the shortest path; the partner copies it on its first call and
  // stops short on its second, so the two identical proposals' lookaheads differ (solve, short).
  const { pp, task, trustedExecutor } = await tinyPlanPath();
  const same = '```javascript\nconsole.log("R R D D")\n```';
  let calls = 0;
  const flaky: CompletionSampler = {
    generate(reqs) {
      return Promise.resolve(reqs.map(() => {
        const ids = tok.encode(calls++ % 2 === 0 ? "#### R R D D" : "#### R", {
          addSpecialTokens: false,
        });
        return { ids, logprobs: ids.map(() => -1), finish: "stop" as const };
      }));
    },
  };
  const deps = {
    env: pp,
    tokenizer: tok,
    executor: trustedExecutor,
    policyOf: (a: string) => ({ generator: a === "tool" ? scripted([same]) : flaky }),
  };
  const r = await rolloutTree(deps, [task], {
    mode: "tree",
    K: 2,
    alpha: 1,
    maxNewTokens: 16,
    sampling: { temperature: 1 },
    style: "compact",
    seed: 0,
    step: 0,
    toolCredit: "lookahead",
  });
  const tool = r.groups.find((g) => g.agent === "tool")!.samples;
  const solve = 0.1 * (1.03 + 1.02 + 1.01 + 1.0) - 0.04 + 1 + 0.5, short = 0.1 * 1.03 - 0.01 - 1;
  near(tool[0].team, (solve + short) / 2, "pooled credit");
  assertEquals(
    tool[0].reward,
    tool[1].reward,
    "identical proposals get identical rewards (a zero-variance group)",
  );
});

Deno.test("tool candidates that wrote the same program on equal states share one run (tree and independent)", async () => {
  // K 4 tool candidates, three of them one program: the sandbox runs two programs, and the
  // three copies get the step (and reward) of one run. In independent mode the K trajectories of
  // one task start from equal states, so their identical first programs run once too.
  const { pp, task, trustedExecutor } = await tinyPlanPath();
  const path = '```javascript\nconsole.log("R R D D")\n```';
  const short = '```javascript\nconsole.log("D")\n```';
  const programs: string[] = [];
  const counting = {
    run(code: string, opts: { globals?: Record<string, unknown>; timeoutMs?: number }) {
      programs.push(code);
      return trustedExecutor.run(code, opts);
    },
  };
  const copier = scripted(["#### R R D D"]);
  const opts = {
    K: 4,
    alpha: 1,
    maxNewTokens: 16,
    sampling: { temperature: 1 },
    style: "compact" as const,
    seed: 0,
    step: 0,
    toolCredit: "none" as const,
  };
  const deps = (tool: string[]) => ({
    env: pp,
    tokenizer: tok,
    executor: counting,
    policyOf: (a: string) => ({ generator: a === "tool" ? scripted(tool) : copier }),
  });
  const tree = await rolloutTree(deps([path, path, short, path]), [task], {
    ...opts,
    mode: "tree",
  });
  assertEquals(programs.length, 2, "one run per distinct program");
  assertEquals(tree.toolRuns, { run: 2, shared: 2 });
  const tool = tree.groups.find((g) => g.agent === "tool")!.samples;
  // Each candidate's reward is what its own step earns: the copies' equal the first run's.
  for (const [c, text] of [[0, path], [1, path], [2, short], [3, path]] as const) {
    const own = await act(pp, pp.reset(task), "tool", text, trustedExecutor);
    near(tool[c].local, own.localReward, `candidate ${c}'s local reward`);
  }
  assert(tool[0].local !== tool[2].local, "the two programs earn different rewards");

  programs.length = 0;
  const ind = await rolloutIndependent(deps([path]), [task], { ...opts, mode: "independent" });
  assertEquals(ind.toolRuns, { run: 1, shared: 3 });
  assertEquals(programs.length, 1);
  assertEquals(ind.episodes.length, 1);
  assertEquals(ind.groups.length, 1);
  assert(ind.groups[0].samples.every((s) => s.reward === ind.groups[0].samples[0].reward));
});
