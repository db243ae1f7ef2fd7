/**
 * The tree cache (lib/workspace/_known_dirs.ts): a capture keeps an
 * unchanged directory's tree without looking at its files beyond `lstat`,
 * and every capture still stores exactly the tree a capture without any
 * cache computes. Files are made older than the racy window once per test
 * (ctime has whole-second granularity on some filesystems).
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { Store } from "../../lib/repository/store.ts";
import { type CaptureResult, captureWorkspace } from "../../lib/workspace/capture.ts";
import { readTreeCache, writeTreeCacheRow } from "../../lib/repository/tree_cache.ts";
import { statCachePaths } from "../../lib/repository/stat_cache.ts";
import { collectGarbage } from "../../lib/repository/gc.ts";
import { IncrementalCapture } from "../../lib/workspace/incremental.ts";
import { MAX_TREE_ENTRIES } from "../../lib/format/tree.ts";
import { IntegrityError } from "../../lib/errors.ts";

// Built here, so this file itself holds no key.
const BASE64 = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Vj1bbnGs3Zt9";
const LABEL = ["OPENSSH", "PRIVATE", "KEY"].join(" ");
const KEY = `-----BEGIN ${LABEL}-----\n${BASE64}\n${BASE64}\n-----END ${LABEL}-----\n`;

async function withWorkspace(fn: (store: Store, root: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-known-" });
  const root = join(dir, "ws");
  fs.mkdirSync(root);
  const store = Store.init(join(dir, "store"), root);
  try {
    await fn(store, root);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function put(root: string, path: string, content = `${path}\n`): void {
  fs.mkdirSync(join(root, path, ".."), { recursive: true });
  fs.writeFileSync(join(root, path), content);
}

/** Past the racy window of every file written so far. */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1100));
}

function capture(store: Store): CaptureResult {
  return store.transaction("capture", () => captureWorkspace(store));
}

/** The tree a capture with no cache at all computes (nothing stored). */
function reference(store: Store): CaptureResult {
  return captureWorkspace(store, { persist: false, useStatCache: false });
}

/** Captures, and checks the result against {@linkcode reference}. */
function checked(store: Store): CaptureResult {
  const made = capture(store);
  const full = reference(store);
  assertEquals(made.treeId, full.treeId, "the cached capture stored another tree");
  assertEquals(made.skipped, full.skipped);
  const { hashed: _h, reused: _r, ...counts } = made.stats;
  const { hashed: _fh, reused: _fr, ...fullCounts } = full.stats;
  assertEquals(counts, fullCounts);
  return made;
}

function writeTree(root: string): void {
  for (let d = 0; d < 4; d++) {
    for (let f = 0; f < 5; f++) put(root, `d${d}/f${f}.txt`, `file ${d}/${f}\n`);
    put(root, `d${d}/sub/s.txt`, `sub ${d}\n`);
  }
  put(root, "top.md", "# top\n");
  put(root, ".env", "TOKEN=x\n");
}

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

Deno.test("captureWorkspace() keeps directories after random edits exactly as a capture without a cache computes", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const dirs = ["", "d0", "d1", "d2", "d3", "d0/sub", "d2/sub", "new", "new/deep"];
    for (let round = 0; round < 60; round++) {
      const dir = dirs[random(dirs.length)]!;
      const at = (name: string) => (dir === "" ? name : `${dir}/${name}`);
      const name = `g${random(4)}.txt`;
      switch (random(9)) {
        case 0:
          put(root, at(name), `round ${round}\n`);
          break;
        case 1:
          fs.rmSync(join(root, at(name)), { force: true });
          break;
        case 2:
          put(root, at(".gitignore"), random(2) === 0 ? "g1.txt\n" : "sub/\n");
          break;
        case 3:
          fs.rmSync(join(root, at(".gitignore")), { force: true });
          break;
        case 4:
          fs.mkdirSync(join(root, dir), { recursive: true });
          fs.rmSync(join(root, at("link")), { force: true });
          fs.symlinkSync(`target-${random(3)}`, join(root, at("link")));
          break;
        case 5:
          put(root, at("keys.txt"), random(2) === 0 ? KEY : "harmless\n");
          break;
        case 6:
          if (dir !== "") fs.rmSync(join(root, dir), { recursive: true, force: true });
          break;
        case 7:
          fs.mkdirSync(join(root, at("empty")), { recursive: true });
          break;
        default:
          // Nothing changes: the next capture keeps everything it can.
          break;
      }
      checked(store);
      if (round % 20 === 19) await settle();
    }
  });
});
