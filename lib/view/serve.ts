/**
 * `ctxsnap serve`: the Replay page, live, on `127.0.0.1` only. Read-only:
 * the store is opened read-only, every request is a GET, and the one action
 * the page offers, a restore preview, is the dry-run plan (nothing written).
 *
 * Who may ask (checked in this order, for every request):
 *
 * 1. **Host** must be exactly `127.0.0.1:<port>`, else 403: a DNS-rebinding
 *    page (`evil.example` resolving to 127.0.0.1) sends its own host name.
 * 2. **Method** must be GET, else 405.
 * 3. **Origin**, when sent, must be `http://127.0.0.1:<port>`, else 403.
 * 4. **Token**: the path starts with `/<token>/`, a 128-bit random value
 *    printed only to the user who started the server, compared in constant
 *    time; else 403. Another local web page, or another user on the machine,
 *    can reach the port but not guess the token.
 *
 * Routes under `/<token>/`: the page (``), `api/timeline` (the data),
 * `api/events` (server-sent events: `timeline` when the store changed),
 * `api/diff?key=<old>..<new>` (a file diff, computed on request for blobs the
 * data names) and `api/restore-preview?id=<id>` (the dry-run restore plan:
 * the three-way file plan against the workspace baseline, with the local
 * changes it keeps, and the session change).
 * Every response says `Cache-Control: no-store`, `nosniff`, `no-referrer`,
 * and forbids framing; the page gets the CSP of `html.ts` as a header.
 *
 * The server notices new snapshots by checking the index's size and mtime
 * (and its WAL's) every `pollMs`; when they change it rebuilds the data and,
 * when the data changed, tells every connected page.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { serveTimeline } from "./serve.ts";
 * const dir = await Deno.makeTempDir();
 * Store.init(`${dir}/.ctxsnap`, dir).close();
 * const store = Store.open(`${dir}/.ctxsnap`, { readOnly: true });
 * const server = await serveTimeline(store, { kind: "all" }, { isTrusted: () => false, nameOf: () => null });
 * const refused = await fetch(server.url.replace(server.token, "x".repeat(32)));
 * await refused.body?.cancel();
 * const page = await fetch(server.url);
 * const ok = page.status === 200 && (await page.text()).includes("ctxsnap-data");
 * await server.close();
 * store.close();
 * if (!(refused.status === 403 && ok)) throw new Error("token check");
 * ```
 * @module
 */
import { promptConversation } from "../integrations/agents/conversation.ts";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { CtxsnapError, exitCodeOf, IntegrityError, quote, UsageError } from "../errors.ts";
import { isHex, toHex } from "../encoding/hex.ts";
import { restoreSnapshot } from "../workspace/move/restore.ts";
import type { Signer } from "../format/envelope.ts";
import type { TrustPolicy } from "../history/verify.ts";
import { INDEX_FILE, type Store } from "../repository/store.ts";
import { contentSecurityPolicy, renderPage } from "./html.ts";
import {
  blobsOf,
  fileDiff,
  parseDiffKey,
  storeContent,
  type StoreScope,
  type TimelineData,
  timelineFromStore,
  TreeCache,
} from "./model.ts";

/** Options of {@linkcode serveTimeline}. */
export interface ServeOptions {
  /** How often the store is checked for changes, in ms (default 1000). */
  pollMs?: number;
}

/** A running server. */
export interface TimelineServer {
  /** The page's URL, token included: `http://127.0.0.1:<port>/<token>/`. */
  url: string;
  /** The port chosen by the system. */
  port: number;
  /** The access token (32 hex characters). */
  token: string;
  /** How many times the data was rebuilt after a change. */
  readonly rebuilds: number;
  /** Stops listening and ends every connection. */
  close(): Promise<void>;
}

/** Most entries of each list a restore preview returns. */
export const MAX_PREVIEW_ITEMS = 1000;

/** Never used: a dry run signs nothing. Any use is a bug and throws. */
const NO_SIGNER: Signer = {
  get seed(): Uint8Array {
    throw new Error("a restore preview never signs");
  },
  get publicKey(): Uint8Array {
    throw new Error("a restore preview never signs");
  },
  get publicKeyHex(): string {
    throw new Error("a restore preview never signs");
  },
  get keyId(): string {
    throw new Error("a restore preview never signs");
  },
};

const COMMON_HEADERS: Record<string, string> = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};
const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Compares two strings in time independent of where they differ. */
function sameSecret(given: string, expected: string): boolean {
  let diff = given.length ^ expected.length;
  for (let i = 0; i < expected.length; i++) {
    diff |= (given.charCodeAt(i) | 0) ^ expected.charCodeAt(i);
  }
  return diff === 0;
}

function fingerprint(store: Store): string {
  const parts: string[] = [];
  for (const name of [INDEX_FILE, `${INDEX_FILE}-wal`]) {
    try {
      const s = fs.statSync(path.join(store.dir, name), { bigint: true });
      parts.push(`${s.size}:${s.mtimeNs}:${s.ino}`);
    } catch {
      parts.push("-");
    }
  }
  return parts.join("/");
}

/** What the page's state depends on: ids, heads and verdicts (not the build time). */
function dataDigest(data: TimelineData): string {
  return JSON.stringify([
    data.snapshots.map((s) => [s.id, s.signer.status]),
    data.branches.map((b) => [b.lane, b.head, b.base, b.current]),
  ]);
}

/**
 * Serves the timeline of `store` (opened read-only) for `scope` on
 * 127.0.0.1 at a random port with a random token.
 */
export async function serveTimeline(
  store: Store,
  scope: StoreScope,
  trust: TrustPolicy,
  options: ServeOptions = {},
): Promise<TimelineServer> {
  if (!store.readOnly) throw new UsageError("serve needs a store opened read-only");
  const token = toHex(crypto.getRandomValues(new Uint8Array(16)));
  const treeCache = new TreeCache();
  const build = () =>
    timelineFromStore(store, scope, trust, {
      live: true,
      treeCache,
      conversation: (harness, sessionId, prompt) =>
        promptConversation(store, harness, sessionId, prompt),
    });
  let data = await build();
  let digest = dataDigest(data);
  let seen = fingerprint(store);
  let allowedBlobs = blobsOf(data);
  let rebuilds = 0;
  let rebuilding: Promise<void> | null = null;
  const streams = new Set<http.ServerResponse>();

  /** Rebuilds when the index changed; tells the pages when the data did. */
  const refresh = (): Promise<void> => {
    if (rebuilding !== null) return rebuilding;
    const now = fingerprint(store);
    if (now === seen) return Promise.resolve();
    rebuilding = (async () => {
      try {
        const next = await build();
        seen = now;
        data = next;
        allowedBlobs = blobsOf(next);
        rebuilds++;
        const nextDigest = dataDigest(next);
        if (nextDigest !== digest) {
          digest = nextDigest;
          const event = `event: timeline\ndata: ${
            JSON.stringify({ generated_at: next.generated_at, snapshots: next.snapshots.length })
          }\n\n`;
          for (const res of streams) res.write(event);
        }
      } catch {
        // A writer mid-transaction or a busy store: try again at the next poll.
      } finally {
        rebuilding = null;
      }
    })();
    return rebuilding;
  };

  let port = 0;
  const send = (
    res: http.ServerResponse,
    status: number,
    type: string,
    body: string,
    csp = API_CSP,
  ): void => {
    const bytes = new TextEncoder().encode(body);
    res.writeHead(status, {
      ...COMMON_HEADERS,
      "Content-Type": type,
      "Content-Security-Policy": csp,
      "Content-Length": String(bytes.byteLength),
    });
    res.end(bytes);
  };
  const sendJson = (res: http.ServerResponse, status: number, value: unknown): void =>
    send(res, status, "application/json; charset=utf-8", JSON.stringify(value));
  const refuse = (res: http.ServerResponse, status: number, message: string): void => {
    if (status === 405) res.setHeader("Allow", "GET");
    send(res, status, "text/plain; charset=utf-8", `${message}\n`);
  };
  const sendError = (res: http.ServerResponse, error: unknown): void => {
    const ctx = error instanceof CtxsnapError ? error : null;
    const code = ctx?.code ?? "failure";
    const status = code === "usage"
      ? 400
      : code === "not_found"
      ? 404
      : code === "conflict" || code === "busy"
      ? 409
      : 500;
    sendJson(res, status, {
      error: {
        code,
        exit: exitCodeOf(error),
        message: ctx?.message ?? "internal error",
        hint: ctx?.hint ?? null,
      },
    });
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    if (req.headers.host !== `127.0.0.1:${port}`) {
      return refuse(res, 403, "Forbidden: wrong Host header");
    }
    if (req.method !== "GET") {
      return refuse(res, 405, "Method not allowed: this server is read-only");
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://127.0.0.1:${port}`) {
      return refuse(res, 403, "Forbidden: cross-origin request");
    }
    const raw = req.url ?? "";
    if (!raw.startsWith("/")) return refuse(res, 400, "Bad request");
    const url = new URL(raw, `http://127.0.0.1:${port}`);
    const segments = url.pathname.split("/");
    if (segments.length < 3 || !sameSecret(segments[1] ?? "", token)) {
      return refuse(res, 403, "Forbidden: the URL needs the token `ctxsnap serve` printed");
    }
    const route = segments.slice(2).join("/");
    const params = [...url.searchParams.keys()];
    const only = (...allowed: string[]) => params.every((p) => allowed.includes(p));
    try {
      if (route === "" && only()) {
        await refresh();
        return send(
          res,
          200,
          "text/html; charset=utf-8",
          renderPage(data, true),
          contentSecurityPolicy(true),
        );
      }
      if (route === "api/timeline" && only()) {
        await refresh();
        return sendJson(res, 200, data);
      }
      if (route === "api/events" && only()) {
        res.writeHead(200, {
          ...COMMON_HEADERS,
          "Content-Type": "text/event-stream; charset=utf-8",
          "Content-Security-Policy": API_CSP,
          Connection: "keep-alive",
        });
        res.write(`retry: 2000\n\n: connected\n\n`);
        streams.add(res);
        req.on("close", () => streams.delete(res));
        return;
      }
      if (route === "api/diff" && only("key")) {
        const key = parseDiffKey(url.searchParams.get("key") ?? "");
        const side = (id: string | null) => {
          if (id === null) return null;
          const size = allowedBlobs.get(id);
          if (size === undefined) {
            throw new UsageError(`Blob ${quote(id)} is not part of this timeline`);
          }
          return { id, size };
        };
        const oldBlob = side(key.old);
        const newBlob = side(key.new);
        const problems: string[] = [];
        const diff = fileDiff(storeContent(store, problems), oldBlob, newBlob, data.limits);
        if (problems.length > 0) throw new IntegrityError(problems.join("; "));
        return sendJson(res, 200, diff);
      }
      if (route === "api/restore-preview" && only("id")) {
        const id = url.searchParams.get("id") ?? "";
        if (!isHex(id, 64) || !data.snapshots.some((s) => s.id === id)) {
          throw new UsageError(`Snapshot ${quote(id)} is not part of this timeline`);
        }
        const result = await restoreSnapshot(store, NO_SIGNER, id, { dryRun: true });
        const plan = result.plan;
        return sendJson(res, 200, {
          target: id,
          dry_run: true,
          plan: plan === null ? null : {
            writes: plan.writes.slice(0, MAX_PREVIEW_ITEMS).map((w) => ({
              path: w.path,
              action: w.action,
              type: w.entry.type,
            })),
            deletes: plan.deletes.slice(0, MAX_PREVIEW_ITEMS),
            conflicts: plan.conflicts.slice(0, MAX_PREVIEW_ITEMS),
            preserved: plan.preserved.slice(0, MAX_PREVIEW_ITEMS),
            writes_total: plan.writes.length,
            deletes_total: plan.deletes.length,
            conflicts_total: plan.conflicts.length,
            unchanged_total: plan.unchanged.length,
            preserved_total: plan.preserved.length,
            truncated: [plan.writes, plan.deletes, plan.conflicts, plan.preserved].some((l) =>
              l.length > MAX_PREVIEW_ITEMS
            ),
          },
          // What the live session would become (the default merge), as `restore --dry-run` shows it.
          session: result.session,
        });
      }
      return refuse(res, 404, "Not found");
    } catch (error) {
      if (res.headersSent) {
        res.end();
        return;
      }
      sendError(res, error);
    }
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) refuse(res, 500, "Internal error");
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  port = address.port;
  const timer = setInterval(() => void refresh(), Math.max(50, options.pollMs ?? 1000));
  const ping = setInterval(() => {
    for (const res of streams) res.write(": ping\n\n");
  }, 15_000);
  return {
    url: `http://127.0.0.1:${port}/${token}/`,
    port,
    token,
    get rebuilds() {
      return rebuilds;
    },
    async close() {
      clearInterval(timer);
      clearInterval(ping);
      for (const res of streams) res.end();
      streams.clear();
      await rebuilding;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      });
    },
  };
}
