// A step's rollouts as plain data for the page's rollout viewer and GRPO explainer: per
// environment, one frame per (turn, agent) with the board before the move (the env's `render`),
// the K candidates of the group with their rewards and advantages, and the branch taken; then
// the final board. Boards are rebuilt by replaying the chosen candidates from the task with
// `act` (tool code runs again in the executor: environments are deterministic in their inputs).
// Host-neutral and structuredClone-able, so it crosses from the trainer worker to the page.

import { act, currentAgent } from "../envs/api.ts";
import type { AnyEnvDefinition, CodeExecutor, Rendered } from "../envs/types.ts";
import type { GroupResult } from "../rl/advantages.ts";
import type { Group, Sample } from "../rl/rollout.ts";
import type { Tokenizer } from "../model/tokenizer.ts";

export interface CandidateView {
  candidate: number;
  /** The completion as the environment read it (special tokens such as <eos> included). */
  text: string;
  /** The completion for people: special tokens left out. */
  shown: string;
  /** Each completion token as text (for per-token highlighting). */
  tokens: string[];
  completionIds: number[];
  promptIds: number[];
  /** log π_old of each completion token (sampling time). */
  oldLogp: number[];
  reward: number;
  team: number;
  local: number;
  advantage: number;
  chosen: boolean;
  invalid: string | null;
}

export interface FrameView {
  turn: number;
  agent: string;
  /** The board the agent saw. */
  board: Rendered;
  /** The agent's prompt (what the model was given), as text. */
  prompt: string;
  candidates: CandidateView[];
  mean: number;
  std: number;
  zeroVariance: boolean;
  /**
   * A tool agent's turn: what its chosen program printed (or why it failed), which is what the
   * next agent reads as "Tool output"; null for other agents.
   */
  toolOutput: string | null;
}

export interface EpisodeView {
  step: number;
  env: number;
  envId: string;
  mode: "tree" | "independent";
  frames: FrameView[];
  final: Rendered;
  success: boolean;
}

/** The (env, frame) with the widest reward spread, where GRPO has the most to learn from (0, 0 when no group has any). */
export function mostInformative(eps: readonly EpisodeView[]): { env: number; frame: number } {
  let best = { env: 0, frame: 0, std: -1 };
  eps.forEach((ep, e) =>
    ep.frames.forEach((f, i) => {
      if (!f.zeroVariance && f.std > best.std) best = { env: e, frame: i, std: f.std };
    })
  );
  return { env: best.env, frame: best.frame };
}

/** Advantage of each sample, looked up by identity in the step's group statistics. */
export function advantageIndex(
  stats: readonly GroupResult<Sample>[],
): Map<Sample, { advantage: number; mean: number; std: number; zeroVariance: boolean }> {
  const m = new Map<
    Sample,
    { advantage: number; mean: number; std: number; zeroVariance: boolean }
  >();
  for (const g of stats) {
    g.members.forEach((s, i) =>
      m.set(s, {
        advantage: g.advantages[i],
        mean: g.mean,
        std: g.std,
        zeroVariance: g.zeroVariance,
      })
    );
  }
  return m;
}

export interface ViewOptions {
  step: number;
  /** The tasks of the step, by env index (StepOutcome.tasks). */
  tasks: readonly unknown[];
  executor?: CodeExecutor;
  tokenizer: Tokenizer;
  /** Environments to build (default: all). */
  maxEnvs?: number;
}

/** After a tool agent's move in a tool → plan env (tool_plan.ts state), what its program printed. */
function toolOutputOf(env: AnyEnvDefinition, agent: string, state: unknown): string | null {
  if (!env.toolAgents.includes(agent)) return null;
  const tool = (state as { tool?: { stdout?: string; problem?: string | null } | null }).tool;
  if (!tool) return null;
  return tool.problem
    ? `${tool.stdout ?? ""}${tool.stdout ? "\n" : ""}(${tool.problem})`
    : tool.stdout ?? "";
}

const tokenTexts = (tok: Tokenizer, ids: readonly number[]) => ids.map((id) => tok.decode([id]));

/** The viewer's data for the first `maxEnvs` environments of a step. */
export async function buildEpisodeViews(
  env: AnyEnvDefinition,
  groups: readonly Group[],
  stats: readonly GroupResult<Sample>[],
  o: ViewOptions,
): Promise<EpisodeView[]> {
  const adv = advantageIndex(stats);
  const independent = groups.some((g) => g.turn < 0);
  const out: EpisodeView[] = [];
  const nEnvs = Math.min(o.tasks.length, o.maxEnvs ?? o.tasks.length);
  for (let e = 0; e < nEnvs; e++) {
    let state = env.reset(o.tasks[e]);
    const frames: FrameView[] = [];
    const cand = (s: Sample): CandidateView => {
      const a = adv.get(s);
      return {
        candidate: s.candidate,
        text: s.text,
        shown: o.tokenizer.decode(s.completionIds, { skipSpecialTokens: true }),
        tokens: tokenTexts(o.tokenizer, s.completionIds),
        completionIds: s.completionIds,
        promptIds: s.promptIds,
        oldLogp: s.oldLogp,
        reward: s.reward,
        team: s.team,
        local: s.local,
        advantage: a?.advantage ?? 0,
        chosen: s.chosen,
        invalid: s.invalid ?? null,
      };
    };
    if (!independent) {
      for (const g of groups.filter((x) => x.env === e)) {
        const chosen = g.samples.find((s) => s.chosen) ?? g.samples[0];
        const a = adv.get(chosen);
        frames.push({
          turn: g.turn,
          agent: g.agent,
          board: env.render(state),
          prompt: o.tokenizer.decode(chosen.promptIds, { skipSpecialTokens: true }),
          candidates: g.samples.map(cand),
          mean: a?.mean ?? 0,
          std: a?.std ?? 0,
          zeroVariance: a?.zeroVariance ?? true,
          toolOutput: null,
        });
        if (currentAgent(env, state) === g.agent) {
          state = (await act(env, state, g.agent, chosen.text, o.executor)).state;
        }
        frames[frames.length - 1].toolOutput = toolOutputOf(env, g.agent, state);
      }
    } else {
      // Independent GRPO: replay trajectory 0; each frame lists what every trajectory did at that point.
      const g = groups.find((x) => x.env === e);
      const samples = g?.samples ?? [];
      const traj0 = samples.filter((s) => s.candidate === 0);
      for (const [i, s] of traj0.entries()) {
        const same = samples.filter((x) => x.agent === s.agent && x.turn === s.turn);
        const a = adv.get(s);
        frames.push({
          turn: s.turn,
          agent: s.agent,
          board: env.render(state),
          prompt: o.tokenizer.decode(s.promptIds, { skipSpecialTokens: true }),
          candidates: same.map(cand),
          mean: a?.mean ?? 0,
          std: a?.std ?? 0,
          zeroVariance: a?.zeroVariance ?? true,
          toolOutput: null,
        });
        if (currentAgent(env, state) === s.agent) {
          state = (await act(env, state, s.agent, s.text, o.executor)).state;
        }
        frames[frames.length - 1].toolOutput = toolOutputOf(env, s.agent, state);
        if (i > 64) break;
      }
    }
    out.push({
      step: o.step,
      env: e,
      envId: env.id,
      mode: independent ? "independent" : "tree",
      frames,
      final: env.render(state),
      success: env.success(state),
    });
  }
  return out;
}
