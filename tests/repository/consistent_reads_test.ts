/**
 * Readers see one committed state (docs/DESIGN.md §3.4): `Store.read` and
 * `Store.readAsync` pin one snapshot of the index while other connections
 * commit, and `verifyAll` never reports as damage what a correct concurrent
 * writer did: a checkpoint committed between its queries, or a gc that
 * removed objects (rows, then files) while it ran. Two real connections to
 * one real SQLite file, interleaved deterministically through verify's test
 * seam and its progress callback; no timers. And a hook that finds the
 * store busy past the timeout tries again, says so, and lands its checkpoint.
 *
 * @module
 */
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { Store } from "../../lib/repository/store.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { verifyAll, verifyHooks } from "../../lib/history/verify.ts";
import { collectGarbage } from "../../lib/repository/gc.ts";
import { listBranches } from "../../lib/history/timeline.ts";
import { snapshotIds } from "../../lib/repository/snapshot_rows.ts";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { Keyring } from "../../lib/keys/keyring.ts";
import { INLINE_BLOB_MAX } from "../../lib/repository/store.ts";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { cliCommand, realDenoDir, REPO, withStore } from "../_cli.ts";

async function twoConnections(
  fn: (reader: Store, writer: Store, trust: Keyring, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-reads-" });
  const config = await Deno.makeTempDir({ prefix: "ctxsnap-reads-config-" });
  try {
    await Deno.writeTextFile(`${dir}/a.txt`, "alpha\n");
    Store.init(`${dir}/.ctxsnap`, dir).close();
    const writer = Store.open(`${dir}/.ctxsnap`);
    const reader = Store.open(`${dir}/.ctxsnap`, { readOnly: true });
    const me = await loadOrCreateIdentity(config);
    try {
      await createSnapshot(writer, me, { reason: "first" });
      await fn(reader, writer, new Keyring([], me), dir);
    } finally {
      reader.close();
      writer.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(config, { recursive: true });
  }
}

Deno.test("verifyAll() does not report a branch at a missing snapshot when a checkpoint commits between its queries", async () => {
  await twoConnections(async (reader, writer, trust, dir) => {
    const me = await loadOrCreateIdentity(await Deno.makeTempDir());
    let committed: string | null = null;
    verifyHooks.beforeBranches = async () => {
      // Another process's checkpoint lands after verify read the snapshot ids
      // and before it reads the branch heads.
      await Deno.writeTextFile(`${dir}/a.txt`, "beta\n");
      committed = (await createSnapshot(writer, me, { reason: "between" })).id;
    };
    let report;
    try {
      report = await verifyAll(reader, trust);
    } finally {
      delete verifyHooks.beforeBranches;
    }
    assert(committed !== null, "the seam ran and a checkpoint committed");
    assertEquals(report.problems, []);
    assertEquals(report.snapshots.length, 1, "verify saw the state before the checkpoint");
    // The next verify sees the new state, whole.
    const after = await verifyAll(reader, trust);
    assertEquals(after.problems, []);
    assertEquals(after.snapshots.length, 2);
  });
});

Deno.test("verifyAll() does not report as missing the objects a concurrent gc removed, rows and files", async () => {
  await twoConnections(async (reader, writer, trust) => {
    // Three unreferenced chunked blobs and one inline blob: gc's to remove (the chunks too).
    const big = (fill: number) => new Uint8Array(INLINE_BLOB_MAX + 1).fill(fill);
    const doomed = [writer.putBlob(big(1)), writer.putBlob(big(2)), writer.putBlob(big(3))];
    writer.putBlob(new TextEncoder().encode("unreferenced inline"));
    let collected = -1;
    const report = await verifyAll(reader, trust, (done) => {
      // After the first object, a gc commits and unlinks the files.
      if (done === 1) collected = collectGarbage(writer).blobs;
    });
    assert(collected >= 4, `gc collected ${collected} objects`);
    for (const id of doomed) assert(writer.objectGone(id), `blob ${id} was collected`);
    assertEquals(report.problems, []);
    assertEquals(report.objects.corrupt, []);
    assertEquals((await verifyAll(reader, trust)).problems, []);
  });
});

Deno.test("verifyAll() still reports a referenced blob's chunk deleted behind the store's back", async () => {
  await twoConnections(async (reader, writer, trust, dir) => {
    await Deno.writeFile(`${dir}/big.bin`, new Uint8Array(INLINE_BLOB_MAX + 7).fill(9));
    await createSnapshot(writer, await loadOrCreateIdentity(await Deno.makeTempDir()), {
      reason: "big",
    });
    const id = writer.listObjects().find((o) =>
      o.kind === "blob" && writer.objectSize(o.id) === INLINE_BLOB_MAX + 7
    )!.id;
    const chunk = writer.blobChunks(id)![0]!;
    // Damage: another program deletes the chunk's row (no gc, no operation).
    const raw = new DatabaseSync(join(dir, ".ctxsnap", "index.db"));
    try {
      raw.prepare("DELETE FROM objects WHERE id = ?").run(chunk);
    } finally {
      raw.close();
    }
    const report = await verifyAll(reader, trust);
    assert(report.objects.corrupt.includes(id), "the blob missing a chunk is reported");
    assert(
      report.snapshots.some((s) =>
        !s.valid
      ),
      "the snapshot naming it is invalid",
    );
  });
});

Deno.test("Store.read() pins one committed state while another connection commits", async () => {
  await twoConnections(async (reader, writer) => {
    const me = await loadOrCreateIdentity(await Deno.makeTempDir());
    const before = snapshotIds(reader);
    let pending: Promise<unknown> = Promise.resolve();
    const seen = reader.read(() => {
      const ids = snapshotIds(reader);
      // A synchronous write on the other connection, committed mid-read.
      writer.transaction("test", () => writer.setMeta("test:mid-read", "1"));
      pending = createSnapshot(writer, me, { reason: "later", allowUnchanged: true });
      return { ids, meta: reader.getMeta("test:mid-read"), heads: listBranches(reader) };
    });
    await pending;
    assertEquals(seen.ids, before);
    assertEquals(seen.meta, null, "the write committed after the read began is not seen");
    assertEquals(seen.heads[0]!.head, before.at(-1));
    assertEquals(reader.getMeta("test:mid-read"), "1", "outside the read, the latest state");
    assertEquals(snapshotIds(reader).length, before.length + 1);
  });
});

Deno.test("Store.readAsync() shares one read transaction; a write on the same connection waits for it, a synchronous one is refused", async () => {
  await twoConnections(async (_reader, writer) => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const reading = writer.readAsync(async () => {
      order.push("read begins");
      await gate;
      order.push("read ends");
    });
    assertThrows(() => writer.transaction("sync write", () => {}), Error, "inside a read");
    const writing = writer.transactionAsync("async write", () => {
      order.push("write");
      writer.setMeta("test:after-read", "1");
      return Promise.resolve();
    });
    release();
    await Promise.all([reading, writing]);
    assertEquals(order, ["read begins", "read ends", "write"]);
    assertEquals(writer.getMeta("test:after-read"), "1");
    await assertRejects(
      () => writer.readAsync(() => Promise.reject(new Error("reader failed"))),
      Error,
      "reader failed",
    );
    assert(!writer.db.isTransaction, "a failed reader ends its read transaction");
  });
});

Deno.test("hook: a store busy past the timeout is tried again, said on stderr, and the checkpoint lands (exit 0)", async () => {
  await withStore(async (ws) => {
    const event = (await Deno.readTextFile(
      join(REPO, "tests", "fixtures", "claude-code", "user_prompt_submit_1.json"),
    )).replaceAll("/PROJECT", ws.path);
    // Another process's write lock, held until the hook says it is trying again.
    const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("BEGIN IMMEDIATE");
    const [command, ...args] = cliCommand(["hook", "claude-code", "--json"]);
    const child = new Deno.Command(command, {
      args,
      cwd: ws.path,
      env: {
        HOME: ws.home,
        CTXSNAP_CONFIG_DIR: ws.configDir,
        // Six busy timeouts to retry in (6 s): room for this test to see the note and let go.
        CTXSNAP_BUSY_TIMEOUT_MS: "1000",
        DENO_DIR: realDenoDir(),
        NO_COLOR: "1",
        CTXSNAP_DAEMON: "off",
      },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(event));
    await writer.close();
    let stderr = "";
    const decoder = new TextDecoder();
    const reader = child.stderr.getReader();
    try {
      while (!stderr.includes("trying again")) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += decoder.decode(value, { stream: true });
      }
    } finally {
      db.exec("ROLLBACK");
      db.close();
    }
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value, { stream: true });
    }
    const [status, stdout] = await Promise.all([
      child.status,
      new Response(child.stdout).text(),
    ]);
    assertEquals(status.code, 0, stderr);
    assert(stderr.includes("ctxsnap: the store is busy; trying again for up to 6 s"), stderr);
    assert(!stderr.includes("error:"), `the hook's checkpoint landed: ${stderr}`);
    const id = JSON.parse(stdout).id as string;
    const listed = (await ws.run(["list", "--json"])).json().snapshots.map((s: { id: string }) =>
      s.id
    );
    assert(listed.includes(id), "the hook's snapshot is listed");
  });
});
