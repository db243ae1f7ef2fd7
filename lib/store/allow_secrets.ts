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
import { lstatSync, type Stats } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { ConfigError, quote } from "../encoding/errors.ts";
import { readRegularNoFollow, statInfoOf } from "../fs/safe_read.ts";

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
  const path = allowSecretsPath(storeDir);
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return new Set();
    throw new ConfigError(`Cannot read the allow list ${quote(path)}`, { cause: error });
  }
  const refuse = (problem: string, hint?: string): never => {
    throw new ConfigError(`The allow list ${quote(path)} ${problem}`, hint ? { hint } : {});
  };
  if (!stat.isFile()) refuse("is not a regular file", "replace it with a regular file");
  const uid = typeof process.getuid === "function" ? process.getuid() : null;
  if (uid !== null && stat.uid !== uid && stat.uid !== 0) {
    refuse(`is owned by another user (uid ${stat.uid})`, "check who wrote it, then remove it");
  }
  if (uid !== null && (stat.mode & 0o022) !== 0) {
    refuse("is writable by group or others", `chmod go-w ${path}`);
  }
  if (stat.size > MAX_ALLOW_SECRETS_BYTES) {
    refuse(`is larger than ${MAX_ALLOW_SECRETS_BYTES} bytes`);
  }
  let bytes: Uint8Array;
  try {
    bytes = readRegularNoFollow(path, statInfoOf(stat), { maxBytes: MAX_ALLOW_SECRETS_BYTES })
      .data!;
  } catch (error) {
    throw new ConfigError(
      `Cannot read the allow list ${quote(path)}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return refuse("is not UTF-8 text");
  }
  return parseAllowSecrets(text);
}
