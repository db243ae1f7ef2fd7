/**
 * Subprocess tests of the `ctxsnap` command line:
 * the real `cli.ts` under Deno, real SQLite stores, real git and openssl,
 * real files, symlinks and FIFOs in temporary directories.
 *
 * @module
 */
import { readObjectBytes, writeObjectBytes } from "../_objects.ts";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { fromHex, toHex } from "../../lib/encoding/hex.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { Store } from "../../lib/repository/store.ts";
import { assert, assertEquals } from "../_assert.ts";
import {
  expectCode,
  NEEDS_DENO_PERMISSIONS,
  type TempWorkspace,
  tempWorkspace,
  withStore,
} from "../_cli.ts";
import { editBehindCtxsnap } from "../_util.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// ---------------------------------------------------------------------------
// helpers

/** `ctxsnap create --json ...args`, expecting success; returns the JSON document. */
// deno-lint-ignore no-explicit-any
async function create(ws: TempWorkspace, ...args: string[]): Promise<any> {
  const result = await ws.run(["create", "--json", ...args]);
  expectCode(result, 0, `create ${args.join(" ")}`);
  const doc = result.json();
  assert(/^[0-9a-f]{64}$/.test(doc.id), `create printed no id: ${result.stdout}`);
  return doc;
}

function storeDir(ws: TempWorkspace): string {
  return join(ws.path, ".ctxsnap");
}

function openDb(ws: TempWorkspace): DatabaseSync {
  return new DatabaseSync(join(storeDir(ws), "index.db"));
}

/** Runs `fn` on the store's index database (read-write), closing it afterwards. */
function withDb<T>(ws: TempWorkspace, fn: (db: DatabaseSync) => T): T {
  const db = openDb(ws);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

interface TreeJson {
  version: number;
  entries: { path: string; type: string; blob?: string; size?: number; target?: string }[];
  skipped: { path: string; reason: string }[];
}

/** Reads a tree manifest straight from the index. */
function readTree(ws: TempWorkspace, treeId: string): TreeJson {
  const store = Store.open(storeDir(ws), { readOnly: true });
  try {
    return store.getTree(treeId) as unknown as TreeJson;
  } finally {
    store.close();
  }
}

function blobOf(tree: TreeJson, path: string): string {
  const entry = tree.entries.find((e) => e.path === path);
  assert(entry?.blob !== undefined, `tree has no file ${path}`);
  return entry.blob;
}

/** Replaces the hex digit at `index` of `text` by a different hex digit. */
function flipHexAt(text: string, index: number): string {
  const c = text[index]!;
  assert(/[0-9a-f]/.test(c), `character ${index} (${c}) is not a hex digit`);
  const replacement = c === "0" ? "1" : "0";
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

/**
 * Index of the first character of the string value after `marker` in `text`;
 * `marker` must occur exactly once unless `first` is set.
 */
function valueIndex(text: string, marker: string, first = false): number {
  const at = text.indexOf(marker);
  assert(at >= 0, `${marker} not found in ${text.slice(0, 200)}…`);
  if (!first) assertEquals(text.indexOf(marker, at + 1), -1, `${marker} occurs more than once`);
  return at + marker.length;
}

/**
 * Rewrites a stored envelope as an attacker with file access could: drop the
 * immutability trigger, then update the row.
 */
function tamperEnvelope(ws: TempWorkspace, id: string, change: (text: string) => string): void {
  withDb(ws, (db) => {
    const row = db.prepare("SELECT envelope FROM snapshots WHERE id = ?").get(id) as {
      envelope: Uint8Array;
    };
    const before = decoder.decode(row.envelope);
    const after = change(before);
    assert(after !== before, "tamper changed nothing");
    assertEquals(after.length, before.length, "tamper must keep the length");
    editBehindCtxsnap(db, "snapshots", () => {
      db.prepare("UPDATE snapshots SET envelope = ? WHERE id = ?").run(encoder.encode(after), id);
    });
  });
}

/** Expects both `verify ID` and `verify --all` to fail with exit 1. */
async function expectTamperDetected(ws: TempWorkspace, id: string, what: string): Promise<void> {
  const one = await ws.run(["verify", id]);
  expectCode(one, 1, `verify after ${what}`);
  assert(one.stderr.includes("ctxsnap: error:"), `no error line after ${what}: ${one.stderr}`);
  // The one tamper headline, naming the snapshot, as for a received file.
  assert(one.stdout.startsWith(`TAMPERED: snapshot ${id}`), `after ${what}: ${one.stdout}`);
  assert(one.stderr.includes("ctxsnap: hint: do not use it"), `after ${what}: ${one.stderr}`);
  const all = await ws.run(["verify", "--all"]);
  expectCode(all, 1, `verify --all after ${what}`);
  assert(all.stdout.includes(`TAMPERED: snapshot ${id}`), `--all after ${what}: ${all.stdout}`);
  const allJson = await ws.run(["verify", "--all", "--json"]);
  expectCode(allJson, 1, `verify --all --json after ${what}`);
  assertEquals(allJson.json().ok, false);
}

function bytesInclude(haystack: Uint8Array, needle: Uint8Array): boolean {
  const first = needle[0];
  outer: for (let i = haystack.indexOf(first!); i >= 0; i = haystack.indexOf(first!, i + 1)) {
    if (i + needle.length > haystack.length) return false;
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** Every regular file below `dir` (recursively), path → bytes. */
async function readAllFiles(dir: string): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for await (const entry of Deno.readDir(dir)) {
    const full = join(dir, entry.name);
    if (entry.isDirectory) {
      for (const [k, v] of await readAllFiles(full)) out.set(k, v);
    } else if (entry.isFile) {
      out.set(full, await Deno.readFile(full));
    }
  }
  return out;
}

async function sh(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, cwd, env, stdout: "piped", stderr: "piped" })
    .output();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

async function git(ws: TempWorkspace, ...args: string[]): Promise<string> {
  const result = await sh(
    "git",
    ["-c", "user.name=Test", "-c", "user.email=t@example.com", ...args],
    ws.path,
    {
      HOME: ws.home,
      GIT_CONFIG_NOSYSTEM: "1",
    },
  );
  if (result.code !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

/** Sets a file's mtime (and atime) to `secondsAgo` seconds in the past. */
async function ageFile(file: string, secondsAgo: number): Promise<void> {
  const t = Date.now() / 1000 - secondsAgo;
  await Deno.utime(file, t, t);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------
// round trip, ids, exit codes

Deno.test("init, create, list, show and verify round-trip with --json documents naming the id", async () => {
  await withStore(async (ws) => {
    const made = await create(ws, "-m", "first snapshot");
    const id: string = made.id;
    assertEquals(made.created, true);
    assertEquals(made.workspace.files, 3);
    assertEquals(made.parent, null);

    const list = await ws.run(["list", "--json"]);
    expectCode(list, 0, "list");
    assertEquals(list.json().snapshots.map((s: { id: string }) => s.id), [id]);
    assertEquals(list.json().snapshots[0].reason, "first snapshot");

    const listText = await ws.run(["list"]);
    expectCode(listText, 0, "list");
    assert(listText.stdout.includes(id.slice(0, 12)), listText.stdout);

    const show = await ws.run(["show", id, "--json"]);
    expectCode(show, 0, "show");
    const doc = show.json();
    assertEquals(doc.id, id);
    assertEquals(doc.envelope.id, id);
    assertEquals(doc.envelope.body.reason, "first snapshot");
    assertEquals(doc.envelope.body.workspace.tree, made.workspace.tree);
    assertEquals(doc.signer.trusted, true);

    const showText = await ws.run(["show", id]);
    expectCode(showText, 0, "show");
    assert(showText.stdout.includes(id), showText.stdout);

    const verify = await ws.run(["verify", id, "--json"]);
    expectCode(verify, 0, "verify");
    assertEquals(verify.json().id, id);
    assertEquals(verify.json().valid, true);
    assertEquals(verify.json().trusted, true);
    assertEquals(verify.json().checked, { files: 3, bytes: made.workspace.bytes });

    // verify with no id checks the branch head
    const head = await ws.run(["verify", "--json"]);
    expectCode(head, 0, "verify head");
    assertEquals(head.json().id, id);

    const all = await ws.run(["verify", "--all", "--json"]);
    expectCode(all, 0, "verify --all");
    assertEquals(all.json().ok, true);
    assertEquals(all.json().snapshots.length, 1);

    // nothing changed: the head is returned, nothing is recorded
    const same = await create(ws, "-m", "nothing changed");
    assertEquals([same.created, same.id], [false, id]);

    // a second snapshot chains to the first
    await Deno.writeTextFile(join(ws.path, "a.txt"), "alpha, second\n");
    const second = await create(ws, "-m", "second");
    assertEquals(second.parent, id);
    const list2 = (await ws.run(["list", "--json"])).json();
    assertEquals(list2.snapshots.map((s: { id: string }) => s.id), [second.id, id]);
  });
});

Deno.test("show and verify accept a unique 4-character id prefix", async () => {
  await withStore(async (ws) => {
    const { id } = await create(ws);
    const show = await ws.run(["show", id.slice(0, 4), "--json"]);
    expectCode(show, 0, "show by prefix");
    assertEquals(show.json().id, id);
    const upper = await ws.run(["verify", id.slice(0, 6).toUpperCase(), "--json"]);
    expectCode(upper, 0, "verify by upper-case prefix");
    assertEquals(upper.json().id, id);
  });
});

Deno.test("a 3-character id prefix is a usage error (exit 2)", async () => {
  await withStore(async (ws) => {
    const { id } = await create(ws);
    const show = await ws.run(["show", id.slice(0, 3)]);
    expectCode(show, 2, "show with 3-char prefix");
    assert(show.stderr.startsWith("ctxsnap: error:"), show.stderr);
  });
});

Deno.test("an ambiguous id prefix is a usage error listing the candidates", async () => {
  await withStore(async (ws) => {
    // Create snapshots (no workspace) through the library until two ids share 4 hex digits.
    const seed = generateSeed();
    const publicKey = await publicKeyFromSeed(seed);
    const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
    const store = Store.open(storeDir(ws));
    const byPrefix = new Map<string, string>();
    let pair: [string, string] | null = null;
    try {
      for (let i = 0; i < 5000 && pair === null; i++) {
        const { id } = await createSnapshot(store, signer, {
          reason: `r${i}`,
          workspace: false,
          allowUnchanged: true,
        });
        const other = byPrefix.get(id.slice(0, 4));
        if (other !== undefined) pair = [other, id];
        byPrefix.set(id.slice(0, 4), id);
      }
    } finally {
      store.close();
    }
    assert(pair !== null, "no two ids shared a 4-digit prefix");
    const show = await ws.run(["show", pair[0].slice(0, 4)]);
    expectCode(show, 2, "show with ambiguous prefix");
    assert(show.stderr.includes("ambiguous"), show.stderr);
    assert(show.stderr.includes(pair[0].slice(0, 16)), show.stderr);
    assert(show.stderr.includes(pair[1].slice(0, 16)), show.stderr);
    // A longer prefix that is unique still works.
    let n = 5;
    while (pair[0].slice(0, n) === pair[1].slice(0, n)) n++;
    const unique = await ws.run(["show", pair[0].slice(0, n), "--json"]);
    expectCode(unique, 0, "show with longer prefix");
    assertEquals(unique.json().id, pair[0]);
  });
});

Deno.test("an unknown snapshot id exits 4", async () => {
  await withStore(async (ws) => {
    const { id } = await create(ws);
    const other = (id[0] === "f" ? "0" : "f") + id.slice(1, 8);
    for (const command of ["show", "verify", "diff"]) {
      const result = await ws.run([command, other]);
      expectCode(result, 4, `${command} unknown id`);
      assert(result.stderr.includes("ctxsnap: error:"), result.stderr);
    }
  });
});

Deno.test("commands outside any store exit 10 with a hint naming ctxsnap init", async () => {
  const ws = await tempWorkspace();
  try {
    for (const args of [["list"], ["create"], ["verify", "--all"], ["show", "abcd"]]) {
      const result = await ws.run(args);
      expectCode(result, 10, args.join(" "));
      assert(result.stderr.includes("ctxsnap: error:"), result.stderr);
      assert(/ctxsnap: hint: .*ctxsnap init/.test(result.stderr), result.stderr);
    }
    const json = await ws.run(["list", "--json"]);
    expectCode(json, 10, "list --json");
    assertEquals(json.json().error.exit, 10);
    assertEquals(json.json().error.code, "no_store");
  } finally {
    await ws.cleanup();
  }
});

Deno.test("an unknown flag or command is a usage error (exit 2)", async () => {
  await withStore(async (ws) => {
    for (
      const args of [["create", "--bogus"], ["list", "--nope"], ["frobnicate"], ["show", "a", "b"]]
    ) {
      const result = await ws.run(args);
      expectCode(result, 2, args.join(" "));
      assert(result.stderr.startsWith("ctxsnap: error:"), result.stderr);
    }
    const list = await ws.run(["list", "--json"]);
    assertEquals(list.json().snapshots.length, 0, "a usage error created a snapshot");
  });
});

// ---------------------------------------------------------------------------
// tampering

Deno.test("verify exits 1 when one byte of an inline blob is flipped", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    const blob = blobOf(readTree(ws, made.workspace.tree), "a.txt");
    withDb(ws, (db) => {
      const row = db.prepare("SELECT data, encoding FROM objects WHERE id = ?").get(blob) as {
        data: Uint8Array;
        encoding: string;
      };
      assertEquals(row.encoding, "raw");
      const data = row.data.slice();
      data[0]! ^= 0x01;
      db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(data, blob);
    });
    await expectTamperDetected(ws, made.id, "flipping an inline blob byte");
  });
});

Deno.test("verify exits 1 when one byte of a chunk of a large blob (> 1 MiB) is flipped", async () => {
  await withStore(async (ws) => {
    // Incompressible bytes, so the chunk is stored raw and the flip changes its content.
    const big = new Uint8Array(1024 * 1024 + 4096);
    let x = 12345;
    for (let i = 0; i < big.length; i++) {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      big[i] = x >>> 24;
    }
    await Deno.writeFile(join(ws.path, "big.bin"), big);
    const made = await create(ws);
    const blob = blobOf(readTree(ws, made.workspace.tree), "big.bin");
    assertEquals(blob, sha256Hex(big));
    const row = withDb(
      ws,
      (db) =>
        db.prepare("SELECT encoding, data FROM objects WHERE id = ?").get(blob) as {
          encoding: string;
          data: Uint8Array;
        },
    );
    assertEquals(row.encoding, "chunks");
    const firstChunk = [...row.data.subarray(0, 32)].map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    expectCode(await ws.run(["verify", made.id]), 0, "verify before tampering");
    withDb(ws, (db) => {
      const chunk = db.prepare("SELECT data FROM objects WHERE id = ?").get(firstChunk) as {
        data: Uint8Array;
      };
      const data = chunk.data.slice();
      data[Math.floor(data.length / 2)]! ^= 0x80;
      db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(data, firstChunk);
    });
    await expectTamperDetected(ws, made.id, "flipping a byte of a large blob's chunk");
  });
});

Deno.test("verify exits 1 when one byte of a stored tree is flipped", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    withDb(ws, (db) => {
      const text = decoder.decode(readObjectBytes(db, made.workspace.tree));
      // Flip a hex digit of a blob id inside the manifest: still valid JSON.
      const at = valueIndex(text, '"blob":"', true) + 5;
      writeObjectBytes(db, made.workspace.tree, encoder.encode(flipHexAt(text, at)));
    });
    await expectTamperDetected(ws, made.id, "flipping a tree byte");
  });
});

Deno.test("verify exits 1 when a referenced blob or the tree is missing from the store", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    const blob = blobOf(readTree(ws, made.workspace.tree), "b.md");
    withDb(ws, (db) => db.prepare("DELETE FROM objects WHERE id = ?").run(blob));
    await expectTamperDetected(ws, made.id, "deleting a blob row");
  });
  await withStore(async (ws) => {
    const made = await create(ws);
    withDb(ws, (db) => db.prepare("DELETE FROM objects WHERE id = ?").run(made.workspace.tree));
    await expectTamperDetected(ws, made.id, "deleting the tree row");
  });
});

for (
  const [field, change] of [
    [
      "the body's reason text",
      (t: string) => t.replace('"reason":"checkpoint"', '"reason":"checkpoinu"'),
    ],
    ["the body's workspace tree id", (t: string) => flipHexAt(t, valueIndex(t, '"tree":"') + 10)],
    ["the envelope id", (t: string) => flipHexAt(t, valueIndex(t, '},"id":"') + 20)],
    ["the signature key_id", (t: string) => flipHexAt(t, valueIndex(t, '"key_id":"') + 3)],
    ["the signature public_key", (t: string) => flipHexAt(t, valueIndex(t, '"public_key":"') + 30)],
    ["the signature value", (t: string) => flipHexAt(t, valueIndex(t, '"value":"') + 40)],
  ] as const
) {
  Deno.test(`verify and verify --all exit 1 when one byte of ${field} is flipped`, async () => {
    await withStore(async (ws) => {
      const made = await create(ws, "-m", "checkpoint");
      expectCode(await ws.run(["verify", made.id]), 0, "verify before tampering");
      tamperEnvelope(ws, made.id, change);
      await expectTamperDetected(ws, made.id, `flipping ${field}`);
    });
  });
}

Deno.test("verify exits 1 when the envelope is altered by rewriting bytes of index.db itself", async () => {
  await withStore(async (ws) => {
    const marker = "reason-marker-Qx7pZ";
    const made = await create(ws, "-m", marker);
    // Make sure everything is in the main db file, then edit that file directly.
    withDb(ws, (db) => db.exec("PRAGMA wal_checkpoint(TRUNCATE)"));
    const file = join(storeDir(ws), "index.db");
    const bytes = await Deno.readFile(file);
    const needle = encoder.encode(marker);
    let at = -1;
    for (let i = 0; i + needle.length <= bytes.length && at < 0; i++) {
      if (bytes[i] === needle[0] && needle.every((b, j) => bytes[i + j] === b)) at = i;
    }
    assert(at >= 0, "marker not found in index.db");
    bytes[at + needle.length - 1] = "Y".charCodeAt(0);
    await Deno.writeFile(file, bytes);
    await expectTamperDetected(ws, made.id, "rewriting index.db bytes");
  });
});

// ---------------------------------------------------------------------------
// trust

Deno.test("a valid snapshot from an untrusted signer exits 3; --trust and key trust make it 0", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    const me = await ws.run(["key", "show", "--json"]);
    expectCode(me, 0, "key show");
    const { public_key: publicKey, key_id: keyId } = me.json();
    assertEquals(keyId, made.key_id);

    const other = join(ws.root, "other-config");
    const env = { CTXSNAP_CONFIG_DIR: other };
    // Another user (config dir) must adopt the store before using it; that trusts no signer.
    expectCode(await ws.run(["init", "--adopt"], { env }), 0, "adopt with another config dir");
    const untrusted = await ws.run(["verify", made.id], { env });
    expectCode(untrusted, 3, "verify with an empty config dir");
    assert(untrusted.stderr.includes("untrusted"), untrusted.stderr);
    const untrustedAll = await ws.run(["verify", "--all", "--json"], { env });
    expectCode(untrustedAll, 3, "verify --all untrusted");
    assertEquals(untrustedAll.json().ok, true);
    assertEquals(untrustedAll.json().trusted, false);
    assertEquals(untrustedAll.json().snapshots[0].valid, true);

    expectCode(
      await ws.run(["verify", made.id, "--trust", publicKey], { env }),
      0,
      "verify --trust HEX",
    );
    const pem = join(ws.root, "signer.pub.pem");
    await Deno.writeTextFile(pem, (await ws.run(["key", "export"])).stdout);
    expectCode(await ws.run(["verify", made.id, "--trust", pem], { env }), 0, "verify --trust PEM");
    // Trusting some other key does not help.
    const stranger = toHex(await publicKeyFromSeed(generateSeed()));
    expectCode(
      await ws.run(["verify", made.id, "--trust", stranger], { env }),
      3,
      "verify --trust OTHER",
    );

    expectCode(await ws.run(["key", "trust", publicKey, "--name", "me"], { env }), 0, "key trust");
    const trusted = await ws.run(["verify", made.id, "--json"], { env });
    expectCode(trusted, 0, "verify after key trust");
    assertEquals(trusted.json().signer, "me");
    expectCode(await ws.run(["verify", "--all"], { env }), 0, "verify --all after key trust");

    expectCode(await ws.run(["key", "untrust", keyId], { env }), 0, "key untrust");
    expectCode(await ws.run(["verify", made.id], { env }), 3, "verify after key untrust");
  });
});

// ---------------------------------------------------------------------------
// create options

Deno.test("create --context FILE with an unknown key exits 2 naming the key", async () => {
  await withStore(async (ws) => {
    const file = join(ws.root, "ctx.json");
    await Deno.writeTextFile(file, JSON.stringify({ task: "x", surprise_key: 1 }));
    const result = await ws.run(["create", "--context", file]);
    expectCode(result, 2, "create with unknown context key");
    assert(result.stderr.includes("surprise_key"), result.stderr);

    await Deno.writeTextFile(file, JSON.stringify({ cursors: { warp: 1 } }));
    const nested = await ws.run(["create", "--context", file]);
    expectCode(nested, 2, "create with unknown cursors key");
    assert(nested.stderr.includes("cursors.warp"), nested.stderr);

    const list = await ws.run(["list", "--json"]);
    assertEquals(list.json().snapshots.length, 0, "a refused context created a snapshot");
  });
});

Deno.test("create --context - reads the context from stdin and show --json has it", async () => {
  await withStore(async (ws) => {
    const context = {
      task: "port the parser",
      progress_pct: 40,
      decisions: ["keep the old API"],
      cursors: { cell: 7 },
      facets: { metadata: { run: "r-1" } },
    };
    const made = await ws.run(["create", "--context", "-", "--json"], {
      stdin: JSON.stringify(context),
    });
    expectCode(made, 0, "create --context -");
    const show = await ws.run(["show", made.json().id, "--json"]);
    const body = show.json().envelope.body;
    assertEquals(body.context.task, "port the parser");
    assertEquals(body.context.progress_pct, 40);
    assertEquals(body.context.decisions, ["keep the old API"]);
    assertEquals(body.cursors.cell, 7);
    assertEquals(body.facets.metadata, { run: "r-1" });
  });
});

Deno.test("create --expect-head exits 5 on a mismatch and creates nothing; a matching head succeeds", async () => {
  await withStore(async (ws) => {
    const a = await create(ws, "-m", "a");
    const b = await create(ws, "-m", "b", "--allow-unchanged");
    const stale = await ws.run(["create", "--expect-head", a.id.slice(0, 8)]);
    expectCode(stale, 5, "create --expect-head stale");
    assert(stale.stderr.includes("ctxsnap: error:"), stale.stderr);
    const none = await ws.run(["create", "--expect-head", "none"]);
    expectCode(none, 5, "create --expect-head none on a non-empty branch");
    assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 2);

    const c = await create(ws, "--expect-head", b.id, "--allow-unchanged");
    assertEquals(c.parent, b.id);
    const d = await create(ws, "--expect-head", c.id.slice(0, 6), "--allow-unchanged");
    assertEquals(d.parent, c.id);
  });
});

Deno.test("create --source twice returns the same snapshot with created=false", async () => {
  await withStore(async (ws) => {
    const first = await create(ws, "--source", "cell:1");
    assertEquals(first.created, true);
    await Deno.writeTextFile(join(ws.path, "new.txt"), "changed meanwhile\n");
    const again = await create(ws, "--source", "cell:1");
    assertEquals(again.id, first.id);
    assertEquals(again.created, false);
    const other = await create(ws, "--source", "cell:2");
    assert(other.id !== first.id);
    assertEquals(other.created, true);
    assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 2);
  });
});

Deno.test("session set, decide, touch, finding and know are recorded by the next create", async () => {
  await withStore(async (ws) => {
    const steps: string[][] = [
      ["session", "set", "--task", "migrate the parser", "--progress", "30"],
      ["session", "decide", "keep the old API behind a flag"],
      ["session", "touch", "src/main.ts", "a.txt"],
      ["session", "finding", "the lexer allocates per token"],
      ["session", "know", "tests live in tests/"],
      ["session", "decide", "keep the old API behind a flag"], // de-duplicated
    ];
    for (const args of steps) expectCode(await ws.run(args), 0, args.join(" "));
    const made = await create(ws);
    const context = (await ws.run(["show", made.id, "--json"])).json().envelope.body.context;
    assertEquals(context, {
      task: "migrate the parser",
      progress_pct: 30,
      decisions: ["keep the old API behind a flag"],
      files_touched: ["src/main.ts", "a.txt"],
      findings: ["the lexer allocates per token"],
      knowledge: ["tests live in tests/"],
      extensions: {},
    });
    const bad = await ws.run(["session", "set", "--progress", "101"]);
    expectCode(bad, 2, "session set --progress 101");
  });
});

// ---------------------------------------------------------------------------
// diff

Deno.test("diff lists changed, added and removed files against the workspace and between snapshots", async () => {
  await withStore(async (ws) => {
    const a = await create(ws);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "alpha, edited\n");
    await Deno.writeTextFile(join(ws.path, "new.txt"), "new\n");
    await Deno.remove(join(ws.path, "b.md"));
    const now = await ws.run(["diff", a.id, "--json"]);
    expectCode(now, 0, "diff A");
    const d = now.json();
    assertEquals(d.added, ["new.txt"]);
    assertEquals(d.changed, ["a.txt"]);
    assertEquals(d.removed, ["b.md"]);
    const text = await ws.run(["diff", a.id.slice(0, 8)]);
    assert(text.stdout.includes("A new.txt"), text.stdout);
    assert(text.stdout.includes("M a.txt"), text.stdout);
    assert(text.stdout.includes("D b.md"), text.stdout);

    const b = await create(ws);
    const between = await ws.run(["diff", a.id, b.id, "--json"]);
    expectCode(between, 0, "diff A B");
    assertEquals(between.json().added, ["new.txt"]);
    assertEquals(between.json().changed, ["a.txt"]);
    assertEquals(between.json().removed, ["b.md"]);
    const reverse = (await ws.run(["diff", b.id, a.id, "--json"])).json();
    assertEquals(reverse.added, ["b.md"]);
    assertEquals(reverse.removed, ["new.txt"]);
    const same = (await ws.run(["diff", b.id, "--json"])).json();
    assertEquals([same.added, same.changed, same.removed], [[], [], []]);
  });
});

Deno.test("diff --stat and --patch show line counts and unified text diffs (binary, mode and symlink changes marked, controls escaped), against the workspace and between snapshots", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, "a.txt"), "one\ntwo\nthree\n");
    await Deno.writeFile(join(ws.path, "bin.dat"), new Uint8Array([1, 0, 2]));
    await Deno.symlink("a.txt", join(ws.path, "link"));
    const a = await create(ws);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "one\nTWO\nthree\n\x1b[2Kfaked\n");
    await Deno.writeFile(join(ws.path, "bin.dat"), new Uint8Array([1, 0, 3]));
    await Deno.remove(join(ws.path, "link"));
    await Deno.symlink("b.md", join(ws.path, "link"));
    await Deno.remove(join(ws.path, "b.md"));
    await Deno.chmod(join(ws.path, "src/main.ts"), 0o755);
    const stat = await ws.run(["diff", a.id, "--stat", "--json"]);
    expectCode(stat, 0, "diff --stat");
    const byPath = Object.fromEntries(
      (stat.json().files as { path: string }[]).map((f) => [f.path, f]),
    ) as Record<string, Record<string, unknown>>;
    assertEquals(
      [byPath["a.txt"]?.kind, byPath["a.txt"]?.added, byPath["a.txt"]?.removed],
      ["text", 2, 1],
    );
    assertEquals(byPath["a.txt"]?.hunks, [], "--stat carries no hunks");
    assertEquals(byPath["bin.dat"]?.kind, "binary");
    assertEquals([byPath["link"]?.old_target, byPath["link"]?.new_target], ["a.txt", "b.md"]);
    assertEquals([byPath["b.md"]?.change, byPath["b.md"]?.removed], ["removed", 1]);
    assertEquals(
      [
        byPath["src/main.ts"]?.old_mode,
        byPath["src/main.ts"]?.new_mode,
        byPath["src/main.ts"]?.added,
      ],
      [0o644, 0o755, 0],
    );
    const text = await ws.run(["diff", a.id, "--patch"]);
    expectCode(text, 0, "diff --patch");
    assert(
      text.stdout.includes(
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+\\x1b[2Kfaked\n",
      ),
      text.stdout,
    );
    assert(!text.stdout.includes("\x1b"), "a control character reached the terminal");
    assert(text.stdout.includes("Binary files a/bin.dat and b/bin.dat differ"), text.stdout);
    assert(text.stdout.includes("--- a/b.md\n+++ /dev/null\n"), text.stdout);
    assert(text.stdout.includes("old mode 644\nnew mode 755"), text.stdout);
    assert(text.stdout.includes("(symlink a.txt → b.md)"), text.stdout);
    const b = await create(ws);
    const between = (await ws.run(["diff", a.id, b.id, "--patch", "--json"])).json();
    const patched = (between.files as { path: string; hunks: { lines: string[] }[] }[])
      .find((f) => f.path === "a.txt")!;
    assertEquals(patched.hunks[0]?.lines, [" one", "-two", "+TWO", " three", "+\x1b[2Kfaked"]);
    const human = await ws.run(["diff", a.id, b.id, "--stat"]);
    assert(/ a\.txt +\| \+2 -1\n/.test(human.stdout), human.stdout);
    assert(
      human.stdout.includes(" 5 file(s) changed, 2 insertion(s)(+), 2 deletion(s)(-)"),
      human.stdout,
    );
    expectCode(await ws.run(["diff", a.id, "--stat", "--patch"]), 2, "--stat with --patch");
  });
});

// ---------------------------------------------------------------------------
// capture rules

Deno.test("secret files are skipped, listed, and their bytes never reach the store", async () => {
  const nonce = crypto.randomUUID();
  const secrets: Record<string, string> = {
    ".env": `SECRET-DOTENV-${nonce}`,
    ".env.local": `SECRET-DOTENV-LOCAL-${nonce}`,
    "id.pem": `SECRET-PEM-${nonce}`,
    "server.key": `SECRET-KEY-${nonce}`,
    "credentials.json": `SECRET-CREDENTIALS-${nonce}`,
    "nested/dir/.env": `SECRET-NESTED-${nonce}`,
  };
  await withStore(async (ws) => {
    for (const [name, text] of Object.entries(secrets)) {
      await Deno.mkdir(join(ws.path, name, ".."), { recursive: true });
      await Deno.writeTextFile(join(ws.path, name), text);
    }
    const made = await create(ws);
    assertEquals(made.workspace.files, 3);
    const tree = readTree(ws, made.workspace.tree);
    for (const name of Object.keys(secrets)) {
      assert(!tree.entries.some((e) => e.path === name), `${name} was captured`);
      assert(
        tree.skipped.some((s) => s.path === name && s.reason === "secret"),
        `${name} is not listed as a skipped secret: ${JSON.stringify(tree.skipped)}`,
      );
    }
    await create(ws); // a recapture must not read them either
    expectCode(await ws.run(["diff", made.id]), 0, "diff");
    const files = await readAllFiles(storeDir(ws));
    assert([...files.keys()].some((f) => f.endsWith("index.db")));
    for (const [file, bytes] of files) {
      for (const text of Object.values(secrets)) {
        assert(!bytesInclude(bytes, encoder.encode(text)), `${text} found in ${file}`);
        assert(!bytesInclude(bytes, encoder.encode(nonce)), `the nonce found in ${file}`);
      }
    }
  });
});

Deno.test("a FIFO in the workspace does not hang create and is skipped as special_file", async () => {
  await withStore(async (ws) => {
    const mk = await sh("mkfifo", [join(ws.path, "pipe")], ws.path);
    assertEquals(mk.code, 0, mk.stderr);
    const result = await ws.run(["create", "--json"], { timeoutMs: 30_000 });
    expectCode(result, 0, "create with a FIFO");
    const tree = readTree(ws, result.json().workspace.tree);
    assert(!tree.entries.some((e) => e.path === "pipe"), "the FIFO became an entry");
    assert(
      tree.skipped.some((s) => s.path === "pipe" && s.reason === "special_file"),
      JSON.stringify(tree.skipped),
    );
    const diff = await ws.run(["diff", result.json().id, "--json"], { timeoutMs: 30_000 });
    expectCode(diff, 0, "diff with a FIFO");
  });
});

Deno.test("a symlink is recorded with its target and never read through", async () => {
  await withStore(async (ws) => {
    const outside = join(ws.root, "outside-secret.txt");
    await Deno.writeTextFile(outside, `OUTSIDE-${crypto.randomUUID()}`);
    await Deno.symlink(outside, join(ws.path, "link"));
    const made = await create(ws);
    const tree = readTree(ws, made.workspace.tree);
    const link = tree.entries.find((e) => e.path === "link");
    assertEquals(link, { path: "link", type: "symlink", target: outside });
    const content = encoder.encode(await Deno.readTextFile(outside));
    for (const [file, bytes] of await readAllFiles(storeDir(ws))) {
      assert(!bytesInclude(bytes, content), `the link target's content is in ${file}`);
    }
  });
});

Deno.test("an unchanged recapture rehashes no file", async () => {
  await withStore(async (ws) => {
    for (const name of ["a.txt", "b.md", "src/main.ts"]) await ageFile(join(ws.path, name), 10);
    await sleep(1100); // ctime has whole-second granularity on some filesystems
    const first = await create(ws);
    assertEquals(first.capture.hashed, 3);
    assertEquals(first.capture.reused, 0);
    const second = await create(ws);
    assertEquals(second.capture.hashed, 0);
    assertEquals(second.capture.reused, 3);
    assertEquals(second.workspace.tree, first.workspace.tree);
  });
});

Deno.test("an edit keeping size and mtime right after capture (racy window) is detected", async () => {
  await withStore(async (ws) => {
    const file = join(ws.path, "racy.txt");
    await Deno.writeTextFile(file, "version-one\n");
    const first = await create(ws);
    const mtime = (await Deno.stat(file)).mtime!;
    await Deno.writeTextFile(file, "version-two\n"); // same size
    await Deno.utime(file, mtime, mtime);
    assertEquals((await Deno.stat(file)).mtime!.getTime(), mtime.getTime());
    const diff = await ws.run(["diff", first.id, "--json"]);
    assertEquals(diff.json().changed, ["racy.txt"]);
    const second = await create(ws);
    assert(second.capture.hashed >= 1, JSON.stringify(second.capture));
    const tree = readTree(ws, second.workspace.tree);
    assertEquals(blobOf(tree, "racy.txt"), sha256Hex("version-two\n"));
    const between = await ws.run(["diff", first.id, second.id, "--json"]);
    assertEquals(between.json().changed, ["racy.txt"]);
  });
});

Deno.test("an edit of an old cached file keeping size and mtime is detected (ctime changed)", async () => {
  await withStore(async (ws) => {
    const file = join(ws.path, "a.txt");
    for (const name of ["a.txt", "b.md", "src/main.ts"]) await ageFile(join(ws.path, name), 10);
    await sleep(1100);
    const first = await create(ws);
    const cached = await create(ws);
    assertEquals(cached.capture.reused, 3, "the stat cache was not in use");
    const mtime = (await Deno.stat(file)).mtime!;
    await Deno.writeTextFile(file, "ALPHA\n"); // same size as "alpha\n"
    await Deno.utime(file, mtime, mtime);
    const second = await create(ws);
    assertEquals(second.capture.hashed, 1);
    assertEquals(second.capture.reused, 2);
    assertEquals(blobOf(readTree(ws, second.workspace.tree), "a.txt"), sha256Hex("ALPHA\n"));
    const diff = await ws.run(["diff", first.id, second.id, "--json"]);
    assertEquals(diff.json().changed, ["a.txt"]);
  });
});

// ---------------------------------------------------------------------------
// git

Deno.test("create records the git anchor and leaves .git/index byte-identical", async () => {
  await withStore(async (ws) => {
    await git(ws, "init", "-q", "-b", "trunk");
    await git(ws, "add", "a.txt", "b.md", "src/main.ts");
    await git(ws, "commit", "-q", "-m", "initial");
    const head = (await git(ws, "rev-parse", "HEAD")).trim();
    // Make the index stale so that a plain `git status` would rewrite it.
    await ageFile(join(ws.path, "a.txt"), -5);
    const indexPath = join(ws.path, ".git", "index");
    const before = await Deno.readFile(indexPath);
    const beforeMtime = (await Deno.stat(indexPath)).mtime!.getTime();

    const clean = await create(ws);
    assertEquals(clean.git, { commit: head, branch: "trunk", dirty: false });

    await Deno.writeTextFile(join(ws.path, "untracked.txt"), "new\n");
    const dirty = await create(ws);
    assertEquals(dirty.git, { commit: head, branch: "trunk", dirty: true });
    const shown = (await ws.run(["show", dirty.id, "--json"])).json();
    assertEquals(shown.envelope.body.git, { commit: head, branch: "trunk", dirty: true });

    assertEquals(await Deno.readFile(indexPath), before, ".git/index bytes changed");
    assertEquals((await Deno.stat(indexPath)).mtime!.getTime(), beforeMtime, "index mtime changed");

    // The setup was sensitive: an ordinary git status does rewrite this index.
    await git(ws, "status", "--porcelain");
    assert(
      !equalBytes(await Deno.readFile(indexPath), before),
      "plain git status did not refresh the index; the test proves nothing",
    );
  });
});

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

Deno.test("create outside a git work tree records git as null", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    assertEquals(made.git, null);
    const shown = (await ws.run(["show", made.id, "--json"])).json();
    assertEquals(shown.envelope.body.git, null);
  });
});

// ---------------------------------------------------------------------------
// permissions, interop, identity

/**
 * Runs under `deno run --allow-read --allow-env --allow-sys=uid` (the store-ownership
 * check needs the user id); against a compiled binary
 * (no permission sandbox) the same runs go unsandboxed, and the tests still
 * check that nothing in the store changed.
 */
const READ_ONLY: { permissions?: string[] } = NEEDS_DENO_PERMISSIONS
  ? {}
  : { permissions: ["--allow-read", "--allow-env", "--allow-sys=uid"] };

Deno.test("verify runs with only --allow-read --allow-env --allow-sys=uid and leaves every store file's bytes unchanged", async () => {
  await withStore(async (ws) => {
    const big = new Uint8Array(1024 * 1024 + 1).fill(7);
    await Deno.writeFile(join(ws.path, "big.bin"), big); // one chunked blob too
    const made = await create(ws);
    await create(ws); // a parent chain for --all
    const before = await readAllFiles(storeDir(ws));
    const one = await ws.run(["verify", made.id, "--json"], READ_ONLY);
    expectCode(one, 0, "read-only verify");
    assertEquals(one.json().trusted, true);
    const all = await ws.run(["verify", "--all"], READ_ONLY);
    expectCode(all, 0, "read-only verify --all");
    const after = await readAllFiles(storeDir(ws));
    for (const [file, bytes] of before) {
      assert(after.has(file), `${file} disappeared during verify`);
      let now = after.get(file)!;
      if (NEEDS_DENO_PERMISSIONS && file.endsWith("index.db")) {
        // An executable may write, so it reads in WAL mode (DESIGN.md §3.4) and puts the journal
        // mode back at close: only the header's mode bytes (18, 19), change counter (24–27) and
        // version-valid-for (92–95) may differ. No page, no row.
        now = now.slice();
        for (const at of [18, 19, 24, 25, 26, 27, 92, 93, 94, 95]) now[at] = bytes[at]!;
      }
      assert(equalBytes(now, bytes), `${file} changed during verify`);
    }
    // SQLite may add its (empty) WAL side files; nothing else may appear.
    for (const file of after.keys()) {
      if (before.has(file)) continue;
      assert(/index\.db-(wal|shm)$/.test(file), `verify created ${file}`);
      if (file.endsWith("-wal")) assertEquals(after.get(file)!.length, 0, "verify wrote a WAL");
    }
    // And tampering is still reported under the same permissions.
    tamperEnvelope(ws, made.id, (t) => flipHexAt(t, valueIndex(t, '"value":"') + 2));
    expectCode(
      await ws.run(["verify", made.id], READ_ONLY),
      1,
      "read-only verify of a tampered snapshot",
    );
  });
});

Deno.test("openssl verifies a snapshot signature with the key from key export", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    const exported = await ws.run(["key", "export"]);
    expectCode(exported, 0, "key export");
    assert(exported.stdout.includes("-----BEGIN PUBLIC KEY-----"), exported.stdout);
    const pem = join(ws.root, "pub.pem");
    await Deno.writeTextFile(pem, exported.stdout);
    const envelope = (await ws.run(["show", made.id, "--json"])).json().envelope;
    const msg = join(ws.root, "msg");
    const sig = join(ws.root, "sig");
    await Deno.writeTextFile(msg, `ctxsnap-snapshot-v1:${envelope.id}`);
    const signature = fromHex(envelope.signature.value, 64);
    await Deno.writeFile(sig, signature);
    const args = ["pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin", "-in", msg];
    const ok = await sh("openssl", [...args, "-sigfile", sig], ws.root);
    assertEquals(ok.code, 0, `openssl refused a good signature: ${ok.stdout} ${ok.stderr}`);
    assert(ok.stdout.includes("Signature Verified Successfully"), ok.stdout);

    const flipped = signature.slice();
    flipped[10]! ^= 0x01;
    const bad = join(ws.root, "sig.bad");
    await Deno.writeFile(bad, flipped);
    const refused = await sh("openssl", [...args, "-sigfile", bad], ws.root);
    assert(refused.code !== 0, `openssl accepted a flipped signature: ${refused.stdout}`);

    // The signature covers the domain-separated message, not the bare id.
    await Deno.writeTextFile(msg, envelope.id);
    const bare = await sh("openssl", [...args, "-sigfile", sig], ws.root);
    assert(bare.code !== 0, "the signature verified over the bare id");
  });
});

Deno.test("the identity key has mode 0600 and a group/world-readable key is refused with a chmod hint", async () => {
  await withStore(async (ws) => {
    const key = join(ws.configDir, "identity.pem");
    assertEquals((await Deno.stat(key)).mode! & 0o777, 0o600);
    const pem = await Deno.readTextFile(key);
    assert(pem.includes("-----BEGIN PRIVATE KEY-----"), "not a PKCS#8 PEM");
    await Deno.chmod(key, 0o644);
    for (const args of [["create"], ["key", "show"], ["key", "export"]]) {
      const result = await ws.run(args);
      expectCode(result, 7, args.join(" "));
      assert(/ctxsnap: hint: .*chmod/.test(result.stderr), result.stderr);
    }
    assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 0);
    await Deno.chmod(key, 0o600);
    await create(ws);
  });
});

Deno.test("openssl reads the private identity key and derives the exported public key", async () => {
  await withStore(async (ws) => {
    const key = join(ws.configDir, "identity.pem");
    const derived = await sh("openssl", ["pkey", "-in", key, "-pubout"], ws.root);
    assertEquals(derived.code, 0, derived.stderr);
    const exported = await ws.run(["key", "export"]);
    assertEquals(exported.stdout.trim(), derived.stdout.trim());
  });
});

Deno.test({
  name: "a read-only verify creates no file in the store (no index.db-wal / -shm)",
  async fn() {
    await withStore(async (ws) => {
      const made = await create(ws);
      const before = [...(await readAllFiles(storeDir(ws))).keys()].sort();
      expectCode(
        await ws.run(["verify", made.id], READ_ONLY),
        0,
        "read-only verify",
      );
      const after = [...(await readAllFiles(storeDir(ws))).keys()].sort();
      assertEquals(after, before);
    });
  },
});

Deno.test({
  name: "verify --json prints exactly one JSON document when it fails or the signer is untrusted",
  async fn() {
    await withStore(async (ws) => {
      const made = await create(ws);
      const env = { CTXSNAP_CONFIG_DIR: join(ws.root, "other-config") };
      expectCode(await ws.run(["init", "--adopt"], { env }), 0, "adopt with another config dir");
      const untrusted = await ws.run(["verify", made.id, "--json"], { env });
      expectCode(untrusted, 3, "verify --json untrusted");
      assertEquals(untrusted.json().trusted, false);
      tamperEnvelope(ws, made.id, (t) => flipHexAt(t, valueIndex(t, '"value":"') + 2));
      const tampered = await ws.run(["verify", made.id, "--json"]);
      expectCode(tampered, 1, "verify --json tampered");
      assertEquals(tampered.json().valid, false);
    });
  },
});

Deno.test("verify --trusted-keys is honoured for store snapshots and a missing keys file is exit 4", async () => {
  await withStore(async (ws) => {
    const made = await create(ws);
    const key = (await ws.run(["key", "show", "--json"])).json().public_key as string;
    const stranger = { CTXSNAP_CONFIG_DIR: join(ws.root, "stranger") };
    expectCode(await ws.run(["init", "--adopt"], { env: stranger }), 0, "adopt as a stranger");
    expectCode(await ws.run(["verify", made.id], { env: stranger }), 3, "untrusted without keys");
    // Build a trusted-keys file on another config dir, then point verify at it.
    const pinner = { CTXSNAP_CONFIG_DIR: join(ws.root, "pinner") };
    expectCode(
      await ws.run(["key", "trust", key, "--name", "alice"], { env: pinner }),
      0,
      "key trust",
    );
    const keysFile = join(ws.root, "pinner", "trusted_keys.json");
    expectCode(
      await ws.run(["verify", made.id, "--trusted-keys", keysFile], { env: stranger }),
      0,
      "verify with --trusted-keys",
    );
    expectCode(
      await ws.run(["verify", made.id, "--trusted-keys", join(ws.root, "nope.json")], {
        env: stranger,
      }),
      4,
      "verify with a missing keys file",
    );
  });
});

Deno.test("create --max-file-size skips larger files as too_large and refuses a bad size", async () => {
  await withStore(async (ws) => {
    await Deno.writeFile(join(ws.path, "big.bin"), new Uint8Array(2048));
    const small = (await ws.run(["create", "--max-file-size", "1K", "--json"])).json();
    const tree = readTree(ws, small.workspace.tree);
    assert(
      tree.skipped.some((s) => s.path === "big.bin" && s.reason === "too_large"),
      "big.bin not skipped",
    );
    const roomy = (await ws.run(["create", "--max-file-size", "4K", "--json"])).json();
    assert(
      readTree(ws, roomy.workspace.tree).entries.some((e) => e.path === "big.bin"),
      "big.bin missing",
    );
    expectCode(await ws.run(["create", "--max-file-size", "lots"]), 2, "bad size");
  });
});

Deno.test("create --context with a float is a usage error (exit 2) and creates nothing", async () => {
  await withStore(async (ws) => {
    const path = join(ws.root, "context.json");
    await Deno.writeTextFile(path, '{"progress_pct": 12.5}');
    const result = await ws.run(["create", "--context", path]);
    expectCode(result, 2, "float in context");
    assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 0);
  });
});

Deno.test("a store whose meta.format is unknown is refused (exit 1) and left unchanged", async () => {
  await withStore(async (ws) => {
    await create(ws);
    withDb(
      ws,
      (db) => db.prepare("UPDATE meta SET value = 'ctxsnap-store/9' WHERE key = 'format'").run(),
    );
    const result = await ws.run(["list"]);
    expectCode(result, 1, "unknown store format");
    assert(result.stderr.includes("ctxsnap-store/9"), result.stderr);
  });
});

Deno.test("verify and import of a directory are exit 4, not a crash", async () => {
  await withStore(async (ws) => {
    for (const command of ["verify", "import"]) {
      const result = await ws.run([command, ws.root]);
      expectCode(result, 4, `${command} of a directory`);
      assert(result.stderr.includes("is not a file"), result.stderr);
    }
  });
});

Deno.test("a store found by walking up that names another workspace is refused; init will not re-point one", async () => {
  await withStore(async (ws) => {
    await create(ws);
    const elsewhere = join(ws.root, "victim");
    await Deno.mkdir(elsewhere);
    await Deno.writeTextFile(join(elsewhere, "id_rsa"), "private\n");
    withDb(
      ws,
      (db) => db.prepare("UPDATE meta SET value = ? WHERE key = 'workspace_root'").run(elsewhere),
    );
    const refused = await ws.run(["create"]);
    expectCode(refused, 1, "create with a planted workspace_root");
    assert(refused.stderr.includes("names another workspace"), refused.stderr);
    // With an explicit --store the user chose it: allowed.
    expectCode(await ws.run(["--store", join(ws.path, ".ctxsnap"), "list"]), 0, "explicit --store");
    // init does not silently keep or change the recorded workspace.
    expectCode(await ws.run(["init"]), 5, "init over a store of another workspace");
  });
});

Deno.test("a file that is not there exits 4 and one that cannot be opened exits 1, wherever a file is named", async () => {
  await withStore(async (ws) => {
    await Deno.symlink("loop.json", join(ws.path, "loop.json")); // opening it fails with ELOOP
    const runs: [string[], string][] = [
      [["verify", "FILE"], "verify FILE"],
      [["import", "FILE"], "import FILE"],
      [["create", "--context", "FILE"], "create --context FILE"],
      [["key", "import", "--lean-ctx", "FILE"], "key import --lean-ctx FILE"],
    ];
    for (const [args, what] of runs) {
      const missing = await ws.run(args.map((a) => a === "FILE" ? "missing.json" : a));
      expectCode(missing, 4, `${what}: missing`);
      assert(missing.stderr.includes('No file at "'), missing.stderr);
      const unopenable = await ws.run(args.map((a) => a === "FILE" ? "loop.json" : a));
      expectCode(unopenable, 1, `${what}: ELOOP`);
      assert(
        unopenable.stderr.includes("Cannot open") && unopenable.stderr.includes("ELOOP"),
        unopenable.stderr,
      );
    }
  });
});

Deno.test("a private key given where a public key belongs is refused without printing any of it", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const published = await ws.run(["publish", "HEAD", "--json"]);
    expectCode(published, 0, "publish");
    const file = published.json().path as string;
    const pem = await Deno.readTextFile(join(ws.configDir, "identity.pem"));
    const body = pem.split("\n").filter((line) => line !== "" && !line.startsWith("-----"));
    assert(body.length > 0 && body.every((line) => line.length >= 16), pem);
    for (
      const args of [
        ["verify", file, "--trust", join(ws.configDir, "identity.pem")],
        ["key", "trust", join(ws.configDir, "identity.pem"), "--name", "me"],
        ["verify", file, "--trust", join(ws.configDir, "identity.pem"), "--json"],
      ]
    ) {
      const result = await ws.run(args);
      assert(result.code !== 0, `${args.join(" ")} exited 0`);
      for (const line of body) {
        assert(
          !result.stderr.includes(line) && !result.stdout.includes(line),
          "key material printed",
        );
        assert(!result.stderr.includes(line.slice(0, 16)), "part of the key printed");
      }
      assert(result.stderr.includes("PRIVATE KEY"), result.stderr); // says what it was given
    }
  });
});

Deno.test("a refused restore prints each conflict on its own line, and the next create after a restore records nothing new", async () => {
  await withStore(async (ws) => {
    const first = (await ws.run(["create", "-m", "one", "--json"])).json().id as string;
    await Deno.writeTextFile(join(ws.path, "a.txt"), "ALPHA 2\n");
    await Deno.writeTextFile(join(ws.path, "b.md"), "# BRAVO 2\n");
    expectCode(await ws.run(["create", "-m", "two"]), 0, "create two");
    // Both files edited again on disk since the baseline: two conflicts.
    await Deno.writeTextFile(join(ws.path, "a.txt"), "mine\n");
    await Deno.writeTextFile(join(ws.path, "b.md"), "mine too\n");
    const refused = await ws.run(["restore", first]);
    expectCode(refused, 5, "restore with conflicts");
    const lines = refused.stderr.split("\n").filter((l) => l.startsWith("ctxsnap: CONFLICT "));
    assertEquals(lines.length, 2, refused.stderr);
    assert(!refused.stderr.includes("\\n"), refused.stderr);

    expectCode(await ws.run(["restore", first, "--force"]), 0, "restore --force");
    const after = await ws.run(["create", "-m", "after the restore", "--json"]);
    expectCode(after, 0, "create after restore");
    assertEquals(after.json().created, false, "the restore's own snapshot already records this");
  });
});
