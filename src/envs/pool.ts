// The env pool: the one interface a trainer uses to run many episodes (create, score K candidate
// messages on clones of an episode's state, continue from the chosen one). LocalEnvPool runs it
// in this thread; WorkerEnvPool (worker_pool.ts) runs LocalEnvPools in workers behind comlink.
// Everything crossing the interface is plain data, so both behave the same.

import { act, currentAgent, resetFrom } from "./api.ts";
import { EpisodeOverError, UnknownEpisodeError } from "./errors.ts";
import { getEnv } from "./registry.ts";
import type {
  AgentId,
  AnyEnvDefinition,
  CodeExecutor,
  EnvState,
  Prompt,
  PromptStyle,
  Rendered,
  StepInfo,
  TaskOrSeed,
} from "./types.ts";

export interface EpisodeSpec {
  envId: string;
  task: TaskOrSeed<unknown>;
  style: PromptStyle;
}

/** Where an episode stands: who acts next and what that agent sees. */
export interface EpisodeView {
  id: number;
  envId: string;
  turn: number;
  agent: AgentId | null;
  prompt: Prompt | null;
  done: boolean;
  success: boolean;
}

/** One scored candidate message; the state it leads to stays in the pool until commit/close. */
export interface CandidateResult {
  agent: AgentId;
  teamReward: number;
  localReward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

export interface BranchRequest {
  id: number;
  /** K candidate messages of the episode's current agent. */
  texts: string[];
}

export interface EnvPool {
  create(specs: EpisodeSpec[]): Promise<EpisodeView[]>;
  views(ids: number[]): Promise<EpisodeView[]>;
  /**
   * Any agent's prompt now, in the episode's style. For parallel envs this lets a trainer sample
   * every agent of a turn at once (their prompts do not depend on each other's actions).
   */
  prompts(requests: { id: number; agent: AgentId }[]): Promise<Prompt[]>;
  /** Scores each request's candidates on clones of its episode's state; nothing advances yet. */
  branch(requests: BranchRequest[]): Promise<CandidateResult[][]>;
  /** Continues each episode from candidate `index` of its last branch(). */
  commit(choices: { id: number; index: number }[]): Promise<EpisodeView[]>;
  states(ids: number[]): Promise<EnvState[]>;
  renders(ids: number[]): Promise<Rendered[]>;
  close(ids: number[]): Promise<void>;
  dispose(): Promise<void>;
}

export class CommitWithoutBranchError extends Error {
  constructor(id: number, index: number) {
    super(
      `episode ${id}: commit(${index}) without a matching branch(); call branch() first and pick an index it returned`,
    );
    this.name = "CommitWithoutBranchError";
  }
}

interface Episode {
  env: AnyEnvDefinition;
  state: EnvState;
  style: PromptStyle;
  pending: EnvState[] | null;
}

export class LocalEnvPool implements EnvPool {
  private episodes = new Map<number, Episode>();
  private nextId = 0;

  /** `idBase` keeps ids distinct across the pools of a WorkerEnvPool. */
  constructor(private executor?: CodeExecutor, idBase = 0) {
    this.nextId = idBase;
  }

  /** For the worker side, set up after construction: ids of episodes created from now on. */
  setIdBase(idBase: number): void {
    this.nextId = idBase;
  }

  /** Late injection, for the worker side: the executor arrives as a comlink proxy. */
  setExecutor(executor: CodeExecutor | undefined): void {
    this.executor = executor;
  }

  create(specs: EpisodeSpec[]): Promise<EpisodeView[]> {
    return Promise.resolve(specs.map((spec) => {
      const env = getEnv(spec.envId);
      const id = this.nextId++;
      this.episodes.set(id, {
        env,
        state: resetFrom(env, spec.task),
        style: spec.style,
        pending: null,
      });
      return this.view(id);
    }));
  }

  views(ids: number[]): Promise<EpisodeView[]> {
    return Promise.resolve(ids.map((id) => this.view(id)));
  }

  prompts(requests: { id: number; agent: AgentId }[]): Promise<Prompt[]> {
    return Promise.resolve(requests.map(({ id, agent }) => {
      const ep = this.get(id);
      return ep.env.observe(ep.state, agent, ep.style);
    }));
  }

  async branch(requests: BranchRequest[]): Promise<CandidateResult[][]> {
    return await Promise.all(requests.map(async ({ id, texts }) => {
      const ep = this.get(id);
      const agent = currentAgent(ep.env, ep.state);
      if (agent === null) throw new EpisodeOverError(ep.env.id);
      // The state is immutable and step never mutates, so every candidate can share it.
      const results = await Promise.all(
        texts.map((t) => act(ep.env, ep.state, agent, t, this.executor)),
      );
      ep.pending = results.map((r) => r.state);
      return results.map((r) => ({
        agent,
        teamReward: r.teamReward,
        localReward: r.localReward,
        terminated: r.terminated,
        truncated: r.truncated,
        info: r.info,
      }));
    }));
  }

  commit(choices: { id: number; index: number }[]): Promise<EpisodeView[]> {
    return Promise.resolve(choices.map(({ id, index }) => {
      const ep = this.get(id);
      const next = ep.pending?.[index];
      if (next === undefined) throw new CommitWithoutBranchError(id, index);
      ep.state = next;
      ep.pending = null;
      return this.view(id);
    }));
  }

  states(ids: number[]): Promise<EnvState[]> {
    return Promise.resolve(ids.map((id) => this.get(id).state));
  }

  renders(ids: number[]): Promise<Rendered[]> {
    return Promise.resolve(ids.map((id) => {
      const ep = this.get(id);
      return ep.env.render(ep.state);
    }));
  }

  close(ids: number[]): Promise<void> {
    for (const id of ids) this.episodes.delete(id);
    return Promise.resolve();
  }

  dispose(): Promise<void> {
    this.episodes.clear();
    return Promise.resolve();
  }

  private get(id: number): Episode {
    const ep = this.episodes.get(id);
    if (!ep) throw new UnknownEpisodeError(id);
    return ep;
  }

  private view(id: number): EpisodeView {
    const { env, state, style } = this.get(id);
    const agent = currentAgent(env, state);
    return {
      id,
      envId: env.id,
      turn: state.turn,
      agent,
      prompt: agent === null ? null : env.observe(state, agent, style),
      done: agent === null,
      success: env.success(state),
    };
  }
}
