/**
 * The tree cache (lib/workspace/_known_dirs.ts): a capture keeps an
 * unchanged directory's tree without looking at its files beyond `lstat`,
 * and every capture still stores exactly the tree a capture without any
 * cache computes. Files are made older than the racy window once per test
 * (ctime has whole-second granularity on some filesystems).
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { readTreeCache, writeTreeCacheRow } from "../../lib/repository/tree_cache.ts";
import { collectGarbage } from "../../lib/repository/gc.ts";
import { checked, KEY, put, settle, withWorkspace, writeTree } from "../_known_dirs.ts";

Deno.test("captureWorkspace() keeps unchanged directories from the tree cache without reading their stat-cache rows", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    const first = checked(store);
    assertEquals(first.stats.hashed, 25);
    assertEquals(readTreeCache(store).size, 9, "one row per directory with a tree");
    // With every stat-cache row gone, only a capture that keeps directories
    // whole avoids reading the files again.
    store.transaction("drop rows", () => store.stmt("DELETE FROM stat_cache").run());
    const again = checked(store);
    assertEquals(again.treeId, first.treeId);
    assertEquals(again.stats.hashed, 0);
    assertEquals(again.stats.reused, 25);
  });
});

Deno.test("captureWorkspace() reads again only the directory whose file changed, and stores the new tree", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    const first = checked(store);
    put(root, "d2/sub/s.txt", "changed\n");
    const second = checked(store);
    assert(second.treeId !== first.treeId, "the edit changed nothing");
    assertEquals(second.stats.hashed, 1);
    // The root, d2 and d2/sub were built again; the rows say so.
    const rows = readTreeCache(store);
    assertEquals(rows.get("")!.tree, second.treeId);
    const third = checked(store);
    assertEquals(third.treeId, second.treeId);
  });
});

Deno.test("captureWorkspace() applies a changed .gitignore to directories whose own entries did not change", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    put(root, ".gitignore", "f3.txt\nsub/\n");
    const ignored = checked(store);
    assert(ignored.skipped.some((s) => s.path === "d1/f3.txt" && s.reason === "ignored"));
    assert(ignored.skipped.some((s) => s.path === "d1/sub" && s.reason === "ignored"));
    await settle();
    checked(store);
    // Changed in place: every directory keeps its own entries, but not their fate.
    put(root, ".gitignore", "f2.txt\nsub/\n");
    const changed = checked(store);
    assert(changed.skipped.some((s) => s.path === "d1/f2.txt" && s.reason === "ignored"));
    assert(!changed.skipped.some((s) => s.path === "d1/f3.txt"), JSON.stringify(changed.skipped));
    await settle();
    checked(store);
    fs.rmSync(join(root, ".gitignore"));
    const back = checked(store);
    assert(!back.skipped.some((s) => s.reason === "ignored"), JSON.stringify(back.skipped));
  });
});

Deno.test("captureWorkspace() does not keep a directory whose row vouches for a file changed after the row's stamp (racy)", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    // Same size, new content: then the row is made to record the file's new
    // lstat, as a capture in the same clock tick as the edit would have.
    put(root, "d0/f0.txt", "FILE 0/0\n");
    const stat = fs.lstatSync(join(root, "d0/f0.txt"));
    const row = readTreeCache(store).get("d0")!;
    const at = row.names.split("/").indexOf("f0.txt");
    row.stats.set([stat.mode, stat.size, stat.mtimeMs, stat.ctimeMs, stat.ino, stat.dev], at * 6);
    store.transaction("forge", () => writeTreeCacheRow(store, row));
    const again = checked(store);
    assertEquals(again.stats.hashed, 1);
  });
});

Deno.test("captureWorkspace() reads a directory holding a file left out for its content every time, and keeps the others", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    put(root, "d0/keys.txt", KEY);
    await settle();
    checked(store);
    store.transaction("drop rows", () => store.stmt("DELETE FROM stat_cache").run());
    const again = checked(store);
    // d0's five files are read again (its row is partial); the rest are kept.
    assertEquals(again.stats.hashed, 5);
    assert(again.skipped.some((s) => s.path === "d0/keys.txt" && s.reason === "secret_content"));
    fs.writeFileSync(join(root, "d0/keys.txt"), "harmless now\n");
    const harmless = checked(store);
    assert(!harmless.skipped.some((s) => s.path === "d0/keys.txt"));
  });
});

Deno.test("captureWorkspace() does not keep a cached tree that is no longer stored, and stores it again", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    const first = checked(store);
    const sub = readTreeCache(store).get("d1/sub")!.tree;
    store.transaction("lose a tree", () => {
      store.stmt("DELETE FROM objects WHERE id = ?").run(sub);
    });
    const again = checked(store);
    assertEquals(again.treeId, first.treeId);
    assert(store.hasObject(sub), "the lost subtree was not stored again");
    store.getTree(again.treeId); // every tree below the root reads and verifies
  });
});

Deno.test("gc drops the tree-cache rows whose tree it deleted", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    assertEquals(readTreeCache(store).size, 9);
    // No snapshot names these trees: gc deletes them, and their rows go with them.
    const result = collectGarbage(store);
    assert(result.trees > 0, JSON.stringify(result));
    assertEquals(readTreeCache(store).size, 0);
    checked(store);
  });
});
