/**
 * Claude Code's HTTP hooks served by the watch process
 * (`lib/integrations/watch/http_hooks.ts`), over real TCP on 127.0.0.1 with
 * a real store: an accepted event is recorded as the command hook records
 * it; every refusal (no token, a wrong token, a foreign Host as DNS
 * rebinding sends, an Origin a web page sends, an oversized body, another
 * content type, GET) gets its status, an empty body and records nothing.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { Store } from "../../lib/repository/store.ts";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { WatchService } from "../../lib/integrations/watch/service.ts";
import {
  ensureHttpConf,
  HookHttpServer,
  type HttpConf,
  readHttpConf,
} from "../../lib/integrations/watch/http_hooks.ts";
import { MAX_EVENT_BYTES } from "../../lib/history/agent.ts";

interface Fixture {
  ws: string;
  store: Store;
  service: WatchService;
  server: HookHttpServer;
  conf: HttpConf;
  problems: string[];
}

async function withServer(fn: (fx: Fixture) => Promise<void>): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-http-" }));
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  await Deno.writeTextFile(join(ws, "a.txt"), "alpha\n");
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  const service = new WatchService(store, await loadOrCreateIdentity(join(root, "config")), {
    pollMs: 0,
  });
  const conf = await ensureHttpConf(store.dir);
  const problems: string[] = [];
  const server = await HookHttpServer.start(service, conf, {
    onProblem: (error) => problems.push((error as Error).message),
  });
  try {
    await fn({ ws, store, service, server, conf, problems });
  } finally {
    await server.close();
    service.close();
    store.close();
    await Deno.remove(root, { recursive: true });
  }
}

interface Reply {
  status: number;
  body: string;
}

/** One raw HTTP/1.1 request (so Host, Origin and the rest are exactly as given). */
async function request(
  port: number,
  head: string[],
  body: Uint8Array | string = "",
  chunked = false,
): Promise<Reply> {
  let bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  if (chunked) {
    // One chunk and the last: no Content-Length for the server to check first.
    const size = new TextEncoder().encode(`${bytes.byteLength.toString(16)}\r\n`);
    const end = new TextEncoder().encode("\r\n0\r\n\r\n");
    const framed = new Uint8Array(size.byteLength + bytes.byteLength + end.byteLength);
    framed.set(size);
    framed.set(bytes, size.byteLength);
    framed.set(end, size.byteLength + bytes.byteLength);
    bytes = framed;
  }
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const length = chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${bytes.byteLength}`;
  const text = [...head, length, "Connection: close", "", ""].join("\r\n");
  const chunks: Uint8Array[] = [];
  try {
    await conn.write(new TextEncoder().encode(text));
    let offset = 0;
    while (offset < bytes.byteLength) offset += await conn.write(bytes.subarray(offset));
  } catch {
    // The server may answer and close before reading everything.
  }
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    let n: number | null;
    try {
      n = await conn.read(buffer);
    } catch {
      break;
    }
    if (n === null) break;
    chunks.push(buffer.slice(0, n));
  }
  try {
    conn.close();
  } catch {
    // Closed already.
  }
  const all = new TextDecoder().decode(
    chunks.reduce((a, b) => {
      const out = new Uint8Array(a.byteLength + b.byteLength);
      out.set(a);
      out.set(b, a.byteLength);
      return out;
    }, new Uint8Array()),
  );
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(all)?.[1] ?? "0");
  const split = all.indexOf("\r\n\r\n");
  return { status, body: split < 0 ? "" : all.slice(split + 4) };
}

function event(ws: string, fields: Record<string, unknown> = {}): string {
  return JSON.stringify({
    session_id: "sess-http-1",
    hook_event_name: "PostToolUse",
    tool_name: "Edit",
    tool_use_id: "toolu_http_1",
    cwd: ws,
    ...fields,
  });
}

function goodHead(conf: HttpConf, extra: Record<string, string> = {}): string[] {
  const headers: Record<string, string> = {
    Host: `127.0.0.1:${conf.port}`,
    Authorization: `Bearer ${conf.token}`,
    "Content-Type": "application/json",
    ...extra,
  };
  return [
    `POST /hook/claude-code HTTP/1.1`,
    ...Object.entries(headers).filter(([, v]) => v !== "").map(([k, v]) => `${k}: ${v}`),
  ];
}

function snapshots(store: Store): number {
  return store.db.prepare("SELECT count(*) AS n FROM snapshots").get()!.n as number;
}

Deno.test("http hooks: an accepted event is recorded as the command hook records it (204, empty body), and a redelivery is known", async () => {
  await withServer(async ({ ws, store, conf, problems }) => {
    const first = await request(conf.port, goodHead(conf), event(ws));
    assertEquals([first.status, first.body, problems], [204, "", []]);
    assertEquals(snapshots(store), 1);
    await Deno.writeTextFile(join(ws, "a.txt"), "edited\n");
    const again = await request(conf.port, goodHead(conf), event(ws));
    assertEquals(again.status, 204);
    assertEquals(snapshots(store), 1, "the same tool call redelivered records nothing new");
    const next = await request(
      conf.port,
      goodHead(conf, { "Content-Type": "application/json; charset=utf-8" }),
      event(ws, { tool_use_id: "toolu_http_2" }),
    );
    assertEquals(next.status, 204);
    assertEquals(snapshots(store), 2, "the edit is in the next event's checkpoint");
  });
});

Deno.test("http hooks: a checkpoint that leaves a file out answers 200 with one systemMessage object, like the command hook's stdout", async () => {
  await withServer(async ({ ws, conf }) => {
    await Deno.writeTextFile(join(ws, ".env"), "SECRET=1\n");
    const reply = await request(conf.port, goodHead(conf), event(ws));
    assertEquals(reply.status, 200);
    const json = JSON.parse(reply.body);
    assertEquals(Object.keys(json), ["systemMessage"]);
    assert(json.systemMessage.includes(".env"), reply.body);
  });
});

Deno.test("http hooks: a malformed event or a cwd of another store is the command hook's exit 0 (204) with one problem logged, and records nothing", async () => {
  await withServer(async ({ ws, store, conf, problems }) => {
    const bad = await request(conf.port, goodHead(conf), "{not json");
    assertEquals([bad.status, bad.body], [204, ""]);
    const elsewhere = await Deno.makeTempDir();
    const foreign = await request(conf.port, goodHead(conf), event(elsewhere));
    assertEquals(foreign.status, 204);
    assertEquals(problems.length, 2, JSON.stringify(problems));
    assertEquals(snapshots(store), 0);
    await Deno.remove(elsewhere, { recursive: true });
    void ws;
  });
});

Deno.test("http hooks: a request without the token is refused (401) and records nothing", async () => {
  await withServer(async ({ ws, store, conf }) => {
    const reply = await request(conf.port, goodHead(conf, { Authorization: "" }), event(ws));
    assertEquals([reply.status, reply.body, snapshots(store)], [401, "", 0]);
  });
});

Deno.test("http hooks: a request with a wrong token is refused (401) and records nothing", async () => {
  await withServer(async ({ ws, store, conf }) => {
    const wrong = `ctxsnap_hook_${"0".repeat(64)}`;
    const reply = await request(
      conf.port,
      goodHead(conf, { Authorization: `Bearer ${wrong}` }),
      event(ws),
    );
    assertEquals([reply.status, reply.body, snapshots(store)], [401, "", 0]);
    const prefix = await request(
      conf.port,
      goodHead(conf, { Authorization: `Bearer ${conf.token.slice(0, -1)}` }),
      event(ws),
    );
    assertEquals([prefix.status, snapshots(store)], [401, 0]);
  });
});

Deno.test("http hooks: a request naming another Host (DNS rebinding) is refused (421) even with the token", async () => {
  await withServer(async ({ ws, store, conf }) => {
    for (const host of [`evil.example:${conf.port}`, "127.0.0.1", `localhost:${conf.port}`]) {
      const reply = await request(conf.port, goodHead(conf, { Host: host }), event(ws));
      assertEquals([reply.status, reply.body], [421, ""], host);
    }
    assertEquals(snapshots(store), 0);
  });
});

Deno.test("http hooks: a request carrying an Origin (a web page) is refused (403) even with the token", async () => {
  await withServer(async ({ ws, store, conf }) => {
    for (const origin of ["https://evil.example", "null", `http://127.0.0.1:${conf.port}`]) {
      const reply = await request(conf.port, goodHead(conf, { Origin: origin }), event(ws));
      assertEquals([reply.status, reply.body], [403, ""], origin);
    }
    assertEquals(snapshots(store), 0);
  });
});

Deno.test("http hooks: an oversized body is refused (413) and records nothing, with or without a Content-Length", async () => {
  await withServer(async ({ ws, store, conf }) => {
    const padding = "x".repeat(MAX_EVENT_BYTES);
    const reply = await request(conf.port, goodHead(conf), event(ws, { padding }));
    assertEquals([reply.status, reply.body, snapshots(store)], [413, "", 0]);
    // Without a Content-Length (chunked), the bytes read are counted.
    const streamed = await request(conf.port, goodHead(conf), event(ws, { padding }), true);
    assertEquals([streamed.status, streamed.body, snapshots(store)], [413, "", 0]);
    const small = await request(conf.port, goodHead(conf), event(ws), true);
    assertEquals(
      [small.status, snapshots(store)],
      [204, 1],
      "a chunked body within bounds is read",
    );
  });
});

Deno.test("http hooks: a body of another content type (a form or text a page can send without preflight) is refused (415)", async () => {
  await withServer(async ({ ws, store, conf }) => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", ""]) {
      const reply = await request(conf.port, goodHead(conf, { "Content-Type": type }), event(ws));
      assertEquals([reply.status, reply.body], [415, ""], type);
    }
    assertEquals(snapshots(store), 0);
  });
});

Deno.test("http hooks: GET (or a path other than the hook's) is refused and reads nothing", async () => {
  await withServer(async ({ store, conf }) => {
    const head = goodHead(conf);
    const get = await request(conf.port, ["GET /hook/claude-code HTTP/1.1", ...head.slice(1)]);
    assertEquals([get.status, get.body], [405, ""]);
    const other = await request(
      conf.port,
      ["POST /run/http.json HTTP/1.1", ...head.slice(1)],
      "{}",
    );
    assertEquals([other.status, other.body], [404, ""]);
    assertEquals(snapshots(store), 0);
  });
});

Deno.test("http hooks: run/http.json is private (0600) and keeps its port and token across starts", async () => {
  await withServer(async ({ store, conf }) => {
    const file = join(store.dir, "run", "http.json");
    assertEquals((await Deno.lstat(file)).mode! & 0o777, 0o600);
    assertEquals(await ensureHttpConf(store.dir), conf);
    await Deno.chmod(file, 0o644);
    assertEquals(readHttpConf(store.dir), null, "a file others can read is not trusted");
    await Deno.chmod(file, 0o600);
  });
});

Deno.test("http hooks: a policy file that stops every checkpoint is told to the user (200, one systemMessage), as the command hook tells it, and records nothing", async () => {
  await withServer(async ({ ws, store, conf, problems }) => {
    await Deno.writeTextFile(join(store.dir, "retention"), "keep-last many\n", { mode: 0o600 });
    const reply = await request(conf.port, goodHead(conf), event(ws));
    assertEquals(reply.status, 200);
    const json = JSON.parse(reply.body);
    assertEquals(Object.keys(json), ["systemMessage"]);
    assert(json.systemMessage.startsWith("ctxsnap: no checkpoint was recorded: "), reply.body);
    assert(json.systemMessage.includes("keep-last"), reply.body);
    assertEquals(problems.length, 1, JSON.stringify(problems));
    assertEquals(snapshots(store), 0);
  });
});
