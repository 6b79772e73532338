// Multi-agent rollouts for AT-GRPO (the paper's Algorithm 1) and the plain-GRPO baseline.
//   tree:        for each turn and agent, every active environment samples K candidates from
//                that agent's policy (all environments' candidates in one batched generation,
//                each sequence with its agent's adapter); each candidate is scored on the
//                (immutable) state with r = α·team + local; the K samples form the group
//                (env, agent, turn); the environment continues from the best candidate.
//   independent: K whole trajectories per task, one candidate per step; every action of a
//                trajectory is credited with the trajectory's return; one group per task.
// Unlike the original code, a group never spans environments, a later agent of a turn sees the
// earlier agent's chosen action (its candidates are scored on that state, so their rewards
// differ), and the prompt and the step read the same state object.

import type {
  AnyEnvDefinition,
  CodeExecutor,
  EnvState,
  PromptStyle,
  StepResult,
} from "../envs/types.ts";
import { act, currentAgent } from "../envs/api.ts";
import type { GenerateOptions, GenerateRequest, GenerateResult } from "../model/generate.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import type { AgentGeneration } from "./generation.ts";

/** Anything that completes a batch of requests: the Generator of a policy's model. */
export interface CompletionSampler {
  /** `opts.onFinish`, where the sampler supports it, reports each request as its sequence ends. */
  generate(
    reqs: readonly GenerateRequest[],
    opts?: Pick<GenerateOptions, "onFinish" | "decode">,
  ): Promise<GenerateResult[]>;
}

/** How an agent samples: its policy's sampler and its LoRA adapter, if any. */
export interface AgentPolicy {
  generator: CompletionSampler;
  adapter?: number;
}

export interface SamplingSettings {
  temperature: number;
  topP?: number;
  topK?: number;
  repetitionPenalty?: number;
}

export interface RolloutOptions {
  mode: "tree" | "independent";
  /** Candidates per (env, agent, turn) in tree mode; trajectories per task in independent mode. */
  K: number;
  /** Weight of the team reward: r = α·team + local. */
  alpha: number;
  maxNewTokens: number;
  sampling: SamplingSettings;
  style: PromptStyle;
  /** Keys the sampling RNG together with `step`, so a run is reproducible. */
  seed: number;
  step: number;
  /**
   * Longest prompt in tokens (the KV cache is sized for it); a longer one (a history or a quoted
   * tool error that grew) loses its middle: its head (role and task header) and its most recent
   * tail are kept. Counted in RolloutResult.clippedPrompts. Unset: prompts are not clipped.
   */
  maxPromptTokens?: number;
  /**
   * Rounds (every agent's turn once) the engine drives per episode, counted from the reset state
   * (a tic-tac-toe task's opening moves are a round the engine did not drive): an episode ends
   * there, unfinished, as the env's own turn limit also ends it. Unset: only the env's limit.
   */
  maxTurns?: number;
  /**
   * Team credit of a tool agent's candidates (tree mode, agents that act in turn): "lookahead"
   * credits each candidate with the team reward of its partner's next step. With K > 1 the next
   * agent samples once on every candidate's state (one batched generation; the lookahead samples
   * are not group members); with one candidate, as in evaluation, the partner's real next step is
   * that lookahead, so its team reward is credited when it comes (no extra generation). "none" or
   * unset: the candidate's own step's team reward (0 for the tool → plan games).
   */
  toolCredit?: "lookahead" | "none";
  /**
   * Per-agent sampling, token budget and stop strings (src/rl/generation.ts); unset: `sampling`
   * and `maxNewTokens` for every agent, no stop strings.
   */
  generationOf?: (agent: string) => AgentGeneration;
}

/** Whether a branch still has a move to make: the env names an agent and the round cap is not reached. */
function moving(env: AnyEnvDefinition, b: Branch, o: RolloutOptions): boolean {
  return currentAgent(env, b.state) !== null &&
    (o.maxTurns === undefined || b.state.turn - b.startTurn < o.maxTurns);
}

/** A prompt within `max` tokens: the first quarter (≤ 32 tokens) and the most recent rest. */
export function clipPrompt(ids: readonly number[], max: number): number[] {
  if (ids.length <= max) return [...ids];
  const head = Math.min(32, Math.floor(max / 4));
  return [...ids.slice(0, head), ...ids.slice(ids.length - (max - head))];
}

export interface Sample {
  env: number;
  agent: string;
  turn: number;
  candidate: number;
  promptIds: number[];
  completionIds: number[];
  /** log π_old of each completion token, from sampling time. */
  oldLogp: number[];
  text: string;
  /** α·team + local (tree mode) or the trajectory's return (independent mode). */
  reward: number;
  team: number;
  local: number;
  /** The candidate the environment continued from (tree mode). */
  chosen: boolean;
  invalid?: string;
}

export interface Group {
  key: string;
  env: number;
  agent: string;
  turn: number;
  samples: Sample[];
}

export interface Episode {
  env: number;
  success: boolean;
  turns: number;
  /** Σ over the episode of α·team + local per agent, along the chosen path. */
  rewardByAgent: Record<string, number>;
  /** The chosen messages, in order. */
  transcript: { turn: number; agent: string; text: string; reward: number }[];
}

export interface RolloutResult {
  groups: Group[];
  episodes: Episode[];
  generatedTokens: number;
  /** Prompts cut to RolloutOptions.maxPromptTokens. */
  clippedPrompts: number;
  seconds: { generate: number; env: number };
  /**
   * Tool agents' steps that ran their program (`run`), and those that shared the step of an
   * identical message on the same state instead (`shared`; see sampleAndAct).
   */
  toolRuns: ToolRuns;
}

export interface ToolRuns {
  run: number;
  shared: number;
}

export interface RolloutDeps {
  env: AnyEnvDefinition;
  tokenizer: Tokenizer;
  policyOf: (agent: string) => AgentPolicy;
  executor?: CodeExecutor;
}

/** A u32 sampling stream id unique to (step, env, turn, agent slot, candidate). */
function streamId(step: number, env: number, turn: number, agent: number, cand: number): number {
  let h = 2166136261;
  for (const x of [step, env, turn, agent, cand]) h = Math.imul(h ^ x, 16777619) >>> 0;
  return h >>> 0;
}

export function encodePrompt(
  deps: RolloutDeps,
  state: EnvState,
  agent: string,
  style: PromptStyle,
): number[] {
  const p = deps.env.observe(state, agent, style);
  if (p.style === "chat") {
    return deps.tokenizer.encodeChat(p.messages, { addGenerationPrompt: true });
  }
  return deps.tokenizer.encode(p.text);
}

interface Branch {
  env: number;
  state: EnvState;
  /** Trajectory index within its task (independent mode) or 0. */
  traj: number;
  /** The reset state's turn: rollout.maxTurns counts rounds from it. */
  startTurn: number;
}

function branch(env: AnyEnvDefinition, task: unknown, e: number, traj: number): Branch {
  const state = env.reset(task);
  return { env: e, state, traj, startTurn: state.turn };
}

/**
 * Generates one completion per (branch, candidate) for the agent to move, batched per policy, and
 * steps the env on each candidate as soon as its sequence ends: env steps and sandboxed tool runs
 * proceed (in the executor's worker pool) while the GPU decodes the longer candidates. Each
 * candidate's step runs on its branch's state. Seconds: `generate` until the last sequence ends,
 * `env` the wait for the steps still running after that.
 *
 * A tool agent's candidates that wrote the same message on equal states (the same branch, or
 * branches whose states are equal as data) share one step, so a program runs once however many
 * candidates wrote it: at low temperature the K candidates are often one program, and at the
 * paper's 32 envs × 8 candidates that is up to 256 sandbox processes a turn. Steps are pure, so
 * this is exact for programs whose output depends only on their input; a program that draws
 * Math.random or reads the clock gets one draw for all its copies (as identical texts share one
 * lookahead credit: poolIdentical).
 */
async function sampleAndAct(
  deps: RolloutDeps,
  o: RolloutOptions,
  branches: Branch[],
  agent: string,
  K: number,
  secs: { generate: number; env: number },
  tools: ToolRuns,
) {
  const pol = deps.policyOf(agent);
  const agentIdx = deps.env.possibleAgents.indexOf(agent);
  const full = branches.map((b) => encodePrompt(deps, b.state, agent, o.style));
  const max = o.maxPromptTokens;
  const prompts = max === undefined ? full : full.map((p) => clipPrompt(p, max));
  const clipped = max === undefined ? 0 : full.filter((p) => p.length > max).length;
  const gen = o.generationOf?.(agent) ??
    { sampling: o.sampling, maxNewTokens: o.maxNewTokens, stop: [] };
  const reqs: GenerateRequest[] = branches.flatMap((b, i) =>
    Array.from({ length: K }, (_, c) => ({
      prompt: prompts[i],
      maxNewTokens: gen.maxNewTokens,
      stopIds: deps.tokenizer.stopIds,
      ...(gen.stop.length && { stopStrings: gen.stop }),
      adapter: pol.adapter,
      sequence: streamId(o.step, b.env * 1024 + b.traj, b.state.turn, agentIdx, c),
      sampling: { ...gen.sampling, seed: o.seed },
    }))
  );
  // Stop strings are matched on the text the env will read; the kept ids end at the token that
  // completes one, so the ids trained on are exactly the ids sampled.
  const decode = gen.stop.length
    ? (ids: number[]) => deps.tokenizer.decode(ids, { skipSpecialTokens: true })
    : undefined;
  const texts: string[] = new Array(reqs.length);
  const stepping: Promise<StepResult<EnvState>>[] = new Array(reqs.length);
  const runsCode = deps.env.execute !== undefined && deps.env.toolAgents.includes(agent);
  const stateKeys = new Map<EnvState, string>();
  const shared = new Map<string, Promise<StepResult<EnvState>>>();
  const start = (j: number, r: GenerateResult) => {
    texts[j] = deps.tokenizer.decode(r.ids, { skipSpecialTokens: true });
    const state = branches[Math.floor(j / K)].state;
    let key: string | null = null;
    if (runsCode) {
      let sk = stateKeys.get(state);
      if (sk === undefined) stateKeys.set(state, sk = JSON.stringify(state));
      key = `${sk}\u0000${texts[j]}`;
      const same = shared.get(key);
      if (same) {
        tools.shared++;
        stepping[j] = same;
        return;
      }
      tools.run++;
    }
    stepping[j] = act(deps.env, state, agent, texts[j], deps.executor);
    if (key !== null) shared.set(key, stepping[j]);
    // A step that fails while the GPU still decodes is reported by the Promise.all below, not as
    // an unhandled rejection in between.
    stepping[j].catch(() => {});
  };
  const t0 = performance.now();
  const results = await pol.generator.generate(
    reqs,
    decode ? { onFinish: start, decode } : { onFinish: start },
  );
  const t1 = performance.now();
  results.forEach((r, j) => stepping[j] === undefined && start(j, r));
  const steps = await Promise.all(stepping);
  secs.generate += (t1 - t0) / 1000;
  secs.env += (performance.now() - t1) / 1000;
  return { prompts, results, texts, steps, clipped };
}

/**
 * The team reward each tool candidate leads to: the next agent of the same turn samples once on
 * every candidate's state (one batched generation) and its step's team reward is the candidate's.
 * Candidates whose state ends the turn or the episode keep their own team reward. Returns one
 * value per candidate, in `steps` order, and the tokens generated.
 */
async function lookaheadTeam(
  deps: RolloutDeps,
  o: RolloutOptions,
  bs: Branch[],
  steps: StepResult<EnvState>[],
  K: number,
  secs: { generate: number; env: number },
  tools: ToolRuns,
) {
  const { env } = deps;
  const team = steps.map((s) => s.teamReward);
  const next = steps.map((s, j) => {
    const b = bs[Math.floor(j / K)];
    const n = currentAgent(env, s.state);
    return n !== null && s.state.turn === b.state.turn && !env.toolAgents.includes(n) ? n : null;
  });
  let tokens = 0;
  for (const agent of new Set(next.filter((n): n is string => n !== null))) {
    const js = next.flatMap((n, j) => (n === agent ? [j] : []));
    // Pseudo-branches on each candidate's state; traj 512 + candidate keeps their sampling
    // streams apart from the real candidates' (traj 0) of the same (step, env, turn, agent).
    const look: Branch[] = js.map((j) => {
      const b = bs[Math.floor(j / K)];
      return { env: b.env, state: steps[j].state, traj: 512 + (j % K), startTurn: b.startTurn };
    });
    const r = await sampleAndAct(deps, o, look, agent, 1, secs, tools);
    js.forEach((j, i) => (team[j] = r.steps[i].teamReward));
    tokens += r.results.reduce((a, x) => a + x.ids.length, 0);
  }
  return { team, tokens };
}

/**
 * Candidates of one branch that wrote the same text reach the same state, so they share one
 * lookahead credit: the mean of their samples. Otherwise the partner's sampling noise gives
 * identical actions different rewards, and GRPO pushes the same sequence up and down at once: a
 * near-zero gradient that Adam turns into a full lr-sized step in a random direction.
 */
function poolIdentical(team: number[], texts: readonly string[], K: number): number[] {
  const out = [...team];
  for (let b = 0; b < team.length; b += K) {
    const byText = new Map<string, number[]>();
    for (let j = b; j < b + K; j++) byText.set(texts[j], [...(byText.get(texts[j]) ?? []), j]);
    for (const js of byText.values()) {
      const mean = js.reduce((a, j) => a + team[j], 0) / js.length;
      for (const j of js) out[j] = mean;
    }
  }
  return out;
}

/** Tree-structured AT-GRPO rollouts over `tasks` (one environment each). */
export async function rolloutTree(
  deps: RolloutDeps,
  tasks: readonly unknown[],
  o: RolloutOptions,
): Promise<RolloutResult> {
  const { env } = deps;
  const branches: Branch[] = tasks.map((t, e) => branch(env, t, e, 0));
  const groups: Group[] = [];
  const episodes: Episode[] = tasks.map((_, e) => ({
    env: e,
    success: false,
    turns: 0,
    rewardByAgent: {},
    transcript: [],
  }));
  const secs = { generate: 0, env: 0 };
  const tools: ToolRuns = { run: 0, shared: 0 };
  let generatedTokens = 0, clippedPrompts = 0;
  // K = 1 lookahead credit: the tool sample of each env waiting for its partner's real step.
  const creditLater = o.toolCredit === "lookahead" && o.K === 1 && !env.parallel;
  const waiting = new Map<number, { sample: Sample; turn: number }>();
  for (let guard = 0; guard < 10_000; guard++) {
    const active = branches.filter((b) => moving(env, b, o));
    if (!active.length) break;
    const byAgent = new Map<string, Branch[]>();
    for (const b of active) {
      byAgent.set(currentAgent(env, b.state)!, [
        ...(byAgent.get(currentAgent(env, b.state)!) ?? []),
        b,
      ]);
    }
    for (const [agent, bs] of byAgent) {
      const { prompts, results, texts, steps, clipped } = await sampleAndAct(
        deps,
        o,
        bs,
        agent,
        o.K,
        secs,
        tools,
      );
      clippedPrompts += clipped;
      let team = steps.map((s) => s.teamReward);
      if (
        o.toolCredit === "lookahead" && o.K > 1 && !env.parallel && env.toolAgents.includes(agent)
      ) {
        const look = await lookaheadTeam(deps, o, bs, steps, o.K, secs, tools);
        team = poolIdentical(look.team, texts, o.K);
        generatedTokens += look.tokens;
      }
      bs.forEach((b, i) => {
        const turn = b.state.turn;
        const samples: Sample[] = Array.from({ length: o.K }, (_, c) => {
          const j = i * o.K + c, r = results[j], s = steps[j];
          generatedTokens += r.ids.length;
          return {
            env: b.env,
            agent,
            turn,
            candidate: c,
            promptIds: prompts[i],
            completionIds: r.ids,
            oldLogp: r.logprobs,
            text: texts[j],
            reward: o.alpha * team[j] + s.localReward,
            team: team[j],
            local: s.localReward,
            chosen: false,
            invalid: s.info.invalid?.code,
          };
        });
        // Greedy branch: continue from the best candidate (the first on ties).
        let best = 0;
        samples.forEach((s, c) => s.reward > samples[best].reward && (best = c));
        samples[best].chosen = true;
        groups.push({ key: `${b.env}|${agent}|${turn}`, env: b.env, agent, turn, samples });
        const ep = episodes[b.env];
        ep.rewardByAgent[agent] = (ep.rewardByAgent[agent] ?? 0) + samples[best].reward;
        ep.transcript.push({ turn, agent, text: samples[best].text, reward: samples[best].reward });
        b.state = steps[i * o.K + best].state;
        if (creditLater) {
          const w = waiting.get(b.env);
          waiting.delete(b.env);
          if (env.toolAgents.includes(agent)) {
            // Credited by the partner's next step, if it comes in this turn (as lookaheadTeam).
            const n = currentAgent(env, b.state);
            if (n !== null && b.state.turn === turn && !env.toolAgents.includes(n)) {
              waiting.set(b.env, { sample: samples[best], turn });
            }
          } else if (w && w.turn === turn) {
            const t = w.sample, team = samples[best].team, add = o.alpha * (team - t.team);
            t.team = team;
            t.reward += add;
            ep.rewardByAgent[t.agent] += add;
            const line = ep.transcript.find((x) => x.turn === turn && x.agent === t.agent);
            if (line) line.reward = t.reward;
          }
        }
      });
    }
  }
  for (const b of branches) {
    episodes[b.env].success = env.success(b.state);
    episodes[b.env].turns = b.state.turn + (b.state.cursor > 0 ? 1 : 0);
  }
  return { groups, episodes, generatedTokens, clippedPrompts, seconds: secs, toolRuns: tools };
}

/** Plain GRPO: K independent trajectories per task, one group per task, return-credited. */
export async function rolloutIndependent(
  deps: RolloutDeps,
  tasks: readonly unknown[],
  o: RolloutOptions,
): Promise<RolloutResult> {
  const { env } = deps;
  const branches: Branch[] = tasks.flatMap((t, e) =>
    Array.from({ length: o.K }, (_, traj) => branch(env, t, e, traj))
  );
  const perTraj: Sample[][] = branches.map(() => []);
  const secs = { generate: 0, env: 0 };
  const tools: ToolRuns = { run: 0, shared: 0 };
  let generatedTokens = 0, clippedPrompts = 0;
  for (let guard = 0; guard < 10_000; guard++) {
    const active = branches.map((b, i) => ({ b, i })).filter(({ b }) => moving(env, b, o));
    if (!active.length) break;
    const byAgent = new Map<string, { b: Branch; i: number }[]>();
    for (const x of active) {
      byAgent.set(currentAgent(env, x.b.state)!, [
        ...(byAgent.get(currentAgent(env, x.b.state)!) ?? []),
        x,
      ]);
    }
    for (const [agent, xs] of byAgent) {
      const { prompts, results, texts, steps, clipped } = await sampleAndAct(
        deps,
        o,
        xs.map((x) => x.b),
        agent,
        1,
        secs,
        tools,
      );
      clippedPrompts += clipped;
      xs.forEach(({ b, i }, j) => {
        const r = results[j], s = steps[j];
        generatedTokens += r.ids.length;
        perTraj[i].push({
          env: b.env,
          agent,
          turn: b.state.turn,
          candidate: b.traj,
          promptIds: prompts[j],
          completionIds: r.ids,
          oldLogp: r.logprobs,
          text: texts[j],
          reward: 0,
          team: s.teamReward,
          local: s.localReward,
          chosen: true,
          invalid: s.info.invalid?.code,
        });
        b.state = s.state;
      });
    }
  }
  const groups: Group[] = tasks.map((_, e) => ({
    key: `${e}|*|*`,
    env: e,
    agent: "*",
    turn: -1,
    samples: [],
  }));
  const episodes: Episode[] = tasks.map((_, e) => ({
    env: e,
    success: false,
    turns: 0,
    rewardByAgent: {},
    transcript: [],
  }));
  branches.forEach((b, i) => {
    const ret = perTraj[i].reduce((acc, s) => acc + o.alpha * s.team + s.local, 0);
    for (const s of perTraj[i]) groups[b.env].samples.push({ ...s, reward: ret });
    if (b.traj === 0) { // report the first trajectory of each task as its episode
      const ep = episodes[b.env];
      ep.success = env.success(b.state);
      ep.turns = b.state.turn + (b.state.cursor > 0 ? 1 : 0);
      for (const s of perTraj[i]) {
        ep.rewardByAgent[s.agent] = (ep.rewardByAgent[s.agent] ?? 0) + o.alpha * s.team + s.local;
        ep.transcript.push({
          turn: s.turn,
          agent: s.agent,
          text: s.text,
          reward: o.alpha * s.team + s.local,
        });
      }
    }
  });
  return { groups, episodes, generatedTokens, clippedPrompts, seconds: secs, toolRuns: tools };
}
