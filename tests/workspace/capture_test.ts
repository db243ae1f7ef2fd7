/**
 * captureWorkspace() streams its walk into directory trees: the trees it
 * stores must be exactly those the split of the validated flat manifest of
 * the same walk gives (so tree ids never change), and a create never builds
 * that flat manifest.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import type { Store } from "../../lib/repository/store.ts";
import {
  capturePlan,
  captureWorkspace,
  ItemCapture,
  sortSkipped,
} from "../../lib/workspace/capture.ts";
import { walkWorkspace } from "../../lib/workspace/io/walk.ts";
import { statCachePaths } from "../../lib/repository/stat_cache.ts";
import { splitManifest } from "../../lib/format/dir_tree.ts";
import {
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
  validateTree,
} from "../../lib/format/tree.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import type { Signer } from "../../lib/format/envelope.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { put, withWorkspace } from "../_known_dirs.ts";

/**
 * Names that order differently as UTF-8 bytes and as UTF-16 (U+FFFF against
 * an emoji), `-` and `.` around `/`, NFC and NFD spellings, and every kind
 * of skipped record inside nested directories.
 */
function writeAwkwardWorkspace(root: string): void {
  for (
    const path of [
      "a-b/x.txt",
      "a-b.txt",
      "a.b",
      "a/b-c/z.txt",
      "a/b/c.txt",
      "a/b.c",
      "a0/\u{1F600}.txt",
      "a0/\uFFFF.txt",
      "dir/\u00e9/f.txt",
      "dir/e\u0301/f.txt",
      "dir/sub/deep/er/file.txt",
      "z/new\nline.txt",
      "nested/ignored/kept.txt",
      "nested/.gitignore",
    ]
  ) put(root, path);
  put(root, "nested/.gitignore", "ignored/drop*\n");
  put(root, "nested/ignored/drop.txt");
  put(root, "a/b/.env", "TOKEN=x\n"); // secret by name
  put(
    root,
    "dir/sub/deep/key.txt",
    `-----BEGIN OPENSSH PRIVATE KEY-----\n${"b3BlbnNzaC1rZXktdjEAAAAA".repeat(3)}\n`,
  ); // by content
  put(root, "a-b/node_modules/pkg/index.js"); // excluded_dir
  put(root, "dir/sub/back\\slash.txt"); // unsafe_name
  put(root, "a/b-c/.git/HEAD"); // reserved
  const fifo = new Deno.Command("mkfifo", { args: [join(root, "dir/sub/deep/er/fifo")] })
    .outputSync();
  assert(fifo.success);
  fs.symlinkSync("../../a.b", join(root, "dir/sub/link"));
  fs.symlinkSync("/etc", join(root, "a/etc"));
}

/** The flat manifest of one walk, built and validated as capture did before it streamed. */
function flatCapture(store: Store): TreeManifest {
  const plan = capturePlan(store);
  const items = new ItemCapture(store, plan, { persist: false, cache: "none" });
  const entries: TreeEntry[] = [];
  const skipped: SkippedEntry[] = [];
  try {
    for (const item of walkWorkspace(plan.root, plan.walk)) {
      const result = items.add(item);
      if ("reason" in result) skipped.push(result);
      else entries.push(result);
    }
  } finally {
    items.close();
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return validateTree({ version: 1, entries, skipped: sortSkipped(skipped) });
}

Deno.test("captureWorkspace() stores the trees splitManifest() gives for the validated flat manifest of the same walk, on awkward names and nested skipped records", async () => {
  await withWorkspace((store, root) => {
    writeAwkwardWorkspace(root);
    const flat = flatCapture(store);
    const reasons = new Set(flat.skipped.map((s) => s.reason));
    for (
      const reason of [
        "secret",
        "secret_content",
        "excluded_dir",
        "unsafe_name",
        "reserved",
        "ignored",
        "special_file",
      ]
    ) assert(reasons.has(reason), `the fixture lacks a ${reason} record: ${[...reasons]}`);
    const split = splitManifest(flat);

    const hashed = captureWorkspace(store, { persist: false });
    assertEquals(hashed.treeId, split.rootId);
    assertEquals(hashed.skipped, flat.skipped);
    assertEquals(hashed.tree, flat);

    const stored = store.transaction("c", () => captureWorkspace(store));
    assertEquals(stored.treeId, split.rootId);
    assertEquals(stored.skipped, flat.skipped);
    for (const object of split.objects) assert(store.hasObject(object.id), object.id);
    assertEquals(stored.tree, flat);
    assertEquals(stored.stats.files, flat.entries.filter((e) => e.type === "file").length);
    assertEquals(stored.stats.skipped, flat.skipped.length);
  });
});

Deno.test("captureWorkspace() reads no tree back, and its result's tree is read from the store only when asked", async () => {
  await withWorkspace((store, root) => {
    put(root, "a/b.txt");
    put(root, "c.txt");
    const reads = store.treeReads;
    const result = store.transaction("c", () => captureWorkspace(store));
    assertEquals(store.treeReads, reads);
    assertEquals(result.tree.entries.map((e) => e.path), ["a/b.txt", "c.txt"]);
    assertEquals(store.treeReads, reads + 2); // the root and a/
    assertEquals(result.tree.entries.length, 2);
    assertEquals(store.treeReads, reads + 2); // built once
  });
});

Deno.test("createSnapshot() records the counts of a streamed capture without building its flat manifest", async () => {
  await withWorkspace(async (store, root) => {
    put(root, "a/b.txt", "12345");
    put(root, "c.txt", "123");
    put(root, ".env", "TOKEN=x\n");
    const seed = generateSeed();
    const publicKey = await publicKeyFromSeed(seed);
    const signer: Signer = {
      seed,
      publicKey,
      publicKeyHex: toHex(publicKey),
      keyId: keyIdOf(publicKey),
    };
    const reads = store.treeReads;
    const created = await createSnapshot(store, signer, { reason: "first" });
    assertEquals(store.treeReads, reads);
    const workspace = created.envelope.body.workspace!;
    assertEquals({ files: workspace.files, bytes: workspace.bytes, skipped: workspace.skipped }, {
      files: 2,
      bytes: 8,
      skipped: 1,
    });
    const tree = store.getTree(workspace.tree);
    assertEquals(tree.entries.length, 2);
    assertEquals(tree.skipped, [{ path: ".env", reason: "secret" }]);
  });
});

Deno.test("captureWorkspace() keeps the stat-cache rows of the files it records and drops the rows of files gone", async () => {
  await withWorkspace((store, root) => {
    put(root, "a.txt");
    put(root, "d/b.txt");
    put(root, "d/c.txt");
    store.transaction("c", () => captureWorkspace(store));
    assertEquals([...statCachePaths(store)].sort(), ["a.txt", "d/b.txt", "d/c.txt"]);
    fs.rmSync(join(root, "d/b.txt"));
    store.transaction("c", () => captureWorkspace(store));
    assertEquals([...statCachePaths(store)].sort(), ["a.txt", "d/c.txt"]);
    // With no tree-cache rows to read, the capture reads every stat-cache row
    // at once and prunes those no file it recorded kept.
    fs.rmSync(join(root, "d/c.txt"));
    store.transaction("c", () => {
      store.stmt("DELETE FROM tree_cache").run();
      captureWorkspace(store);
    });
    assertEquals([...statCachePaths(store)].sort(), ["a.txt"]);
  });
});

Deno.test("captureWorkspace() stores a file holding a stored tree's bytes, and both read back", async () => {
  await withWorkspace((store, root) => {
    put(root, "a.txt", "a\n");
    const first = store.transaction("c", () => captureWorkspace(store));
    const bytes = store.getTreeObject(first.treeId).bytes;
    fs.writeFileSync(join(root, "t.json"), bytes);
    const second = store.transaction("c", () => captureWorkspace(store));
    const entry = second.tree.entries.find((e) => e.path === "t.json");
    assert(entry?.type === "file" && entry.blob === first.treeId, JSON.stringify(entry));
    assertEquals(store.readBlob(first.treeId), bytes);
    assertEquals(store.getTree(first.treeId).entries.map((e) => e.path), ["a.txt"]);
  });
});
