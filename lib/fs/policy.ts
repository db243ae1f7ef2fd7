/**
 * Capture policy defaults (DESIGN §4): directories never descended into, file
 * names treated as secrets (never opened, never captured) and the default
 * size limit for a single file.
 *
 * @example
 * ```ts
 * import { DEFAULT_EXCLUDED_DIRS, DEFAULT_MAX_FILE_BYTES, isSecretName } from "./policy.ts";
 *
 * console.assert(DEFAULT_EXCLUDED_DIRS.has("node_modules"));
 * console.assert(isSecretName(".env.local"));
 * console.assert(isSecretName("Server.PEM"));
 * console.assert(!isSecretName("environment.ts"));
 * console.assert(DEFAULT_MAX_FILE_BYTES === 256 * 1024 * 1024);
 * ```
 * @module
 */

/**
 * Directory names skipped wherever they occur in the workspace: `.git`,
 * `.ctxsnap`, `.venv`, `__pycache__` and `node_modules`.
 */
export const DEFAULT_EXCLUDED_DIRS: ReadonlySet<string> = new Set([
  ".git",
  ".ctxsnap",
  ".venv",
  "__pycache__",
  "node_modules",
]);

/** Largest regular file captured by default: 256 MiB. */
export const DEFAULT_MAX_FILE_BYTES: number = 256 * 1024 * 1024;

const SECRET_NAMES: ReadonlySet<string> = new Set([
  ".env",
  "credentials",
  "credentials.json",
  "service-account.json",
  "service_account.json",
]);

const SECRET_SUFFIXES: readonly string[] = [".key", ".pem", ".p12", ".pfx"];

/**
 * Whether a file name (the last path segment, not a whole path) names a
 * secret, compared case-insensitively: `.env`, `.env.*`, `*.key`, `*.pem`,
 * `*.p12`, `*.pfx`, `credentials`, `credentials.json`, `service-account.json`,
 * `service_account.json`.
 *
 * @example
 * ```ts
 * import { isSecretName } from "./policy.ts";
 * console.assert(isSecretName("id_ed25519.key"));
 * console.assert(isSecretName("CREDENTIALS"));
 * console.assert(!isSecretName("credentials.md"));
 * ```
 */
export function isSecretName(name: string): boolean {
  const lower = name.toLowerCase();
  if (SECRET_NAMES.has(lower) || lower.startsWith(".env.")) return true;
  return SECRET_SUFFIXES.some((suffix) => lower.endsWith(suffix));
}

/**
 * Names that are never part of a workspace tree, whatever their type or
 * spelling: git's metadata (a directory, or a `gitdir:` file in worktrees and
 * submodules) and ctxsnap's own store, compared after the folding other
 * filesystems apply (see `reserved.ts`). Capture skips them; a manifest that
 * names one anywhere is refused, so a restore can never write there.
 */
export { isReservedName, RESERVED_NAMES } from "./reserved.ts";
