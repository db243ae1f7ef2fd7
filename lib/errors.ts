/**
 * Typed errors shared by every layer, and the one place their style is set.
 * Each carries an {@linkcode ErrorCode} that the command line maps to an exit
 * status (see {@linkcode EXIT_CODES} and {@linkcode EXIT_MEANINGS}), and an
 * optional hint telling the user what to do next.
 *
 * **Message and hint style.** Every layer follows these rules; only
 * `lib/cli/output.ts` prints errors, as `ctxsnap: error: MESSAGE` then
 * `ctxsnap: hint: HINT`.
 *
 * - A message says what is wrong in one sentence-case sentence with no final
 *   period: `No snapshot matches "ab12"`.
 * - The offending value is quoted with {@linkcode quote} (JSON quoting,
 *   terminal controls escaped, truncated), never interpolated raw: it may
 *   come from a hostile workspace, store or file.
 * - A hint says what the user can do next, starting in lower case:
 *   `run \`ctxsnap init\` in the workspace`.
 * - The class is chosen by what the user must do about it, which decides the
 *   exit status: an operating-system failure on a file is an
 *   {@linkcode IoError}, something absent a {@linkcode NotFoundError}, bad
 *   bytes an {@linkcode IntegrityError}.
 *
 * @example
 * ```ts
 * import { IoError, NotFoundError, exitCodeOf } from "./errors.ts";
 * const error = new NotFoundError('No snapshot matches "abcd"');
 * if (exitCodeOf(error) !== 4) throw new Error("a missing snapshot exits 4");
 * const io = new IoError('Cannot write "a.txt"', { errno: "ENOSPC", path: "a.txt" });
 * if (exitCodeOf(io) !== 1 || io.errno !== "ENOSPC") throw new Error("an I/O error exits 1");
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
  | "config"
  | "no_store";

/** Exit status per error code, as documented in the README and docs/CLI.md. */
export const EXIT_CODES: Readonly<Record<ErrorCode, number>> = Object.freeze({
  failure: 1,
  usage: 2,
  untrusted: 3,
  not_found: 4,
  conflict: 5,
  busy: 6,
  config: 7,
  no_store: 10,
});

/**
 * What each exit status means, in order: the one table `--help`, the README
 * and docs/CLI.md show (tests/docs_test.ts checks that they agree).
 */
export const EXIT_MEANINGS: readonly { readonly exit: number; readonly meaning: string }[] = Object
  .freeze([
    { exit: 0, meaning: "success; for verify: intact, signature valid, signer trusted" },
    {
      exit: EXIT_CODES.failure,
      meaning: "failure: tampered, corrupt, signature invalid, I/O error",
    },
    { exit: EXIT_CODES.usage, meaning: "usage error" },
    { exit: EXIT_CODES.untrusted, meaning: "signature valid but signer not trusted" },
    { exit: EXIT_CODES.not_found, meaning: "not found (id, file, branch)" },
    {
      exit: EXIT_CODES.conflict,
      meaning:
        "conflict: restore conflicts (or a dry run that would refuse), dirty git tree, head moved, unresolved operation",
    },
    { exit: EXIT_CODES.busy, meaning: "store busy (lock timeout)" },
    {
      exit: EXIT_CODES.config,
      meaning: "configuration problem: config dir, identity key, trusted keys, `--trust` key",
    },
    { exit: EXIT_CODES.no_store, meaning: "no store here" },
  ]);

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
  /**
   * Which check failed, when the thrower knows (`signature`, `id`,
   * `tree_hash`, `blob_hash`, `bundle_format`, `tar`, …): the
   * `failed_check` of a tamper verdict.
   */
  check: string | undefined;
  /** Where it failed: a bundle member path or a snapshot id, when known. */
  at: string | undefined;

  /** Creates an integrity error. */
  constructor(
    message: string,
    options: CtxsnapErrorOptions & { check?: string; at?: string } = {},
  ) {
    super(message, "failure", options);
    this.name = "IntegrityError";
    this.check = options.check;
    this.at = options.at;
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

/**
 * ctxsnap's own configuration cannot be used (exit 7): the config directory
 * or a trust file is writable by others or owned by another user,
 * `identity.pem` is exposed or malformed, `trusted_keys.json` is invalid, a
 * `--trust` key file is not a small regular file holding a public key, a
 * store's `allow-secrets` list is exposed. Never exit 1: that status means
 * the thing being checked is tampered or corrupt.
 */
export class ConfigError extends CtxsnapError {
  /** Creates a configuration error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "config", options);
    this.name = "ConfigError";
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

/**
 * A remote could not be reached, refused the request (authentication, a
 * missing bucket) or kept failing after retries (exit 1).
 */
export class RemoteError extends CtxsnapError {
  /** Creates a remote error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, "failure", options);
    this.name = "RemoteError";
  }
}

/** Options of an {@linkcode IoError}. */
export interface IoErrorOptions extends CtxsnapErrorOptions {
  /** The operating system's error code (`"ENOSPC"`, `"EACCES"`, ...), when known. */
  errno?: string | undefined;
  /** The file concerned, when there is one. */
  path?: string | undefined;
}

/**
 * The operating system refused or failed a file operation: a full disk, a
 * permission, an I/O error (exit 1). Absent files are a
 * {@linkcode NotFoundError} instead.
 */
export class IoError extends CtxsnapError {
  /** The operating system's error code, when known. */
  readonly errno: string | undefined;
  /** The file concerned, when there is one. */
  readonly path: string | undefined;

  /** Creates an I/O error; `errno` defaults to the code of `cause`. */
  constructor(message: string, options: IoErrorOptions = {}) {
    super(message, "failure", options);
    this.name = "IoError";
    this.errno = options.errno ?? errnoOf(options.cause);
    this.path = options.path;
  }
}

/**
 * The error for a file that could not be opened: a {@linkcode NotFoundError}
 * (exit 4) when it does not exist, an {@linkcode IoError} (exit 1) for any
 * other refusal (permissions, a directory, an I/O error), so the same
 * condition exits the same way wherever a file is opened.
 *
 * @example
 * ```ts
 * import { exitCodeOf, openError } from "./errors.ts";
 * const missing = Object.assign(new Error("no such file"), { code: "ENOENT" });
 * const denied = Object.assign(new Error("permission denied"), { code: "EACCES" });
 * if (exitCodeOf(openError("a.json", missing)) !== 4) throw new Error("missing: 4");
 * if (exitCodeOf(openError("a.json", denied)) !== 1) throw new Error("denied: 1");
 * ```
 */
export function openError(path: string, error: unknown): CtxsnapError {
  const errno = errnoOf(error);
  if (errno === "ENOENT" || errno === "ENOTDIR") {
    return new NotFoundError(`No file at ${quote(path)}`, { cause: error });
  }
  return new IoError(`Cannot open ${quote(path)}: ${reasonOf(error)}`, {
    cause: error,
    path,
  });
}

/** The `code` of a `node:fs` error (`"ENOENT"`, `"ELOOP"`, ...), or `undefined`. */
export function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** A short reason for an error message: the errno code when there is one, else the message. */
export function reasonOf(error: unknown): string {
  return errnoOf(error) ?? (error instanceof Error ? error.message : String(error));
}

/** Maps any thrown value to an exit status: typed errors by code, anything else 1. */
export function exitCodeOf(error: unknown): number {
  return error instanceof CtxsnapError ? EXIT_CODES[error.code] : 1;
}

/**
 * Characters a terminal may act on instead of showing: C0 controls (including
 * newline), DEL, C1 controls, the bidirectional marks, embeddings, overrides
 * and isolates (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), and the
 * line and paragraph separators (U+2028, U+2029).
 */
const UNSAFE_TEXT =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** What JSON string quoting leaves of {@linkcode UNSAFE_TEXT} (it escapes C0 itself). */
const UNSAFE_AFTER_JSON =
  /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT_ESCAPES: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function escapeChar(char: string): string {
  const code = char.charCodeAt(0);
  return SHORT_ESCAPES[char] ??
    (code <= 0xff
      ? `\\x${code.toString(16).padStart(2, "0")}`
      : `\\u${code.toString(16).padStart(4, "0")}`);
}

/**
 * Makes text safe to show on a terminal: every character a terminal may act
 * on (see {@linkcode UNSAFE_TEXT}: controls, newlines, bidi overrides) becomes
 * a visible escape (`\n`, `\r`, `\t`, `\x1b`, `\u202e`), so stored or
 * user-supplied text can neither start a line of its own nor move the cursor,
 * erase or reorder what is printed around it. Everything else, backslashes
 * included, is kept. The one function every human-readable renderer (and
 * {@linkcode quote}) uses; `--json` output needs none of it.
 *
 * @example
 * ```ts
 * import { escapeText } from "./errors.ts";
 * if (escapeText("a\x1b[2K\rOK\u202e") !== "a\\x1b[2K\\rOK\\u202e") throw new Error("not escaped");
 * if (escapeText("naïve → café") !== "naïve → café") throw new Error("changed plain text");
 * ```
 */
export function escapeText(value: unknown): string {
  const text = typeof value === "string" ? value : String(value);
  return text.replace(UNSAFE_TEXT, escapeChar);
}

/**
 * Quotes a value for an error message: JSON string quoting, truncated to 120
 * characters, with every character a terminal may act on escaped (JSON
 * quoting leaves C1 controls, bidi marks and U+2028/U+2029 as they are).
 */
export function quote(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : String(value);
  } catch {
    text = "?";
  }
  if (text.length > 120) text = text.slice(0, 117) + "...";
  return JSON.stringify(text).replace(
    UNSAFE_AFTER_JSON,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
