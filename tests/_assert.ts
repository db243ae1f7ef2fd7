/**
 * A tiny assertion library for the test suite (JSR, and so `@std/assert`, is
 * unreachable from the build environment).
 *
 * @module
 */

/** Thrown when an assertion fails. */
export class AssertionError extends Error {
  /** Creates an assertion error. */
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

/** A constructor of errors, possibly abstract; used to check an error's class. */
// deno-lint-ignore no-explicit-any
export type ErrorClass<E extends Error = Error> = abstract new (...args: any[]) => E;

function show(value: unknown): string {
  return Deno.inspect(value, { depth: 8, strAbbreviateSize: 400, iterableLimit: 200 });
}

/** Fails unless `condition` is truthy. */
export function assert(condition: unknown, msg?: string): asserts condition {
  if (!condition) throw new AssertionError(msg ?? "Assertion failed");
}

function isTypedArray(value: unknown): value is ArrayLike<number> & ArrayBufferView {
  return ArrayBuffer.isView(value) && !(value instanceof DataView);
}

function equal(a: unknown, b: unknown, seen: Map<object, object>): boolean {
  if (a === b) return true;
  if (typeof a === "number" && typeof b === "number") return Number.isNaN(a) && Number.isNaN(b);
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (isTypedArray(a) || isTypedArray(b)) {
    if (!isTypedArray(a) || !isTypedArray(b)) return false;
    if (a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && a[i] !== b[i]) return false;
    return true;
  }
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [key, value] of a) {
      if (!b.has(key) || !equal(value, b.get(key), seen)) return false;
    }
    return true;
  }
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set && b instanceof Set) || a.size !== b.size) return false;
    for (const value of a) if (!b.has(value)) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) return false;
  // Plain and prototype-less objects compare alike; other classes must match.
  const protoA = Object.getPrototypeOf(a);
  const protoB = Object.getPrototypeOf(b);
  const plain = (p: unknown) => p === null || p === Object.prototype;
  if (protoA !== protoB && !(plain(protoA) && plain(protoB))) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (const key of keysA) {
    if (!Object.hasOwn(b, key)) return false;
    if (
      !equal((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], seen)
    ) return false;
  }
  return true;
}

/**
 * Fails unless `actual` deep-equals `expected`: structural comparison of
 * primitives, arrays, plain (or prototype-less) objects, typed arrays such as
 * Uint8Array (byte by byte), Dates, Maps and Sets. `0` equals `-0`.
 */
export function assertEquals(actual: unknown, expected: unknown, msg?: string): void {
  if (equal(actual, expected, new Map())) return;
  const detail = `Values are not equal.\n    actual: ${show(actual)}\n  expected: ${
    show(expected)
  }`;
  throw new AssertionError(msg ? `${msg}: ${detail}` : detail);
}

function checkError<E extends Error>(
  error: unknown,
  ErrorClass: ErrorClass<E> | undefined,
  msgIncludes: string | undefined,
  what: string,
): E {
  if (!(error instanceof Error)) {
    throw new AssertionError(`${what} a non-Error value: ${show(error)}`);
  }
  if (ErrorClass && !(error instanceof ErrorClass)) {
    throw new AssertionError(
      `Expected error to be an instance of ${ErrorClass.name}, but got ${error.name}: ${error.message}`,
    );
  }
  if (msgIncludes !== undefined && !error.message.includes(msgIncludes)) {
    throw new AssertionError(
      `Expected error message to include ${JSON.stringify(msgIncludes)}, but got ${
        JSON.stringify(error.message)
      }`,
    );
  }
  return error as E;
}

/**
 * Fails unless `fn` throws an Error (of class `ErrorClass`, whose message
 * includes `msgIncludes`, when given). Returns the error thrown.
 */
export function assertThrows<E extends Error = Error>(
  fn: () => unknown,
  ErrorClass?: ErrorClass<E>,
  msgIncludes?: string,
): E {
  try {
    fn();
  } catch (error) {
    return checkError(error, ErrorClass, msgIncludes, "Function threw");
  }
  throw new AssertionError(
    `Expected function to throw${ErrorClass ? ` ${ErrorClass.name}` : ""}, but it returned`,
  );
}

/**
 * Fails unless `fn` returns a promise that rejects with an Error (of class
 * `ErrorClass`, whose message includes `msgIncludes`, when given). Resolves
 * to the error.
 */
export async function assertRejects<E extends Error = Error>(
  fn: () => PromiseLike<unknown>,
  ErrorClass?: ErrorClass<E>,
  msgIncludes?: string,
): Promise<E> {
  try {
    await fn();
  } catch (error) {
    return checkError(error, ErrorClass, msgIncludes, "Promise rejected with");
  }
  throw new AssertionError(
    `Expected promise to reject${ErrorClass ? ` with ${ErrorClass.name}` : ""}, but it resolved`,
  );
}
