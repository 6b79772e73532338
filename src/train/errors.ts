// Named errors of the training engine (optimizer, losses, schedules, checkpoints). Callers tell
// them apart by `name` (it survives comlink), and every message says what to do next.

/** Base class: sets `name` from the subclass so errors stay recognisable across workers. */
export class TrainError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An optimizer, schedule or loss setting is out of range or inconsistent with another one. */
export class TrainConfigError extends TrainError {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
  }
}

/** A loss batch is malformed: lengths disagree, a target id is out of the vocabulary, ... */
export class LossInputError extends TrainError {}

/** Base of checkpoint errors: always names the checkpoint directory (or file). */
export class CheckpointError extends TrainError {
  constructor(readonly where: string, message: string, options?: ErrorOptions) {
    super(`${where}: ${message}`, options);
  }
}

/** No complete checkpoint here (missing manifest: never written, or a write was interrupted). */
export class CheckpointNotFoundError extends CheckpointError {}

/** A checkpoint file is missing, truncated or unparsable: the checkpoint is damaged. */
export class CheckpointCorruptError extends CheckpointError {}

/** The checkpoint is intact but does not fit what the caller resumes into (shapes, settings). */
export class CheckpointMismatchError extends CheckpointError {}

/** adapter_config.json asks for a PEFT feature this engine does not implement, or is malformed. */
export class PeftFormatError extends CheckpointError {}
