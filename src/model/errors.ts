// Named errors of the model layer (config, weights, tokenizers). Callers tell them apart by
// `name` (it survives comlink); every message names the offending field and says what to do.

/** Base class: sets `name` from the subclass so errors stay recognisable across workers. */
export class ModelError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The config asks for something this engine does not implement (a rope scaling type, sliding
 * window attention, MoE, another activation, ...). Running anyway would silently compute a
 * different model, so we refuse and name the field.
 */
export class UnsupportedModelError extends ModelError {
  constructor(readonly field: string, readonly value: unknown, advice: string) {
    super(`config.json: ${field} = ${JSON.stringify(value)} is not supported. ${advice}`);
  }
}

/** A config field is missing, mistyped or inconsistent with another field. */
export class InvalidConfigError extends ModelError {
  constructor(readonly field: string, message: string) {
    super(`config.json: ${field}: ${message}`);
  }
}

/** The checkpoint holds a tensor the config does not account for (another architecture?). */
export class UnexpectedTensorError extends ModelError {
  constructor(readonly file: string, readonly tensors: readonly string[]) {
    const shown = tensors.slice(0, 5).map((t) => `"${t}"`).join(", ");
    super(
      `${file}: ${tensors.length} tensor(s) not used by this config: ${shown}` +
        `${tensors.length > 5 ? ", ..." : ""}. The weights belong to a different architecture ` +
        `or layer count than config.json says; use the config that came with the weights.`,
    );
  }
}

/** Tokenizer files are missing or malformed, or a token id is out of range. */
export class TokenizerError extends ModelError {}
