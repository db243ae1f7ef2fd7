/**
 * Asking a running `ctxsnap watch` for something (layer: watch; loads only
 * `node:net`, `node:fs` and `node:path`, so `ctxsnap create` and the hook
 * stay cheap to start). See docs/FORMAT.md §15.
 *
 * {@linkcode askWatch} returns null whenever no watch process can take the
 * request — none runs, its files are not private to this user (`run/`,
 * `watch.json`, the socket and the socket's directory must all be this
 * user's and closed to others), it does not answer, it declined, or it died
 * before answering — and the caller then does the work itself. The caller
 * verifies what a checkpoint returns against the store before reporting it
 * (`lib/cli/_checkpoint.ts`). An error the watch process reports (a conflict, a
 * bad name) is thrown as the {@linkcode CtxsnapError} it was.
 *
 * @example
 * ```ts
 * import { askWatch } from "./client.ts";
 * const dir = await Deno.makeTempDir();
 * // No watch process serves this store: the caller works alone.
 * if (await askWatch(dir, "status", null) !== null) throw new Error("nobody should answer");
 * ```
 * @module
 */
import * as net from "node:net";
import { CtxsnapError, type ErrorCode, EXIT_CODES } from "../../errors.ts";
import {
  type CheckpointArgs,
  isPrivateSocket,
  MAX_RESPONSE_BYTES,
  readWatchInfo,
  WATCH_PROTOCOL,
  type WatchInfo,
  type WatchRequest,
} from "./protocol.ts";

/** Milliseconds a client waits for a watch process's answer before working alone. */
export const ANSWER_TIMEOUT_MS = 120_000;

/** Options of {@linkcode askWatch}. */
export interface AskOptions {
  /** The client's config directory (checkpoints: signed with that identity or declined). */
  configDir?: string | null;
  /** For a store found by walking up: the watch must watch the directory holding it. */
  expectWorkspace?: string;
  /** Milliseconds to wait for the answer (default {@linkcode ANSWER_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/**
 * Sends one request to the watch process serving the store in `storeDir`;
 * returns its result, or null when none can take it (see the module doc).
 */
export async function askWatch(
  storeDir: string,
  op: WatchRequest["op"],
  args: CheckpointArgs | null,
  options: AskOptions = {},
): Promise<{ info: WatchInfo; result: Record<string, unknown> } | null> {
  const info = readWatchInfo(storeDir);
  if (info === null || info.store !== storeDir) return null;
  if (options.expectWorkspace !== undefined && info.workspace !== options.expectWorkspace) {
    return null;
  }
  // Only a socket this user's watch process made: never someone else's listener.
  if (!isPrivateSocket(info.socket)) return null;
  const request: WatchRequest = {
    protocol: WATCH_PROTOCOL,
    token: info.token,
    op,
    config_dir: options.configDir ?? null,
    ...(args !== null ? { args } : {}),
  };
  const line = await exchange(
    info.socket,
    `${JSON.stringify(request)}\n`,
    options.timeoutMs ?? ANSWER_TIMEOUT_MS,
  );
  if (line === null) return null;
  let response: unknown;
  try {
    response = JSON.parse(line);
  } catch {
    return null;
  }
  if (response === null || typeof response !== "object" || Array.isArray(response)) return null;
  const r = response as Record<string, unknown>;
  if (r.ok === true && r.result !== null && typeof r.result === "object") {
    return { info, result: r.result as Record<string, unknown> };
  }
  if (r.ok === false && r.error !== null && typeof r.error === "object") {
    const e = r.error as Record<string, unknown>;
    const code = typeof e.code === "string" && Object.hasOwn(EXIT_CODES, e.code)
      ? e.code as ErrorCode
      : "failure";
    const message = typeof e.message === "string" ? e.message : "The watch process failed";
    throw new CtxsnapError(message, code, typeof e.hint === "string" ? { hint: e.hint } : {});
  }
  return null; // declined, or not a response at all
}

/** Sends `text` on the Unix socket and returns the first line back, or null. */
function exchange(socket: string, text: string, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    let settled = false;
    const chunks: Uint8Array[] = [];
    let size = 0;
    const connection = net.createConnection(socket);
    const finish = (value: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      connection.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    connection.on("connect", () => connection.write(text));
    connection.on("data", (chunk: Uint8Array) => {
      const newline = chunk.indexOf(0x0a);
      const part = newline < 0 ? chunk : chunk.subarray(0, newline);
      size += part.byteLength;
      if (size > MAX_RESPONSE_BYTES) return finish(null);
      chunks.push(part);
      if (newline < 0) return;
      const bytes = new Uint8Array(size);
      let offset = 0;
      for (const piece of chunks) {
        bytes.set(piece, offset);
        offset += piece.byteLength;
      }
      try {
        finish(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
      } catch {
        finish(null);
      }
    });
    // Refused, reset or closed before a whole line: the caller works alone.
    connection.on("error", () => finish(null));
    connection.on("close", () => finish(null));
  });
}
