/**
 * Typed errors shared by every layer. Each carries a {@linkcode ErrorCode}
 * that the command line maps to an exit status (see {@linkcode EXIT_CODES}),
 * and an optional hint telling the user what to do next.
 *
 * @example
 * ```ts
 * import { NotFoundError, exitCodeOf } from "./errors.ts";
 * const error = new NotFoundError('No snapshot matches "abcd"');
 * console.assert(exitCodeOf(error) === 4);
 * ```
 * @module
 */

/** The kinds of failure ctxsnap distinguishes; each maps to one exit status. */
export type ErrorCode =
  | "failure"
  | "usage"
  | "untrusted"
  | "not_found"
  | "conflict"
  | "busy"
  | "no_store";

/** Exit status per error code, as documented in the README and docs/CLI.md. */
export const EXIT_CODES: Readonly<Record<ErrorCode, number>> = Object.freeze({
  failure: 1,
  usage: 2,
  untrusted: 3,
  not_found: 4,
  conflict: 5,
  busy: 6,
  no_store: 10,
});

/** Options accepted by every {@linkcode CtxsnapError}. */
export interface CtxsnapErrorOptions {
  /** What the user can do about it; printed as `ctxsnap: hint: …`. */
  hint?: string;
  /** The underlying error, if any. */
  cause?: unknown;
}

/** Base class of every error ctxsnap raises on purpose. */
export class CtxsnapError extends Error {
  /** The kind of failure, which decides the exit status. */
  readonly code: ErrorCode;
  /** What the user can do about it. */
  readonly hint: string | undefined;

  /** Creates an error of kind `code`. */
  constructor(message: string, code: ErrorCode = "failure", options: CtxsnapErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CtxsnapError";
    this.code = code;
    this.hint = options.hint;
  }
}

/** Input is malformed, tampered with, or fails an integrity check (exit 1). */
export class IntegrityError extends CtxsnapError {
  /** Creates an integrity error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "failure", options);
    this.name = "IntegrityError";
  }
}

/** Text is not acceptable canonical JSON (exit 1). */
export class CanonicalJsonError extends IntegrityError {
  /** Creates a canonical JSON error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "CanonicalJsonError";
  }
}

/** A path is not a safe normalized relative POSIX path (exit 1). */
export class PathError extends IntegrityError {
  /** Creates a path error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "PathError";
  }
}

/** A signature does not verify (exit 1). */
export class SignatureError extends IntegrityError {
  /** Creates a signature error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "SignatureError";
  }
}

/**
 * A store that may not be used (exit 1): not created or adopted by this user
 * on this machine, a store path that is a symlink, owned by someone else or
 * writable by group or others, or a schema that is not exactly ctxsnap's.
 */
export class StoreTrustError extends CtxsnapError {
  /** Creates a store-trust error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "failure", options);
    this.name = "StoreTrustError";
  }
}

/** The command line was used wrongly (exit 2). */
export class UsageError extends CtxsnapError {
  /** Creates a usage error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "usage", options);
    this.name = "UsageError";
  }
}

/** A signature is valid but its signer is not trusted (exit 3). */
export class UntrustedError extends CtxsnapError {
  /** Creates an untrusted-signer error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "untrusted", options);
    this.name = "UntrustedError";
  }
}

/** An id, file, branch or key does not exist (exit 4). */
export class NotFoundError extends CtxsnapError {
  /** Creates a not-found error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "not_found", options);
    this.name = "NotFoundError";
  }
}

/** A compare-and-swap, dirty tree, restore conflict or unresolved operation (exit 5). */
export class ConflictError extends CtxsnapError {
  /** Creates a conflict error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "conflict", options);
    this.name = "ConflictError";
  }
}

/** The store stayed locked past the busy timeout (exit 6). */
export class BusyError extends CtxsnapError {
  /** Creates a busy error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "busy", options);
    this.name = "BusyError";
  }
}

/** No store was found (exit 10). */
export class NoStoreError extends CtxsnapError {
  /** Creates a no-store error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "no_store", options);
    this.name = "NoStoreError";
  }
}

/** Maps any thrown value to an exit status: typed errors by code, anything else 1. */
export function exitCodeOf(error: unknown): number {
  return error instanceof CtxsnapError ? EXIT_CODES[error.code] : 1;
}

/** Quotes a value for an error message: JSON string quoting, truncated to 120 characters. */
export function quote(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : String(value);
  } catch {
    text = "?";
  }
  if (text.length > 120) text = text.slice(0, 117) + "...";
  return JSON.stringify(text);
}
