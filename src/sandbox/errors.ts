// Errors the sandbox throws to its caller. They cross comlink by `name`, so callers test
// `err.name === "SandboxUnavailableError"`, not instanceof. What the *code* did wrong is never
// thrown: it comes back in ExecResult.error.

/** A bad argument to runJs / SandboxPool; the message names the argument and the fix. */
export class SandboxArgumentError extends Error {
  override name = "SandboxArgumentError";
}

/** This host cannot run the sandbox as asked (missing permission, no Worker, ...). */
export class SandboxUnavailableError extends Error {
  override name = "SandboxUnavailableError";
}

/** Work was given to (or queued on) a SandboxPool after close(). */
export class SandboxPoolClosedError extends Error {
  override name = "SandboxPoolClosedError";
  constructor() {
    super("this SandboxPool was closed; create a new SandboxPool to run more code");
  }
}
