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

/**
 * A path that cannot be written: permission denied (EACCES, EPERM), a read-only file system
 * (EROFS) or a file where a directory is expected (ENOTDIR). The path was the user's choice (an
 * output or run directory): bad input, exit code 2.
 */
export class NotWritableError extends IoError {
  constructor(
    readonly path: string,
    readonly code: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(
      `${path}: cannot write here (${code}: ${reason}); ${
        NOT_WRITABLE_HINTS[code] ?? NOT_WRITABLE_HINTS.EACCES
      }`,
      options,
    );
  }
}

/** The disk (or the user's quota) is full (ENOSPC, EDQUOT): a failure while running, exit code 1. */
export class DiskFullError extends IoError {
  constructor(
    readonly path: string,
    readonly code: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(
      `${path}: the disk is full (${code}: ${reason}); free space (old runs/, checkpoints: run.keepLast) ` +
        "or write to another disk, then run again (a train run continues from its last checkpoint with --resume RUN_DIR)",
      options,
    );
  }
}

const OTHER_PATH = "pick another directory (train, sft: --set run.outDir=DIR)";
const NOT_WRITABLE_HINTS: Record<string, string> = {
  EACCES: `permission denied: make it writable for this user (chmod/chown) or ${OTHER_PATH}`,
  EPERM: `operation not permitted: make it writable for this user or ${OTHER_PATH}`,
  EROFS: `the file system is read-only: ${OTHER_PATH} on a writable one`,
  ENOTDIR: `a file stands where a directory is expected: move the file away or ${OTHER_PATH}`,
};

/** The error code of a failed file-system call (Deno sets `code`, e.g. "ENOSPC"). */
function osCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === "string") return code;
  if (typeof Deno === "undefined") return undefined; // a browser: no OS codes
  if (e instanceof Deno.errors.PermissionDenied) return "EACCES";
  if (e instanceof Deno.errors.NotADirectory) return "ENOTDIR";
  return undefined;
}

/**
 * A failed write to `path` as the error to show: NotWritableError or DiskFullError (naming the
 * path and what to do, with the original as `cause`) where the OS said why; `e` itself otherwise.
 */
export function writeFailure(e: unknown, path: string): unknown {
  if (e instanceof NotWritableError || e instanceof DiskFullError) return e;
  const code = osCode(e);
  if (code === undefined) return e;
  // Deno's message is "<reason> (os error N): <op> '<path>'"; keep the reason
  const reason = ((e as Error).message ?? String(e)).replace(/ \(os error \d+\).*$/s, "");
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new DiskFullError(path, code, reason, { cause: e });
  }
  if (code in NOT_WRITABLE_HINTS) return new NotWritableError(path, code, reason, { cause: e });
  return e;
}

/** Runs a write to `path`, turning its failure into writeFailure's error. */
export async function writingTo<T>(path: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    throw writeFailure(e, path);
  }
}
