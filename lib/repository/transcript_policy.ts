/**
 * The store's transcript policy file, `<store>/transcripts` (docs/FORMAT.md
 * 8.7): whether agent hooks keep the agent's conversation transcript in the
 * store, and how much of it.
 *
 * Format: the retention file's (`KEY VALUE` lines, `#` comments). Keys:
 * `capture on|off` (default on) and `max-bytes N` (largest transcript kept,
 * 1 to 268435456 bytes; default 67108864). With `capture off` an event
 * still records the transcript's path, but neither its length, its hash nor
 * its content. The file must be the user's own regular file of at most
 * 4 KiB, like the retention file; otherwise a {@linkcode ConfigError}.
 *
 * @example
 * ```ts
 * import { parseTranscriptPolicy } from "./transcript_policy.ts";
 * if (parseTranscriptPolicy("capture off\n").capture) throw new Error("misread");
 * ```
 * @module
 */
import { join } from "node:path";
import { ConfigError, quote } from "../errors.ts";
import { policySettings, readPolicyFile } from "./_policy_file.ts";

/** The policy file's name inside the store directory. */
export const TRANSCRIPT_POLICY_FILE = "transcripts";

/** A store's transcript policy. */
export interface TranscriptPolicy {
  /** Whether transcripts are read and kept (`capture`). */
  capture: boolean;
  /** Largest transcript read, in bytes (`max-bytes`): a larger one is named, not kept. */
  maxBytes: number;
}

/** The policy of a store without a `transcripts` file. */
export const DEFAULT_TRANSCRIPT_POLICY: Readonly<TranscriptPolicy> = Object.freeze({
  capture: true,
  maxBytes: 64 * 1024 * 1024,
});

const MAX_MAX_BYTES = 256 * 1024 * 1024;

function bad(what: string): never {
  throw new ConfigError(`The transcript policy ${what}`, {
    hint: "lines of `capture on|off` and `max-bytes N` (docs/FORMAT.md §8.7)",
  });
}

/** Parses policy text; settings it does not name take the defaults. */
export function parseTranscriptPolicy(text: string): TranscriptPolicy {
  const policy: TranscriptPolicy = { ...DEFAULT_TRANSCRIPT_POLICY };
  for (const [key, value] of policySettings(text, bad)) {
    if (key === "capture") {
      if (value !== "on" && value !== "off") bad(`capture must be on or off, not ${quote(value)}`);
      policy.capture = value === "on";
    } else if (key === "max-bytes") {
      if (!/^[1-9][0-9]{0,8}$/.test(value) || Number(value) > MAX_MAX_BYTES) {
        bad(`max-bytes must be a whole number from 1 to ${MAX_MAX_BYTES}, not ${quote(value)}`);
      }
      policy.maxBytes = Number(value);
    } else {
      bad(`has an unknown setting ${quote(key)}`);
    }
  }
  return policy;
}

/**
 * Reads the transcript policy of the store in `storeDir` (the defaults when
 * it has no `transcripts` file).
 *
 * @throws {ConfigError} If the file is unusable or does not parse.
 */
export function readTranscriptPolicy(storeDir: string): TranscriptPolicy {
  const text = readPolicyFile(
    join(storeDir, TRANSCRIPT_POLICY_FILE),
    "the transcript policy",
    4096,
  );
  return text === null ? { ...DEFAULT_TRANSCRIPT_POLICY } : parseTranscriptPolicy(text);
}
