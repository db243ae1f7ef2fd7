/**
 * The flags more than one command takes, in groups: trust (which signers
 * count), selection (which snapshots), move (how a workspace move may
 * overwrite), S3 (where a remote is) and capture. A command takes a group
 * by spreading it into its `options`, and may reword a flag's help for
 * itself (`{ ...SELECTION_FLAGS.session, help: "…" }`) but never its type:
 * a flag name has one type across the whole tree (tests/cli/tree_test.ts
 * walks it).
 *
 * @example
 * ```ts
 * import { MOVE_FLAGS, sizeOption } from "./flags.ts";
 * const options = { ...MOVE_FLAGS };
 * if (options.force.type !== "boolean" || sizeOption("4K") !== 4096) throw new Error("flags");
 * ```
 * @module
 */
import { UsageError } from "../errors.ts";
import type { OptionSpec, Parsed } from "./args.ts";

/** Options every command accepts (before or after its name). */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  json: { type: "boolean", help: "print one JSON document on stdout" },
  store: {
    type: "string",
    arg: "DIR",
    help: "use the store in DIR (default: nearest .ctxsnap/, or $CTXSNAP_STORE)",
  },
  quiet: { type: "boolean", short: "q", help: "no notes or progress on stderr" },
  help: { type: "boolean", short: "h", help: "show this help" },
};

/** Trust: which signers count as trusted for this run (verify, show FILE, import, pull, …). */
export const TRUST_FLAGS = {
  trust: {
    type: "string",
    multiple: true,
    arg: "KEY",
    help: "trust this public key (hex, PEM text or PEM file); repeatable",
  },
  "trusted-keys": {
    type: "string",
    arg: "FILE",
    help: "also trust the keys in this trusted-keys file",
  },
} as const satisfies Record<string, OptionSpec>;

/** Trust, for commands that add what they verified to the store (import, pull, clone). */
export const UNTRUSTED_FLAGS = {
  "allow-untrusted": {
    type: "boolean",
    help: "also take snapshots of unpinned signers (still fully verified), quarantined",
  },
} as const satisfies Record<string, OptionSpec>;

/** Selection: which session, branch or snapshots a command acts on. */
export const SELECTION_FLAGS = {
  session: { type: "string", arg: "S", help: "session (default: current)" },
  branch: { type: "string", arg: "B", help: "branch (default: the session's current)" },
  all: { type: "boolean", help: "every session and branch of the store" },
  before: {
    type: "string",
    arg: "TIME",
    help: "the newest snapshot of REVISION's history at or before TIME",
  },
} as const satisfies Record<string, OptionSpec>;

/** Move: how a command that changes files may overwrite, or whether it changes anything. */
export const MOVE_FLAGS = {
  force: {
    type: "boolean",
    help: "also overwrite conflicts and local changes, after snapshotting the current content",
  },
  "dry-run": { type: "boolean", help: "print the plan, change nothing" },
} as const satisfies Record<string, OptionSpec>;

/** Where an S3 remote is (remote add, clone). */
export const S3_FLAGS = {
  endpoint: {
    type: "string",
    arg: "URL",
    help: "S3 endpoint, http(s)://HOST[:PORT] (default: AWS_ENDPOINT_URL, else AWS)",
  },
  region: {
    type: "string",
    arg: "R",
    help: "S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1)",
  },
  "path-style": {
    type: "boolean",
    help: "address ENDPOINT/BUCKET/KEY (default with --endpoint)",
  },
  "virtual-hosted": {
    type: "boolean",
    help: "address BUCKET.ENDPOINT/KEY (default for AWS)",
  },
} as const satisfies Record<string, OptionSpec>;

/** Capture: what a checkpoint leaves out (create, watch, mcp). */
export const CAPTURE_FLAGS = {
  "max-file-size": {
    type: "string",
    arg: "SIZE",
    help: "skip files larger than SIZE (bytes, or with K, M, G; default 256M)",
  },
} as const satisfies Record<string, OptionSpec>;

/** Parses `--max-file-size SIZE` (bytes, or with K, M, G: powers of 1024; 1 byte to 64G). */
export function sizeOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d+)([KMG]?)$/i.exec(text.trim());
  const scale = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[(match?.[2] ?? "").toUpperCase()];
  const value = match && scale ? Number(match[1]) * scale : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > 64 * 1024 ** 3) {
    throw new UsageError(
      `--max-file-size ${JSON.stringify(text)} is not a size from 1 byte to 64G`,
      {
        hint: "for example --max-file-size 4G",
      },
    );
  }
  return value;
}

/** `--trusted-keys FILE` as `trustPolicy`'s option (empty when not given). */
export function keysFile(parsed: Parsed): { keysFile?: string } {
  const file = parsed.values["trusted-keys"];
  return typeof file === "string" ? { keysFile: file } : {};
}
