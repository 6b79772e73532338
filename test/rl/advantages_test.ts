// Advantage math on hand-made rollouts: reward mixing, group-relative advantages (std and
// mean-only), zero-variance groups, filters, statistics, and groups that never mix environments.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  type AdvantageOptions,
  buildGroups,
  expandTrajectories,
  filterGroups,
  flattenAdvantages,
  type Group,
  groupAdvantages,
  groupId,
  groupKeyFor,
  type GroupResult,
  mixReward,
  rewardStats,
  type Scored,
  TEAM,
  trajectoryMembers,
} from "../../src/rl/advantages.ts";

const STD: AdvantageOptions = { normalize: "std", eps: 1e-6 };
const MEAN_ONLY: AdvantageOptions = { normalize: "mean-only", eps: 1e-6 };

function near(got: number, want: number, what: string, tol = 1e-12): void {
  assert(
    Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)),
    `${what}: ${got}, expected ${want}`,
  );
}

/** K candidates of one (env, agent, turn) with these rewards. */
function cands(env: number, agent: string, turn: number | null, rewards: number[]): Scored[] {
  return rewards.map((reward) => ({ env, agent, turn, reward }));
}

function one(g: Scored[], opts = STD): GroupResult {
  return groupAdvantages(buildGroups(g), opts)[0];
}

Deno.test("mixReward: r = α·team + local", () => {
  assertEquals(mixReward(1, -0.1, 1), 0.9);
  assertEquals(mixReward(1, -0.1, 0), -0.1);
  assertEquals(mixReward(2, 0.5, 0.5), 1.5);
  assertThrows(() => mixReward(NaN, 0, 1), "AdvantageInputError");
  assertThrows(() => mixReward(0, 0, Infinity), "AdvantageInputError");
});

Deno.test("distinct rewards: advantages (r − mean)/(std + eps) with unbiased std, summing to 0", () => {
  const g = one(cands(0, "plan", 1, [1, 2, 3, 4]));
  const std = Math.sqrt(5 / 3); // Σ(r − 2.5)² = 5, over n − 1 = 3
  near(g.mean, 2.5, "mean");
  near(g.std, std, "std");
  [-1.5, -0.5, 0.5, 1.5].forEach((d, i) => near(g.advantages[i], d / (std + 1e-6), `A[${i}]`));
  near(g.advantages.reduce((a, b) => a + b, 0), 0, "sum", 1e-12);
  assert(
    g.advantages.every((a) => a !== 0) && !g.zeroVariance,
    "distinct rewards give nonzero advantages",
  );
  // Better candidates rank higher.
  for (let i = 1; i < 4; i++) assert(g.advantages[i] > g.advantages[i - 1], "order");
});

Deno.test("mean-only keeps the reward scale: A = r − mean", () => {
  const g = one(cands(0, "tool", 0, [0, 0, 1, -1]), MEAN_ONLY);
  assertEquals(g.advantages, [0, 0, 1, -1]);
  const scaled = one(cands(0, "tool", 0, [0, 0, 10, -10]), MEAN_ONLY);
  assertEquals(scaled.advantages, [0, 0, 10, -10]);
  // std mode removes the scale instead.
  const a = one(cands(0, "tool", 0, [0, 0, 1, -1])).advantages,
    b = one(cands(0, "tool", 0, [0, 0, 10, -10])).advantages;
  a.forEach((x, i) => near(x, b[i], `scale-free A[${i}]`, 1e-4));
});

Deno.test("eps bounds the std normalisation of a small spread", () => {
  const tiny = one(cands(0, "a", 0, [0, 1e-6]), { normalize: "std", eps: 1 });
  near(tiny.advantages[1], (0.5e-6) / (Math.SQRT1_2 * 1e-6 + 1), "A with large eps");
  assertThrows(
    () => groupAdvantages([], { normalize: "std", eps: 0 }),
    "AdvantageInputError",
    "eps",
  );
});

Deno.test("zero-variance groups give exactly zero advantages", () => {
  const flat = one(cands(0, "plan", 2, [-2, -2, -2, -2]));
  assert(flat.zeroVariance, "flagged");
  assertEquals(flat.advantages, [0, 0, 0, 0]);
  // Float noise from mixing (0.1 + 0.2 vs 0.3) is still a tie, not ±1/eps.
  const noisy = one([
    ...cands(0, "a", 0, [mixReward(0.1, 0.2, 1)]),
    ...cands(0, "a", 0, [0.3, 0.3]),
  ]);
  assert(noisy.zeroVariance, "noise counted as spread");
  assertEquals(noisy.advantages, [0, 0, 0]);
  // A lone candidate has nothing to compare against.
  const lone = one(cands(0, "a", 0, [5]));
  assertEquals([lone.advantages, lone.std, lone.zeroVariance], [[0], 0, true]);
});

Deno.test("groups are keyed (env, agent, turn) and never mix environments", () => {
  // Two envs, same agent and turn: pooling them would use one baseline for both tasks.
  const samples = [
    ...cands(0, "plan", 1, [1, 1, 1, 1]),
    ...cands(1, "plan", 1, [0, 0, 1, 1]),
    ...cands(0, "tool", 1, [0, 1, 0, 1]),
  ];
  const groups = buildGroups(samples);
  assertEquals(groups.map((g) => groupId(g.key)), ['[0,"plan",1]', '[1,"plan",1]', '[0,"tool",1]']);
  for (const g of groups) {
    assert(
      g.members.every((m) => m.env === g.key.env && m.agent === g.key.agent),
      "member of another key",
    );
  }
  const res = groupAdvantages(groups, STD);
  // Env 0's plan group is all ties: zero advantages, though env 1 has spread at the same (agent, turn).
  assertEquals(res[0].advantages, [0, 0, 0, 0]);
  // Each env's advantages are what it gets alone: other envs' rewards never leak in.
  assertEquals(res[1].advantages, one(cands(1, "plan", 1, [0, 0, 1, 1])).advantages);
  // A hand-built group that spans envs is refused.
  const mixed: Group = {
    key: { env: 0, agent: "plan", turn: 1 },
    members: [...cands(0, "plan", 1, [0, 1]), ...cands(1, "plan", 1, [1])],
  };
  assertThrows(
    () => groupAdvantages([mixed], STD),
    "AdvantageInputError",
    "never span environments",
  );
  const wrongTurn: Group = {
    key: { env: 0, agent: "plan", turn: 1 },
    members: cands(0, "plan", 2, [0, 1]),
  };
  assertThrows(() => groupAdvantages([wrongTurn], STD), "AdvantageInputError", "turn 2");
  // The same key twice would split one baseline in two.
  assertThrows(
    () => groupAdvantages([groups[0], groups[0]], STD),
    "AdvantageInputError",
    "appears twice",
  );
  assertThrows(
    () => groupAdvantages([{ key: groups[0].key, members: [] }], STD),
    "AdvantageInputError",
    "empty",
  );
  assertThrows(
    () => groupAdvantages(buildGroups(cands(0, "a", 0, [1, NaN])), STD),
    "AdvantageInputError",
    "not finite",
  );
});

Deno.test("group keys per rollout mode", () => {
  const s = { env: 3, agent: "coder", turn: 2 };
  assertEquals(groupKeyFor("tree", s), s);
  assertEquals(groupKeyFor("single-agent", s), s);
  assertEquals(groupKeyFor("independent", s), { env: 3, agent: TEAM, turn: null });
  // Agent names with separators do not collide.
  assert(
    groupId({ env: "a|b", agent: "c", turn: 0 }) !== groupId({ env: "a", agent: "b|c", turn: 0 }),
    "ids collide",
  );
});

Deno.test("rewards.groupBy: agent pools an agent's turns, turn pools a turn's agents, never envs", () => {
  const samples = [
    ...cands(0, "tool", 0, [0, 1]),
    ...cands(0, "plan", 0, [1, 1]),
    ...cands(0, "tool", 1, [2, 2]),
    ...cands(1, "tool", 0, [5, 6]),
  ];
  assertEquals(groupKeyFor("tree", samples[0], "agent"), { env: 0, agent: "tool", turn: null });
  assertEquals(groupKeyFor("tree", samples[0], "turn"), { env: 0, agent: TEAM, turn: 0 });
  // Independent rollouts always group per env, whatever groupBy says.
  assertEquals(groupKeyFor("independent", samples[0], "turn"), { env: 0, agent: TEAM, turn: null });
  assertThrows(
    () => groupKeyFor("tree", samples[0], "env" as "agent"),
    "AdvantageInputError",
    "groupBy",
  );
  const byAgent = groupAdvantages(buildGroups(samples, "tree", "agent"), STD);
  assertEquals(byAgent.map((g) => groupId(g.key)), [
    '[0,"tool",null]',
    '[0,"plan",null]',
    '[1,"tool",null]',
  ]);
  // The tool's turns 0 and 1 share one baseline: its turn-1 ties score above the turn-0 mean.
  assertEquals(byAgent[0].members.map((m) => m.reward), [0, 1, 2, 2]);
  assertEquals(byAgent[0].advantages, one(cands(0, "tool", 0, [0, 1, 2, 2])).advantages);
  assert(byAgent[0].advantages[2] > 0, "a turn-1 tie gains against the pooled baseline");
  assert(byAgent[1].zeroVariance, "the plan's ties stay ties");
  const byTurn = groupAdvantages(buildGroups(samples, "tree", "turn"), STD);
  assertEquals(byTurn.map((g) => groupId(g.key)), ['[0,"*",0]', '[0,"*",1]', '[1,"*",0]']);
  // Turn 0 pools the tool's [0, 1] with the plan's [1, 1]: the plan's ties now carry advantages.
  assertEquals(byTurn[0].members.map((m) => `${m.agent}:${m.reward}`), [
    "tool:0",
    "tool:1",
    "plan:1",
    "plan:1",
  ]);
  assert(byTurn[0].advantages[2] > 0 && byTurn[0].advantages[3] > 0, "plan ties above the mean");
  assert(byTurn[1].zeroVariance, "turn 1 is one tool tie");
  // Env 1 stays apart under both.
  assertEquals(byTurn[2].advantages, one(cands(1, "tool", 0, [5, 6])).advantages);
  // Statistics stay per member's agent and turn whatever the grouping.
  const stats = rewardStats(byTurn);
  assertEquals(stats.byAgent.plan.byTurn, { "0": 1 });
  assertEquals(stats.byAgent.tool.byTurn, { "0": (0 + 1 + 5 + 6) / 4, "1": 2 });
  assertEquals(rewardStats(byAgent).byAgent, stats.byAgent);
  // A coarse group still refuses a member of another env or, keyed by turn, of another turn.
  assertThrows(
    () =>
      groupAdvantages([{
        key: { env: 0, agent: TEAM, turn: 0 },
        members: [...cands(0, "tool", 0, [1]), ...cands(0, "plan", 1, [0])],
      }], STD),
    "AdvantageInputError",
    "turn 1",
  );
});

Deno.test("independent mode: one group per task over its trajectories' returns, whatever their lengths", () => {
  // Task 0: trajectory 0 takes three actions by two agents and returns 1; trajectories 1 and 2
  // take one action each and return 0. Task 1: two trajectories returning 2.
  const act = (env: number, candidate: number, agent: string, turn: number, reward: number) => ({
    env,
    candidate,
    agent,
    turn,
    reward,
  });
  const actions = [
    act(0, 0, "tool", 0, 1),
    act(0, 0, "plan", 0, 1),
    act(0, 1, "tool", 0, 0),
    act(0, 0, "tool", 1, 1),
    act(0, 2, "tool", 0, 0),
    act(1, 0, "tool", 0, 2),
    act(1, 1, "plan", 0, 2),
  ];
  const trajs = trajectoryMembers(actions);
  assertEquals(trajs.map((t) => [t.env, t.agent, t.reward, t.actions.length]), [
    [0, TEAM, 1, 3],
    [0, TEAM, 0, 1],
    [0, TEAM, 0, 1],
    [1, TEAM, 2, 1],
    [1, TEAM, 2, 1],
  ]);
  const groups = groupAdvantages(buildGroups(trajs, "independent"), MEAN_ONLY);
  assertEquals(groups.map((g) => [g.key.env, g.key.agent, g.key.turn, g.members.length]), [[
    0,
    TEAM,
    null,
    3,
  ], [1, TEAM, null, 2]]);
  // The baseline is the mean of the three returns (1/3), not of the five actions' rewards (3/5).
  near(groups[0].mean, 1 / 3, "task 0 mean");
  const perAction = expandTrajectories(groups);
  assertEquals(perAction[0].members, [actions[0], actions[1], actions[3], actions[2], actions[4]]);
  perAction[0].advantages.forEach((a, i) =>
    near(a, [2 / 3, 2 / 3, 2 / 3, -1 / 3, -1 / 3][i], `action ${i}`)
  );
  assertEquals(perAction[1].zeroVariance, true);
  // Actions of one trajectory must carry its return.
  assertThrows(
    () => trajectoryMembers([act(0, 0, "tool", 0, 1), act(0, 0, "plan", 0, 0)]),
    "AdvantageInputError",
    "trajectory's return",
  );
});

Deno.test("filters: none, drop zero-variance, drop the lowest-mean fraction", () => {
  const res = groupAdvantages(
    buildGroups([
      ...cands(0, "a", 0, [1, 1]), // mean 1, zero variance
      ...cands(1, "a", 0, [0, 2]), // mean 1
      ...cands(2, "a", 0, [-3, -1]), // mean -2
      ...cands(3, "a", 0, [-1, 0]), // mean -0.5
    ]),
    STD,
  );
  const envs = (gs: GroupResult[]) => gs.map((g) => g.key.env);
  assertEquals(envs(filterGroups(res, { kind: "none" }).kept), [0, 1, 2, 3]);
  const nz = filterGroups(res, { kind: "drop-zero-variance" });
  assertEquals([envs(nz.kept), envs(nz.dropped)], [[1, 2, 3], [0]]);
  const low = filterGroups(res, { kind: "drop-lowest-mean", fraction: 0.5 });
  assertEquals([envs(low.kept), envs(low.dropped)], [[0, 1], [2, 3]]);
  // Rounded down: 0.3 of 4 groups drops 1; ties keep input order.
  assertEquals(envs(filterGroups(res, { kind: "drop-lowest-mean", fraction: 0.3 }).dropped), [2]);
  assertEquals(
    envs(filterGroups(res.slice(0, 2), { kind: "drop-lowest-mean", fraction: 0.5 }).dropped),
    [0],
  );
  assertThrows(
    () => filterGroups(res, { kind: "drop-lowest-mean", fraction: 1 }),
    "AdvantageInputError",
    "[0, 1)",
  );
});

Deno.test("statistics: mean reward by agent and turn, zero-variance fraction", () => {
  const res = groupAdvantages(
    buildGroups([
      ...cands(0, "tool", 0, [1, 3]),
      ...cands(0, "plan", 0, [0, 0]),
      ...cands(0, "tool", 1, [5, 5]),
      ...cands(1, "tool", 0, [-1, 1]),
    ]),
    MEAN_ONLY,
  );
  const s = rewardStats(res);
  assertEquals([s.groups, s.samples, s.zeroVarianceFraction], [4, 8, 0.5]);
  near(s.meanReward, 14 / 8, "mean reward");
  near(s.meanAbsAdvantage, (1 + 1 + 1 + 1) / 8, "mean |A|");
  assertEquals(s.byAgent.tool, { mean: 14 / 6, count: 6, byTurn: { "0": 1, "1": 5 } });
  assertEquals(s.byAgent.plan, { mean: 0, count: 2, byTurn: { "0": 0 } });
  assertEquals(rewardStats([]), {
    groups: 0,
    samples: 0,
    meanReward: 0,
    zeroVarianceFraction: 0,
    meanAbsAdvantage: 0,
    byAgent: {},
  });
});

Deno.test("flattenAdvantages pairs each member with its advantage, in group order", () => {
  const samples = [...cands(1, "a", 0, [0, 2]), ...cands(0, "b", 0, [4, 0])];
  const flat = flattenAdvantages(groupAdvantages(buildGroups(samples), MEAN_ONLY));
  assertEquals(flat.map((f) => [f.member.env, f.member.reward, f.advantage]), [
    [1, 0, -1],
    [1, 2, 1],
    [0, 4, 2],
    [0, 0, -2],
  ]);
  assert(flat.every((f, i) => f.member === samples[i]), "members are the caller's objects");
});
