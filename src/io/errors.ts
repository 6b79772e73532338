// Named errors of checkpoint I/O. Callers tell them apart by `name` (it survives comlink);
// each carries the file (and tensor, where there is one) and says what to do next.

/** Base class: sets `name` from the subclass so errors stay recognisable across workers. */
export class IoError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A byte source returned fewer bytes than asked for, or a file/URL could not be read. */
export class ReadError extends IoError {
  constructor(readonly file: string, message: string, options?: ErrorOptions) {
    super(`${file}: ${message}`, options);
  }
}

/** Base of the safetensors format errors: always names the file, and the tensor when known. */
export class SafetensorsError extends IoError {
  constructor(
    readonly file: string,
    readonly tensor: string | null,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${file}${tensor === null ? "" : ` (tensor "${tensor}")`}: ${message}`, options);
  }
}

/** The file ends before the header or before the tensor data the header promises. */
export class SafetensorsTruncatedError extends SafetensorsError {}

/** The 8-byte header length is zero, absurdly large, or larger than the file. */
export class SafetensorsHeaderLengthError extends SafetensorsError {}

/** The header is not valid UTF-8 JSON, or its entries are not {dtype, shape, data_offsets}. */
export class SafetensorsHeaderError extends SafetensorsError {}

/** A tensor's data_offsets are not ordered integers or disagree with its shape and dtype. */
export class SafetensorsOffsetError extends SafetensorsError {}

/** A tensor's dtype cannot be converted to float32 (only F32, F16 and BF16 can). */
export class UnsupportedDtypeError extends SafetensorsError {}

/** A tensor the model needs is not in the checkpoint (or the index points to a missing file). */
export class MissingTensorError extends SafetensorsError {}

/** A tensor's shape differs from the one the model config implies. */
export class ShapeMismatchError extends SafetensorsError {
  constructor(
    file: string,
    tensor: string,
    readonly expected: readonly number[],
    readonly actual: readonly number[],
    hint = "check that config.json belongs to these weights",
  ) {
    super(
      file,
      tensor,
      `shape [${actual.join(", ")}] but expected [${expected.join(", ")}]; ${hint}`,
    );
  }
}

/** A sharded checkpoint's model.safetensors.index.json is malformed. */
export class SafetensorsIndexError extends SafetensorsError {}
