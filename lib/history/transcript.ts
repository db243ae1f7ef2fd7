/**
 * An agent's conversation transcript, linked to each event and kept in the
 * store (docs/FORMAT.md §16.3).
 *
 * At each agent event the transcript the event names is read (when the
 * store's `transcripts` policy allows it): only a regular file of this user,
 * not reached through a symbolic link, under the agent's own transcript
 * directory (Claude Code: `$CLAUDE_CONFIG_DIR/projects/` or
 * `~/.claude/projects/`; Gemini CLI: `~/.gemini/tmp/`; Codex:
 * `$CODEX_HOME/sessions/` or `~/.codex/sessions/`; Cursor:
 * `~/.cursor/projects/`), named `*.jsonl`, at most the policy's `max-bytes`.
 * A hook payload naming any other file gets nothing read: a payload is
 * untrusted, and the store must not become a copy of `~/.ssh`.
 *
 * The event records the path, the byte length read and the SHA-256 of that
 * prefix. Transcripts only grow, so the content is kept as appended
 * segments: when the file still starts with exactly the bytes kept so far
 * (same path, same prefix hash) only the new bytes are stored; otherwise
 * (rewritten, truncated, another file) the old chain is left as it was and a
 * new chain starts at byte 0, and the outcome says so. The file is never
 * trusted: what is read back is the kept segments, checked against the
 * recorded hash. Kept bytes are bounded per agent session (four times
 * `max-bytes`); past that only the length and hash are recorded.
 *
 * The content never leaves this machine: it is not part of any snapshot,
 * so `publish`, bundles and `push` carry none of it.
 *
 * @example
 * ```ts
 * import { transcriptRoots } from "./transcript.ts";
 * const roots = transcriptRoots("claude-code", { HOME: "/home/u" });
 * if (roots[0] !== "/home/u/.claude/projects") throw new Error("roots");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import process from "node:process";
import { IntegrityError, quote } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { FileChangedError, readRegularNoFollow, statInfoOf } from "../workspace/io/safe_read.ts";
import type { Store } from "../repository/store.ts";
import type { TranscriptPolicy } from "../repository/transcript_policy.ts";
import {
  insertTranscriptSegment,
  lastTranscriptSegment,
  transcriptBytesKept,
  transcriptSegments,
} from "../repository/transcript_rows.ts";

/** A transcript as read at an event: its bytes, or why none were read. */
export interface TranscriptRead {
  /** The path the event named. */
  path: string;
  /** The bytes read, or null. */
  bytes: Uint8Array | null;
  /** Why nothing was read (`outside`, `too_large`, `unreadable`, `off`), or null. */
  refused: "outside" | "too_large" | "unreadable" | "off" | null;
}

/** What an event records of its transcript. */
export interface TranscriptMark {
  /** The path. */
  path: string;
  /** Bytes read, or null when nothing was read. */
  len: number | null;
  /** SHA-256 of those bytes, or null. */
  sha256: string | null;
  /** The chain holding them, or null when not kept. */
  chain: number | null;
  /** True when the kept prefix no longer matched and a new chain began. */
  restarted: boolean;
  /** Why nothing was read, or null. */
  refused: TranscriptRead["refused"];
}

/** Environment variables the transcript directories depend on. */
export type TranscriptEnv = Partial<Record<"HOME" | "CLAUDE_CONFIG_DIR" | "CODEX_HOME", string>>;

function currentEnv(): TranscriptEnv {
  const env: TranscriptEnv = {};
  for (const name of ["HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"] as const) {
    const value = getEnv(name);
    if (value !== undefined && value !== "") env[name] = value;
  }
  return env;
}

/** The directories an agent's transcripts live under (absolute; none for OpenCode). */
export function transcriptRoots(harness: string, env: TranscriptEnv = currentEnv()): string[] {
  const home = env.HOME !== undefined && path.isAbsolute(env.HOME) ? env.HOME : null;
  const roots: string[] = [];
  const add = (dir: string | null | undefined, ...parts: string[]) => {
    if (typeof dir === "string" && path.isAbsolute(dir)) roots.push(path.join(dir, ...parts));
  };
  switch (harness) {
    case "claude-code":
      add(home, ".claude", "projects");
      add(env.CLAUDE_CONFIG_DIR, "projects");
      break;
    case "gemini-cli":
      add(home, ".gemini", "tmp");
      break;
    case "codex":
      add(home, ".codex", "sessions");
      add(env.CODEX_HOME, "sessions");
      break;
    case "cursor":
      add(home, ".cursor", "projects");
      break;
  }
  return roots;
}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

/** Whether `file` lies strictly inside one of `roots`, by name and by real path. */
export function insideRoots(file: string, roots: readonly string[]): boolean {
  if (!path.isAbsolute(file) || path.resolve(file) !== file || !file.endsWith(".jsonl")) {
    return false;
  }
  const real = realOrNull(file);
  for (const root of roots) {
    const realRoot = realOrNull(root);
    if (realRoot === null || real === null) continue;
    if (file.startsWith(root + path.sep) && real.startsWith(realRoot + path.sep)) return true;
  }
  return false;
}

/**
 * Reads the transcript `file` an event of `harness` named, within the
 * policy's bound (see the module doc for what is refused). Never throws.
 */
export function readTranscript(
  harness: string,
  file: string,
  policy: TranscriptPolicy,
  env?: TranscriptEnv,
): TranscriptRead {
  if (!policy.capture) return { path: file, bytes: null, refused: "off" };
  // Not written yet (Claude Code creates it with the first message).
  if (!fs.existsSync(path.dirname(file)) || !fs.existsSync(file)) {
    return { path: file, bytes: null, refused: "unreadable" };
  }
  if (!insideRoots(file, transcriptRoots(harness, env))) {
    return { path: file, bytes: null, refused: "outside" };
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const stat = fs.lstatSync(file);
      const uid = typeof process.getuid === "function" ? process.getuid() : null;
      if (!stat.isFile() || (uid !== null && stat.uid !== uid)) {
        return { path: file, bytes: null, refused: "unreadable" };
      }
      if (stat.size > policy.maxBytes) return { path: file, bytes: null, refused: "too_large" };
      const read = readRegularNoFollow(file, statInfoOf(stat), {
        maxBytes: policy.maxBytes,
        keepBytesUpTo: policy.maxBytes,
      });
      return { path: file, bytes: read.data!, refused: null };
    } catch (error) {
      // The agent appends while we read: read again.
      if (error instanceof FileChangedError && attempt < 2) continue;
      return { path: file, bytes: null, refused: "unreadable" };
    }
  }
  return { path: file, bytes: null, refused: "unreadable" };
}

/**
 * Records what `read` holds for agent session `agentSession`: the new bytes
 * as a segment of the current chain, or a new chain (see the module doc).
 * Call inside the write transaction.
 */
export function keepTranscript(
  store: Store,
  agentSession: number,
  read: TranscriptRead,
  policy: TranscriptPolicy,
  at: number,
): TranscriptMark {
  const bytes = read.bytes;
  if (bytes === null) {
    return {
      path: read.path,
      len: null,
      sha256: null,
      chain: null,
      restarted: false,
      refused: read.refused,
    };
  }
  const sha256 = sha256Hex(bytes);
  const last = lastTranscriptSegment(store, agentSession);
  const end = last === null ? 0 : last.start + last.length;
  const continues = last !== null && last.path === read.path && bytes.byteLength >= end &&
    sha256Hex(bytes.subarray(0, end)) === last.prefix_sha256;
  const chain = continues ? last!.chain : (last?.chain ?? 0) + 1;
  const start = continues ? end : 0;
  const mark: TranscriptMark = {
    path: read.path,
    len: bytes.byteLength,
    sha256,
    chain: continues ? chain : null,
    restarted: last !== null && !continues,
    refused: null,
  };
  if (bytes.byteLength === start) return mark;
  if (transcriptBytesKept(store, agentSession) + bytes.byteLength - start > 4 * policy.maxBytes) {
    return { ...mark, chain: null, refused: "too_large" };
  }
  insertTranscriptSegment(store, {
    agent_session: agentSession,
    chain,
    start,
    length: bytes.byteLength - start,
    prefix_sha256: sha256,
    path: read.path,
    data: bytes.slice(start),
    at,
  });
  return { ...mark, chain };
}

/**
 * The first `len` bytes of chain `chain` of an agent session's kept
 * transcript, checked against `sha256`.
 *
 * @throws {IntegrityError} When the kept segments do not reassemble into
 * bytes with that hash (missing, overlapping or altered rows).
 */
export function keptTranscript(
  store: Store,
  agentSession: number,
  chain: number,
  len: number,
  sha256: string,
): Uint8Array {
  const segments = transcriptSegments(store, agentSession, chain, len);
  const out = new Uint8Array(len);
  let at = 0;
  for (const segment of segments) {
    if (segment.start !== at || segment.data.byteLength !== segment.length) break;
    const take = Math.min(segment.length, len - at);
    out.set(segment.data.subarray(0, take), at);
    at += take;
    if (at === len) break;
  }
  if (at !== len || sha256Hex(out) !== sha256) {
    throw new IntegrityError(
      `The kept transcript (chain ${chain}) does not reassemble into the ${len} bytes recorded with SHA-256 ${
        quote(sha256.slice(0, 16))
      }`,
      { hint: "`ctxsnap verify` checks the store; the agent's own file may still hold it" },
    );
  }
  return out;
}
