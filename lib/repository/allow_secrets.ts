/**
 * The store's allow list of secrets: `<store>/allow-secrets`, one exact
 * workspace-relative path per line, naming files that the secret rules (by
 * name or by content) would leave out but that the user has looked at and
 * wants captured. Like git's `.git/info/exclude` it lives in the store, not
 * in the workspace, so a repository cannot re-include its user's secrets by
 * committing an ignore file (a `!.env` line in `.ctxsnapignore` does not
 * re-include a secret).
 *
 * Format: UTF-8 text; each line is a path exactly as `ctxsnap show ID
 * --skipped` prints it (no patterns, no trimming; a final `\r` is dropped);
 * blank lines and lines starting with `#` are ignored. The file must be a
 * regular file (not a symbolic link) of at most 64 KiB, owned by the current
 * user or root and not writable by group or others; otherwise capture stops
 * with a {@linkcode ConfigError} (exit 7) rather than guess.
 *
 * @example
 * ```ts
 * import { parseAllowSecrets } from "./allow_secrets.ts";
 * const allowed = parseAllowSecrets("# test fixtures, not real keys\ntests/fixtures/id_rsa\n\n");
 * if (!allowed.has("tests/fixtures/id_rsa") || allowed.size !== 1) throw new Error("misread");
 * ```
 * @module
 */
import { join } from "node:path";
import { readPolicyFile } from "./_policy_file.ts";

/** The allow list's file name inside the store directory. */
export const ALLOW_SECRETS_FILE = "allow-secrets";
/** Largest allow list read. */
export const MAX_ALLOW_SECRETS_BYTES: number = 64 * 1024;

/** The allow list's path for the store in `storeDir`. */
export function allowSecretsPath(storeDir: string): string {
  return join(storeDir, ALLOW_SECRETS_FILE);
}

/** Parses allow-list text into the set of exact paths it names. */
export function parseAllowSecrets(text: string): Set<string> {
  const paths = new Set<string>();
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line === "" || line.startsWith("#")) continue;
    paths.add(line);
  }
  return paths;
}

/**
 * Reads the allow list of the store in `storeDir`; empty when there is none.
 *
 * @throws {ConfigError} If it is a symbolic link or not a regular file, is
 * larger than 64 KiB, is owned by another user or writable by group or
 * others, is not UTF-8, or cannot be read.
 */
export function readAllowSecrets(storeDir: string): Set<string> {
  const text = readPolicyFile(
    allowSecretsPath(storeDir),
    "the allow list",
    MAX_ALLOW_SECRETS_BYTES,
  );
  return text === null ? new Set() : parseAllowSecrets(text);
}
