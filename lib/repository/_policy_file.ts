/**
 * Reads a small text file ctxsnap keeps in a store to steer itself (the
 * secrets allow list, the retention policy): a file that changes what is
 * captured or forgotten is the user's own or it is refused, never followed
 * through a link, never read past its bound.
 *
 * @module
 */
import { lstatSync, type Stats } from "node:fs";
import process from "node:process";
import { ConfigError, errnoOf, quote } from "../errors.ts";
import { readRegularNoFollow, statInfoOf } from "../workspace/io/safe_read.ts";

/**
 * The UTF-8 text of the file at `path`, or null when there is none. `what`
 * names it in errors ("the allow list").
 *
 * @throws {ConfigError} If it is a symbolic link or not a regular file, is
 * larger than `maxBytes`, is owned by another user or writable by group or
 * others, is not UTF-8, or cannot be read.
 */
export function readPolicyFile(path: string, what: string, maxBytes: number): string | null {
  const name = what.charAt(0).toUpperCase() + what.slice(1);
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw new ConfigError(`Cannot read ${what} ${quote(path)}`, { cause: error });
  }
  const refuse = (problem: string, hint?: string): never => {
    throw new ConfigError(`${name} ${quote(path)} ${problem}`, hint ? { hint } : {});
  };
  if (!stat.isFile()) refuse("is not a regular file", "replace it with a regular file");
  const uid = typeof process.getuid === "function" ? process.getuid() : null;
  if (uid !== null && stat.uid !== uid && stat.uid !== 0) {
    refuse(`is owned by another user (uid ${stat.uid})`, "check who wrote it, then remove it");
  }
  if (uid !== null && (stat.mode & 0o022) !== 0) {
    refuse("is writable by group or others", `chmod go-w ${path}`);
  }
  if (stat.size > maxBytes) refuse(`is larger than ${maxBytes} bytes`);
  let bytes: Uint8Array;
  try {
    bytes = readRegularNoFollow(path, statInfoOf(stat), { maxBytes }).data!;
  } catch (error) {
    throw new ConfigError(
      `Cannot read ${what} ${quote(path)}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return refuse("is not UTF-8 text");
  }
}

/**
 * The `KEY VALUE` settings of a policy file's text, in order: blank lines
 * and `#` comments skipped, a CR before each LF allowed. A line of another
 * shape, or a key given twice, is refused through `bad` (which throws).
 */
export function policySettings(
  text: string,
  bad: (what: string) => never,
): [key: string, value: string][] {
  const settings: [string, string][] = [];
  const seen = new Set<string>();
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "" || line.startsWith("#")) continue;
    const match = /^([a-z-]+) +(\S+) *$/.exec(line);
    if (match === null) bad(`has a line that is not \`KEY VALUE\`: ${quote(line.slice(0, 80))}`);
    const [, key, value] = match as unknown as [string, string, string];
    if (seen.has(key)) bad(`sets ${quote(key)} twice`);
    seen.add(key);
    settings.push([key, value]);
  }
  return settings;
}
