// A gym-style facade for scripts and notebooks: one object holding one episode, `reset()` then
// `await step(text)` for whichever agent is to act. Reward is α·team + local (AT-GRPO's r).

import { act, currentAgent, resetFrom } from "./api.ts";
import { EpisodeOverError, NoEpisodeError } from "./errors.ts";
import type {
  AnyEnvDefinition,
  CodeExecutor,
  EnvState,
  GymObservation,
  GymStep,
  PromptStyle,
  Rendered,
  TaskOrSeed,
} from "./types.ts";

export interface GymOptions {
  style?: PromptStyle;
  executor?: CodeExecutor;
  /** Weight of the team reward (docs/algorithm.md: α = 1). */
  alpha?: number;
}

export class GymEnv {
  private current: EnvState | null = null;
  readonly style: PromptStyle;
  readonly alpha: number;

  constructor(readonly env: AnyEnvDefinition, private opts: GymOptions = {}) {
    this.style = opts.style ?? "compact";
    this.alpha = opts.alpha ?? 1;
  }

  /** Starts an episode from a task, or from `{ seed, split?, difficulty? }` (default seed 0). */
  reset(task: TaskOrSeed<unknown> = { seed: 0 }): GymObservation {
    this.current = resetFrom(this.env, task);
    return this.observation();
  }

  /** Plays `text` as the message of the agent to act now. */
  async step(text: string): Promise<GymStep> {
    const s = this.state;
    const agent = currentAgent(this.env, s);
    if (agent === null) throw new EpisodeOverError(this.env.id);
    const r = await act(this.env, s, agent, text, this.opts.executor);
    this.current = r.state;
    return {
      observation: this.observation(),
      reward: this.alpha * r.teamReward + r.localReward,
      done: r.terminated || r.truncated,
      info: { ...r.info, agent, teamReward: r.teamReward, localReward: r.localReward },
    };
  }

  get state(): EnvState {
    if (this.current === null) throw new NoEpisodeError(this.env.id);
    return this.current;
  }

  render(): Rendered {
    return this.env.render(this.state);
  }

  private observation(): GymObservation {
    const agent = currentAgent(this.env, this.state);
    return {
      agent,
      prompt: agent === null ? null : this.env.observe(this.state, agent, this.style),
    };
  }
}
