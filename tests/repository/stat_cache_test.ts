/**
 * Tests of the stat cache's rows (`lib/repository/stat_cache.ts`): the
 * compact table capture reads holds every row exactly, and a capture keeps
 * the rows of the files it recorded and drops the others.
 *
 * @module
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Store } from "../../lib/repository/store.ts";
import {
  readStatCache,
  readStatCacheTable,
  statCachePaths,
  StatCacheTable,
  upsertStatCacheRow,
} from "../../lib/repository/stat_cache.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import { assert, assertEquals } from "../_assert.ts";

function withStore(fn: (store: Store, workspace: string) => void): void {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "ctxsnap-stat-cache-")));
  const store = Store.init(join(workspace, ".ctxsnap"), workspace);
  try {
    fn(store, workspace);
  } finally {
    store.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

const ROWS = [
  { path: "a.txt", size: 0, mtimeMs: 0, ctimeMs: 0, ino: 1, dev: 0, mode: 0o644, stamp: 1 },
  {
    path: "dir/b c.md",
    size: 123_456_789,
    mtimeMs: 1764620000123.4567,
    ctimeMs: 1764620000999.0001,
    ino: 2 ** 52 + 7,
    dev: 2049,
    mode: 0o755,
    stamp: 1764620001000.25,
  },
  {
    path: "\u00e9t\u00e9/\u{1F600}\n.txt",
    size: 7,
    mtimeMs: 1.5,
    ctimeMs: 2.5,
    ino: 3,
    dev: 4,
    mode: 0o600,
    stamp: 3.5,
  },
];

Deno.test("readStatCacheTable() holds every row exactly as it is stored", () => {
  withStore((store) => {
    store.transaction("rows", () => {
      ROWS.forEach((r, i) => upsertStatCacheRow(store, r.path, r, String(i).repeat(64), r.stamp));
    });
    const table = readStatCacheTable(store);
    const objects = readStatCache(store);
    assertEquals(table.size, ROWS.length);
    assertEquals([...table.paths()].sort(), statCachePaths(store).sort());
    for (const r of ROWS) {
      const row = table.row(r.path);
      assert(row >= 0, r.path);
      const stored = objects.get(r.path)!;
      assert(table.matches(row, r), `${r.path} matches its own stat fields`);
      assertEquals(table.sizeOf(row), stored.size);
      assertEquals(table.stampMs(row), stored.stamp_ms);
      assertEquals(table.stampMs(row), r.stamp);
      assertEquals(table.blob(row), stored.blob);
    }
    assertEquals(table.row("missing.txt"), -1);
    assertEquals(StatCacheTable.empty().size, 0);
    assertEquals(StatCacheTable.empty().row("a.txt"), -1);
  });
});

Deno.test("StatCacheTable.matches() is false when any one stat field differs", () => {
  withStore((store) => {
    const r = ROWS[1]!;
    store.transaction("row", () => upsertStatCacheRow(store, r.path, r, "ab".repeat(32), r.stamp));
    const table = readStatCacheTable(store);
    const row = table.row(r.path);
    assert(table.matches(row, r));
    for (const field of ["size", "mtimeMs", "ctimeMs", "ino", "dev", "mode"] as const) {
      const other = { ...r, [field]: r[field] + (field === "mtimeMs" ? 0.001 : 1) };
      assert(!table.matches(row, other), `a different ${field} still matched`);
    }
  });
});

Deno.test("captureWorkspace() keeps the stat-cache rows of the files it recorded and drops the others", () => {
  withStore((store, workspace) => {
    for (const name of ["keep.txt", "gone.txt", "other.txt"]) {
      writeFileSync(join(workspace, name), `${name}\n`);
    }
    store.transaction("first", () => captureWorkspace(store));
    assertEquals(statCachePaths(store).sort(), ["gone.txt", "keep.txt", "other.txt"]);
    rmSync(join(workspace, "gone.txt"));
    const second = store.transaction("second", () => captureWorkspace(store));
    assertEquals(second.stats.files, 2);
    assertEquals(statCachePaths(store).sort(), ["keep.txt", "other.txt"]);
  });
});
