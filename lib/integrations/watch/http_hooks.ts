/**
 * Claude Code's HTTP hooks, served by the watch process on 127.0.0.1 (layer:
 * watch; docs/FORMAT.md §15.3). Claude Code POSTs each event's JSON (what a
 * command hook reads on stdin) to `http://127.0.0.1:PORT/hook/claude-code`;
 * the event is recorded exactly as `ctxsnap hook claude-code` records it, and
 * the answer is what that hook prints: nothing (`204`), or one
 * `{"systemMessage": …}` object (`200`). A problem with the event or the
 * store is, as for the command hook, never the agent's: `204`, and one line
 * in the watch process's log.
 *
 * Nobody but this user's Claude Code gets an event accepted or learns
 * anything: every request must name `127.0.0.1:PORT` as its Host (a DNS
 * rebinding page names its own), carry no Origin (a browser always sends
 * one on a cross-site POST), carry the store's token as a bearer token (it
 * sits in `run/http.json`, mode 0600, and in the user's
 * `.claude/settings.local.json`), be a POST of `application/json` to the one
 * path, and hold at most `MAX_EVENT_BYTES`. A refused request gets a bare
 * status code and records nothing.
 *
 * @example
 * ```ts
 * import { parseHttpConf } from "./http_hooks.ts";
 * const conf = parseHttpConf(JSON.stringify({ port: 45123, token: `ctxsnap_hook_${"ab".repeat(32)}` }));
 * if (conf?.port !== 45123) throw new Error("not parsed");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as path from "node:path";
import { BusyError, CtxsnapError, quote, UsageError } from "../../errors.ts";
import { toHex } from "../../encoding/hex.ts";
import { MAX_EVENT_BYTES, parseClaudeCodeEvent } from "../../history/agent.ts";
import { omissionMessage, stoppedCheckpointMessage } from "../../history/omission.ts";
import { locateStore } from "../../repository/locate.ts";
import { writeFileAtomic } from "../../workspace/io/atomic.ts";
import { currentUid, isPrivateDir, runDir } from "./protocol.ts";
import type { WatchService } from "./service.ts";
import { checkpointOptions } from "./server.ts";

/** The file in `run/` holding the HTTP hooks' port and token. */
export const HTTP_CONF_FILE = "http.json";
/** The one path events are POSTed to. */
export const HOOK_PATH = "/hook/claude-code";
/** Most connections served at once. */
const MAX_CONNECTIONS = 32;
/** Bytes of an oversized body read (and thrown away) before the connection is cut. */
const MAX_DRAIN_BYTES = 4 * MAX_EVENT_BYTES;

/** The form of a token: a prefix the secret scanner knows (it never enters a snapshot), 256 random bits. */
const TOKEN = /^ctxsnap_hook_[0-9a-f]{64}$/;

/** The port and token of a store's HTTP hooks. */
export interface HttpConf {
  /** TCP port on 127.0.0.1. */
  port: number;
  /** The bearer token: `ctxsnap_hook_` and 64 hex digits. */
  token: string;
}

/** The path of `run/http.json` of the store in `storeDir`. */
export function httpConfPath(storeDir: string): string {
  return path.join(runDir(storeDir), HTTP_CONF_FILE);
}

/** Parses `run/http.json` strictly; null when it is not exactly `{port, token}`. */
export function parseHttpConf(text: string): HttpConf | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const o = value as Record<string, unknown>;
  if (Object.keys(o).sort().join(",") !== "port,token") return null;
  if (!Number.isSafeInteger(o.port) || (o.port as number) < 1024 || (o.port as number) > 65535) {
    return null;
  }
  if (typeof o.token !== "string" || !TOKEN.test(o.token)) return null;
  return { port: o.port as number, token: o.token };
}

/**
 * Reads the store's `run/http.json` if it is private to this user (a regular
 * file they own, mode 0600, in a private `run/`); null otherwise.
 */
export function readHttpConf(storeDir: string): HttpConf | null {
  if (!isPrivateDir(runDir(storeDir))) return null;
  let fd: number;
  try {
    fd = fs.openSync(httpConfPath(storeDir), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const stat = fs.fstatSync(fd);
    const uid = currentUid();
    if (!stat.isFile() || stat.size > 4096) return null;
    if (uid !== null && (stat.uid !== uid || (stat.mode & 0o077) !== 0)) return null;
    const buffer = new Uint8Array(stat.size);
    const n = fs.readSync(fd, buffer, 0, buffer.byteLength, 0);
    return parseHttpConf(new TextDecoder().decode(buffer.subarray(0, n)));
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The store's HTTP hook port and token, made the first time (a port free on
 * 127.0.0.1 now, a random token; `run/http.json`, mode 0600). They stay the
 * same across watch processes, so the settings that name them keep working.
 */
export async function ensureHttpConf(storeDir: string): Promise<HttpConf> {
  const existing = readHttpConf(storeDir);
  if (existing !== null) return existing;
  const dir = runDir(storeDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!isPrivateDir(dir)) {
    throw new CtxsnapError(`The directory ${quote(dir)} is not private to this user`, "failure", {
      hint: `chmod 700 ${dir}`,
    });
  }
  const conf: HttpConf = {
    port: await freePort(),
    token: `ctxsnap_hook_${toHex(crypto.getRandomValues(new Uint8Array(32)))}`,
  };
  writeFileAtomic(httpConfPath(storeDir), JSON.stringify(conf), { mode: 0o600 });
  return conf;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}

/** Options of {@linkcode HookHttpServer.start}. */
export interface HookHttpOptions {
  /** Called on each request (the watch process's idle clock). */
  onRequest?: () => void;
  /** Told each problem an accepted event had (the command hook's stderr line). */
  onProblem?: (error: unknown) => void;
  /** Milliseconds to keep retrying a busy store (the command hook's budget). */
  busyBudgetMs?: number;
}

/** Why a request is refused: its status code. */
const REFUSED = {
  host: 421,
  origin: 403,
  token: 401,
  method: 405,
  path: 404,
  type: 415,
  size: 413,
} as const;

/** Serves Claude Code's HTTP hooks for one {@linkcode WatchService}. */
export class HookHttpServer {
  private constructor(private readonly server: http.Server, readonly conf: HttpConf) {}

  /** Listens on `127.0.0.1:conf.port`. Throws when the port is taken. */
  static async start(
    service: WatchService,
    conf: HttpConf,
    options: HookHttpOptions = {},
  ): Promise<HookHttpServer> {
    const server = http.createServer({ maxHeaderSize: 16 * 1024 });
    server.maxConnections = MAX_CONNECTIONS;
    server.headersTimeout = 10_000;
    server.requestTimeout = 60_000;
    const hooks = new HookHttpServer(server, conf);
    server.on("request", (req, res) => {
      options.onRequest?.();
      hooks.serve(service, req, res, options).catch((error) => {
        options.onProblem?.(error);
        send(res, 204);
      });
    });
    server.on("clientError", (_error, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(conf.port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    return hooks;
  }

  /** The URL events are POSTed to. */
  get url(): string {
    return `http://127.0.0.1:${this.conf.port}${HOOK_PATH}`;
  }

  private async serve(
    service: WatchService,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    options: HookHttpOptions,
  ): Promise<void> {
    const refusal = refuse(req, this.conf);
    const body = await readBody(req, refusal === null);
    if (refusal !== null) return send(res, REFUSED[refusal]);
    if (body === null) return send(res, REFUSED.size);
    const recordPrompts = new URL(req.url ?? "/", "http://x").searchParams.get("record_prompts") ===
      "1";
    let answer: string | null = null;
    try {
      answer = await record(service, body, recordPrompts, options.busyBudgetMs ?? 30_000);
    } catch (error) {
      // As the command hook: never the agent's problem; one line in the log, and a problem that
      // stops every event told to the user.
      options.onProblem?.(error);
      const told = stoppedCheckpointMessage(error);
      if (told !== null) answer = JSON.stringify({ systemMessage: told });
    }
    if (answer === null) return send(res, 204);
    send(res, 200, answer);
  }

  /** Stops listening. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections?.();
    });
  }
}

/** The first check a request fails, or null when it may be read. */
export function refuse(
  req: Pick<http.IncomingMessage, "method" | "url" | "headers">,
  conf: HttpConf,
): keyof typeof REFUSED | null {
  const headers = req.headers;
  if (headers.host !== `127.0.0.1:${conf.port}`) return "host";
  if (headers.origin !== undefined) return "origin";
  const auth = headers.authorization;
  const given = typeof auth === "string" && auth.startsWith("Bearer ") ? auth.slice(7) : "";
  if (!sameToken(given, conf.token)) return "token";
  if (req.method !== "POST") return "method";
  const url = req.url ?? "";
  if (url !== HOOK_PATH && url !== `${HOOK_PATH}?record_prompts=1`) return "path";
  const type = (headers["content-type"] ?? "").toLowerCase().replace(/\s+/g, "");
  if (type !== "application/json" && type !== "application/json;charset=utf-8") return "type";
  const length = Number(headers["content-length"] ?? "0");
  if (!(length <= MAX_EVENT_BYTES)) return "size";
  return null;
}

/** Records one event as `ctxsnap hook claude-code` does; the JSON to answer, or null. */
async function record(
  service: WatchService,
  body: Uint8Array,
  recordPrompts: boolean,
  busyBudgetMs: number,
): Promise<string | null> {
  const event = parseClaudeCodeEvent(body, { recordPrompts });
  const cwd = event.cwd ?? service.store.workspaceRoot;
  let isDir = false;
  try {
    isDir = fs.statSync(cwd).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new UsageError(`The hook event's cwd ${quote(cwd)} is not a directory`);
  const storeDir = locateStore({ cwd });
  if (storeDir !== service.store.dir) {
    throw new UsageError(
      `The hook event's cwd ${quote(cwd)} belongs to the store ${
        quote(storeDir)
      }, not this watch process's`,
    );
  }
  const options = checkpointOptions({
    reason: "",
    context: null,
    workspace: true,
    source: null,
    session: null,
    branch: null,
    max_file_bytes: null,
    metadata: null,
    agent: event as unknown as Record<string, unknown>,
  });
  const deadline = Date.now() + busyBudgetMs;
  for (;;) {
    try {
      const result = await service.checkpoint(options);
      const omitted = result.agent?.omitted ?? [];
      const more = result.agent?.omittedMore ?? 0;
      if (omitted.length === 0 && more === 0) return null;
      return JSON.stringify({ systemMessage: omissionMessage(result.id, omitted, more) });
    } catch (error) {
      if (!(error instanceof BusyError) || Date.now() >= deadline) throw error;
    }
  }
}

/**
 * Reads the body: its bytes when `keep` and within `MAX_EVENT_BYTES`, else
 * null (an oversized body is read and thrown away, so the client hears the
 * status; past `MAX_DRAIN_BYTES` the connection is cut).
 */
function readBody(req: http.IncomingMessage, keep: boolean): Promise<Uint8Array | null> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    req.on("data", (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > MAX_DRAIN_BYTES) {
        req.socket.destroy();
        resolve(null);
      } else if (keep && size <= MAX_EVENT_BYTES) chunks.push(chunk);
    });
    req.on("end", () => {
      if (!keep || size > MAX_EVENT_BYTES) return resolve(null);
      const out = new Uint8Array(size);
      let offset = 0;
      for (const chunk of chunks) {
        out.set(chunk, offset);
        offset += chunk.byteLength;
      }
      resolve(out);
    });
    req.on("error", () => resolve(null));
  });
}

function send(res: http.ServerResponse, status: number, json?: string): void {
  if (res.headersSent) return;
  try {
    if (json === undefined) {
      res.writeHead(status, { "content-length": "0" });
      res.end();
    } else {
      const bytes = new TextEncoder().encode(json);
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": String(bytes.byteLength),
      });
      res.end(bytes);
    }
  } catch {
    // The client went away.
  }
}

function sameToken(given: string, expected: string): boolean {
  if (given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < given.length; i++) diff |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return diff === 0;
}
