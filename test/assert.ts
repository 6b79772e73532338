// Minimal assertions (JSR's @std/assert is unreachable here; these run in Deno and browsers).

export class AssertionError extends Error {
  override name = "AssertionError";
}

export function assert(cond: unknown, message = "assertion failed"): asserts cond {
  if (!cond) throw new AssertionError(message);
}

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) {
    throw new AssertionError(`${message ?? "not equal"}:\n  actual:   ${a}\n  expected: ${e}`);
  }
}

export async function assertRejects(
  fn: () => Promise<unknown>,
  name?: string,
  includes?: string,
): Promise<Error> {
  try {
    await fn();
  } catch (e) {
    const err = e as Error;
    if (name && err.name !== name) {
      throw new AssertionError(`expected ${name}, got ${err.name}: ${err.message}`);
    }
    if (includes && !err.message.includes(includes)) {
      throw new AssertionError(`error message lacks "${includes}": ${err.message}`);
    }
    return err;
  }
  throw new AssertionError(`expected a rejection${name ? ` (${name})` : ""}`);
}

export function assertThrows(fn: () => unknown, name?: string, includes?: string): Error {
  try {
    fn();
  } catch (e) {
    const err = e as Error;
    if (name && err.name !== name) {
      throw new AssertionError(`expected ${name}, got ${err.name}: ${err.message}`);
    }
    if (includes && !err.message.includes(includes)) {
      throw new AssertionError(`error message lacks "${includes}": ${err.message}`);
    }
    return err;
  }
  throw new AssertionError(`expected a throw${name ? ` (${name})` : ""}`);
}

/** max_i |a[i] − b[i]| of two arrays of the same length (a length mismatch fails). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assertEquals(a.length, b.length, "maxAbsDiff: lengths");
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
