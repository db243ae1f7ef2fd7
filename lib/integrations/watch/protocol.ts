/**
 * The watch protocol (docs/FORMAT.md §15): how `ctxsnap create`, the agent
 * hook and `ctxsnap watch --status` reach a running `ctxsnap watch` for a
 * store. Layer: watch (above snapshot, below cli); this module needs only
 * `node:fs` and `node:path`, so a client loads little.
 *
 * A watch process writes `<store>/run/watch.json` (mode 0600, in a 0700
 * directory the user owns) naming its socket and a random token; a client
 * checks that both the directory and the file belong to it and are private,
 * connects, and sends one request line holding the token. Only someone who
 * can read the user's private store files can ask for anything.
 *
 * @example
 * ```ts
 * import { parseWatchInfo, watchInfoPath } from "./protocol.ts";
 * if (!watchInfoPath("/w/.ctxsnap").endsWith("/run/watch.json")) throw new Error("path");
 * const info = parseWatchInfo(JSON.stringify({
 *   protocol: 1, pid: 7, token: "ab".repeat(32), socket: "/w/.ctxsnap/run/watch.sock",
 *   workspace: "/w", store: "/w/.ctxsnap", started_at: "2026-11-30T10:00:00.000Z", version: "0.1.0",
 * }));
 * if (info?.pid !== 7) throw new Error("parse");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { currentUid as runtimeUid } from "../../runtime.ts";

/** The protocol version in `watch.json` and every request. */
export const WATCH_PROTOCOL = 1;
/** The directory inside a store holding the watch files. */
export const RUN_DIR = "run";
/** Largest `watch.json` read. */
export const MAX_INFO_BYTES = 64 * 1024;
/** Largest request line (a `--context` document is up to 16 MiB). */
export const MAX_REQUEST_BYTES: number = 17 * 1024 * 1024;
/** Largest response line (an envelope is up to 4 MiB, plus the secrets list). */
export const MAX_RESPONSE_BYTES: number = 16 * 1024 * 1024;
/** Longest Unix socket path the platforms accept, less a margin. */
export const MAX_SOCKET_PATH = 100;

/** What `watch.json` says about a running watch process. */
export interface WatchInfo {
  /** {@linkcode WATCH_PROTOCOL}. */
  protocol: number;
  /** Its process id. */
  pid: number;
  /** 64 hex characters every request must carry. */
  token: string;
  /** Absolute path of its Unix socket. */
  socket: string;
  /** The workspace it watches. */
  workspace: string;
  /** The store it writes. */
  store: string;
  /** When it started (ISO 8601 UTC). */
  started_at: string;
  /** The ctxsnap version it runs. */
  version: string;
}

/** The private directory of the watch files of the store in `storeDir`. */
export function runDir(storeDir: string): string {
  return path.join(storeDir, RUN_DIR);
}

/** The path of `watch.json` of the store in `storeDir`. */
export function watchInfoPath(storeDir: string): string {
  return path.join(runDir(storeDir), "watch.json");
}

/**
 * Where the socket of the store in `storeDir` lives: `run/watch.sock`, or
 * when that path is too long for a Unix socket, `watch.sock` in a private
 * directory `fallbackDir()` makes (unpredictable: see `server.ts`).
 */
export function socketPathFor(storeDir: string, fallbackDir: () => string): string {
  const inStore = path.join(runDir(storeDir), "watch.sock");
  if (new TextEncoder().encode(inStore).byteLength <= MAX_SOCKET_PATH) return inStore;
  return path.join(fallbackDir(), "watch.sock");
}

/**
 * Whether `socket` is a Unix socket owned by the current user, closed to
 * group and others, in a directory {@linkcode isPrivateDir} accepts: the
 * one a watch process of this user made. A `watch.json` naming any other
 * socket (someone else's listener) is not followed.
 */
export function isPrivateSocket(socket: string): boolean {
  if (!isPrivateDir(path.dirname(socket))) return false;
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(socket);
  } catch {
    return false;
  }
  if (!stat.isSocket()) return false;
  const uid = currentUid();
  return uid === null || (stat.uid === uid && (stat.mode & 0o077) === 0);
}

/** The current user's id, or null where the platform has none (Windows). */
export function currentUid(): number | null {
  try {
    return runtimeUid();
  } catch {
    return -1; // not allowed to know: no file can be proven ours
  }
}

/**
 * Whether `dir` is a real directory (not a symlink) owned by the current
 * user and closed to group and others. Where there are no uids, true.
 */
export function isPrivateDir(dir: string): boolean {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dir);
  } catch {
    return false;
  }
  if (!stat.isDirectory()) return false;
  const uid = currentUid();
  return uid === null || (stat.uid === uid && (stat.mode & 0o077) === 0);
}

const HEX64 = /^[0-9a-f]{64}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Parses `watch.json` text strictly (exactly the known fields, each of its
 * type); null when it is not a valid description of a watch process.
 */
export function parseWatchInfo(text: string): WatchInfo | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const o = value as Record<string, unknown>;
  const keys = [
    "protocol",
    "pid",
    "token",
    "socket",
    "workspace",
    "store",
    "started_at",
    "version",
  ];
  if (Object.keys(o).length !== keys.length || !keys.every((key) => Object.hasOwn(o, key))) {
    return null;
  }
  const text4k = (v: unknown) => typeof v === "string" && v.length > 0 && v.length <= 4096;
  if (
    o.protocol !== WATCH_PROTOCOL || !Number.isSafeInteger(o.pid) || (o.pid as number) <= 0 ||
    typeof o.token !== "string" || !HEX64.test(o.token) || !text4k(o.socket) ||
    !path.isAbsolute(o.socket as string) || !text4k(o.workspace) || !text4k(o.store) ||
    typeof o.started_at !== "string" || !ISO.test(o.started_at) || !text4k(o.version)
  ) {
    return null;
  }
  return o as unknown as WatchInfo;
}

/**
 * Reads the store's `watch.json` if it is private to this user (a regular
 * file owned by them, mode 0600 or stricter, in a private `run/`); null when
 * there is none or it cannot be trusted.
 */
export function readWatchInfo(storeDir: string): WatchInfo | null {
  if (!isPrivateDir(runDir(storeDir))) return null;
  const file = watchInfoPath(storeDir);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const stat = fs.fstatSync(fd);
    const uid = currentUid();
    if (!stat.isFile() || stat.size > MAX_INFO_BYTES) return null;
    if (uid !== null && (stat.uid !== uid || (stat.mode & 0o077) !== 0)) return null;
    const buffer = new Uint8Array(stat.size);
    let read = 0;
    while (read < buffer.byteLength) {
      const n = fs.readSync(fd, buffer, read, buffer.byteLength - read, read);
      if (n === 0) break;
      read += n;
    }
    return parseWatchInfo(new TextDecoder().decode(buffer.subarray(0, read)));
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/** A checkpoint a client asks a watch process for (the `create` options). */
export interface CheckpointArgs {
  /** Why (`-m`). */
  reason: string;
  /** The validated `--context` document, or null. */
  context: Record<string, unknown> | null;
  /** Capture the workspace. */
  workspace: boolean;
  /** Idempotency source, or null. */
  source: { kind: string; id: string } | null;
  /** Session, or null for the current one. */
  session: string | null;
  /** Branch, or null for the session's current one. */
  branch: string | null;
  /** Absent: no check; null: the branch must be empty; else the head it must have. */
  expect_head?: string | null;
  /** `--max-file-size`, or null for the default. */
  max_file_bytes: number | null;
  /** Extra `facets.metadata` entries, or null. */
  metadata: Record<string, unknown> | null;
  /** An agent hook event to record (`AgentEvent`), or null. */
  agent: Record<string, unknown> | null;
  /** Record a snapshot even when nothing changed since the head (`--allow-unchanged`). */
  allow_unchanged?: boolean;
}

/** One request line. */
export interface WatchRequest {
  /** {@linkcode WATCH_PROTOCOL}. */
  protocol: number;
  /** The token from `watch.json`. */
  token: string;
  /** What is asked. */
  op: "checkpoint" | "status" | "stop";
  /** The client's config directory (a checkpoint is signed with that identity or not at all). */
  config_dir: string | null;
  /** For `checkpoint`. */
  args?: CheckpointArgs;
}

/** One response line. */
export type WatchResponse =
  | { ok: true; result: Record<string, unknown> }
  | { ok: false; error: { code: string; message: string; hint: string | null } }
  | { ok: false; declined: string };
