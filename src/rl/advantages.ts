// AT-GRPO's reward → advantage math as pure functions: reward mixing r = α·team + local, group
// keys (env, agent, turn), per-group normalisation, group filters and the statistics the logs show.
// A group never spans environments: its key names one env and `groupAdvantages` refuses a member
// from another (the original code pooled several envs into one group; see docs/algorithm.md).
//
// Dims: G groups per step, K members per group (the candidates of one env, agent and turn).
// Std is the unbiased (n − 1) estimate, as verl's torch.std that the original trains with. A group
// of one member, or of equal rewards, gets advantage 0 exactly: verl would give a lone sample its
// raw reward (mean 0, std 1), but with nothing to compare against there is no relative signal.

import type { AgentId } from "../envs/types.ts";
import type { GroupFilterKind, Grouping, Normalization, RolloutMode } from "./config.ts";

/** Identifies one environment instance of a step (its index in the batch, or a seed string). */
export type EnvKey = string | number;

export interface GroupKey {
  readonly env: EnvKey;
  readonly agent: AgentId;
  /** Turn of the candidates; null groups whole trajectories (independent GRPO). */
  readonly turn: number | null;
}

/** What a group member carries: where it came from and its mixed reward. */
export interface Scored extends GroupKey {
  readonly reward: number;
}

export interface Group<T extends Scored = Scored> {
  readonly key: GroupKey;
  readonly members: readonly T[];
}

export interface AdvantageOptions {
  readonly normalize: Normalization;
  /** Added to the std (std mode) so near-constant groups stay finite. */
  readonly eps: number;
}

export interface GroupResult<T extends Scored = Scored> extends Group<T> {
  /** One per member, in member order. */
  readonly advantages: readonly number[];
  readonly mean: number;
  /** Unbiased std of the rewards (0 for a single member). */
  readonly std: number;
  /** All rewards equal (or one member): every advantage is 0 and the group carries no signal. */
  readonly zeroVariance: boolean;
}

/** Bad input to the advantage functions; the message names the group. */
export class AdvantageInputError extends Error {
  override name = "AdvantageInputError";
}

/**
 * Rewards whose spread is below this (relative to max(1, |mean|)) count as equal, so float noise
 * from α·team + local sums does not turn a tie into ±1/eps-sized advantages.
 */
export const ZERO_SPREAD = 1e-9;

/** r = α·team + local: the team reward is shared by every agent, the local one is the agent's own. */
export function mixReward(team: number, local: number, alpha: number): number {
  if (![team, local, alpha].every(Number.isFinite)) {
    throw new AdvantageInputError(
      `mixReward: team ${team}, local ${local}, alpha ${alpha} must be finite numbers`,
    );
  }
  return alpha * team + local;
}

/** Stable text form of a key (Map keys, logs); JSON keeps "a|b" agent names unambiguous. */
export function groupId(k: GroupKey): string {
  return JSON.stringify([k.env, k.agent, k.turn]);
}

/**
 * A sample's group key: tree and single-agent rollouts by (env, agent, turn), or coarser by
 * `groupBy` (agent: every turn of an agent, turn null; turn: every agent of a turn, agent TEAM);
 * independent (plain GRPO) by env alone, its members whole trajectories (`trajectoryMembers`).
 */
const KEY_OF: { readonly [G in Grouping]: (s: GroupKey) => GroupKey } = {
  "agent-turn": (s) => ({ env: s.env, agent: s.agent, turn: s.turn }),
  "agent": (s) => ({ env: s.env, agent: s.agent, turn: null }),
  "turn": (s) => ({ env: s.env, agent: TEAM, turn: s.turn }),
};

/** The agent name of a whole-trajectory member: every agent of the team acted in it. */
export const TEAM = "*";

/** One whole trajectory as a group member (independent mode): its return and its actions. */
export interface Trajectory<T> extends Scored {
  readonly actions: readonly T[];
}

/**
 * Independent mode's members (docs/algorithm.md: K full trajectories, group = env): the actions of each
 * trajectory (same env and `candidate`, each carrying the trajectory's return as its reward)
 * become one member, so a task's baseline is the mean over its K returns whatever the
 * trajectories' lengths or which agent acted; `expandTrajectories` gives each action its
 * trajectory's advantage.
 */
export function trajectoryMembers<T extends Scored & { readonly candidate: number }>(
  actions: readonly T[],
): Trajectory<T>[] {
  const byId = new Map<string, { env: EnvKey; reward: number; actions: T[] }>();
  for (const a of actions) {
    const id = JSON.stringify([a.env, a.candidate]);
    const t = byId.get(id) ?? byId.set(id, { env: a.env, reward: a.reward, actions: [] }).get(id)!;
    if (a.reward !== t.reward) {
      throw new AdvantageInputError(
        `trajectory ${id}: its actions carry rewards ${t.reward} and ${a.reward}; independent mode credits each action with the trajectory's return`,
      );
    }
    t.actions.push(a);
  }
  return [...byId.values()].map((t) => ({
    env: t.env,
    agent: TEAM,
    turn: null,
    reward: t.reward,
    actions: t.actions,
  }));
}

/**
 * Trajectory groups seen per action: each group's members become its trajectories' actions, each
 * with its trajectory's advantage (and the group's mean, std and zero-variance flag).
 */
export function expandTrajectories<T extends Scored>(
  groups: readonly GroupResult<Trajectory<T>>[],
): GroupResult<T>[] {
  return groups.map((g) => ({
    ...g,
    members: g.members.flatMap((t) => t.actions),
    advantages: g.members.flatMap((t, i) => t.actions.map(() => g.advantages[i])),
  }));
}

export function groupKeyFor(
  mode: RolloutMode,
  sample: GroupKey,
  groupBy: Grouping = "agent-turn",
): GroupKey {
  if (mode === "independent") return { env: sample.env, agent: TEAM, turn: null };
  if (!(groupBy in KEY_OF)) {
    throw new AdvantageInputError(`groupBy "${groupBy}": use agent-turn, agent or turn`);
  }
  return KEY_OF[groupBy](sample);
}

/** Buckets members by their mode's key, groups in order of first appearance, members in input order. */
export function buildGroups<T extends Scored>(
  members: readonly T[],
  mode: RolloutMode = "tree",
  groupBy: Grouping = "agent-turn",
): Group<T>[] {
  const byId = new Map<string, { key: GroupKey; members: T[] }>();
  for (const m of members) {
    const key = groupKeyFor(mode, m, groupBy), id = groupId(key);
    const g = byId.get(id) ?? byId.set(id, { key, members: [] }).get(id)!;
    g.members.push(m);
  }
  return [...byId.values()];
}

function checkGroup(g: Group<Scored>, seen: Set<string>): void {
  const id = groupId(g.key);
  if (seen.has(id)) {
    throw new AdvantageInputError(
      `group ${id} appears twice: one baseline per (env, agent, turn); merge the two`,
    );
  }
  seen.add(id);
  if (!g.members.length) throw new AdvantageInputError(`group ${id} is empty`);
  for (const m of g.members) {
    if (m.env !== g.key.env) {
      throw new AdvantageInputError(
        `group ${id} holds a member of env ${
          JSON.stringify(m.env)
        }: a group must never span environments (different tasks have different reward scales)`,
      );
    }
    if (
      (g.key.agent !== TEAM && m.agent !== g.key.agent) ||
      (g.key.turn !== null && m.turn !== g.key.turn)
    ) {
      throw new AdvantageInputError(
        `group ${id} holds a member of agent ${m.agent}, turn ${m.turn}; build groups with buildGroups`,
      );
    }
    if (!Number.isFinite(m.reward)) {
      throw new AdvantageInputError(`group ${id}: reward ${m.reward} is not finite`);
    }
  }
}

/** A per member: (r − mean)/(std + eps) or r − mean. */
const NORMALIZE: {
  readonly [N in Normalization]: (r: number, mean: number, std: number, eps: number) => number;
} = {
  "std": (r, mean, std, eps) => (r - mean) / (std + eps),
  "mean-only": (r, mean) => r - mean,
};

function meanStd(rewards: readonly number[]): { mean: number; std: number } {
  const n = rewards.length, mean = rewards.reduce((a, b) => a + b, 0) / n;
  const ss = rewards.reduce((a, r) => a + (r - mean) ** 2, 0);
  return { mean, std: n > 1 ? Math.sqrt(ss / (n - 1)) : 0 };
}

/** Group-relative advantages of every group; throws on duplicate keys or members of another env. */
export function groupAdvantages<T extends Scored>(
  groups: readonly Group<T>[],
  opts: AdvantageOptions,
): GroupResult<T>[] {
  if (!(opts.normalize in NORMALIZE)) {
    throw new AdvantageInputError(`normalize "${opts.normalize}": use "std" or "mean-only"`);
  }
  if (!(Number.isFinite(opts.eps) && opts.eps > 0)) {
    throw new AdvantageInputError(`eps ${opts.eps} must be a finite number > 0`);
  }
  const seen = new Set<string>();
  return groups.map((g) => {
    checkGroup(g, seen);
    const rewards = g.members.map((m) => m.reward);
    const { mean, std } = meanStd(rewards);
    const spread = Math.max(...rewards) - Math.min(...rewards);
    const zeroVariance = spread <= ZERO_SPREAD * Math.max(1, Math.abs(mean));
    const norm = NORMALIZE[opts.normalize];
    const advantages = rewards.map((r) => (zeroVariance ? 0 : norm(r, mean, std, opts.eps)));
    return { key: g.key, members: g.members, advantages, mean, std, zeroVariance };
  });
}

export interface GroupFilter {
  readonly kind: GroupFilterKind;
  /** drop-lowest-mean: the fraction of groups removed, in [0, 1); rounded down. */
  readonly fraction?: number;
}

export interface FilterResult<T extends Scored> {
  readonly kept: GroupResult<T>[];
  readonly dropped: GroupResult<T>[];
}

/** Keep mask per group, by filter kind. */
const FILTERS: {
  readonly [F in GroupFilterKind]: (
    gs: readonly GroupResult<Scored>[],
    fraction: number,
  ) => boolean[];
} = {
  "none": (gs) => gs.map(() => true),
  // All-zero advantages add no gradient but still count in the token mean, shrinking the rest.
  "drop-zero-variance": (gs) => gs.map((g) => !g.zeroVariance),
  // Lowest mean first, ties by position, so the choice is deterministic.
  "drop-lowest-mean": (gs, fraction) => {
    const drop = new Set(
      gs.map((g, i) => ({ m: g.mean, i })).sort((a, b) => a.m - b.m || a.i - b.i)
        .slice(0, Math.floor(fraction * gs.length)).map((x) => x.i),
    );
    return gs.map((_, i) => !drop.has(i));
  },
};

/** Splits groups into those the update trains on and those it leaves out. */
export function filterGroups<T extends Scored>(
  groups: readonly GroupResult<T>[],
  filter: GroupFilter,
): FilterResult<T> {
  const fraction = filter.fraction ?? 0;
  if (!(filter.kind in FILTERS)) {
    throw new AdvantageInputError(
      `filter "${filter.kind}": use none, drop-zero-variance or drop-lowest-mean`,
    );
  }
  if (!(fraction >= 0 && fraction < 1)) {
    throw new AdvantageInputError(`filter fraction ${fraction} must lie in [0, 1)`);
  }
  const keep = FILTERS[filter.kind](groups, fraction);
  return { kept: groups.filter((_, i) => keep[i]), dropped: groups.filter((_, i) => !keep[i]) };
}

/** Each member with its advantage, group after group: what the policy update consumes. */
export function flattenAdvantages<T extends Scored>(
  groups: readonly GroupResult<T>[],
): { member: T; advantage: number }[] {
  return groups.flatMap((g) =>
    g.members.map((member, i) => ({ member, advantage: g.advantages[i] }))
  );
}

export interface AgentRewardStats {
  readonly mean: number;
  readonly count: number;
  /** Mean reward per turn ("all" for whole-trajectory groups). */
  readonly byTurn: Readonly<Record<string, number>>;
}

export interface RewardStats {
  readonly groups: number;
  readonly samples: number;
  readonly meanReward: number;
  /** Share of groups whose rewards were all equal: the step's wasted samples. */
  readonly zeroVarianceFraction: number;
  readonly meanAbsAdvantage: number;
  readonly byAgent: Readonly<Record<AgentId, AgentRewardStats>>;
}

/** Logging statistics of a step's groups (all zeros for none). */
export function rewardStats(groups: readonly GroupResult<Scored>[]): RewardStats {
  const sums = new Map<
    AgentId,
    { sum: number; n: number; turns: Map<string, { sum: number; n: number }> }
  >();
  let total = 0, n = 0, absAdv = 0;
  for (const g of groups) {
    // By each member's own agent and turn: a coarser group (rewards.groupBy) pools several.
    g.members.forEach((m, i) => {
      const a = sums.get(m.agent) ??
        sums.set(m.agent, { sum: 0, n: 0, turns: new Map() }).get(m.agent)!;
      const turn = m.turn === null ? "all" : String(m.turn);
      const t = a.turns.get(turn) ?? a.turns.set(turn, { sum: 0, n: 0 }).get(turn)!;
      a.sum += m.reward, a.n++, t.sum += m.reward, t.n++;
      total += m.reward, n++, absAdv += Math.abs(g.advantages[i]);
    });
  }
  const byAgent = Object.fromEntries([...sums].map(([agent, s]) => [agent, {
    mean: s.sum / s.n,
    count: s.n,
    byTurn: Object.fromEntries([...s.turns].map(([turn, t]) => [turn, t.sum / t.n])),
  }]));
  return {
    groups: groups.length,
    samples: n,
    meanReward: n ? total / n : 0,
    zeroVarianceFraction: groups.length
      ? groups.filter((g) => g.zeroVariance).length / groups.length
      : 0,
    meanAbsAdvantage: n ? absAdv / n : 0,
    byAgent,
  };
}
