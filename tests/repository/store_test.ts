/**
 * Library-level tests of the store, tree manifests, snapshot bodies and
 * envelopes: real SQLite files and real object files in temporary
 * directories, tampered the way an attacker with file access could.
 *
 * @module
 */
import { startOperation } from "../../lib/repository/operations.ts";
import { updateSessionState } from "../../lib/history/session_state.ts";
import { forkBranch } from "../../lib/history/branch.ts";
import { switchTo } from "../../lib/workspace/move/switch.ts";
import { forgetSnapshots } from "../../lib/history/forget.ts";
import { deflateRawSync as zlibDeflateRaw } from "node:zlib";
import { deflateRawSync } from "../../lib/runtime.ts";
import { readObjectBytes, writeObjectBytes } from "../_objects.ts";
import { prng } from "../_util.ts";
import { type PoolOutcome, ZlibPool } from "../../lib/repository/zlib_pool.ts";
import {
  COMPRESS_MIN_BYTES,
  DEFLATE_OPTIONS,
  packPays,
  TREE_DEFLATE_OPTIONS,
} from "../../lib/repository/compression.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import { materialize } from "../../lib/workspace/move/materialize.ts";
import { FileWrites, totalBytes } from "../../lib/workspace/file_writes.ts";
import { SafeWriter } from "../../lib/workspace/io/safe_write.ts";
import { existsSync } from "node:fs";
import {
  checkSchema,
  CURRENT_SCHEMA_DIGEST,
  expectedSchemaDigest,
} from "../../lib/repository/trust.ts";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { canonicalBytes } from "../../lib/encoding/canonical_json.ts";
import {
  CanonicalJsonError,
  ConflictError,
  CtxsnapError,
  IntegrityError,
  NotFoundError,
  PathError,
} from "../../lib/errors.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import {
  emptyContext,
  emptyCursors,
  emptyFacets,
  MAX_BODY_BYTES,
  SNAPSHOT_SCHEMA,
  type SnapshotBody,
  validateBody,
} from "../../lib/format/body.ts";
import {
  checkEnvelope,
  type Envelope,
  parseEnvelope,
  signBody,
  type Signer,
  snapshotId,
} from "../../lib/format/envelope.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { INLINE_BLOB_MAX, Store } from "../../lib/repository/store.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "../../lib/repository/schema.ts";
import { FORMATS } from "../../lib/version.ts";
import { type TreeManifest, validateTree } from "../../lib/format/tree.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function withStore(fn: (store: Store, dir: string) => void | Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-store-test-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await fn(store, dir);
  } finally {
    store.close();
    await new Deno.Command("chmod", { args: ["-R", "u+rwX", dir] }).output();
    await Deno.remove(dir, { recursive: true });
  }
}

async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

function body(overrides: Record<string, unknown> = {}): SnapshotBody {
  return {
    schema: SNAPSHOT_SCHEMA,
    created_at: "2026-01-01T00:00:00.000Z",
    parent: null,
    session: "main",
    branch: "main",
    reason: "test",
    source: null,
    git: null,
    workspace: null,
    context: emptyContext(),
    cursors: emptyCursors(),
    facets: emptyFacets(),
    tool: { name: "ctxsnap", version: "0.1.0" },
    ...overrides,
  } as SnapshotBody;
}

const BLOB = sha256Hex("x");

function file(path: string): Record<string, unknown> {
  return { path, type: "file", blob: BLOB, size: 1, mode: 0o644 };
}

function manifest(entries: unknown[], extra: Record<string, unknown> = {}): unknown {
  return { version: 1, entries, skipped: [], ...extra };
}

// ---------------------------------------------------------------------------
// tree manifests

Deno.test("validateTree accepts a well-formed manifest and returns it unchanged", () => {
  const tree = manifest([
    file("a.txt"),
    file("b/c.txt"),
    { path: "b/link", type: "symlink", target: "../a.txt" },
  ], { skipped: [{ path: ".env", reason: "secret" }] });
  assertEquals(validateTree(tree), tree);
});

for (
  const [what, path] of [
    ["a '..' segment", "../etc/passwd"],
    ["a '..' segment in the middle", "a/../b"],
    ["an absolute path", "/etc/passwd"],
    ["a '.' segment", "./a"],
    ["an empty segment", "a//b"],
    ["a trailing slash", "a/"],
    ["a backslash", "a\\b"],
    ["a NUL byte", "a\0b"],
    ["an empty path", ""],
  ] as const
) {
  Deno.test(`validateTree refuses an entry path with ${what}`, () => {
    assertThrows(() => validateTree(manifest([file(path)])), PathError);
    assertThrows(
      () => validateTree(manifest([{ path, type: "symlink", target: "x" }])),
      PathError,
    );
  });
}

Deno.test("validateTree refuses an entry below another entry's path (a and a/x)", () => {
  assertThrows(() => validateTree(manifest([file("a"), file("a/x")])), PathError, "below");
  assertThrows(
    () =>
      validateTree(
        manifest([{ path: "a", type: "symlink", target: "/tmp" }, file("a-b"), file("a/x")]),
      ),
    PathError,
    "below",
  );
  // "a" and "a.b" / "ab" are siblings, not nested.
  validateTree(manifest([file("a"), file("a.b"), file("ab")]));
});

Deno.test("validateTree refuses duplicate and unsorted entries", () => {
  assertThrows(() => validateTree(manifest([file("a"), file("a")])), PathError, "more than once");
  assertThrows(() => validateTree(manifest([file("b"), file("a")])), PathError, "out of order");
  // Order is by UTF-16 code units: "a.b" (0x2e) sorts before "a/b" (0x2f).
  assertThrows(
    () => validateTree(manifest([file("a/b"), file("a.b")])),
    PathError,
    "out of order",
  );
});

Deno.test("validateTree refuses unknown and missing fields", () => {
  assertThrows(
    () => validateTree(manifest([{ ...file("a"), owner: "root" }])),
    IntegrityError,
    "unknown field",
  );
  assertThrows(
    () => validateTree(manifest([{ path: "l", type: "symlink", target: "x", blob: BLOB }])),
    IntegrityError,
    "unknown field",
  );
  assertThrows(() => validateTree(manifest([], { extra: true })), IntegrityError, "unknown field");
  assertThrows(
    () => validateTree(manifest([], { skipped: [{ path: "x", reason: "secret", why: 1 }] })),
    IntegrityError,
    "unknown field",
  );
  const { mode: _mode, ...noMode } = file("a");
  assertThrows(() => validateTree(manifest([noMode])), IntegrityError, "lacks field");
  assertThrows(() => validateTree({ version: 1, entries: [] }), IntegrityError, "lacks field");
});

Deno.test("validateTree refuses a wrong version, bad blob ids, sizes, modes and entry types", () => {
  assertThrows(() => validateTree(manifest([], { version: 2 })), IntegrityError, "version");
  assertThrows(() => validateTree(manifest([], { version: "1" })), IntegrityError, "version");
  const bad: Record<string, unknown>[] = [
    { ...file("a"), blob: BLOB.toUpperCase() },
    { ...file("a"), blob: BLOB.slice(1) },
    { ...file("a"), size: -1 },
    { ...file("a"), size: 1.5 },
    { ...file("a"), mode: 0o10000 },
    { ...file("a"), type: "dir" },
    { path: "l", type: "symlink", target: "" },
  ];
  for (const entry of bad) {
    assertThrows(() => validateTree(manifest([entry])), IntegrityError);
  }
});

// ---------------------------------------------------------------------------
// objects

Deno.test("Store.getTree detects a flipped byte of a stored manifest", async () => {
  await withStore((store) => {
    const tree = validateTree(manifest([file("a.txt"), file("b.txt")])) as TreeManifest;
    const id = store.putTree(tree);
    assertEquals(store.getTree(id), tree);
    const bytes = readObjectBytes(store.db, id);
    const text = decoder.decode(bytes);
    // Change one letter of a path: the bytes still parse as a valid manifest.
    const flipped = bytes.slice();
    const at = text.indexOf('"a.txt"') + 1;
    flipped[at] = "c".charCodeAt(0);
    writeObjectBytes(store.db, id, flipped);
    assertThrows(() => store.getTree(id), IntegrityError, "corrupt");
  });
});

Deno.test("Store.readBlob detects a flipped byte of an inline blob", async () => {
  await withStore((store) => {
    const data = encoder.encode("hello, inline world\n");
    const id = store.putBlob(data);
    assertEquals(id, sha256Hex(data));
    assertEquals(store.readBlob(id), data);
    const flipped = data.slice();
    flipped[3]! ^= 0x20;
    store.db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(flipped, id);
    assertThrows(() => store.readBlob(id), IntegrityError, "corrupt");
    assertEquals(store.checkBlob(id), false);
  });
});

Deno.test("Store.readBlob detects a flipped byte of a file-backed blob", async () => {
  await withStore(async (store) => {
    const data = new Uint8Array(INLINE_BLOB_MAX + 10);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    // Stores written before chunking (FORMAT.md 8.6) keep large blobs as files.
    const id = createHash("sha256").update(data).digest("hex");
    await Deno.mkdir(join(store.dir, "objects", id.slice(0, 2)), { recursive: true });
    await Deno.writeFile(store.objectPath(id), data, { mode: 0o400 });
    store.db.prepare(
      "INSERT INTO objects (id, kind, size, encoding, data, created_at) VALUES (?, 'blob', ?, 'file', NULL, 0)",
    ).run(id, data.byteLength);
    const row = store.db.prepare("SELECT encoding, data FROM objects WHERE id = ?").get(id) as {
      encoding: string;
      data: Uint8Array | null;
    };
    assertEquals(row.encoding, "file");
    assertEquals(row.data, null);
    const path = store.objectPath(id);
    assertEquals((await Deno.stat(path)).mode! & 0o777, 0o400);
    assertEquals(store.readBlob(id), data);

    await Deno.chmod(path, 0o600);
    const flipped = data.slice();
    flipped[INLINE_BLOB_MAX]! ^= 0x01;
    await Deno.writeFile(path, flipped);
    assertThrows(() => store.readBlob(id), IntegrityError, "corrupt");
    assertEquals(store.checkBlob(id), false);

    // A truncated or missing object file is also an integrity failure.
    await Deno.writeFile(path, data.subarray(0, data.length - 1));
    assertThrows(() => store.readBlob(id), IntegrityError);
    await Deno.remove(path);
    assertThrows(() => store.readBlob(id), IntegrityError, "missing");
  });
});

Deno.test("Store refuses to read as a tree a blob whose bytes are not one or are not stored inline, and an unknown id", async () => {
  await withStore((store) => {
    const blob = store.putBlob(encoder.encode("data"));
    assertThrows(() => store.getTree(blob), IntegrityError, "expected a JSON value");
    // Bytes not stored inline are read only as the kind they were stored as.
    const large = store.putBlob(new Uint8Array(INLINE_BLOB_MAX + 10).fill(0x7b));
    assertThrows(() => store.getTree(large), IntegrityError, "is a blob, not a tree");
    assertThrows(() => store.readBlob(sha256Hex("absent")), NotFoundError);
    assertThrows(() => store.readBlob("../../etc/passwd"), IntegrityError);
  });
});

Deno.test("Store reads the same inline bytes as a blob and as a tree, whichever was stored first", async () => {
  await withStore((store) => {
    const blob = "ab".repeat(32);
    const tree = encoder.encode(
      `{"entries":[{"blob":"${blob}","mode":420,"name":"a.txt","size":3,"type":"file"}],"skipped":[],"version":2}`,
    );
    // A file holding a tree object's bytes, stored before the tree.
    const id = store.putBlob(tree);
    store.putTreeBytes(id, tree);
    assertEquals(store.getTree(id).entries.map((e) => e.path), ["a.txt"]);
    assertEquals(store.readBlob(id), tree);
    // A tree stored before a file with its bytes.
    const other = encoder.encode(new TextDecoder().decode(tree).replace("a.txt", "b.txt"));
    const treeId = sha256Hex(other);
    store.putTreeBytes(treeId, other);
    assertEquals(store.putBlob(other), treeId);
    assertEquals(store.readBlob(treeId), other);
    assertEquals(store.getTree(treeId).entries.map((e) => e.path), ["b.txt"]);
  });
});

// ---------------------------------------------------------------------------
// snapshot rows

Deno.test("snapshot rows cannot be UPDATEd by SQL", async () => {
  await withStore(async (store) => {
    const { id } = await createSnapshot(store, await makeSigner(), { workspace: false });
    for (
      const sql of [
        "UPDATE snapshots SET branch = 'other' WHERE id = ?",
        "UPDATE snapshots SET envelope = x'00' WHERE id = ?",
        "UPDATE snapshots SET parent = id WHERE id = ?",
      ]
    ) {
      assertThrows(() => store.db.prepare(sql).run(id), Error, "immutable");
    }
    const row = store.db.prepare("SELECT branch FROM snapshots WHERE id = ?").get(id) as {
      branch: string;
    };
    assertEquals(row.branch, "main");
  });
});

Deno.test("snapshot rows cannot be DELETEd without a forget operation in status 'applying'", async () => {
  await withStore(async (store) => {
    const { id } = await createSnapshot(store, await makeSigner(), { workspace: false });
    const count = () =>
      (store.db.prepare("SELECT count(*) AS n FROM snapshots").get() as { n: number }).n;
    const del = () => store.db.prepare("DELETE FROM snapshots WHERE id = ?").run(id);
    assertThrows(del, Error, "forget");
    const insertOp = store.db.prepare(
      "INSERT INTO operations (id, kind, status, plan, created_at) VALUES (?, ?, ?, '{}', 0)",
    );
    insertOp.run("op-planned", "forget", "planned");
    insertOp.run("op-restore", "restore", "applying");
    assertThrows(del, Error, "forget");
    assertEquals(count(), 1);

    store.db.prepare("UPDATE operations SET status = 'applying' WHERE id = 'op-planned'").run();
    del();
    assertEquals(count(), 0);
  });
});

// ---------------------------------------------------------------------------
// bodies

Deno.test("validateBody accepts a minimal body", () => {
  assertEquals(validateBody(body()), body());
});

Deno.test("validateBody refuses unknown fields at every level", () => {
  const cases: unknown[] = [
    { ...body(), extra: 1 },
    body({ context: { ...emptyContext(), mood: "good" } }),
    body({ cursors: { ...emptyCursors(), page: 1 } }),
    body({ facets: { ...emptyFacets(), colour: {} } }),
    body({ git: { commit: null, branch: null, dirty: false, remote: "x" } }),
    body({ source: { kind: "cell", id: "1", at: 2 } }),
    body({ tool: { name: "ctxsnap", version: "1", build: "x" } }),
    body({
      workspace: { tree: BLOB, files: 0, bytes: 0, skipped: 0, hidden: 0 },
    }),
  ];
  for (const value of cases) assertThrows(() => validateBody(value), IntegrityError, "unknown");
  const { tool: _tool, ...noTool } = body();
  assertThrows(() => validateBody(noTool), IntegrityError, "lacks field");
  assertThrows(() => validateBody(body({ schema: "ctxsnap.snapshot/v3" })), IntegrityError);
  // v2 is known, but only for a body with slices (docs/FORMAT.md §3.1).
  assertThrows(() => validateBody(body({ schema: "ctxsnap.snapshot/v2" })), IntegrityError);
});

Deno.test("validateBody refuses floats, NaN and out-of-range numbers", () => {
  const cases: unknown[] = [
    body({ context: { ...emptyContext(), progress_pct: 12.5 } }),
    body({ context: { ...emptyContext(), progress_pct: 101 } }),
    body({ context: { ...emptyContext(), progress_pct: NaN } }),
    body({ cursors: { ...emptyCursors(), cell: -1 } }),
    body({ cursors: { ...emptyCursors(), auto_event: 2 ** 53 } }),
    body({ context: { ...emptyContext(), extensions: { harness: { ratio: 0.5 } } } }),
    body({ facets: { ...emptyFacets(), metadata: { score: 1.25 } } }),
    body({ facets: { ...emptyFacets(), artifact_versions: [1, 2.5] } }),
  ];
  for (const value of cases) assertThrows(() => validateBody(value), IntegrityError);
  assertThrows(
    () => validateBody(body({ facets: { ...emptyFacets(), metadata: { x: Infinity } } })),
    CanonicalJsonError,
  );
});

Deno.test("validateBody refuses bad ids, timestamps and commits", () => {
  const cases: unknown[] = [
    body({ parent: "abcd" }),
    body({ parent: BLOB.toUpperCase() }),
    body({ parent: BLOB.slice(0, 63) + "g" }),
    body({ workspace: { tree: "not-an-id", files: 0, bytes: 0, skipped: 0 } }),
    body({ git: { commit: "HEAD", branch: "main", dirty: false } }),
    body({ git: { commit: BLOB.slice(0, 39), branch: "main", dirty: false } }),
    body({ git: { commit: null, branch: "main", dirty: "no" } }),
    body({ created_at: "2026-01-01T00:00:00Z" }),
    body({ created_at: "2026-13-01T00:00:00.000Z" }),
    body({ created_at: "yesterday" }),
    body({ source: { kind: "Cell", id: "1" } }),
    body({ source: { kind: "cell", id: "" } }),
  ];
  for (const value of cases) assertThrows(() => validateBody(value), IntegrityError);
});

Deno.test("validateBody refuses invalid session and branch names", () => {
  for (
    const name of ["", "../x", "a/../b", "a b", "/main", "main/", ".hidden", "a/b/c/d/e", "x."]
  ) {
    assertThrows(() => validateBody(body({ session: name })), IntegrityError, "valid name");
    assertThrows(() => validateBody(body({ branch: name })), IntegrityError, "valid name");
  }
  validateBody(body({ session: "agent-1", branch: "imported/ab12cd" }));
});

Deno.test("validateBody refuses oversize text, lists and bodies", () => {
  const cases: unknown[] = [
    body({ reason: "r".repeat(1025) }),
    body({ context: { ...emptyContext(), task: "t".repeat(16 * 1024 + 1) } }),
    body({ context: { ...emptyContext(), decisions: ["d".repeat(16 * 1024 + 1)] } }),
    body({
      context: {
        ...emptyContext(),
        findings: Array.from({ length: 10_001 }, (_, i) => `f${i}`),
      },
    }),
    body({ context: { ...emptyContext(), decisions: ["same", "same"] } }),
    body({
      context: { ...emptyContext(), extensions: { big: "x".repeat(MAX_BODY_BYTES + 1) } },
    }),
  ];
  for (const value of cases) assertThrows(() => validateBody(value), IntegrityError);
  // Just under the cap is fine.
  validateBody(body({ context: { ...emptyContext(), extensions: { big: "x".repeat(1000) } } }));
});

// ---------------------------------------------------------------------------
// envelopes

async function signedEnvelope(reason = "test"): Promise<{ envelope: Envelope; signer: Signer }> {
  const signer = await makeSigner();
  return { envelope: await signBody(body({ reason }), signer), signer };
}

Deno.test("parseEnvelope round-trips a signed envelope", async () => {
  const { envelope } = await signedEnvelope();
  assertEquals(parseEnvelope(canonicalBytes(envelope)), envelope);
  assertEquals(envelope.id, snapshotId(envelope.body));
  const check = await checkEnvelope(parseEnvelope(canonicalBytes(envelope)));
  assertEquals(check, { computedId: envelope.id, idMatches: true, signatureValid: true });
});

Deno.test("parseEnvelope refuses extra fields, duplicate keys and a missing signature", async () => {
  const { envelope } = await signedEnvelope();
  const cases: unknown[] = [
    { ...envelope, note: "hi" },
    { ...envelope, signature: { ...envelope.signature, comment: "x" } },
    { ...envelope, body: { ...envelope.body, extra: true } },
    { id: envelope.id, body: envelope.body },
    { ...envelope, signature: { ...envelope.signature, alg: "rsa" } },
    { ...envelope, signature: { ...envelope.signature, value: envelope.signature.value + "00" } },
    { ...envelope, id: envelope.id.toUpperCase() },
  ];
  for (const value of cases) {
    assertThrows(() => parseEnvelope(JSON.stringify(value)), IntegrityError);
  }
  const text = decoder.decode(canonicalBytes(envelope));
  const duplicated = text.replace('{"body":', `{"id":"${envelope.id}","body":`);
  assertThrows(() => parseEnvelope(duplicated), CanonicalJsonError);
});

Deno.test("parseEnvelope refuses a key_id that does not belong to the public key", async () => {
  const { envelope } = await signedEnvelope();
  const other = await makeSigner();
  assert(other.keyId !== envelope.signature.key_id);
  const wrongKeyId = { ...envelope, signature: { ...envelope.signature, key_id: other.keyId } };
  assertThrows(() => parseEnvelope(JSON.stringify(wrongKeyId)), IntegrityError, "key_id");
  // Swapping in another public key while keeping the key id is refused as well.
  const wrongKey = {
    ...envelope,
    signature: { ...envelope.signature, public_key: other.publicKeyHex },
  };
  assertThrows(() => parseEnvelope(JSON.stringify(wrongKey)), IntegrityError, "key_id");
});

Deno.test("checkEnvelope catches a body edited after signing", async () => {
  const { envelope } = await signedEnvelope("original reason");
  const edited: Envelope = { ...envelope, body: { ...envelope.body, reason: "edited reason" } };
  const check = await checkEnvelope(edited);
  assertEquals(check.idMatches, false);
  assertEquals(check.computedId, snapshotId(edited.body));
  assertEquals(check.signatureValid, true, "the signature covers the id, which is unchanged");
  // Rewriting the id to match the edited body breaks the signature instead.
  const rehashed: Envelope = { ...edited, id: snapshotId(edited.body) };
  const check2 = await checkEnvelope(rehashed);
  assertEquals(check2.idMatches, true);
  assertEquals(check2.signatureValid, false);
});

Deno.test("checkEnvelope refuses a signature made over another snapshot id", async () => {
  const signer = await makeSigner();
  const a = await signBody(body({ reason: "a" }), signer);
  const b = await signBody(body({ reason: "b" }), signer);
  const grafted: Envelope = { ...a, signature: b.signature };
  const check = await checkEnvelope(grafted);
  assertEquals(check.idMatches, true);
  assertEquals(check.signatureValid, false);
  // And b's id with a's body: the id check catches it.
  const relabelled: Envelope = { ...a, id: b.id, signature: b.signature };
  const check2 = await checkEnvelope(relabelled);
  assertEquals(check2.idMatches, false);
  // A different signer's valid signature over the same id is not a's signature
  // under a's public key.
  const other = await makeSigner();
  const c = await signBody(body({ reason: "a" }), other);
  assertEquals(c.id, a.id);
  const mixed: Envelope = { ...a, signature: { ...a.signature, value: c.signature.value } };
  assertEquals((await checkEnvelope(mixed)).signatureValid, false);
});

// ---------------------------------------------------------------------------
// schema and migrations

Deno.test("a new store has PRAGMA user_version = SCHEMA_VERSION", async () => {
  await withStore((store, dir) => {
    assert(SCHEMA_VERSION >= 1);
    const db = new DatabaseSync(join(dir, ".ctxsnap", "index.db"), { readOnly: true });
    try {
      const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
      assertEquals(row.user_version, SCHEMA_VERSION);
      const mode = db.prepare("PRAGMA journal_mode").get() as { journal_mode: string };
      assertEquals(mode.journal_mode, "wal");
    } finally {
      db.close();
    }
    // Re-initialising and re-opening keep the version and the data.
    const id = store.putBlob(encoder.encode("kept"));
    store.close();
    const again = Store.init(join(dir, ".ctxsnap"), dir);
    try {
      assertEquals(decoder.decode(again.readBlob(id)), "kept");
      const row = again.db.prepare("PRAGMA user_version").get() as { user_version: number };
      assertEquals(row.user_version, SCHEMA_VERSION);
    } finally {
      again.close();
    }
  });
});

Deno.test("a store with a higher user_version than this code knows is refused", async () => {
  await withStore((store, dir) => {
    store.close();
    const file = join(dir, ".ctxsnap", "index.db");
    const db = new DatabaseSync(file);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    for (const readOnly of [false, true]) {
      const error = assertThrows(
        () => Store.open(join(dir, ".ctxsnap"), { readOnly }),
        CtxsnapError,
        "schema version",
      );
      assertEquals(error.code, "failure");
      assert(error.hint?.includes("upgrade"), error.hint);
    }
    const check = new DatabaseSync(file, { readOnly: true });
    try {
      const row = check.prepare("PRAGMA user_version").get() as { user_version: number };
      assertEquals(row.user_version, SCHEMA_VERSION + 1, "the refused store was modified");
    } finally {
      check.close();
    }
  });
});

Deno.test("opening a directory without an index is NoStoreError, not a new store", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-store-test-" });
  try {
    const error = assertThrows(() => Store.open(join(dir, ".ctxsnap")), CtxsnapError);
    assertEquals(error.code, "no_store");
    let exists = true;
    try {
      await Deno.stat(join(dir, ".ctxsnap", "index.db"));
    } catch {
      exists = false;
    }
    assertEquals(exists, false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Store keeps a compressible blob DEFLATE-compressed and reads it back exactly", async () => {
  await withStore((store) => {
    const data = encoder.encode("the same line again\n".repeat(400));
    const id = store.putBlob(data);
    const row = store.db.prepare(
      "SELECT encoding, length(data) AS stored FROM objects WHERE id = ?",
    )
      .get(id) as { encoding: string; stored: number };
    assertEquals(row.encoding, "deflate");
    assert(row.stored < data.byteLength / 4, `stored ${row.stored} of ${data.byteLength} bytes`);
    assertEquals(store.readBlob(id), data);
  });
});

Deno.test("Store.readBlob refuses a compressed blob whose stored bytes are damaged", async () => {
  await withStore((store) => {
    const data = encoder.encode("compress me please\n".repeat(300));
    const id = store.putBlob(data);
    const row = store.db.prepare("SELECT data FROM objects WHERE id = ?").get(id) as {
      data: Uint8Array;
    };
    const damaged = row.data.slice();
    damaged[Math.floor(damaged.length / 2)]! ^= 0xff;
    store.db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(damaged, id);
    assertThrows(() => store.readBlob(id), IntegrityError);
    assertEquals(store.checkBlob(id), false);
  });
});

Deno.test("Store.readBlob refuses compressed bytes that inflate past the recorded size (a bomb)", async () => {
  await withStore((store) => {
    const data = encoder.encode("x".repeat(2000));
    const id = store.putBlob(data);
    // Same id and recorded size, but the stored stream inflates to 50 MB.
    const bomb = new Uint8Array(zlibDeflateRaw(new Uint8Array(50 * 1024 * 1024)));
    store.db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(bomb, id);
    // Refused by the inflate bound itself, not by a later size or hash check of 50 MB.
    assertThrows(() => store.readBlob(id), IntegrityError, "do not inflate");
  });
});

Deno.test("a schema-1 store is migrated to the current schema on open, keeping its objects", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const storeDir = `${dir}/.ctxsnap`;
    await Deno.mkdir(storeDir);
    const old = new DatabaseSync(`${storeDir}/index.db`);
    old.exec(MIGRATIONS[0]!);
    old.exec("PRAGMA user_version = 1");
    const insert = old.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    insert.run("workspace_root", "..");
    insert.run("format", "ctxsnap-store/1");
    const data = encoder.encode("kept across the migration\n");
    old.prepare(
      "INSERT INTO objects (id, kind, size, encoding, data, created_at) VALUES (?, 'blob', ?, 'raw', ?, 0)",
    ).run(sha256Hex(data), data.byteLength, data);
    old.close();

    const store = Store.open(storeDir);
    try {
      const version = store.db.prepare("PRAGMA user_version").get() as { user_version: number };
      assertEquals(version.user_version, SCHEMA_VERSION);
      assertEquals(store.readBlob(sha256Hex(data)), data);
      // The migrated table accepts compressed objects (schema 1 refused them).
      const packed = encoder.encode("compressible line\n".repeat(200));
      const id = store.putBlob(packed);
      assertEquals(store.readBlob(id), packed);
      const tables = store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()
        .map((row) => (row as { name: string }).name);
      assert(tables.includes("forgotten") && tables.includes("gc_pending"), tables.join(","));
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Records a session-only restore of `target` on `session` that never finishes (as if killed). */
function leaveRestoreUnresolved(store: Store, session: string, target: string): void {
  store.transaction("test", () => {
    startOperation(store, {
      kind: "restore",
      session,
      branch: "main",
      target,
      plan: {
        pre_tree: "0".repeat(64),
        writes: [],
        deletes: [],
        workspace: false,
        session: true,
      },
    });
  });
}

Deno.test("an unresolved restore blocks session edits, fork, forget, branch switch and create on its session", async () => {
  await withStore(async (store) => {
    const signer = await makeSigner();
    const first = await createSnapshot(store, signer, { reason: "one", workspace: false });
    await createSnapshot(store, signer, { reason: "two", workspace: false });
    leaveRestoreUnresolved(store, "main", first.id);
    assertThrows(
      () => updateSessionState(store, "main", (s) => ({ ...s, task: "x" })),
      ConflictError,
      "unresolved restore",
    );
    assertThrows(() => forkBranch(store, first.id, "side"), ConflictError, "unresolved restore");
    assertThrows(() => forgetSnapshots(store, [first.id]), ConflictError, "unresolved restore");
    await assertRejects(
      () => switchTo(store, signer, "main", { pointerOnly: true }),
      ConflictError,
      "unresolved restore",
    );
    await assertRejects(
      () => createSnapshot(store, signer, { workspace: false }),
      ConflictError,
      "unresolved restore",
    );
    // Another session is not blocked.
    updateSessionState(store, "other", (s) => ({ ...s, task: "fine" }));
  });
});

Deno.test("validateTree refuses any entry inside a reserved name (.git, .ctxsnap, any case)", () => {
  for (
    const path of [".git/hooks/post-checkout", "sub/.git", ".ctxsnap/tmp/evil", "a/.GIT/config"]
  ) {
    assertThrows(
      () =>
        validateTree({
          version: 1,
          entries: [{ path, type: "symlink", target: "x" }],
          skipped: [],
        }),
      IntegrityError,
      "reserved",
    );
  }
});

Deno.test("forget refuses the target of an unresolved restore", async () => {
  await withStore(async (store) => {
    const signer = await makeSigner();
    const first = await createSnapshot(store, signer, {
      reason: "one",
      workspace: false,
      session: "a",
    });
    await createSnapshot(store, signer, { reason: "two", workspace: false, session: "a" });
    leaveRestoreUnresolved(store, "b", first.id);
    assertThrows(() => forgetSnapshots(store, [first.id]), ConflictError, "unresolved restore");
  });
});

// ---------------------------------------------------------------------------
// compression on a second core

/** The row the store writes for `data` when it compresses on the main thread. */
function inlineRow(data: Uint8Array): { encoding: string; data: Uint8Array } {
  if (data.byteLength < COMPRESS_MIN_BYTES) return { encoding: "raw", data };
  const packed = new Uint8Array(zlibDeflateRaw(data, DEFLATE_OPTIONS));
  return packPays(data.byteLength, packed.byteLength)
    ? { encoding: "deflate", data: packed }
    : { encoding: "raw", data };
}

/** Text that compresses, random bytes that do not, and the sizes at the edges of a slot. */
function mixedBlobs(count: number, seed: number): Uint8Array[] {
  const random = prng(seed);
  const sizes = [COMPRESS_MIN_BYTES, COMPRESS_MIN_BYTES + 1, INLINE_BLOB_MAX, 4096, 70_000];
  return Array.from({ length: count }, (_, i) => {
    const size = sizes[i % sizes.length]!;
    const bytes = new Uint8Array(size);
    if (i % 3 === 0) {
      for (let j = 0; j < size; j++) bytes[j] = Math.floor(random() * 256);
    } else {
      const line = encoder.encode(`line ${i} of blob ${seed}: ${"words ".repeat(i % 7)}\n`);
      for (let j = 0; j < size; j++) bytes[j] = line[j % line.length]!;
    }
    return bytes;
  });
}

/** A new pool whose outcomes are collected by token. */
function startPool<T>(): { pool: ZlibPool<T>; outcomes: Map<T, PoolOutcome> } {
  const outcomes = new Map<T, PoolOutcome>();
  const pool = ZlibPool.start<T>((token, outcome) => outcomes.set(token, outcome));
  assert(pool !== null, "this runtime has Worker, SharedArrayBuffer and two cores");
  return { pool, outcomes };
}

/**
 * Deflates `blobs` through a new pool (once its worker has started, or at
 * once with `waitFirst` false) and checks every outcome is what the store
 * writes when it compresses inline.
 */
function deflateThroughPool(blobs: Uint8Array[], waitFirst: boolean): void {
  const { pool, outcomes } = startPool<number>();
  try {
    if (waitFirst) assert(pool.waitReady(20_000), "the worker started");
    else assertEquals(pool.ready, false); // a worker cannot have loaded its module yet
    blobs.forEach((data, i) => assert(pool.deflate(i, data), `blob ${i} was accepted`));
    if (!waitFirst) {
      assertEquals(outcomes.size, 0); // held back, not compressed here
      assert(pool.waitReady(20_000), "the worker started");
    }
    pool.finish();
    assertEquals(pool.offloaded, blobs.length); // every blob went through the worker
    blobs.forEach((data, i) => {
      const expected = inlineRow(data);
      const want = expected.encoding === "raw"
        ? { kind: "raw" }
        : { kind: "packed", bytes: expected.data };
      assertEquals(outcomes.get(i), want, `blob ${i}`);
    });
  } finally {
    pool.close();
  }
}

Deno.test("ZlibPool deflates on a worker byte for byte as the store does inline", () => {
  deflateThroughPool(mixedBlobs(40, 7), true);
});

Deno.test("ZlibPool holds blobs back while its worker starts and deflates them once it has", () => {
  deflateThroughPool(mixedBlobs(12, 5), false);
});

Deno.test("ZlibPool.finish hands back blobs still waiting for a worker that has not started", () => {
  const blobs = mixedBlobs(12, 3);
  const { pool, outcomes } = startPool<number>();
  try {
    blobs.forEach((data, i) => assert(pool.deflate(i, data)));
    pool.finish(); // does not wait for the worker: the caller compresses what it gets back
    assertEquals(outcomes.size, blobs.length);
    const failed = [...outcomes.values()].filter((o) => o.kind === "failed").length;
    assertEquals(failed + pool.offloaded, blobs.length); // the worker took any rest, once up
    assert(failed > 0, "the worker had not started when finish() ran");
  } finally {
    pool.close();
  }
  pool.finish(); // after close: nothing to do, and no wait
});

Deno.test("ZlibPool inflates and hashes on a worker, and reports damaged input as failed", () => {
  const blobs = mixedBlobs(20, 9);
  const { pool, outcomes } = startPool<string>();
  try {
    assert(pool.waitReady(20_000));
    const packable = blobs.filter((data) => inlineRow(data).encoding === "deflate");
    assert(packable.length > 5 && packable.length < blobs.length);
    packable.forEach((data, i) =>
      assert(pool.inflate(`inflate ${i}`, inlineRow(data).data, data.byteLength))
    );
    blobs.forEach((data, i) => assert(pool.hash(`hash ${i}`, data)));
    assert(pool.inflate("bomb", inlineRow(packable[0]!).data, packable[0]!.byteLength - 1));
    assert(pool.inflate("garbage", new Uint8Array(2000).fill(0xff), 4000));
    pool.finish();
    const plain = (data: Uint8Array) => ({ kind: "plain", bytes: data, sha256: sha256Hex(data) });
    packable.forEach((data, i) => assertEquals(outcomes.get(`inflate ${i}`), plain(data)));
    blobs.forEach((data, i) => assertEquals(outcomes.get(`hash ${i}`), plain(data)));
    assertEquals(outcomes.get("bomb"), { kind: "failed" });
    assertEquals(outcomes.get("garbage"), { kind: "failed" });
  } finally {
    pool.close();
  }
});

Deno.test("ZlibPool declines blobs too small or too large for a slot, and everything after close", () => {
  const pool = ZlibPool.start<string>(() => {});
  assert(pool !== null);
  try {
    assert(pool.waitReady(20_000));
    const small = new Uint8Array(COMPRESS_MIN_BYTES - 1);
    const large = new Uint8Array(INLINE_BLOB_MAX + 1);
    assertEquals(pool.deflate("s", small), false);
    assertEquals(pool.deflate("l", large), false);
    assertEquals(pool.inflate("l", small, INLINE_BLOB_MAX + 1), false);
    assertEquals(pool.hash("l", large), false);
  } finally {
    pool.close();
  }
  assertEquals(pool.deflate("c", new Uint8Array(COMPRESS_MIN_BYTES)), false);
  assertEquals(pool.offloaded, 0);
});

Deno.test("a capture large enough to compress on a worker stores the same rows as inline compression", async () => {
  await withStore((store, dir) => {
    const blobs = mixedBlobs(60, 11); // about 13 MiB: well past the point the worker starts
    blobs.forEach((data, i) => Deno.writeFileSync(join(dir, `f${i}.bin`), data));
    Deno.writeFileSync(join(dir, "copy.bin"), blobs[1]!); // the same content twice
    const { tree, stats } = store.transaction("capture", () => captureWorkspace(store));
    assertEquals(stats.files, 61);
    const rows = store.db.prepare("SELECT id, encoding, data FROM objects WHERE kind = 'blob'")
      .all() as { id: string; encoding: string; data: Uint8Array }[];
    assertEquals(rows.length, new Set(blobs.map((b) => sha256Hex(b))).size);
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const data of blobs) {
      const id = sha256Hex(data);
      const row = byId.get(id)!;
      const expected = inlineRow(data);
      assertEquals(row.encoding, expected.encoding, `blob ${id}`);
      assertEquals(new Uint8Array(row.data), expected.data, `blob ${id}`);
      assertEquals(store.readBlob(id), data);
    }
    for (const entry of tree.entries) assert(byId.has((entry as { blob: string }).blob));
  });
});

Deno.test("materialize of a tree large enough for the worker writes every file byte for byte", async () => {
  await withStore((store, dir) => {
    const blobs = mixedBlobs(60, 13);
    const ids = blobs.map((data) => store.putBlob(data));
    const entries = blobs.map((data, i) => ({
      path: `d${i % 4}/f${String(i).padStart(2, "0")}`,
      type: "file" as const,
      blob: ids[i]!,
      size: data.byteLength,
      mode: i % 2 ? 0o600 : 0o644,
    })).sort((a, b) => a.path < b.path ? -1 : 1);
    const treeId = store.putTree(validateTree({ version: 1, entries, skipped: [] }));
    const out = join(dir, "out");
    const result = materialize(store, treeId, out);
    assertEquals(result.written.length, 60);
    for (const entry of entries) {
      const index = ids.indexOf(entry.blob);
      assertEquals(Deno.readFileSync(join(out, entry.path)), blobs[index]!, entry.path);
      assertEquals(Deno.statSync(join(out, entry.path)).mode! & 0o777, entry.mode, entry.path);
    }
  });
});

Deno.test("FileWrites refuses a damaged inline blob the worker inflated, writing no file for it", async () => {
  await withStore((store, dir) => {
    const blobs = mixedBlobs(30, 17);
    const entries = blobs.map((data, i) => ({
      path: `f${String(i).padStart(2, "0")}`,
      type: "file" as const,
      blob: store.putBlob(data),
      size: data.byteLength,
      mode: 0o644,
    }));
    // Damage the last compressed blob so that it still inflates, to other bytes.
    const victim = entries.findLast((_e, i) => inlineRow(blobs[i]!).encoding === "deflate")!;
    const bytes = readObjectBytes(store.db, victim.blob).slice();
    bytes[bytes.length >> 1]! ^= 0x01;
    writeObjectBytes(store.db, victim.blob, bytes);
    const out = join(dir, "out");
    Deno.mkdirSync(out);
    const files = new FileWrites(store, new SafeWriter(out), totalBytes(entries), 20_000);
    try {
      assertThrows(
        () => {
          for (const entry of entries) files.write(entry);
          files.finish();
        },
        IntegrityError,
        "do not hash to its id",
      );
      assert(files.offloaded > 0, "the worker inflated blobs");
    } finally {
      files.close();
    }
    assert(!existsSync(join(out, victim.path)), "the damaged file was not written");
    const before = entries.slice(0, entries.indexOf(victim));
    for (const entry of before) {
      assertEquals(Deno.readFileSync(join(out, entry.path)), blobs[entries.indexOf(entry)]!);
    }
  });
});

Deno.test("a tree is stored DEFLATE-compressed at level 6 and blobs at level 1", async () => {
  await withStore((store) => {
    const text = encoder.encode("a line of a blob that repeats\n".repeat(300));
    const blob = store.putBlob(text);
    const entries = Array.from({ length: 200 }, (_, i) => ({
      path: `file-${String(i).padStart(3, "0")}.txt`,
      type: "file" as const,
      blob,
      size: text.byteLength,
      mode: 0o644,
    }));
    const tree = validateTree({ version: 1, entries, skipped: [] });
    const id = store.putTree(tree);
    const row = (id: string) =>
      store.db.prepare("SELECT encoding, data FROM objects WHERE id = ?").get(id) as {
        encoding: string;
        data: Uint8Array;
      };
    assertEquals(row(id).encoding, "deflate");
    assertEquals(
      new Uint8Array(row(id).data),
      new Uint8Array(zlibDeflateRaw(store.getTreeObject(id).bytes, TREE_DEFLATE_OPTIONS)),
    );
    assertEquals(
      new Uint8Array(row(blob).data),
      new Uint8Array(zlibDeflateRaw(text, DEFLATE_OPTIONS)),
    );
    assertEquals(store.getTree(id), tree);
  });
});

Deno.test("ZlibPool does not start a worker the process may not load (read permission), and says nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-pool-perm-" });
  try {
    const script = join(dir, "probe.ts");
    Deno.writeTextFileSync(
      script,
      `import { ZlibPool } from ${
        JSON.stringify(import.meta.resolve("../../lib/repository/zlib_pool.ts"))
      };
      const pool = ZlibPool.start(() => {});
      console.log(pool === null ? "none" : "started");
      pool?.close();`,
    );
    const run = (read: string) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", `--allow-read=${read}`, "--no-lock", script],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(30_000),
      }).output();
    const narrow = await run(dir);
    assertEquals(new TextDecoder().decode(narrow.stdout).trim(), "none");
    assertEquals(new TextDecoder().decode(narrow.stderr), "");
    const wide = await run("/");
    assertEquals(new TextDecoder().decode(wide.stdout).trim(), "started");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a schema-4 store opened read-only (never migrated) simply has no agent sessions; a write open migrates it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const storeDir = `${dir}/.ctxsnap`;
    await Deno.mkdir(storeDir);
    const old = new DatabaseSync(`${storeDir}/index.db`);
    for (const migration of MIGRATIONS.slice(0, 4)) old.exec(migration);
    old.exec("PRAGMA user_version = 4");
    const insert = old.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    insert.run("workspace_root", "..");
    insert.run("format", "ctxsnap-store/1");
    old.close();
    const { agentSessionsByPrefix, hasAgentTables, listAgentSessions } = await import(
      "../../lib/repository/agent_rows.ts"
    );
    const reader = Store.open(storeDir, { readOnly: true });
    try {
      assertEquals(hasAgentTables(reader), false);
      assertEquals(listAgentSessions(reader, 10), []);
      assertEquals(agentSessionsByPrefix(reader, "abcd", 2), []);
    } finally {
      reader.close();
    }
    const writer = Store.open(storeDir);
    try {
      assertEquals(hasAgentTables(writer), true);
      const version = writer.db.prepare("PRAGMA user_version").get() as { user_version: number };
      assertEquals(version.user_version, SCHEMA_VERSION);
    } finally {
      writer.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("migration 7 clears the idempotency key an older ctxsnap left on imported rows, so the user's own create --source records", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const storeDir = `${dir}/.ctxsnap`;
    await Deno.mkdir(storeDir);
    await Deno.writeTextFile(`${dir}/a.txt`, "mine\n");
    const old = new DatabaseSync(`${storeDir}/index.db`);
    for (const migration of MIGRATIONS.slice(0, 4)) old.exec(migration);
    old.exec("PRAGMA user_version = 4");
    const insert = old.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    insert.run("workspace_root", "..");
    insert.run("format", "ctxsnap-store/1");
    // What an older import left: someone else's snapshot holding the key "turn:7" of session main.
    old.prepare(
      `INSERT INTO snapshots (id, session, branch, parent, created_at, tree, source_kind, source_id,
         key_id, imported, envelope)
       VALUES (?, 'main', 'main', NULL, '2026-01-01T00:00:00.000Z', NULL, 'turn', '7', ?, 1, ?)`,
    ).run("f".repeat(64), "0123456789abcdef", new Uint8Array([0x7b, 0x7d]));
    old.close();
    const store = Store.open(storeDir);
    try {
      const row = store.db.prepare(
        "SELECT source_kind, source_id FROM snapshots WHERE id = ?",
      ).get("f".repeat(64));
      assertEquals({ ...row }, { source_kind: null, source_id: null });
      const made = await createSnapshot(store, await makeSigner(), {
        reason: "mine",
        source: { kind: "turn", id: "7" },
      });
      assertEquals(made.created, true, "the imported row answered the user's own source");
      assertEquals(store.db.prepare("PRAGMA user_version").get(), { user_version: SCHEMA_VERSION });
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--version names the schema version this build writes", () => {
  assertEquals(FORMATS.store, `ctxsnap-store/1 (schema ${SCHEMA_VERSION})`);
});

Deno.test("CURRENT_SCHEMA_DIGEST is the digest of the schema every migration creates, and a current store opens by it", async () => {
  assertEquals(CURRENT_SCHEMA_DIGEST, expectedSchemaDigest());
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-schema-digest-" });
  try {
    Store.init(join(dir, ".ctxsnap"), dir).close();
    const db = new DatabaseSync(join(dir, ".ctxsnap", "index.db"));
    try {
      // What checkSchema compares a current store's sqlite_master by.
      checkSchema(db, SCHEMA_VERSION, dir);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Store.widenPageCache() widens SQLite's page cache for the write transaction under way only", async () => {
  await withStore((store) => {
    const cacheSize = () =>
      (store.stmt("PRAGMA cache_size").get() as { cache_size: number }).cache_size;
    const before = cacheSize();
    store.widenPageCache(32 * 1024); // outside a transaction: nothing to keep
    assertEquals(cacheSize(), before);
    store.transaction("test", () => {
      store.widenPageCache(32 * 1024);
      assertEquals(cacheSize(), -32 * 1024);
      store.putBlob(encoder.encode("kept after the commit\n"));
    });
    assertEquals(cacheSize(), before);
    assertThrows(() =>
      store.transaction("test", () => {
        store.widenPageCache(8 * 1024);
        throw new Error("rolled back");
      })
    );
    assertEquals(cacheSize(), before);
  });
});

Deno.test("deflateRawSync() makes raw DEFLATE byte-identical to node:zlib's at the store's levels", () => {
  for (const data of mixedBlobs(10, 7)) {
    for (const level of [DEFLATE_OPTIONS.level, TREE_DEFLATE_OPTIONS.level]) {
      assertEquals(deflateRawSync(data, level), new Uint8Array(zlibDeflateRaw(data, { level })));
    }
  }
});
