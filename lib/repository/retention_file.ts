/**
 * The store's retention policy file, `<store>/retention` (docs/FORMAT.md
 * 8.5): which agent checkpoints the store keeps, read by `forget --policy`
 * and by the automatic pass after each checkpoint.
 *
 * Format: UTF-8 text, one setting per line, `KEY VALUE` separated by one or
 * more spaces; blank lines and lines starting with `#` are ignored; a final
 * `\r` is dropped. Keys: `keep-last N` (0 to 1,000,000), `keep-within D`
 * (`0` or a whole number with unit `s`, `m`, `h` or `d`), `auto on|off`. A
 * key given twice, an unknown key or a bad value is refused. The file must
 * be a regular file (not a symbolic link) of at most 4 KiB, owned by the
 * current user or root and not writable by group or others; otherwise the
 * command stops with a {@linkcode ConfigError} (exit 7) rather than guess.
 * Settings not in the file (or no file) take the defaults.
 *
 * @example
 * ```ts
 * import { parseRetention } from "./retention_file.ts";
 * const policy = parseRetention("keep-last 20\nkeep-within 2h\n");
 * if (policy.keepLast !== 20 || policy.keepWithinMs !== 7_200_000 || !policy.auto) {
 *   throw new Error("misread");
 * }
 * ```
 * @module
 */
import { join } from "node:path";
import { ConfigError, quote } from "../errors.ts";
import { policySettings, readPolicyFile } from "./_policy_file.ts";

/** The policy file's name inside the store directory. */
export const RETENTION_FILE = "retention";
/** Largest policy file read. */
export const MAX_RETENTION_BYTES = 4096;

/** A store's retention policy. */
export interface RetentionPolicy {
  /** Agent checkpoints kept per branch, newest first (`keep-last`). */
  keepLast: number;
  /** Agent checkpoints younger than this are all kept (`keep-within`, ms; 0: none by age). */
  keepWithinMs: number;
  /** Whether the policy is applied after every checkpoint (`auto`). */
  auto: boolean;
}

/** The policy of a store without a `retention` file (docs/CLI.md, "Retention"). */
export const DEFAULT_RETENTION: Readonly<RetentionPolicy> = Object.freeze({
  keepLast: 100,
  keepWithinMs: 0,
  auto: true,
});

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function bad(what: string, hint?: string): never {
  throw new ConfigError(`The retention policy ${what}`, {
    hint: hint ??
      "lines of `keep-last N`, `keep-within D` (D: 30s, 90m, 12h or 7d) and `auto on|off` (docs/FORMAT.md §8.5, docs/CLI.md Retention)",
  });
}

/** Parses policy text; settings it does not name take {@linkcode DEFAULT_RETENTION}. */
export function parseRetention(text: string): RetentionPolicy {
  const policy: RetentionPolicy = { ...DEFAULT_RETENTION };
  for (const [key, value] of policySettings(text, bad)) {
    if (key === "keep-last") {
      if (!/^(0|[1-9][0-9]{0,6})$/.test(value) || Number(value) > 1_000_000) {
        bad(`keep-last must be a whole number from 0 to 1000000, not ${quote(value)}`);
      }
      policy.keepLast = Number(value);
    } else if (key === "keep-within") {
      const duration = /^(0|[1-9][0-9]{0,5})([smhd]?)$/.exec(value);
      if (duration === null || (duration[1] !== "0" && duration[2] === "")) {
        bad(`keep-within must be 0 or a whole number with s, m, h or d, not ${quote(value)}`);
      }
      policy.keepWithinMs = Number(duration![1]) * (UNITS[duration![2]!] ?? 0);
    } else if (key === "auto") {
      if (value !== "on" && value !== "off") bad(`auto must be on or off, not ${quote(value)}`);
      policy.auto = value === "on";
    } else {
      bad(`has an unknown setting ${quote(key)}`);
    }
  }
  return policy;
}

/**
 * Reads the policy of the store in `storeDir` ({@linkcode DEFAULT_RETENTION}
 * when it has no `retention` file).
 *
 * @throws {ConfigError} If the file is a symbolic link or not a regular file,
 * is larger than 4 KiB, is owned by another user or writable by group or
 * others, is not UTF-8, cannot be read, or does not parse.
 */
export function readRetention(storeDir: string): RetentionPolicy {
  const text = readPolicyFile(
    join(storeDir, RETENTION_FILE),
    "the retention policy",
    MAX_RETENTION_BYTES,
  );
  return text === null ? { ...DEFAULT_RETENTION } : parseRetention(text);
}
