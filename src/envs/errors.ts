// Named errors of the environment layer. Each message says what the caller should do instead;
// `name` is set explicitly so the errors can be told apart after crossing comlink.

export class EnvError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EnvError";
  }
}

export class UnknownEnvError extends EnvError {
  constructor(id: string, known: readonly string[]) {
    super(`unknown environment "${id}"; use one of: ${known.join(", ")} (ids are versioned: *_v1)`);
    this.name = "UnknownEnvError";
  }
}

export class NoSoloVariantError extends EnvError {
  constructor(id: string, why: string, withSolo: readonly string[]) {
    super(
      `environment "${id}" has no single-agent (L0) variant: ${why}; single-agent variants ` +
        `exist for: ${withSolo.join(", ")} (use level L1 as the single-policy baseline here)`,
    );
    this.name = "NoSoloVariantError";
  }
}

export class DuplicateEnvError extends EnvError {
  constructor(id: string) {
    super(`environment "${id}" is registered twice; give the new version a new id (e.g. *_v2)`);
    this.name = "DuplicateEnvError";
  }
}

export class NotYourTurnError extends EnvError {
  constructor(envId: string, agent: string, expected: string | null) {
    super(
      expected === null
        ? `${envId}: "${agent}" acted after the episode ended; check terminated/truncated and reset`
        : `${envId}: "${agent}" acted but it is "${expected}"'s turn; use currentAgent(env, state)`,
    );
    this.name = "NotYourTurnError";
  }
}

export class EpisodeOverError extends EnvError {
  constructor(envId: string) {
    super(`${envId}: step() after the episode ended; check terminated/truncated and reset()`);
    this.name = "EpisodeOverError";
  }
}

export class NotExecutedError extends EnvError {
  constructor(envId: string, agent: string) {
    super(
      `${envId}: "${agent}" sent code that was never run; call env.execute(state, agent, ` +
        `action, executor) before step(), or use act() which does both`,
    );
    this.name = "NotExecutedError";
  }
}

export class ExecutorMissingError extends EnvError {
  constructor(envId: string, agent: string) {
    super(
      `${envId}: "${agent}" is a tool agent and needs a CodeExecutor; pass the sandbox ` +
        `(src/sandbox) as the executor`,
    );
    this.name = "ExecutorMissingError";
  }
}

export class DifficultyError extends EnvError {
  constructor(envId: string, detail: string) {
    super(`${envId}: bad difficulty: ${detail}`);
    this.name = "DifficultyError";
  }
}

export class SplitExhaustedError extends EnvError {
  constructor(envId: string, split: string, attempts: number) {
    super(
      `${envId}: no ${split} task found in ${attempts} draws; this difficulty yields too few ` +
        `distinct tasks for disjoint splits: make the task space larger`,
    );
    this.name = "SplitExhaustedError";
  }
}

export class UnknownEpisodeError extends EnvError {
  constructor(id: number) {
    super(`episode ${id} does not exist (closed or never created); create() it first`);
    this.name = "UnknownEpisodeError";
  }
}

export class NoEpisodeError extends EnvError {
  constructor(envId: string) {
    super(`${envId}: no episode yet; call reset() before step() or state`);
    this.name = "NoEpisodeError";
  }
}
