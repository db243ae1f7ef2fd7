/**
 * The Replay view without a browser: the page's escaping and policy, the
 * data built from a store and from a verified bundle, the `timeline` command,
 * and the server's refusals (token, Host, method, Origin) over real HTTP.
 * The browser suite (`deno task test:browser`) runs the page itself.
 * @module
 */
import fc from "fast-check";
import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import {
  buildTimelineFixture,
  sharedTimelineFixture,
  type TimelineFixture,
  XSS,
} from "../_timeline_fixture.ts";
import { IntegrityError, UsageError } from "../../lib/errors.ts";
import { Keyring } from "../../lib/keys/keyring.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { Store } from "../../lib/repository/store.ts";
import { CLIENT_SCRIPT } from "../../lib/view/_client_js.ts";
import { PAGE_STYLE } from "../../lib/view/_style.ts";
import {
  contentSecurityPolicy,
  cspHash,
  embedJson,
  renderPage,
  SCRIPT_HASH,
  STYLE_HASH,
} from "../../lib/view/html.ts";
import {
  diffKey,
  parseDiffKey,
  type TimelineData,
  timelineFromFile,
  timelineFromStore,
  TreeCache,
  type ViewEntry,
} from "../../lib/view/model.ts";
import { serveTimeline } from "../../lib/view/serve.ts";
import { publishToFile } from "../../lib/share/publish.ts";
import { editBehindCtxsnap, exists } from "../_util.ts";
import { CLI, realDenoDir, runCli, withStore } from "../_cli.ts";
import { readObjectBytes, writeObjectBytes } from "../_objects.ts";

const fixture = sharedTimelineFixture;

async function storeData(
  fx: TimelineFixture,
  options: Parameters<typeof timelineFromStore>[3] = {},
  trust: Keyring = fx.trust,
): Promise<TimelineData> {
  const store = Store.open(fx.storeDir, { readOnly: true });
  try {
    return await timelineFromStore(store, { kind: "session", session: "main" }, trust, options);
  } finally {
    store.close();
  }
}

/** Runs the CLI (in-process, see `tests/_cli.ts`) in the fixture's workspace with its config dir. */
async function cli(
  fx: TimelineFixture,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return await runCli(args, {
    cwd: fx.workspace,
    env: { HOME: fx.root, CTXSNAP_CONFIG_DIR: join(fx.root, "me-config") },
  });
}

/** The text of the page's JSON data block, exactly as written. */
function dataBlock(page: string): string {
  const open = '<script type="application/json" id="ctxsnap-data">';
  const start = page.indexOf(open);
  assert(start >= 0, "the page has its data block");
  const end = page.indexOf("</script>", start);
  return page.slice(start + open.length, end);
}

/** Rebuilds a tree (path → entry) from the page's delta-encoded trees. */
function resolveTree(data: TimelineData, id: string): Map<string, ViewEntry> {
  const chain = [];
  for (let cur: string | null = id; cur !== null; cur = data.trees[cur]!.base) {
    assert(cur in data.trees, `tree ${cur} is in the data`);
    chain.push(data.trees[cur]!);
  }
  const map = new Map<string, ViewEntry>();
  for (const tree of chain.reverse()) {
    for (const p of tree.unset) map.delete(p);
    for (const e of tree.set) map.set(e[0], e);
  }
  return map;
}

Deno.test("embedJson writes no <, >, &, U+2028 or U+2029 and parses back to the same value", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.string({ unit: "binary" }),
          fc.constantFrom(...Object.values(XSS), "</script", "<!--", "]]>", "\u2028\u2029"),
        ),
      ),
      (strings) => {
        const text = embedJson({ strings });
        assert(!/[<>&\u2028\u2029]/.test(text), `escaped: ${text.slice(0, 80)}`);
        assertEquals(JSON.parse(text), { strings });
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("the page's policy allows exactly its one script and stylesheet, by hash", () => {
  assertEquals(SCRIPT_HASH, cspHash(CLIENT_SCRIPT));
  assertEquals(STYLE_HASH, cspHash(PAGE_STYLE));
  const file = contentSecurityPolicy(false);
  const served = contentSecurityPolicy(true);
  for (const policy of [file, served]) {
    assert(policy.includes("default-src 'none'"));
    assert(policy.includes(`script-src ${SCRIPT_HASH};`), "script only by hash");
    assert(policy.includes(`style-src ${STYLE_HASH};`), "style only by hash");
    assert(!policy.includes("unsafe"), "no 'unsafe-inline' or 'unsafe-eval'");
    assert(policy.includes("require-trusted-types-for 'script'"), "Trusted Types");
  }
  assert(!file.includes("connect-src"), "the file may not connect anywhere");
  assert(served.includes("connect-src 'self'") && served.includes("frame-ancestors 'none'"));
});

Deno.test("the client script never turns data into markup or code", () => {
  for (
    const banned of [
      "innerHTML",
      "outerHTML",
      "insertAdjacentHTML",
      "document.write",
      "eval(",
      "Function(",
      'setTimeout("',
      "</script",
      "<!--",
      "href",
      "src=",
    ]
  ) {
    assert(!CLIENT_SCRIPT.includes(banned), `the client script contains ${banned}`);
    // The sources too: the bundle is rebuilt from them (scripts/build_client.ts).
    for (const [file, source] of clientSources()) {
      assert(!source.includes(banned), `${file} contains ${banned}`);
    }
  }
  // It is valid JavaScript (parsed, not run).
  new Function(CLIENT_SCRIPT);
});

/** The page script's TypeScript sources (lib/view/client/*.ts), by file name. */
function clientSources(): [string, string][] {
  const dir = new URL("../../lib/view/client/", import.meta.url);
  return [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith(".ts"))
    .map((e) => [
      e.name,
      // Without comments (the module docs name what the code must not use).
      Deno.readTextFileSync(new URL(e.name, dir)).replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/^\s*\/\/.*$/gm, ""),
    ]);
}

Deno.test("renderPage: one executable script (the pinned one), data only in the JSON block", async () => {
  const fx = await fixture();
  const data = await storeData(fx);
  const page = renderPage(data);
  const scripts = [...page.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
  assertEquals(scripts, [' type="application/json" id="ctxsnap-data"', ""]);
  const inline = page.slice(page.lastIndexOf("<script>") + 8, page.lastIndexOf("</script>"));
  assertEquals(inline, CLIENT_SCRIPT);
  const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(page);
  assertEquals(meta?.[1], contentSecurityPolicy(false));
  assertEquals(JSON.parse(dataBlock(page)), JSON.parse(JSON.stringify(data)));
  // No hostile string with a markup character appears as such anywhere in the page.
  for (const text of Object.values(XSS).filter((t) => /[<>&\u2028\u2029]/.test(t))) {
    assert(!page.includes(text), `the page holds ${JSON.stringify(text)} unescaped`);
  }
  assert(!dataBlock(page).includes("<"), "no markup in the data block");
  assert(!/<(img|iframe|object|embed|a)\b/i.test(page), "no markup from data");
});

Deno.test("timelineFromStore: lanes, forks, restores, imports, trust and verdicts", async () => {
  const fx = await fixture();
  const data = await storeData(fx);
  const byId = new Map(data.snapshots.map((s) => [s.id, s]));
  assertEquals(data.schema, "ctxsnap.timeline/v1");
  assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(data.generated_at), "ISO time");
  assertEquals(data.snapshots.map((s) => s.id), [
    fx.ids.first,
    fx.ids.hostile,
    fx.ids.experiment,
    fx.ids.main2,
    fx.ids.restore,
    fx.ids.bob,
  ]);
  assertEquals(byId.get(fx.ids.restore)!.reverted_to, fx.ids.first);
  assertEquals(byId.get(fx.ids.main2)!.slices, {
    roi: { input_tokens: 100, output_tokens: 40, tokens_saved: 60, compression_rate_ppm: 400000 },
  });
  assertEquals(byId.get(fx.ids.first)!.slices, null);
  assertEquals(byId.get(fx.ids.experiment)!.lane, "main/experiment");
  assertEquals(byId.get(fx.ids.bob)!.lane, `main/imported/${fx.bob.keyId}`);
  assert(byId.get(fx.ids.bob)!.imported);
  const kinds = Object.fromEntries(data.branches.map((b) => [b.name, [b.kind, b.base, b.current]]));
  assertEquals(kinds, {
    main: ["branch", null, true],
    experiment: ["fork", fx.ids.first, false],
    [`imported/${fx.bob.keyId}`]: ["imported", null, false],
  });
  assertEquals(data.verification, { trusted: 5, untrusted: 1, invalid: 0 });
  const bob = byId.get(fx.ids.bob)!.signer;
  assertEquals([bob.status, bob.signature_valid, bob.id_matches], ["untrusted", true, true]);
  assertEquals(byId.get(fx.ids.hostile)!.reason, XSS.script, "text is kept exactly");
  assertEquals(byId.get(fx.ids.hostile)!.changes, {
    added: ["blob.bin", "notes.md"],
    changed: ["a.txt", "src/main.py"],
    removed: [],
  });
  // Nobody trusted: every valid snapshot is untrusted, none is trusted.
  const none = await storeData(fx, {}, new Keyring([]));
  assertEquals(none.verification, { trusted: 0, untrusted: 6, invalid: 0 });
});

Deno.test("timelineFromStore: delta-encoded trees rebuild every snapshot's tree exactly", async () => {
  const fx = await fixture();
  const data = await storeData(fx);
  const store = Store.open(fx.storeDir, { readOnly: true });
  try {
    for (const s of data.snapshots) {
      assert(s.tree !== null, `${s.id} has its tree`);
      const real = store.getTree(s.tree);
      const rebuilt = resolveTree(data, s.tree);
      assertEquals([...rebuilt.keys()], real.entries.map((e) => e.path));
      for (const e of real.entries) {
        const v = rebuilt.get(e.path)!;
        assertEquals(
          v,
          e.type === "file" ? [e.path, "file", e.blob, e.size, e.mode] : [
            e.path,
            "symlink",
            e.target,
          ],
        );
      }
    }
  } finally {
    store.close();
  }
  assert(Object.values(data.trees).some((t) => t.base !== null), "some tree is a delta");
});

Deno.test("timelineFromStore: step diffs are computed, binary marked, hostile lines kept as text", async () => {
  const fx = await fixture();
  const data = await storeData(fx);
  const store = Store.open(fx.storeDir, { readOnly: true });
  try {
    const before = store.getTree(data.snapshots[0]!.tree!);
    const after = store.getTree(data.snapshots[1]!.tree!);
    const blob = (tree: typeof before, p: string) => {
      const e = tree.entries.find((x) => x.path === p)!;
      return e.type === "file" ? e.blob : "";
    };
    const text = data.diffs[diffKey(blob(before, "a.txt"), blob(after, "a.txt"))]!;
    assertEquals(text.status, "text");
    assertEquals([text.added, text.removed], [1, 0]);
    assertEquals(text.hunks[0]!.lines, [" hello", `+${XSS.script}`, " world"]);
    const binary = data.diffs[diffKey(null, blob(after, "blob.bin"))]!;
    assertEquals([binary.status, binary.new_size, binary.hunks.length], ["binary", 10, 0]);
  } finally {
    store.close();
  }
});

Deno.test("size limits: too large, truncated and over-budget diffs are marked, not dropped", async () => {
  const fx = await fixture();
  const small = await storeData(fx, { limits: { max_diff_input_bytes: 15 } });
  const statuses = new Set(Object.values(small.diffs).map((d) => d.status));
  assert(statuses.has("too_large"), "a file over 15 bytes is too large");
  const cut = await storeData(fx, { limits: { max_diff_lines: 2 } });
  const truncated = Object.values(cut.diffs).filter((d) => d.truncated_lines > 0);
  assert(truncated.length > 0, "some diff was cut at 2 lines");
  for (const d of Object.values(cut.diffs)) {
    assert(d.hunks.reduce((n, h) => n + h.lines.length, 0) <= 2, "no diff keeps more than 2 lines");
  }
  const tight = await storeData(fx, { limits: { diff_budget_bytes: 1 } });
  const omitted = Object.values(tight.diffs).filter((d) => d.status === "omitted");
  assert(omitted.length > 0 && tight.notes.some((n) => n.includes("diff budget")));
  const live = await storeData(fx, { live: true });
  assertEquals(Object.keys(live.diffs).length, 0, "live data leaves diffs to the server");
});

Deno.test("an envelope altered in the index is shown as not verified", async () => {
  const fx = await buildTimelineFixture();
  try {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(join(fx.storeDir, "index.db"));
    const row = db.prepare("SELECT envelope FROM snapshots WHERE id = ?").get(fx.ids.main2) as {
      envelope: Uint8Array;
    };
    const text = new TextDecoder().decode(row.envelope).replace("back on main", "back on MAIN");
    editBehindCtxsnap(db, "snapshots", () => {
      db.prepare("UPDATE snapshots SET envelope = ? WHERE id = ?").run(
        new TextEncoder().encode(text),
        fx.ids.main2,
      );
    });
    db.close();
    const data = await storeData(fx);
    const s = data.snapshots.find((x) => x.id === fx.ids.main2)!;
    assertEquals([s.signer.status, s.signer.id_matches, s.signer.trusted], [
      "invalid",
      false,
      false,
    ]);
    assert(s.problems.includes("id does not match the body"));
    assertEquals(data.verification.invalid, 1);
    const run = await cli(fx, ["timeline", "--html", join(fx.root, "t.html")]);
    assertEquals(run.code, 0, "the store's page is still written");
    assert(run.stderr.includes("1 snapshot(s) do not verify"), run.stderr);
  } finally {
    await fx.cleanup();
  }
});

Deno.test("a corrupt file content is reported, never diffed (page note; serve answers 500)", async () => {
  const fx = await buildTimelineFixture();
  try {
    const before = await storeData(fx);
    const hostile = before.snapshots.find((x) => x.id === fx.ids.hostile)!;
    const blob = resolveTree(before, hostile.tree!).get("a.txt")![2];
    const oldBlob = resolveTree(before, hostile.parent_tree!).get("a.txt")![2];
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(join(fx.storeDir, "index.db"));
    const bytes = readObjectBytes(db, blob).slice();
    bytes[0] = bytes[0]! ^ 0x01;
    writeObjectBytes(db, blob, bytes);
    db.close();
    const data = await storeData(fx);
    assertEquals(data.diffs[diffKey(oldBlob, blob)]!.status, "unavailable");
    assert(data.notes.some((n) => n.startsWith(`file content ${blob}:`)), data.notes.join("\n"));
    const store = Store.open(fx.storeDir, { readOnly: true });
    const server = await serveTimeline(store, { kind: "session", session: "main" }, fx.trust);
    try {
      const res = await fetch(`${server.url}api/diff?key=${oldBlob}..${blob}`);
      const body = await res.json();
      assertEquals([res.status, body.error.code], [500, "failure"]);
      assert(body.error.message.includes(blob), body.error.message);
    } finally {
      await server.close();
      store.close();
    }
  } finally {
    await fx.cleanup();
  }
});

Deno.test("timelineFromFile: a verified bundle, its signer untrusted unless pinned", async () => {
  const fx = await fixture();
  const data = await timelineFromFile(fx.bobBundle, new Keyring([]));
  assertEquals([data.source.kind, data.source.file, data.source.primary], [
    "bundle",
    "bob.ctxbundle",
    fx.ids.bob,
  ]);
  assertEquals(data.verification, { trusted: 0, untrusted: 1, invalid: 0 });
  const s = data.snapshots[0]!;
  assertEquals(s.changes, { added: ["bob.txt"], changed: [], removed: [] });
  assertEquals(Object.values(data.diffs)[0]!.hunks[0]!.lines, ["+from bob"]);
  const pinned = new Keyring([]);
  pinned.add(fx.bob.publicKey, "bob");
  const trusted = await timelineFromFile(fx.bobBundle, pinned);
  assertEquals([trusted.snapshots[0]!.signer.status, trusted.snapshots[0]!.signer.name], [
    "trusted",
    "bob",
  ]);
});

Deno.test("timelineFromFile: a published snapshot (envelope only) has no file changes", async () => {
  const fx = await fixture();
  const store = Store.open(fx.storeDir, { readOnly: true });
  let file: string;
  try {
    file = (await publishToFile(store, fx.ids.hostile, {
      file: join(fx.root, "hostile.ctxsnapshot.json"),
    })).path;
  } finally {
    store.close();
  }
  const data = await timelineFromFile(file, fx.trust);
  assertEquals([data.source.kind, data.source.with_workspace], ["snapshot", false]);
  const s = data.snapshots[0]!;
  assertEquals([s.id, s.reason, s.signer.status, s.tree, s.changes], [
    fx.ids.hostile,
    XSS.script,
    "trusted",
    null,
    null,
  ]);
  assert(data.notes.some((n) => n.includes("no workspace content")));
});

Deno.test("timeline --html refuses a tampered bundle and writes nothing (exit 1)", async () => {
  const fx = await fixture();
  const bytes = await Deno.readFile(fx.bobBundle);
  const at = new TextDecoder().decode(bytes).indexOf("from bob");
  assert(at > 0);
  const tampered = bytes.slice();
  tampered[at] = tampered[at]! ^ 0x20;
  const file = join(fx.root, "tampered.ctxbundle");
  await Deno.writeFile(file, tampered);
  await assertRejects(() => timelineFromFile(file, new Keyring([])), IntegrityError);
  const out = join(fx.root, "tampered.html");
  const run = await cli(fx, ["timeline", "--html", out, file]);
  assertEquals(run.code, 1, run.stderr);
  assert(!(await exists(out)), "no page for a tampered bundle");
});

Deno.test("timeline --html of an untrusted bundle writes the page and exits 3; --trust makes it 0", async () => {
  const fx = await fixture();
  const out = join(fx.root, "bob.html");
  const run = await cli(fx, ["timeline", "--html", out, fx.bobBundle, "--json"]);
  assertEquals(run.code, 3, run.stderr);
  assertEquals(JSON.parse(run.stdout).verification, { trusted: 0, untrusted: 1, invalid: 0 });
  assert(run.stderr.includes("untrusted key"), run.stderr);
  const data = JSON.parse(dataBlock(await Deno.readTextFile(out)));
  assertEquals(data.snapshots[0].signer.status, "untrusted");
  const pem = join(fx.root, "bob.pub.pem");
  const { publicKeyToSpkiPem } = await import("../../lib/crypto/ed25519.ts");
  await Deno.writeTextFile(pem, publicKeyToSpkiPem(fx.bob.publicKey));
  const ok = await cli(fx, ["timeline", "--html", out, fx.bobBundle, "--trust", pem]);
  assertEquals(ok.code, 0, ok.stderr);
});

Deno.test("timeline --html: the store, a branch, stdout, and usage errors", async () => {
  const fx = await fixture();
  const out = join(fx.root, "page.html");
  const run = await cli(fx, ["timeline", "--html", out, "--json"]);
  assertEquals(run.code, 0, run.stderr);
  const result = JSON.parse(run.stdout);
  assertEquals([result.file, result.snapshots, result.source.scope], [out, 6, "session"]);
  assert(result.bytes === (await Deno.stat(out)).size);
  const branch = await cli(fx, ["timeline", "--html", "-", "--branch", "experiment"]);
  assertEquals(branch.code, 0, branch.stderr);
  const data = JSON.parse(dataBlock(branch.stdout));
  assertEquals(data.snapshots.map((s: { id: string }) => s.id), [fx.ids.first, fx.ids.experiment]);
  assertEquals(data.source, {
    kind: "store",
    scope: "branch",
    session: "main",
    branch: "experiment",
    file: null,
    primary: null,
    with_workspace: true,
  });
  const usage = [
    ["timeline"],
    ["timeline", "--html", "-", "--json"],
    ["timeline", "--html", out, "--all", "--session", "main"],
    ["timeline", "--html", out, fx.bobBundle, "--branch", "main"],
  ];
  for (const args of usage) {
    const bad = await cli(fx, args);
    assertEquals(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
  }
  const missing = await cli(fx, ["timeline", "--html", out, "--branch", "nope"]);
  assertEquals(missing.code, 4, missing.stderr);
  const noSession = await cli(fx, ["timeline", "--html", out, "--session", "nope"]);
  assertEquals(noSession.code, 4, noSession.stderr);
  const all = await cli(fx, ["timeline", "--html", out, "--all", "--json"]);
  assertEquals(JSON.parse(all.stdout).source.scope, "all");
});

Deno.test("TreeCache keeps trees up to its entry limit, dropping the oldest first", () => {
  const tree = (n: number) => ({
    version: 1 as const,
    skipped: [],
    entries: Array.from({ length: n }, (_, i) => ({
      path: `f${i}`,
      type: "symlink" as const,
      target: "x",
    })),
  });
  const cache = new TreeCache(10);
  cache.set("a", tree(3)); // 4 with the tree itself
  cache.set("b", tree(3));
  assert(cache.get("a") !== undefined && cache.get("b") !== undefined);
  cache.set("c", tree(3)); // 12 > 10: a goes
  assertEquals([cache.get("a"), !!cache.get("b"), !!cache.get("c")], [undefined, true, true]);
  cache.set("huge", tree(20));
  assertEquals(cache.get("huge"), undefined, "a tree over the limit is not kept");
});

Deno.test("timeline --html of a new, empty store writes a page with no snapshots", async () => {
  await withStore(async (ws) => {
    const run = await ws.run(["timeline", "--html", "empty.html", "--json"]);
    assertEquals(run.code, 0, run.stderr);
    assertEquals(run.json().snapshots, 0);
    const data = JSON.parse(dataBlock(await Deno.readTextFile(join(ws.path, "empty.html"))));
    assertEquals([data.snapshots, data.branches], [[], []]);
  });
});

Deno.test("parseDiffKey accepts blob pairs only", () => {
  const a = "a".repeat(64);
  assertEquals(parseDiffKey(`${a}..`), { old: a, new: null });
  assertEquals(parseDiffKey(`..${a}`), { old: null, new: a });
  for (const bad of ["..", `${a}.${a}`, `${a.toUpperCase()}..`, `../${a}`, `${a}..x`]) {
    let refused = false;
    try {
      parseDiffKey(bad);
    } catch (error) {
      refused = error instanceof UsageError;
    }
    assert(refused, `refused ${bad}`);
  }
});

/** One raw HTTP/1.1 request; returns the status code and the body. */
async function rawRequest(
  port: number,
  lines: string[],
): Promise<{ status: number; text: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      new TextEncoder().encode([...lines, "Connection: close", "", ""].join("\r\n")),
    );
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(65536);
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
    }
    const text = new TextDecoder().decode(
      chunks.reduce((a, b) => {
        const out = new Uint8Array(a.length + b.length);
        out.set(a);
        out.set(b, a.length);
        return out;
      }, new Uint8Array()),
    );
    return { status: Number(text.slice(9, 12)), text };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the server
    }
  }
}

async function withServer(
  fn: (
    server: Awaited<ReturnType<typeof serveTimeline>>,
    fx: TimelineFixture,
    data: TimelineData,
  ) => Promise<void>,
): Promise<void> {
  const fx = await fixture();
  const store = Store.open(fx.storeDir, { readOnly: true });
  const server = await serveTimeline(store, { kind: "session", session: "main" }, fx.trust, {
    pollMs: 50,
  });
  try {
    const res = await fetch(`${server.url}api/timeline`);
    await fn(server, fx, await res.json());
  } finally {
    await server.close();
    store.close();
  }
}

Deno.test("serve listens on 127.0.0.1 only and refuses every request without the token", async () => {
  await withServer(async (server) => {
    assert(/^http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/$/.test(server.url), server.url);
    const base = `http://127.0.0.1:${server.port}`;
    const wrong = "0".repeat(32);
    for (
      const p of [
        "/",
        "/api/timeline",
        `/${wrong}/`,
        `/${wrong}/api/timeline`,
        `/${server.token.slice(0, 31)}/`,
        `/${server.token}x/`,
        `/${server.token}`,
        "/favicon.ico",
      ]
    ) {
      const res = await fetch(base + p);
      await res.body?.cancel();
      assertEquals(res.status, 403, p);
    }
    const ok = await fetch(server.url);
    assertEquals(ok.status, 200);
    assertEquals(ok.headers.get("content-security-policy"), contentSecurityPolicy(true));
    assertEquals(ok.headers.get("cache-control"), "no-store");
    assertEquals(ok.headers.get("x-frame-options"), "DENY");
    const page = await ok.text();
    assert(page.includes('"live":true'), "the served page is live");
    const other = await Deno.connect({ hostname: "127.0.0.2", port: server.port }).then(
      (c) => (c.close(), true),
      () => false,
    );
    assert(!other, "nothing listens on another address");
  });
});

Deno.test("serve refuses every method but GET (405), and writes nothing", async () => {
  await withServer(async (server) => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]) {
      const res = await fetch(`${server.url}api/timeline`, { method });
      await res.body?.cancel();
      assertEquals(res.status, 405, method);
      assertEquals(res.headers.get("allow"), "GET");
    }
  });
});

Deno.test("serve refuses a Host other than 127.0.0.1:port (DNS rebinding) and a foreign Origin", async () => {
  await withServer(async (server) => {
    const path = `/${server.token}/api/timeline`;
    const ok = await rawRequest(server.port, [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${server.port}`,
    ]);
    assertEquals(ok.status, 200);
    for (
      const host of [
        `evil.example:${server.port}`,
        `localhost:${server.port}`,
        "127.0.0.1",
        `127.0.0.1:${server.port + 1}`,
      ]
    ) {
      const res = await rawRequest(server.port, [`GET ${path} HTTP/1.1`, `Host: ${host}`]);
      assertEquals(res.status, 403, host);
      assert(!res.text.includes("ctxsnap.timeline"), "no data with the refusal");
    }
    const noHost = await rawRequest(server.port, [`GET ${path} HTTP/1.0`]);
    assertEquals(noHost.status, 403, "no Host header");
    const foreign = await fetch(`${server.url}api/timeline`, {
      headers: { Origin: "http://evil.example" },
    });
    await foreign.body?.cancel();
    assertEquals(foreign.status, 403);
    const own = await fetch(`${server.url}api/timeline`, {
      headers: { Origin: `http://127.0.0.1:${server.port}` },
    });
    await own.body?.cancel();
    assertEquals(own.status, 200);
  });
});

Deno.test("serve computes diffs on request, for blobs of the timeline only", async () => {
  await withServer(async (server, fx, data) => {
    const hostile = data.snapshots.find((s) => s.id === fx.ids.hostile)!;
    const parent = data.snapshots.find((s) => s.id === hostile.parent)!;
    const oldBlob = resolveTree(data, parent.tree!).get("a.txt")![2];
    const newBlob = resolveTree(data, hostile.tree!).get("a.txt")![2];
    const res = await fetch(`${server.url}api/diff?key=${oldBlob}..${newBlob}`);
    const diff = await res.json();
    assertEquals([res.status, diff.status, diff.added], [200, "text", 1]);
    assert(diff.hunks[0].lines.includes(`+${XSS.script}`));
    for (
      const [query, status] of [
        [`key=${"0".repeat(64)}..`, 400],
        ["key=..", 400],
        [`key=${oldBlob}..&x=1`, 404],
        ["key=../../etc/passwd", 400],
      ] as const
    ) {
      const bad = await fetch(`${server.url}api/diff?${query}`);
      const body = await bad.text();
      assertEquals(bad.status, status, `${query}: ${body}`);
    }
  });
});

Deno.test("serve's restore preview is the dry-run plan and changes nothing", async () => {
  await withServer(async (server, fx) => {
    const snapshotOf = async (dir: string): Promise<string[]> => {
      const out: string[] = [];
      for await (const entry of Deno.readDir(dir)) {
        const p = join(dir, entry.name);
        const stat = await Deno.lstat(p);
        out.push(`${entry.name}:${stat.size}:${stat.mtime?.getTime()}`);
        if (entry.isDirectory) out.push(...(await snapshotOf(p)).map((x) => `${entry.name}/${x}`));
      }
      return out.sort();
    };
    const before = await snapshotOf(fx.workspace);
    const res = await fetch(`${server.url}api/restore-preview?id=${fx.ids.hostile}`);
    const body = await res.json();
    assertEquals(res.status, 200, JSON.stringify(body));
    assertEquals(body.dry_run, true);
    const writes = body.plan.writes.map((w: { path: string }) => w.path);
    assert(writes.includes("a.txt") && writes.includes("blob.bin"), JSON.stringify(body.plan));
    // The three-way plan's local changes kept, and the session change, as `restore --dry-run` has them.
    assert(Array.isArray(body.plan.preserved), JSON.stringify(body.plan));
    assertEquals(body.session?.mode, "merge", JSON.stringify(body.session));
    assert(Array.isArray(body.session.change.decisions.added), JSON.stringify(body.session));
    assertEquals(await snapshotOf(fx.workspace), before, "workspace and store untouched");
    const unknown = await fetch(`${server.url}api/restore-preview?id=${"0".repeat(64)}`);
    assertEquals([unknown.status, (await unknown.json()).error.code], [400, "usage"]);
  });
});

Deno.test("ctxsnap serve prints its URL as JSON, serves, and exits 0 on SIGTERM", async () => {
  const fx = await fixture();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, "serve", "--json", "--all"],
    cwd: fx.workspace,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: realDenoDir(),
      HOME: fx.root,
      CTXSNAP_CONFIG_DIR: join(fx.root, "me-config"),
      NO_COLOR: "1",
      CTXSNAP_DAEMON: "off",
    },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let info: { url: string; host: string; port: number; read_only: boolean } | null = null;
  while (info === null) {
    const { value, done } = await reader.read();
    assert(!done, `serve exited before printing its URL: ${text}`);
    text += value;
    try {
      info = JSON.parse(text);
    } catch {
      // not complete yet
    }
  }
  try {
    assertEquals([info.host, info.read_only], ["127.0.0.1", true]);
    assert(info.url.startsWith(`http://127.0.0.1:${info.port}/`), info.url);
    const res = await fetch(`${info.url}api/timeline`);
    assertEquals((await res.json()).source.scope, "all");
    const refused = await fetch(`http://127.0.0.1:${info.port}/`);
    await refused.body?.cancel();
    assertEquals(refused.status, 403);
  } finally {
    child.kill("SIGTERM");
    await reader.cancel();
    const status = await child.status;
    await child.stderr.cancel();
    assertEquals(status.code, 0, "SIGTERM ends serve cleanly");
  }
});

Deno.test("serve tells connected pages when a snapshot is created", async () => {
  await withServer(async (server, fx, data) => {
    const events = await fetch(`${server.url}api/events`);
    assertEquals(events.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    const writer = Store.open(fx.storeDir);
    let created: string;
    try {
      created = (await createSnapshot(writer, fx.me, {
        reason: "made while serving",
        allowUnchanged: true, // the fixture's workspace is as its last snapshot recorded
      })).id;
    } finally {
      writer.close();
    }
    let seen = "";
    while (!seen.includes("event: timeline")) {
      const { value, done } = await reader.read();
      assert(!done, "the stream stays open");
      seen += value;
    }
    await reader.cancel();
    const now = await (await fetch(`${server.url}api/timeline`)).json();
    assertEquals(now.snapshots.length, data.snapshots.length + 1);
    assertEquals(now.snapshots.at(-1).id, created);
    assert(server.rebuilds >= 1);
  });
});
