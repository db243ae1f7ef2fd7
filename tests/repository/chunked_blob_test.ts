/**
 * Tests of chunked blobs (docs/FORMAT.md 8.2, 8.6): large files are stored
 * as content-defined chunks, every reader gets the whole file back verified,
 * a one-byte change stores one or two chunks, gc keeps exactly the chunks of
 * live blobs, hostile chunk lists are refused, and file-backed blobs of
 * older stores still read.
 *
 * @module
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { IntegrityError } from "../../lib/errors.ts";
import { Store } from "../../lib/repository/store.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "../../lib/repository/schema.ts";
import { verifyAll } from "../../lib/history/verify.ts";
import { createHash } from "node:crypto";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";

function noise(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

function rows(ws: TempWorkspace): Map<string, { encoding: string; size: number }> {
  const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"), { readOnly: true });
  try {
    const all = db.prepare("SELECT id, encoding, size FROM objects WHERE kind = 'blob'")
      .all() as { id: string; encoding: string; size: number }[];
    return new Map(all.map((r) => [r.id, { encoding: r.encoding, size: r.size }]));
  } finally {
    db.close();
  }
}

// deno-lint-ignore no-explicit-any
async function runJson(ws: TempWorkspace, args: string[]): Promise<any> {
  const result = await ws.run([...args, "--json"]);
  expectCode(result, 0, args.join(" "));
  return result.json();
}

Deno.test("a large file is stored as chunks and comes back byte for byte through materialize and verify", async () => {
  await withStore(async (ws) => {
    const big = noise(5_000_000, 1);
    await Deno.writeFile(join(ws.path, "big.bin"), big);
    const id = (await runJson(ws, ["create", "-m", "big"])).id;
    const chunked = [...rows(ws).values()].filter((r) => r.encoding === "chunks");
    assertEquals(chunked.length, 1, "one chunked blob");
    assertEquals(chunked[0]!.size, 5_000_000);
    assert(
      [...rows(ws).values()].every((r) => r.encoding !== "file"),
      "no object file is written",
    );
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
    const dest = join(ws.root, "out");
    expectCode(await ws.run(["materialize", id, dest]), 0, "materialize");
    assertEquals(await Deno.readFile(join(dest, "big.bin")), big);
  });
});

Deno.test("changing one byte of a 12 MB file stores at most 2 MiB of new chunks", async () => {
  await withStore(async (ws) => {
    const big = noise(12_000_000, 2);
    await Deno.writeFile(join(ws.path, "big.bin"), big);
    await runJson(ws, ["create", "-m", "before"]);
    const before = rows(ws);
    big[6_000_000]! ^= 1;
    await Deno.writeFile(join(ws.path, "big.bin"), big);
    const id = (await runJson(ws, ["create", "-m", "after"])).id;
    let added = 0;
    for (const [blob, row] of rows(ws)) {
      if (!before.has(blob) && row.encoding !== "chunks") added += row.size;
    }
    assert(added > 0 && added <= 2 * 1024 * 1024, `${added} bytes of new chunks`);
    const dest = join(ws.root, "out");
    expectCode(await ws.run(["materialize", id, dest]), 0, "materialize");
    assertEquals(await Deno.readFile(join(dest, "big.bin")), big);
    // Restoring the first snapshot rewrites the one changed byte back.
    expectCode(await ws.run(["restore", "HEAD~1", "--force"]), 0, "restore HEAD~1");
    big[6_000_000]! ^= 1;
    assertEquals(await Deno.readFile(join(ws.path, "big.bin")), big);
  });
});

Deno.test("gc keeps the chunks of a retained chunked blob and removes those only a forgotten one used", async () => {
  await withStore(async (ws) => {
    await Deno.writeFile(join(ws.path, "big.bin"), noise(3_000_000, 3));
    await runJson(ws, ["create", "-m", "one"]);
    await Deno.writeFile(join(ws.path, "big.bin"), noise(3_000_000, 4));
    const kept = (await runJson(ws, ["create", "-m", "two"])).id;
    await runJson(ws, ["forget", "--keep-last", "1"]);
    const gc = await runJson(ws, ["gc"]);
    assert(gc.blobs > 2, `the first file's chunked blob and its chunks go (${gc.blobs})`);
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after gc");
    const dest = join(ws.root, "out");
    expectCode(await ws.run(["materialize", kept, dest]), 0, "materialize the kept one");
    assertEquals(await Deno.readFile(join(dest, "big.bin")), noise(3_000_000, 4));
  });
});

async function withLib(fn: (store: Store, dir: string) => void | Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-chunks-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await fn(store, dir);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a chunk list that names a chunked blob is refused as corrupt", async () => {
  await withLib((store) => {
    const inner = store.putBlob(noise(2_500_000, 5));
    const outerId = "a".repeat(64);
    store.transaction("test", () => store.putChunkedBlob(outerId, 2_500_000, [inner]));
    assertThrows(() => store.readBlob(outerId), IntegrityError, "a chunk is itself chunked");
  });
});

Deno.test("a chunked blob whose chunks do not hash to its id is refused", async () => {
  await withLib((store) => {
    const a = store.putBlob(noise(100_000, 6));
    const b = store.putBlob(noise(100_000, 7));
    const whole = store.putBlob(new Uint8Array([...noise(100_000, 6), ...noise(100_000, 7)]));
    const liar = "b".repeat(64);
    store.transaction("test", () => store.putChunkedBlob(liar, 200_000, [b, a]));
    assertThrows(() => store.readBlob(liar), IntegrityError, "do not hash to its id");
    assertEquals(store.readBlob(whole).byteLength, 200_000);
    assertEquals(store.checkBlob(liar), false);
  });
});

Deno.test("a malformed chunk list is refused by every blob reader", async () => {
  await withLib((store) => {
    const id = store.putBlob(noise(2_000_000, 8));
    const db = store.db;
    db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(new Uint8Array(31), id);
    assertThrows(() => store.readBlob(id), IntegrityError, "chunk list is malformed");
    assertThrows(() => store.blobChunks(id), IntegrityError, "chunk list is malformed");
    assertEquals(store.checkBlob(id), false);
    assertEquals(store.blobChunks("c".repeat(64)), null);
  });
});

Deno.test("a file-backed blob written by an earlier release still reads and verifies", async () => {
  await withLib(async (store) => {
    const data = noise(1_500_000, 9);
    const id = createHash("sha256").update(data).digest("hex");
    await Deno.mkdir(join(store.dir, "objects", id.slice(0, 2)), { recursive: true });
    await Deno.writeFile(store.objectPath(id), data, { mode: 0o400 });
    store.db.prepare(
      "INSERT INTO objects (id, kind, size, encoding, data, created_at) VALUES (?, 'blob', ?, 'file', NULL, 0)",
    ).run(id, data.byteLength);
    assertEquals(store.readBlob(id), data);
    assertEquals(store.blobChunks(id), null);
  });
});

Deno.test("a malformed chunk list of a reachable blob stops gc with nothing deleted", async () => {
  await withStore(async (ws) => {
    await Deno.writeFile(join(ws.path, "big.bin"), noise(2_000_000, 10));
    await runJson(ws, ["create", "-m", "big"]);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
    await runJson(ws, ["create", "-m", "small change"]);
    await runJson(ws, ["forget", "--keep-last", "1"]);
    const chunked = [...rows(ws)].find(([, r]) => r.encoding === "chunks")![0];
    const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
    db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(new Uint8Array(33), chunked);
    db.close();
    const before = rows(ws).size;
    const gc = await ws.run(["gc"]);
    expectCode(gc, 1, "gc with a malformed chunk list");
    assert(gc.stderr.includes("malformed chunk list"), gc.stderr);
    assertEquals(rows(ws).size, before, "gc deleted something");
  });
});

Deno.test("a schema-4 store with a file-backed blob migrates to chunked blobs and still reads the old one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-chunks-migrate-" });
  try {
    const storeDir = join(dir, ".ctxsnap");
    await Deno.mkdir(join(storeDir, "objects"), { recursive: true, mode: 0o700 });
    await Deno.mkdir(join(storeDir, "tmp"), { mode: 0o700 });
    const old = new DatabaseSync(join(storeDir, "index.db"));
    for (const migration of MIGRATIONS.slice(0, 4)) old.exec(migration);
    old.exec("PRAGMA user_version = 4");
    const insert = old.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    insert.run("workspace_root", "..");
    insert.run("format", "ctxsnap-store/1");
    const data = noise(1_500_000, 11);
    const id = createHash("sha256").update(data).digest("hex");
    await Deno.mkdir(join(storeDir, "objects", id.slice(0, 2)), { mode: 0o700 });
    await Deno.writeFile(join(storeDir, "objects", id.slice(0, 2), id), data, { mode: 0o400 });
    old.prepare(
      "INSERT INTO objects (id, kind, size, encoding, data, created_at) VALUES (?, 'blob', ?, 'file', NULL, 0)",
    ).run(id, data.byteLength);
    old.close();
    await Deno.chmod(join(storeDir, "index.db"), 0o600);

    const store = Store.open(storeDir);
    try {
      const version = store.db.prepare("PRAGMA user_version").get() as { user_version: number };
      assertEquals(version.user_version, SCHEMA_VERSION);
      assertEquals(store.readBlob(id), data);
      const fresh = noise(1_500_000, 12);
      const freshId = store.transaction("test", () => store.putBlob(fresh));
      assert(store.blobChunks(freshId) !== null, "a new large blob is chunked");
      assertEquals(store.readBlob(freshId), fresh);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkBlob() still checks the whole file when every chunk is marked verified", async () => {
  await withLib((store) => {
    const a = store.putBlob(noise(100_000, 6));
    const b = store.putBlob(noise(100_000, 7));
    const liar = "b".repeat(64);
    store.transaction("test", () => store.putChunkedBlob(liar, 200_000, [b, a]));
    const verified = new Map([[a, true], [b, true]]);
    assertEquals(store.checkBlob(liar, verified), false);
  });
});

Deno.test("verifyAll() reports a chunk whose stored bytes were edited, and the chunked blob using it", async () => {
  await withLib(async (store) => {
    const id = store.putBlob(noise(3_000_000, 9));
    const chunks = store.blobChunks(id)!;
    assert(chunks.length > 2, "several chunks");
    const victim = chunks[1]!;
    const db = store.db;
    const row = db.prepare("SELECT size FROM objects WHERE id = ?").get(victim) as {
      size: number;
    };
    const edited = noise(row.size, 10);
    db.prepare("UPDATE objects SET encoding = 'raw', data = ? WHERE id = ?").run(edited, victim);
    const report = await verifyAll(store, { isTrusted: () => false, nameOf: () => null });
    assertEquals(report.objects.corrupt.includes(victim), true, "the chunk");
    assertEquals(report.objects.corrupt.includes(id), true, "the whole file");
    assertEquals(report.objects.corrupt.length, 2);
  });
});

Deno.test("putBlob() keeps a large blob raw when its leading sample does not compress, and deflates one that does", async () => {
  await withLib((store) => {
    const mixed = new Uint8Array(128 * 1024);
    mixed.set(noise(8 * 1024, 11));
    const raw = store.putBlob(mixed);
    const text = store.putBlob(new TextEncoder().encode("checkpoint ".repeat(12_000)));
    const encoding = (id: string) =>
      (store.db.prepare("SELECT encoding FROM objects WHERE id = ?").get(id) as {
        encoding: string;
      }).encoding;
    assertEquals(encoding(raw), "raw");
    assertEquals(encoding(text), "deflate");
    assertEquals(store.readBlob(raw), mixed);
  });
});
