/**
 * Serving a {@linkcode WatchService} on a Unix socket (layer: watch; the
 * protocol is docs/FORMAT.md §15 and `protocol.ts`). One request line per
 * connection, one response line back. The socket sits in the store's private
 * `run/` directory (or, when that path is too long for a socket, in a private
 * per-user directory) and every request must carry the token that only
 * `watch.json` (mode 0600) holds.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * import { WatchService } from "./service.ts";
 * import { WatchServer } from "./server.ts";
 * import { readWatchInfo } from "./protocol.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const service = new WatchService(store, await loadOrCreateIdentity(await Deno.makeTempDir()));
 * const server = await WatchServer.start(service);
 * if (readWatchInfo(store.dir)?.pid !== Deno.pid) throw new Error("watch.json not written");
 * await server.close();
 * service.close();
 * store.close();
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import { type JsonValue, parseJson } from "../../encoding/canonical_json.ts";
import { validateAgentEvent } from "../../history/agent.ts";
import { CtxsnapError, quote, UsageError } from "../../errors.ts";
import { toHex } from "../../encoding/hex.ts";
import { configDir } from "../../keys/identity.ts";
import { writeFileAtomic } from "../../workspace/io/atomic.ts";
import { isValidName } from "../../format/body.ts";
import { validateContextInput } from "../../history/create.ts";
import { VERSION } from "../../version.ts";
import { getEnv } from "../../runtime.ts";
import {
  type CheckpointArgs,
  isPrivateDir,
  MAX_REQUEST_BYTES,
  readWatchInfo,
  runDir,
  socketPathFor,
  WATCH_PROTOCOL,
  type WatchInfo,
  watchInfoPath,
  type WatchResponse,
} from "./protocol.ts";
import { type CheckpointOptions, serviceStatusWire, type WatchService } from "./service.ts";
import { acquireLock } from "./daemon.ts";

/** Most connections served at once; more are closed at once. */
const MAX_CONNECTIONS = 32;

/** Options of {@linkcode WatchServer.start}. */
export interface WatchServerOptions {
  /** Exit (resolve {@linkcode WatchServer.stopRequested}) after this many ms without a request. */
  idleMs?: number;
  /** The store's `run/watch.lock`, already taken (see `acquireLock`): released on close. */
  lock?: () => void;
}

/** A running socket server for a {@linkcode WatchService}. */
export class WatchServer {
  private connections = 0;
  /** Open connections not running a request: `close` ends them, so a client cannot hold it open. */
  private readonly idle = new Set<net.Socket>();
  private closed = false;
  private lastActivity = Date.now();
  private idleTimer: ReturnType<typeof setInterval> | null = null;
  private releaseLock: () => void = () => {};
  /** The URL of the HTTP hooks this process also serves, or null (reported by `status`). */
  http: string | null = null;
  /** Why it stopped by itself (idle, store gone), or null. */
  stopReason: string | null = null;
  private resolveStop!: () => void;
  /** Resolves when a client asked the watch process to stop. */
  readonly stopRequested: Promise<void> = new Promise((resolve) => this.resolveStop = resolve);

  private constructor(
    private readonly service: WatchService,
    private readonly server: net.Server,
    /** What `watch.json` says. */
    readonly info: WatchInfo,
    /** The private directory made for the socket (removed on close), or null for `run/`. */
    private readonly socketDir: string | null,
  ) {}

  /**
   * Starts serving: creates the private `run/` directory, removes a stale
   * socket (one nobody answers on), listens, and writes `watch.json` last.
   * Throws {@linkcode ConflictError}-coded errors when another watch process
   * serves this store.
   */
  static async start(
    service: WatchService,
    options: WatchServerOptions = {},
  ): Promise<WatchServer> {
    const storeDir = service.store.dir;
    const dir = runDir(storeDir);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!isPrivateDir(dir)) {
      throw new CtxsnapError(
        `The directory ${quote(dir)} is not private to this user`,
        "failure",
        { hint: `it must be a directory you own with mode 0700: chmod 700 ${dir}` },
      );
    }
    // At most one watch process per store: the one holding run/watch.lock.
    const lock = options.lock ?? acquireLock(storeDir);
    if (typeof lock === "number") {
      throw new CtxsnapError(
        `A watch process (pid ${lock}) already serves the store ${quote(storeDir)}`,
        "conflict",
        { hint: "stop it first: ctxsnap watch stop" },
      );
    }
    try {
      const watch = await WatchServer.listen(service, storeDir);
      watch.releaseLock = lock;
      watch.stopWhenIdle(options.idleMs);
      return watch;
    } catch (error) {
      lock();
      throw error;
    }
  }

  /** Notes a request (an HTTP hook event, say): the idle time starts again. */
  touch(): void {
    this.lastActivity = Date.now();
  }

  /**
   * Stops when the store directory is removed (a deleted workspace leaves no
   * process behind) and, given `idleMs`, when its watch files are gone or no
   * request came for that long.
   */
  private stopWhenIdle(idleMs: number | undefined): void {
    const storeDir = this.service.store.dir;
    const check = () => {
      if (this.closed) return;
      if (!fs.existsSync(storeDir)) {
        this.stopReason = "its store is gone";
        this.resolveStop();
      } else if (idleMs === undefined) {
        return;
      } else if (readWatchInfo(storeDir)?.token !== this.info.token) {
        // Another process took its watch files: nothing to serve.
        this.stopReason = "its watch files are gone";
        this.resolveStop();
      } else if (this.connections === 0 && Date.now() - this.lastActivity >= idleMs) {
        this.stopReason = `idle for ${Math.round(idleMs / 1000)} s`;
        this.resolveStop();
      }
    };
    this.idleTimer = setInterval(check, Math.max(50, Math.min((idleMs ?? Infinity) / 4, 30_000)));
    this.idleTimer.unref?.();
  }

  private static async listen(service: WatchService, storeDir: string): Promise<WatchServer> {
    const running = readWatchInfo(storeDir);
    if (running !== null && await answers(running.socket)) {
      throw new CtxsnapError(
        `A watch process (pid ${running.pid}) already serves the store ${quote(storeDir)}`,
        "conflict",
        { hint: "stop it first: ctxsnap watch stop" },
      );
    }
    let madeDir: string | null = null;
    const socket = socketPathFor(storeDir, () => (madeDir = privateSocketDir()));
    // Nobody answers there (checked above): a socket left by a killed process.
    if (madeDir === null) fs.rmSync(socket, { force: true });
    const token = toHex(crypto.getRandomValues(new Uint8Array(32)));
    const info: WatchInfo = {
      protocol: WATCH_PROTOCOL,
      pid: process.pid,
      token,
      socket,
      workspace: service.store.workspaceRoot,
      store: storeDir,
      started_at: new Date().toISOString(),
      version: VERSION,
    };
    const server = net.createServer();
    const watch = new WatchServer(service, server, info, madeDir);
    server.on("connection", (connection) => watch.accept(connection));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socket, () => {
        server.off("error", reject);
        resolve();
      });
    });
    fs.chmodSync(socket, 0o600);
    writeFileAtomic(watchInfoPath(storeDir), JSON.stringify(info), { mode: 0o600 });
    return watch;
  }

  private accept(connection: net.Socket): void {
    if (this.closed || this.connections >= MAX_CONNECTIONS) {
      connection.destroy();
      return;
    }
    this.connections += 1;
    this.idle.add(connection);
    this.touch();
    connection.on("close", () => {
      this.connections -= 1;
      this.idle.delete(connection);
      this.touch();
    });
    connection.on("error", () => {});
    const chunks: Uint8Array[] = [];
    let size = 0;
    let done = false;
    connection.on("data", (chunk: Uint8Array) => {
      if (done) return;
      const newline = chunk.indexOf(0x0a);
      const part = newline < 0 ? chunk : chunk.subarray(0, newline);
      size += part.byteLength;
      if (size > MAX_REQUEST_BYTES) {
        done = true;
        reply(connection, errorResponse(new UsageError("The request is too large")));
        return;
      }
      chunks.push(part);
      if (newline < 0) return;
      done = true;
      this.idle.delete(connection); // a request runs to its answer, even while closing
      const line = new Uint8Array(size);
      let offset = 0;
      for (const piece of chunks) {
        line.set(piece, offset);
        offset += piece.byteLength;
      }
      const answer = (response: WatchResponse) => {
        reply(connection, response);
        if (this.closed) connection.once("finish", () => connection.destroy());
        // A client gone before its answer (a hook that timed out) is not kept.
        else if (!connection.destroyed) this.idle.add(connection);
      };
      this.handle(line).then(answer, (error) => answer(errorResponse(error)));
    });
  }

  private async handle(line: Uint8Array): Promise<WatchResponse> {
    const request = parseRequest(line);
    if (!sameToken(request.token, this.info.token)) {
      throw new UsageError("The request does not carry this watch process's token");
    }
    if (request.op === "status") {
      return {
        ok: true,
        result: {
          pid: this.info.pid,
          started_at: this.info.started_at,
          http: this.http,
          ...serviceStatusWire(this.service.status()),
        },
      };
    }
    if (request.op === "stop") {
      this.resolveStop();
      return { ok: true, result: { stopping: true, pid: this.info.pid } };
    }
    // A checkpoint is signed with the client's identity or not made here.
    if (request.config_dir !== null && request.config_dir !== configDir()) {
      return { ok: false, declined: "the watch process signs with another config directory" };
    }
    const result = await this.service.checkpoint(checkpointOptions(request.args!));
    return {
      ok: true,
      result: {
        id: result.id,
        created: result.created,
        envelope: result.envelope,
        capture: result.capture,
        secrets: result.secrets,
        operation: result.operation,
        // The agent outcome in its wire shape (FORMAT.md §15), snake_case.
        ...(result.agent === undefined ? {} : {
          agent: {
            session_id: result.agent.sessionId,
            event: result.agent.event,
            position: result.agent.position,
            prompt: result.agent.prompt,
            duplicate: result.agent.duplicate,
            omitted: result.agent.omitted,
            omitted_more: result.agent.omittedMore,
            ...(result.agent.transcript === undefined
              ? {}
              : { transcript: result.agent.transcript }),
          },
        }),
      } as unknown as Record<string, unknown>,
    };
  }

  /** Stops listening and removes the socket and `watch.json` (if still this process's). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.idleTimer !== null) clearInterval(this.idleTimer);
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const connection of this.idle) connection.destroy();
    await closing;
    const current = readWatchInfo(this.service.store.dir);
    if (current?.token === this.info.token) {
      fs.rmSync(watchInfoPath(this.service.store.dir), { force: true });
    }
    fs.rmSync(this.info.socket, { force: true });
    if (this.socketDir !== null) fs.rmSync(this.socketDir, { recursive: true, force: true });
    this.releaseLock();
  }
}

/**
 * A fresh private directory for a socket whose path in the store would be
 * too long: made with `mkdtemp` (a random name, mode 0700, failing rather
 * than reusing what exists) under `$XDG_RUNTIME_DIR` when that is a private
 * directory of this user, else under the temporary directory. Nobody can
 * predict it, so nobody can take it first.
 */
function privateSocketDir(): string {
  const runtime = getEnv("XDG_RUNTIME_DIR");
  const base = runtime !== undefined && path.isAbsolute(runtime) && isPrivateDir(runtime)
    ? runtime
    : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, "ctxsnap-"));
  if (!isPrivateDir(dir)) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new CtxsnapError(`The directory ${quote(dir)} is not private to this user`);
  }
  return dir;
}

function reply(connection: net.Socket, response: WatchResponse): void {
  try {
    connection.end(`${JSON.stringify(response)}\n`);
  } catch {
    // The client went away.
  }
}

function errorResponse(error: unknown): WatchResponse {
  if (error instanceof CtxsnapError) {
    return {
      ok: false,
      error: { code: error.code, message: error.message, hint: error.hint ?? null },
    };
  }
  return {
    ok: false,
    error: {
      code: "failure",
      message: error instanceof Error ? error.message : String(error),
      hint: null,
    },
  };
}

/** Whether something answers on the Unix socket at `socket`. */
function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createConnection(socket);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}

function sameToken(given: string, expected: string): boolean {
  if (given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < given.length; i++) diff |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return diff === 0;
}

interface ParsedRequest {
  token: string;
  op: "checkpoint" | "status" | "stop";
  config_dir: string | null;
  args?: CheckpointArgs;
}

function bad(what: string): never {
  throw new UsageError(`Invalid watch request: ${what}`);
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    bad(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

function onlyKeys(
  o: Record<string, unknown>,
  required: string[],
  optional: string[],
  what: string,
): void {
  for (const key of Object.keys(o)) {
    if (!required.includes(key) && !optional.includes(key)) {
      bad(`${what} has unknown field ${quote(key)}`);
    }
  }
  for (const key of required) if (!Object.hasOwn(o, key)) bad(`${what} lacks ${quote(key)}`);
}

function textOrNull(value: unknown, what: string, max: number): string | null {
  if (value === null) return null;
  if (typeof value !== "string" || value.length > max) {
    bad(`${what} is not a string of at most ${max} characters`);
  }
  return value;
}

/** Parses and checks one request line strictly. */
function parseRequest(line: Uint8Array): ParsedRequest {
  let value: unknown;
  try {
    value = parseJson(line, { maxBytes: MAX_REQUEST_BYTES });
  } catch (error) {
    bad((error as Error).message);
  }
  const o = object(value, "the request");
  onlyKeys(o, ["protocol", "token", "op", "config_dir"], ["args"], "the request");
  if (o.protocol !== WATCH_PROTOCOL) bad(`protocol ${quote(o.protocol)} is not ${WATCH_PROTOCOL}`);
  if (typeof o.token !== "string" || !/^[0-9a-f]{64}$/.test(o.token)) {
    bad("the token is not 64 hex");
  }
  if (o.op !== "checkpoint" && o.op !== "status" && o.op !== "stop") {
    bad(`unknown op ${quote(o.op)}`);
  }
  const configDirGiven = textOrNull(o.config_dir, "config_dir", 4096);
  if (o.op !== "checkpoint") {
    if (o.args !== undefined) bad(`${o.op} takes no args`);
    return { token: o.token, op: o.op, config_dir: configDirGiven };
  }
  const a = object(o.args, "args");
  onlyKeys(
    a,
    [
      "reason",
      "context",
      "workspace",
      "source",
      "session",
      "branch",
      "max_file_bytes",
      "metadata",
      "agent",
    ],
    ["expect_head", "allow_unchanged"],
    "args",
  );
  const reason = textOrNull(a.reason, "reason", 1024) ?? "";
  if (typeof a.workspace !== "boolean") bad("workspace is not a boolean");
  let source: CheckpointArgs["source"] = null;
  if (a.source !== null) {
    const s = object(a.source, "source");
    onlyKeys(s, ["kind", "id"], [], "source");
    if (typeof s.kind !== "string" || !/^[a-z][a-z0-9_-]{0,31}$/.test(s.kind)) {
      bad("source.kind is invalid");
    }
    if (typeof s.id !== "string" || s.id.length < 1 || s.id.length > 256) {
      bad("source.id is invalid");
    }
    source = { kind: s.kind, id: s.id };
  }
  const session = textOrNull(a.session, "session", 300);
  const branch = textOrNull(a.branch, "branch", 300);
  if (session !== null && !isValidName(session)) {
    bad(`session ${quote(session)} is not a valid name`);
  }
  if (branch !== null && !isValidName(branch)) bad(`branch ${quote(branch)} is not a valid name`);
  if (
    a.max_file_bytes !== null &&
    (!Number.isSafeInteger(a.max_file_bytes) || (a.max_file_bytes as number) < 1)
  ) {
    bad("max_file_bytes is not a positive integer");
  }
  const args: CheckpointArgs = {
    reason,
    context: a.context === null ? null : object(a.context, "context"),
    workspace: a.workspace,
    source,
    session,
    branch,
    max_file_bytes: a.max_file_bytes as number | null,
    metadata: a.metadata === null ? null : object(a.metadata, "metadata"),
    agent: a.agent === null ? null : object(a.agent, "agent"),
  };
  if (Object.hasOwn(a, "expect_head")) {
    args.expect_head = textOrNull(a.expect_head, "expect_head", 64);
  }
  if (Object.hasOwn(a, "allow_unchanged")) {
    if (typeof a.allow_unchanged !== "boolean") bad("allow_unchanged is not a boolean");
    args.allow_unchanged = a.allow_unchanged;
  }
  return { token: o.token, op: "checkpoint", config_dir: configDirGiven, args };
}

/** The checkpoint options a request's args ask for (the context document validated as `create --context`). */
export function checkpointOptions(args: CheckpointArgs): CheckpointOptions {
  return {
    reason: args.reason,
    context: args.context === null ? null : validateContextInput(args.context),
    workspace: args.workspace,
    source: args.source,
    ...(args.session !== null ? { session: args.session } : {}),
    ...(args.branch !== null ? { branch: args.branch } : {}),
    ...(args.expect_head !== undefined ? { expectHead: args.expect_head } : {}),
    ...(args.max_file_bytes !== null ? { maxFileBytes: args.max_file_bytes } : {}),
    ...(args.metadata !== null ? { metadata: args.metadata as Record<string, JsonValue> } : {}),
    ...(args.agent !== null ? { agent: validateAgentEvent(args.agent) } : {}),
    ...(args.allow_unchanged === true ? { allowUnchanged: true } : {}),
  };
}
