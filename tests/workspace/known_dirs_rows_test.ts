/**
 * The tree cache's rows (lib/workspace/_known_dirs.ts, lib/repository/tree_cache.ts):
 * what a capture prunes and rewrites, what it refuses to trust, and how a
 * watch process's captures and the tree limits meet them.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { readTreeCache, writeTreeCacheRow } from "../../lib/repository/tree_cache.ts";
import { statCachePaths } from "../../lib/repository/stat_cache.ts";
import { IncrementalCapture } from "../../lib/workspace/incremental.ts";
import { MAX_TREE_ENTRIES } from "../../lib/format/tree.ts";
import { IntegrityError } from "../../lib/errors.ts";
import { capture, checked, put, settle, withWorkspace, writeTree } from "../_known_dirs.ts";

Deno.test("captureWorkspace() with many directories changed reads the stat cache at once and reads only the changed files", async () => {
  await withWorkspace(async (store, root) => {
    for (let d = 0; d < 30; d++) {
      for (let f = 0; f < 80; f++) put(root, `many${d}/f${f}.txt`, `file ${d} ${f}\n`);
    }
    await settle();
    checked(store);
    for (let d = 0; d < 30; d++) put(root, `many${d}/f0.txt`, `changed ${d}\n`);
    const again = checked(store);
    assertEquals(again.stats.hashed, 30);
    assertEquals(again.stats.reused, 30 * 79);
  });
});

Deno.test("captureWorkspace() drops the rows of a directory that is gone, with its files' stat-cache rows", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    fs.rmSync(join(root, "d3"), { recursive: true });
    checked(store);
    const rows = readTreeCache(store);
    assert(!rows.has("d3") && !rows.has("d3/sub"), [...rows.keys()].join(","));
    assertEquals(statCachePaths(store).filter((p) => p.startsWith("d3/")), []);
    // A file removed from a directory loses its stat-cache row too.
    fs.rmSync(join(root, "d1/f0.txt"));
    checked(store);
    assert(!statCachePaths(store).includes("d1/f0.txt"));
  });
});

Deno.test("captureWorkspace() drops the row of a directory left empty", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    assert(readTreeCache(store).has("d3/sub"));
    // d3/sub stays, empty: it has no tree, so it keeps no row either.
    fs.rmSync(join(root, "d3/sub/s.txt"));
    checked(store);
    assert(!readTreeCache(store).has("d3/sub"), [...readTreeCache(store).keys()].join(","));
    assert(!statCachePaths(store).includes("d3/sub/s.txt"));
  });
});

Deno.test("captureWorkspace() drops the stat-cache rows a watch process wrote below a directory that is gone", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    // A watch process captures a new directory (stat-cache rows, no
    // tree-cache row) and stops; the directory goes before the next capture.
    // First from its events, then from its own full walk.
    for (const events of [true, false]) {
      if (!events) put(root, "tmp-build/out.txt", "built\n");
      const watch = new IncrementalCapture(store);
      try {
        store.transaction("watch", () => watch.capture());
        put(root, "tmp-build/out.txt", "built\n");
        store.transaction("watch", () => watch.capture());
      } finally {
        watch.close();
      }
      assert(statCachePaths(store).includes("tmp-build/out.txt"), "the watch wrote no row");
      fs.rmSync(join(root, "tmp-build"), { recursive: true });
      checked(store);
      assertEquals(statCachePaths(store).filter((p) => p.startsWith("tmp-build/")), []);
    }
  });
});

Deno.test("a watch process's capture leaves a tree-cache row whose facts are not JSON as it is", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    const first = checked(store);
    store.transaction("spoil", () => {
      store.stmt("UPDATE tree_cache SET facts = '{' WHERE dir = ''").run();
    });
    const watch = new IncrementalCapture(store);
    try {
      store.transaction("watch", () => watch.capture());
      put(root, "new.txt", "new\n");
      store.transaction("watch", () => watch.capture());
    } finally {
      watch.close();
    }
    assert(!readTreeCache(store).has(""));
    assert(checked(store).treeId !== first.treeId);
  });
});

Deno.test("captureWorkspace() ignores a tree-cache row it cannot parse and writes it anew", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    const first = checked(store);
    store.transaction("spoil rows", () => {
      store.stmt("UPDATE tree_cache SET facts = '{' WHERE dir = 'd0'").run();
      store.stmt("UPDATE tree_cache SET stats = x'00' WHERE dir = 'd1'").run();
      store.stmt("UPDATE tree_cache SET names = 'f0.txt//x' WHERE dir = 'd2'").run();
    });
    const rows = readTreeCache(store);
    assert(!rows.has("d0") && !rows.has("d1") && !rows.has("d2"));
    const again = checked(store);
    assertEquals(again.treeId, first.treeId);
    assertEquals(readTreeCache(store).size, 9);
  });
});

Deno.test("captureWorkspace() counts a kept directory's files against the tree's entry limit", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    // A row that holds as many files as a tree may: one more anywhere must
    // fail the capture, as it fails a capture without the cache.
    const row = readTreeCache(store).get("d0")!;
    store.transaction("grow", () => writeTreeCacheRow(store, { ...row, files: MAX_TREE_ENTRIES }));
    assertThrows(() => capture(store), IntegrityError, `more than ${MAX_TREE_ENTRIES} entries`);
  });
});
