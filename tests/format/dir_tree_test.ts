/**
 * Directory trees (tree version 2, docs/FORMAT.md §2.2): the vectors in
 * tests/vectors/tree checked both ways, hostile hierarchies refused one by
 * one, stores and bundles made with flat (version 1) trees still read, a
 * diff that reads O(depth) trees and a one-file capture that writes only the
 * trees on its path.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { memoryReader } from "../_share.ts";
import { concatBytes } from "../_util.ts";
import { readBundle, writeBundle } from "../../lib/format/bundle.ts";
import { canonicalBytes } from "../../lib/encoding/canonical_json.ts";
import { Store } from "../../lib/repository/store.ts";
import { CanonicalJsonError, CtxsnapError } from "../../lib/errors.ts";
import {
  type DirObject,
  dirObject,
  type DirTree,
  dirTreeBytes,
  DirTreeWriter,
  splitManifest,
  validateDirTree,
} from "../../lib/format/dir_tree.ts";
import { checkDirTree, parseTreeObject } from "../../lib/format/tree_object.ts";
import {
  compareSkipped,
  type FileEntry,
  type SkippedEntry,
  treeBytes,
  type TreeEntry,
  treeId,
  type TreeManifest,
  validateTree,
} from "../../lib/format/tree.ts";
import { reachableObjects } from "../../lib/repository/reach.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import { IncrementalCapture } from "../../lib/workspace/incremental.ts";
import { collectGarbage } from "../../lib/repository/gc.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { diffStoredTrees } from "../../lib/repository/diff.ts";
import { forgetSnapshots } from "../../lib/history/forget.ts";
import { type TrustPolicy, verifyAll } from "../../lib/history/verify.ts";
import { readEnvelope } from "../../lib/history/timeline.ts";
import { materialize } from "../../lib/workspace/move/materialize.ts";
import { publishToFile } from "../../lib/share/publish.ts";
import { importFile } from "../../lib/share/import.ts";
import type { Signer } from "../../lib/format/envelope.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { toHex } from "../../lib/encoding/hex.ts";

const VECTORS = new URL("../vectors/tree/", import.meta.url);
const encoder = new TextEncoder();
const TRUST_ALL: TrustPolicy = { isTrusted: () => true, nameOf: () => "test" };

interface ValidVector {
  description: string;
  manifest: TreeManifest;
  root: string;
  objects: { id: string; json: string }[];
}

interface InvalidVector {
  description: string;
  error: string;
  root: string;
  objects: { kind: "tree" | "blob"; data: string }[];
}

function vectors<T>(kind: "valid" | "invalid"): [string, T][] {
  const dir = new URL(`${kind}/`, VECTORS);
  return [...Deno.readDirSync(dir)]
    .filter((e) => e.name.endsWith(".json"))
    .map((e) => e.name)
    .sort()
    .map((name) => [name.slice(0, -5), JSON.parse(Deno.readTextFileSync(new URL(name, dir))) as T]);
}

async function withStore(fn: (store: Store, dir: string) => void | Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-dir-tree-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await fn(store, dir);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

function treeRows(store: Store): number {
  return (store.db.prepare("SELECT count(*) AS n FROM objects WHERE kind = 'tree'").get() as {
    n: number;
  }).n;
}

/** A workspace with `width` directories in every directory down to `levels`, two files in each. */
async function writeTreeOfDirs(root: string, levels: number, width: number): Promise<string[]> {
  const dirs: string[] = [];
  const make = async (dir: string, level: number): Promise<void> => {
    dirs.push(dir);
    await Deno.mkdir(join(root, dir), { recursive: true });
    await Deno.writeTextFile(join(root, dir, "a.txt"), `a of ${dir}\n`);
    await Deno.writeTextFile(join(root, dir, "b.txt"), `b of ${dir}\n`);
    if (level === levels) return;
    for (let i = 0; i < width; i++) await make(dir === "" ? `d${i}` : `${dir}/d${i}`, level + 1);
  };
  await make("", 0);
  return dirs;
}

for (const [name, vector] of vectors<ValidVector>("valid")) {
  Deno.test(`splitManifest() writes exactly the objects of vector ${name}, and Store.getTree() expands them back`, async () => {
    const manifest = validateTree(vector.manifest);
    const split = splitManifest(manifest);
    assertEquals(
      split.objects.map((o) => ({ id: o.id, json: new TextDecoder().decode(o.bytes) })),
      vector.objects,
      vector.description,
    );
    assertEquals(split.rootId, vector.root);
    for (const object of vector.objects) {
      assertEquals(sha256Hex(encoder.encode(object.json)), object.id);
      assertEquals(parseTreeObject(encoder.encode(object.json)).version, 2);
    }
    await withStore((store) => {
      // Read from the vector's own bytes, not from what the writer stored.
      store.transaction("t", () => {
        for (const object of vector.objects) {
          store.putTreeBytes(object.id, encoder.encode(object.json));
        }
      });
      assertEquals(store.getTree(vector.root), manifest);
      assertEquals(store.transaction("t", () => store.putTree(manifest)), vector.root);
    });
  });
}

for (const [name, vector] of vectors<InvalidVector>("invalid")) {
  Deno.test(`Store.getTree() refuses a hostile directory tree (${name}): ${vector.description}`, async () => {
    await withStore((store) => {
      store.transaction("t", () => {
        for (const object of vector.objects) {
          const bytes = encoder.encode(object.data);
          if (object.kind === "blob") store.putBlob(bytes);
          else store.putTreeBytes(sha256Hex(bytes), bytes);
        }
      });
      const before = treeRows(store);
      assertThrows(() => store.getTree(vector.root), CtxsnapError, vector.error);
      assertEquals(treeRows(store), before, "nothing written on refusal");
    });
  });

  Deno.test(`Store.checkTree() refuses a hostile directory tree (${name}) as Store.getTree() does`, async () => {
    await withStore((store) => {
      store.transaction("t", () => {
        for (const object of vector.objects) {
          const bytes = encoder.encode(object.data);
          if (object.kind === "blob") store.putBlob(bytes);
          else store.putTreeBytes(sha256Hex(bytes), bytes);
        }
      });
      // Checked without expanding (verify, import), with and without a memo of what it read.
      assertThrows(() => store.checkTree(vector.root), CtxsnapError, vector.error);
      const memo = new Map();
      assertThrows(() => store.checkTree(vector.root, { memo }), CtxsnapError, vector.error);
      assertThrows(() => store.checkTree(vector.root, { memo }), CtxsnapError, vector.error);
    });
  });
}

Deno.test("validateDirTree() refuses an entry name that folds to .git or .ctxsnap", () => {
  // Pinned here, not only through Store.getTree(): the expanded flat manifest is checked for
  // reserved paths again, which would hide this layer's check.
  for (const name of [".git", ".GIT", ".git.", "GIT~1", ".ctxsnap", ".ctx\u017fnap"]) {
    for (
      const entry of [{ name, type: "tree", tree: "a".repeat(64) }, {
        name,
        type: "symlink",
        target: "x",
      }]
    ) {
      assertThrows(
        () => validateDirTree({ version: 2, entries: [entry], skipped: [] }),
        CtxsnapError,
        "reserved",
      );
    }
  }
});

Deno.test("Store.getTree() refuses an expansion bomb while counting, before expanding it", async () => {
  const vector = vectors<InvalidVector>("invalid").find(([name]) => name === "expansion-bomb")![1];
  await withStore((store) => {
    store.transaction("t", () => {
      for (const object of vector.objects) {
        const bytes = encoder.encode(object.data);
        store.putTreeBytes(sha256Hex(bytes), bytes);
      }
    });
    // The counting pass names the root; a refusal only after expanding (the flat manifest's
    // own limit) would name the manifest instead, having built 4 million entries first.
    assertThrows(
      () => store.getTree(vector.root),
      CtxsnapError,
      `Invalid tree ${JSON.stringify(vector.root)}: more than 2000000 entries`,
    );
  });
});

Deno.test("a capture stores one tree per directory and an unchanged directory is the same object", async () => {
  await withStore(async (store, dir) => {
    await writeTreeOfDirs(dir, 2, 3); // root, 3 dirs, 9 below them: 13 directories
    const first = store.transaction("c", () => captureWorkspace(store));
    assertEquals(treeRows(store), 13);
    assertEquals(store.getTreeObject(first.treeId).tree.version, 2);
    await Deno.writeTextFile(join(dir, "d1/d2/a.txt"), "edited\n");
    const second = store.transaction("c", () => captureWorkspace(store));
    // Only d1/d2, d1 and the root are new.
    assertEquals(treeRows(store), 16);
    const sub = (id: string, name: string) => {
      const tree = store.getTreeObject(id).tree;
      assert(tree.version === 2);
      const entry = tree.entries.find((e) => e.name === name);
      assert(entry?.type === "tree");
      return entry.tree;
    };
    assertEquals(sub(first.treeId, "d0"), sub(second.treeId, "d0"));
    assert(sub(first.treeId, "d1") !== sub(second.treeId, "d1"));
    assertEquals(store.getTree(second.treeId), second.tree);
  });
});

Deno.test("a one-file change through the incremental capture writes only the trees on its path, as a full capture would", async () => {
  await withStore(async (store, dir) => {
    await writeTreeOfDirs(dir, 3, 3);
    const incremental = new IncrementalCapture(store);
    try {
      store.transaction("c", () => incremental.capture());
      const before = treeRows(store);
      await Deno.writeTextFile(join(dir, "d2/d0/d1/b.txt"), "edited\n");
      const next = store.transaction("c", () => incremental.capture());
      assertEquals(treeRows(store) - before, 4, "d2/d0/d1, d2/d0, d2 and the root");
      const full = store.transaction("c", () => captureWorkspace(store, { persist: false }));
      assertEquals(next.treeId, full.treeId);
      assertEquals(next.tree, full.tree);
      // A file moved to a new directory, and a directory removed.
      await Deno.mkdir(join(dir, "new"));
      await Deno.rename(join(dir, "d0/a.txt"), join(dir, "new/a.txt"));
      await Deno.remove(join(dir, "d1"), { recursive: true });
      const moved = store.transaction("c", () => incremental.capture());
      const again = store.transaction("c", () => captureWorkspace(store, { persist: false }));
      assertEquals(moved.treeId, again.treeId);
      assertEquals(store.getTree(moved.treeId), again.tree);
    } finally {
      incremental.close();
    }
  });
});

Deno.test("diffStoredTrees() between snapshots one file apart reads O(depth) trees", async () => {
  await withStore(async (store, dir) => {
    await writeTreeOfDirs(dir, 4, 3); // 121 directories, 5 levels
    const a = store.transaction("c", () => captureWorkspace(store)).treeId;
    await Deno.writeTextFile(join(dir, "d1/d2/d0/d1/a.txt"), "edited\n");
    const b = store.transaction("c", () => captureWorkspace(store)).treeId;
    store.treeReads = 0;
    const result = diffStoredTrees(store, a, b);
    assertEquals(result.diff, { added: [], changed: ["d1/d2/d0/d1/a.txt"], removed: [] });
    assert(store.treeReads <= 2 * 5, `read ${store.treeReads} trees for a depth of 5`);
    // The same answer as comparing the whole manifests.
    store.treeReads = 0;
    const whole = diffStoredTrees(store, b, a);
    assertEquals(whole.diff.changed, ["d1/d2/d0/d1/a.txt"]);
    assertEquals(whole.left.entries.map((e) => e.path), ["d1/d2/d0/d1/a.txt"]);
  });
});

Deno.test("diffStoredTrees() reports a file replaced by a directory as the flat comparison does", async () => {
  await withStore(async (store, dir) => {
    await Deno.writeTextFile(join(dir, "x"), "file\n");
    await Deno.writeTextFile(join(dir, "keep.txt"), "k\n");
    const a = store.transaction("c", () => captureWorkspace(store));
    await Deno.remove(join(dir, "x"));
    await Deno.mkdir(join(dir, "x"));
    await Deno.writeTextFile(join(dir, "x/inner.txt"), "inner\n");
    const b = store.transaction("c", () => captureWorkspace(store));
    const result = diffStoredTrees(store, a.treeId, b.treeId);
    assertEquals(result.diff, { added: ["x/inner.txt"], changed: [], removed: ["x"] });
  });
});

Deno.test("reachableObjects() yields every tree and blob once, children before their parents", async () => {
  await withStore(async (store, dir) => {
    await writeTreeOfDirs(dir, 2, 2);
    const one = store.transaction("c", () => captureWorkspace(store)).treeId;
    await Deno.writeTextFile(join(dir, "d0/d1/a.txt"), "edited\n");
    const two = store.transaction("c", () => captureWorkspace(store)).treeId;
    const order: string[] = [];
    const trees = new Set<string>();
    for (const object of reachableObjects(store, [one, two])) {
      order.push(object.id);
      if (object.kind === "tree") trees.add(object.id);
    }
    assertEquals(new Set(order).size, order.length, "each object once");
    for (const [i, id] of order.entries()) {
      const tree = trees.has(id) ? store.getTreeObject(id).tree : null;
      if (tree?.version !== 2) continue;
      for (const entry of tree.entries) {
        const at = order.indexOf(
          entry.type === "file" ? entry.blob : entry.type === "tree" ? entry.tree : "",
        );
        if (entry.type !== "symlink") assert(at >= 0 && at < i, "a child comes first");
      }
    }
    // The second root shares all but the trees on the edited path.
    const seen = new Set<string>();
    [...reachableObjects(store, [one], { seen })];
    const extra = [...reachableObjects(store, [two], { seen })];
    assertEquals(extra.filter((o) => o.kind === "tree").length, 3);
    assertEquals(extra.filter((o) => o.kind === "blob").length, 1);
  });
});

Deno.test("gc keeps the directory trees a snapshot reaches and removes the ones only a forgotten snapshot reached", async () => {
  await withStore(async (store, dir) => {
    const signer = await makeSigner();
    await writeTreeOfDirs(dir, 2, 2);
    const first = await createSnapshot(store, signer, { reason: "one" });
    await Deno.writeTextFile(join(dir, "d0/d1/a.txt"), "edited\n");
    const second = await createSnapshot(store, signer, { reason: "two" });
    forgetSnapshots(store, [first.id]);
    const result = collectGarbage(store);
    assertEquals(result.trees, 3, "d0/d1, d0 and the root of the forgotten snapshot");
    const report = await verifyAll(store, TRUST_ALL);
    assertEquals(report.problems, []);
    assert(report.snapshots.every((s) => s.valid));
    assertEquals(store.getTree(second.envelope.body.workspace!.tree).entries.length, 14);
  });
});

Deno.test("a store whose snapshots name flat (version 1) trees still verifies, diffs, restores, publishes and keeps them through gc", async () => {
  await withStore(async (store, dir) => {
    const signer = await makeSigner();
    await writeTreeOfDirs(dir, 1, 2);
    // What the previous release wrote: one flat manifest per snapshot.
    const legacy = await createSnapshot(store, signer, {
      reason: "flat",
      capture: () => {
        const captured = captureWorkspace(store);
        const flat = captured.tree;
        const id = treeId(flat);
        store.putTreeBytes(id, treeBytes(flat));
        return { ...captured, treeId: id };
      },
    });
    const flatId = legacy.envelope.body.workspace!.tree;
    assertEquals(store.getTreeObject(flatId).tree.version, 1);
    await Deno.writeTextFile(join(dir, "d1/b.txt"), "edited\n");
    const modern = await createSnapshot(store, signer, { reason: "directories" });
    const rootId = modern.envelope.body.workspace!.tree;
    assertEquals(store.getTreeObject(rootId).tree.version, 2);
    // Diff across the two versions, both ways.
    assertEquals(diffStoredTrees(store, flatId, rootId).diff.changed, ["d1/b.txt"]);
    assertEquals(diffStoredTrees(store, rootId, flatId).diff.changed, ["d1/b.txt"]);
    // gc keeps the flat manifest and its blobs (it drops only the directory
    // trees the legacy capture above stored and no snapshot names).
    collectGarbage(store);
    assert(store.hasObject(flatId));
    assertEquals((await verifyAll(store, TRUST_ALL)).problems, []);
    const out = join(dir, "..", `${dir.split("/").pop()}-out`);
    try {
      materialize(store, flatId, out);
      assertEquals(await Deno.readTextFile(join(out, "d1/b.txt")), "b of d1\n");
      // A bundle holding both versions verifies and imports into another store.
      const bundle = await publishToFile(store, modern.id, {
        history: "all",
        withWorkspace: true,
        file: join(out, "both.ctxbundle"),
      });
      await withStore(async (other) => {
        const imported = await importFile(other, bundle.path, TRUST_ALL, { allowUntrusted: true });
        assertEquals(imported.imported.length, 2);
        assertEquals(other.getTree(flatId), store.getTree(flatId));
        assertEquals(other.getTree(rootId), store.getTree(rootId));
        assertEquals((await verifyAll(other, TRUST_ALL)).problems, []);
        assertEquals(
          (await readEnvelope(other, legacy.id)).body.workspace!.tree,
          flatId,
          "the signed body still names the flat tree",
        );
      });
    } finally {
      await Deno.remove(out, { recursive: true }).catch(() => {});
    }
  });
});

/**
 * A signed snapshot naming root `rootId` whose tree objects are `trees`, as a
 * bundle's bytes (written directly: a store would refuse such a hierarchy).
 */
async function craftedBundle(
  store: Store,
  rootId: string,
  trees: Map<string, Uint8Array>,
  blob: Uint8Array,
): Promise<Uint8Array> {
  const signer = await makeSigner();
  const made = await createSnapshot(store, signer, {
    reason: "crafted",
    capture: () => ({
      treeId: rootId,
      tree: { version: 1, entries: [], skipped: [] },
      skipped: [],
      stats: { files: 1, symlinks: 0, skipped: 0, bytes: blob.byteLength, hashed: 0, reused: 0 },
    }),
  });
  const chunks: Uint8Array[] = [];
  writeBundle({
    envelopes: [made.envelope],
    trees,
    blobs: new Map([[sha256Hex(blob), blob.byteLength]]),
    streamBlob: (_id, onChunk) => onChunk(blob),
  }, (chunk) => chunks.push(chunk.slice()));
  return concatBytes(chunks);
}

const BLOB = encoder.encode("x\n");
const fileEntry = {
  name: "x.txt",
  type: "file",
  blob: sha256Hex(BLOB),
  size: BLOB.byteLength,
  mode: 420,
};
const treeObject = (value: unknown) => {
  const bytes = canonicalBytes(value as never);
  return { id: sha256Hex(bytes), bytes };
};

Deno.test("readBundle() refuses a directory tree whose subtree the bundle does not include", async () => {
  await withStore(async (store) => {
    const sub = treeObject({ version: 2, entries: [fileEntry], skipped: [] });
    const root = treeObject({
      version: 2,
      entries: [{ name: "d", type: "tree", tree: sub.id }],
      skipped: [],
    });
    const bytes = await craftedBundle(store, root.id, new Map([[root.id, root.bytes]]), BLOB);
    await assertRejects(
      () => readBundle(memoryReader(bytes)),
      CtxsnapError,
      "which is not included",
    );
  });
});

Deno.test("readBundle() refuses a directory tree whose subtree is a flat (version 1) manifest", async () => {
  await withStore(async (store) => {
    const flat = treeObject({
      version: 1,
      entries: [{
        path: "x.txt",
        type: "file",
        blob: fileEntry.blob,
        size: fileEntry.size,
        mode: 420,
      }],
      skipped: [],
    });
    const root = treeObject({
      version: 2,
      entries: [{ name: "d", type: "tree", tree: flat.id }],
      skipped: [],
    });
    const trees = new Map([[root.id, root.bytes], [flat.id, flat.bytes]]);
    const bytes = await craftedBundle(store, root.id, trees, BLOB);
    await assertRejects(
      () => readBundle(memoryReader(bytes)),
      CtxsnapError,
      "not a version 2 tree",
    );
  });
});

Deno.test("readBundle() refuses directory trees nested deeper than 256", async () => {
  await withStore(async (store) => {
    let node = treeObject({ version: 2, entries: [fileEntry], skipped: [] });
    const trees = new Map([[node.id, node.bytes]]);
    for (let i = 0; i < 257; i++) {
      node = treeObject({
        version: 2,
        entries: [{ name: "d", type: "tree", tree: node.id }],
        skipped: [],
      });
      trees.set(node.id, node.bytes);
    }
    const bytes = await craftedBundle(store, node.id, trees, BLOB);
    await assertRejects(() => readBundle(memoryReader(bytes)), CtxsnapError, "deeper than 256");
  });
});

Deno.test("readBundle() refuses a directory tree naming an empty subtree", async () => {
  await withStore(async (store) => {
    const empty = treeObject({ version: 2, entries: [], skipped: [] });
    const root = treeObject({
      version: 2,
      entries: [{ name: "e", type: "tree", tree: empty.id }, fileEntry],
      skipped: [],
    });
    const trees = new Map([[root.id, root.bytes], [empty.id, empty.bytes]]);
    const bytes = await craftedBundle(store, root.id, trees, BLOB);
    await assertRejects(() => readBundle(memoryReader(bytes)), CtxsnapError, "empty subtree");
  });
});

Deno.test("readBundle() refuses a few directory trees that expand to more than 2,000,000 entries", async () => {
  await withStore(async (store) => {
    let node = treeObject({ version: 2, entries: [fileEntry], skipped: [] });
    const trees = new Map([[node.id, node.bytes]]);
    for (let i = 0; i < 22; i++) {
      node = treeObject({
        version: 2,
        entries: [{ name: "a", type: "tree", tree: node.id }, {
          name: "b",
          type: "tree",
          tree: node.id,
        }],
        skipped: [],
      });
      trees.set(node.id, node.bytes);
    }
    const bytes = await craftedBundle(store, node.id, trees, BLOB);
    await assertRejects(
      () => readBundle(memoryReader(bytes)),
      CtxsnapError,
      "more than 2000000 entries",
    );
  });
});

/**
 * Feeds a flat manifest to a {@linkcode DirTreeWriter} as a walk would: one
 * directory at a time, its skipped records in `recordOrder` among its
 * entries. Returns the root id and the ids of the objects handed over.
 */
function writeStreamed(
  manifest: TreeManifest,
  recordOrder: "sorted" | "reversed" = "sorted",
  onObject: (object: DirObject) => void = () => {},
): { rootId: string; ids: Set<string>; totals: { entries: number; skipped: number } } {
  const ids = new Set<string>();
  const writer = new DirTreeWriter((object) => {
    ids.add(object.id);
    onObject(object);
  });
  const dirOf = (path: string) => path.slice(0, Math.max(0, path.lastIndexOf("/")));
  // Records of one directory in a row, then reversed within the row if asked.
  const items: ({ entry: TreeEntry } | { record: SkippedEntry })[] = [];
  let e = 0;
  let k = 0;
  while (e < manifest.entries.length || k < manifest.skipped.length) {
    const entry = manifest.entries[e];
    const record = manifest.skipped[k];
    if (entry !== undefined && (record === undefined || entry.path <= record.path)) {
      items.push({ entry });
      e++;
      continue;
    }
    const run: SkippedEntry[] = [];
    while (
      manifest.skipped[k] !== undefined &&
      dirOf(manifest.skipped[k]!.path) === dirOf(record!.path) &&
      (entry === undefined || manifest.skipped[k]!.path < entry.path)
    ) run.push(manifest.skipped[k++]!);
    if (recordOrder === "reversed") run.reverse();
    for (const r of run) items.push({ record: r });
  }
  for (const item of items) {
    if ("entry" in item) writer.addEntry(item.entry);
    else writer.addSkipped(item.record);
  }
  const { rootId, entries, skipped } = writer.finish();
  return { rootId, ids, totals: { entries, skipped } };
}

for (const [name, vector] of vectors<ValidVector>("valid")) {
  Deno.test(`DirTreeWriter streams vector ${name} into exactly splitManifest()'s objects`, () => {
    const manifest = validateTree(vector.manifest);
    for (const order of ["sorted", "reversed"] as const) {
      const streamed = writeStreamed(manifest, order);
      assertEquals(streamed.rootId, vector.root, `${vector.description} (${order})`);
      assertEquals([...streamed.ids].sort(), vector.objects.map((o) => o.id).sort());
      assertEquals(streamed.totals, {
        entries: manifest.entries.length,
        skipped: manifest.skipped.length,
      });
    }
  });
}

/** Entries and skipped records whose names order differently as UTF-8 bytes and as UTF-16. */
function awkwardManifest(): TreeManifest {
  const blob = (n: number) => sha256Hex(encoder.encode(`blob ${n}`));
  const paths = [
    "a-b/x",
    "a-b0",
    "a.b",
    "a/b-",
    "a/b-c/z",
    "a/b/c",
    "a/b.c",
    "a0",
    "dir/\u{1F600}",
    "dir/\uFFFF",
    "dir/\u00e9/f",
    "dir/e\u0301/f",
    "dir/sub/deep/er/file",
    "z/\n newline",
  ];
  const entries: TreeEntry[] = paths.sort().map((path, i) =>
    i % 4 === 3
      ? { path, type: "symlink" as const, target: `../target ${i}` }
      : { path, type: "file" as const, blob: blob(i), size: i, mode: i % 2 ? 0o755 : 0o644 }
  );
  const skipped: SkippedEntry[] = [
    { path: "a/b/.env", reason: "secret" },
    { path: "a/b/fifo", reason: "special_file" },
    { path: "a/b/key.pem", reason: "secret" },
    { path: "a/b/key.pem", reason: "secret_content" },
    { path: "a-b/node_modules", reason: "excluded_dir" },
    { path: "bad\\dir/x", reason: "unsafe_name" },
    { path: "dir/\uFFFD\uFFFD", reason: "unsafe_name" },
    { path: "dir/sub/deep/er/.git", reason: "reserved" },
    { path: "only-skipped/inside/dir", reason: "ignored" },
    { path: "z/.env.local", reason: "secret" },
  ].sort(compareSkipped);
  return validateTree({ version: 1, entries, skipped });
}

Deno.test("DirTreeWriter gives splitManifest()'s root for names that sort differently as bytes and as UTF-16, '-' against '/', and skipped records in nested directories", () => {
  const manifest = awkwardManifest();
  const split = splitManifest(manifest);
  for (const order of ["sorted", "reversed"] as const) {
    const streamed = writeStreamed(manifest, order);
    assertEquals(streamed.rootId, split.rootId, order);
    assertEquals([...streamed.ids].sort(), split.objects.map((o) => o.id).sort());
  }
});

Deno.test("DirTreeWriter records two identical skipped records once, as sortSkipped does", () => {
  const writer = new DirTreeWriter(() => {});
  writer.addEntry({ path: "d/a", type: "symlink", target: "x" });
  writer.addSkipped({ path: "d/\uFFFD", reason: "unsafe_name" });
  writer.addSkipped({ path: "d/\uFFFD", reason: "unsafe_name" });
  const { rootId, skipped } = writer.finish();
  assertEquals(skipped, 1);
  assertEquals(
    rootId,
    splitManifest(validateTree({
      version: 1,
      entries: [{ path: "d/a", type: "symlink", target: "x" }],
      skipped: [{ path: "d/\uFFFD", reason: "unsafe_name" }],
    })).rootId,
  );
});

const hostileStreams: [string, (w: DirTreeWriter) => void][] = [
  ["a dot-dot segment", (w) => w.addEntry(file("a/../etc/passwd"))],
  ["an absolute path", (w) => w.addEntry(file("/etc/passwd"))],
  ["a backslash", (w) => w.addEntry(file("a\\b"))],
  ["an empty segment", (w) => w.addEntry(file("a//b"))],
  ["a lone surrogate", (w) => w.addEntry(file("a/\uD800"))],
  ["an entry inside .git", (w) => w.addEntry(file("src/.git/hooks/pre-commit"))],
  ["an entry inside a folded .ctxsnap", (w) => w.addEntry(file(".CTXSNAP/index.db"))],
  ["a duplicate entry", (w) => {
    w.addEntry(file("a/x"));
    w.addEntry(file("a/x"));
  }],
  ["entries out of order", (w) => {
    w.addEntry(file("b"));
    w.addEntry(file("a"));
  }],
  ["an entry below a file entry", (w) => {
    w.addEntry(file("a"));
    w.addEntry(file("a/x"));
  }],
  ["a blob that is not a SHA-256 id", (w) => w.addEntry({ ...file("a"), blob: "beef" })],
  ["a mode beyond 0o7777", (w) => w.addEntry({ ...file("a"), mode: 0o10000 })],
  ["an empty symlink target", (w) => w.addEntry({ path: "l", type: "symlink", target: "" })],
  ["a skipped record with an empty reason", (w) => w.addSkipped({ path: "x", reason: "" })],
  ["a directory entered again after it was left", (w) => {
    w.addEntry(file("a/x"));
    w.addEntry(file("b/y"));
    w.addSkipped({ path: "a/z", reason: "secret" });
  }],
  ["a subdirectory of a directory already left", (w) => {
    w.addEntry(file("a/x"));
    w.addEntry(file("b"));
    w.addSkipped({ path: "a/y/z", reason: "secret" });
  }],
];

function file(path: string): FileEntry {
  return { path, type: "file", blob: "0".repeat(64), size: 0, mode: 0o644 };
}

for (const [what, feed] of hostileStreams) {
  Deno.test(`DirTreeWriter refuses ${what}, and a store transaction around it keeps nothing`, async () => {
    // Each refusal is also one validateTree() or splitManifest() makes (or, for
    // a directory met twice, one a sorted flat manifest cannot express).
    await withStore((store) => {
      const rows = treeRows(store);
      assertThrows(() =>
        store.transaction("t", () => {
          const writer = new DirTreeWriter((o) => store.putTreeBytes(o.id, o.bytes));
          writer.addEntry(file("0/first")); // a directory built and stored before the refusal
          writer.addEntry(file("00"));
          feed(writer);
          writer.finish();
        }), CtxsnapError);
      assertEquals(treeRows(store), rows);
    });
  });
}

Deno.test("splitManifest() and DirTreeWriter place a skipped record whose parent has an empty segment in the root under its whole path", () => {
  const manifest = validateTree({
    version: 1,
    entries: [],
    skipped: [{ path: "/x", reason: "unsafe_name" }, { path: "a//y", reason: "unsafe_name" }],
  });
  const split = splitManifest(manifest);
  assertEquals(split.objects.length, 1);
  const root = validateDirTree(JSON.parse(new TextDecoder().decode(split.objects[0]!.bytes)));
  assertEquals(root.skipped, [
    { name: "/x", reason: "unsafe_name" },
    { name: "a//y", reason: "unsafe_name" },
  ]);
  assertEquals(writeStreamed(manifest).rootId, split.rootId);
});

Deno.test("dirTreeBytes() writes exactly canonicalBytes() for files, symlinks, subtrees and skipped records, escapes and non-ASCII names included", () => {
  const blob = "ab".repeat(32);
  const tree = {
    version: 2 as const,
    entries: [
      { name: 'q"uote\\back', type: "file" as const, blob, size: 0, mode: 0o644 },
      {
        name: "tab\tnl\ncr\r\u0001\u001f",
        type: "file" as const,
        blob,
        size: 2 ** 53 - 1,
        mode: 0,
      },
      { name: "é日本😀", type: "symlink" as const, target: '../x\u007f\u2028/"y"' },
      { name: "sub", type: "tree" as const, tree: "cd".repeat(32) },
    ],
    skipped: [{ name: "a\u0000b", reason: "unsafe_name" }, { name: ".env", reason: "secret" }],
  };
  assertEquals(dirTreeBytes(tree), canonicalBytes(tree));
  const empty = { version: 2 as const, entries: [], skipped: [] };
  assertEquals(dirTreeBytes(empty), canonicalBytes(empty));
  // Every code unit below the surrogates, alone and inside a name.
  const each = {
    version: 2 as const,
    entries: [],
    skipped: Array.from({ length: 0xd800 }, (_, c) => ({
      name: `${String.fromCharCode(c)}x${String.fromCharCode(c)}`,
      reason: String.fromCharCode(c),
    })),
  };
  assertEquals(dirTreeBytes(each), canonicalBytes(each));
});

Deno.test("dirTreeBytes() refuses what canonicalBytes() refuses and serializes any other shape as it does", () => {
  const blob = "ab".repeat(32);
  const lone = { version: 2 as const, entries: [], skipped: [{ name: "\ud800", reason: "x" }] };
  assertThrows(() => dirTreeBytes(lone), CanonicalJsonError);
  const float = {
    version: 2 as const,
    entries: [{ name: "a", type: "file" as const, blob, size: 1.5, mode: 0o644 }],
    skipped: [],
  };
  assertThrows(() => dirTreeBytes(float), CanonicalJsonError);
  // An extra field is kept, as the generic serializer keeps it, never silently dropped.
  const extra = {
    version: 2 as const,
    entries: [{ name: "a", type: "file" as const, blob, size: 1, mode: 0o644, extra: 1 }],
    skipped: [],
  } as unknown as DirTree;
  assertEquals(dirTreeBytes(extra), canonicalBytes(extra));
  const missing = {
    version: 2 as const,
    entries: [{ name: "a", type: "symlink" as const, tree: "x" }],
    skipped: [],
  } as unknown as DirTree;
  assertEquals(dirTreeBytes(missing), canonicalBytes(missing));
  // A field present but not enumerable is not written by the generic serializer: nor here.
  const hidden = { name: "a", type: "file", blob, size: 1, extra: 1 };
  Object.defineProperty(hidden, "mode", { value: 0o644, enumerable: false });
  const withHidden = { version: 2, entries: [hidden], skipped: [] } as unknown as DirTree;
  assertEquals(dirTreeBytes(withHidden), canonicalBytes(withHidden));
});

Deno.test("DirTreeWriter builds the same objects whether a directory's entries come in order or not", () => {
  const blob = "0".repeat(64);
  const names = ["b", "a-", "a", "c.txt"];
  const objects = (order: string[]) => {
    const out: DirObject[] = [];
    const writer = new DirTreeWriter((object) => out.push(object));
    for (const name of order) {
      writer.addEntry({ path: `d/${name}`, type: "file", blob, size: 1, mode: 0o644 });
    }
    writer.finish();
    return out;
  };
  // The walk's (manifest) order; dirObject() takes entries in any order.
  const sorted = [...names].sort();
  const fromWriter = objects(sorted);
  const shuffled = dirObject(
    names.map((name) => ({ name, type: "file" as const, blob, size: 1, mode: 0o644 })),
    [],
  );
  assertEquals(shuffled.id, fromWriter[0]!.id);
  assertEquals(shuffled.bytes, fromWriter[0]!.bytes);
});

/** A reader over crafted directory objects, by id. */
function objectReader(objects: { id: string; bytes: Uint8Array }[]) {
  const byId = new Map(objects.map((o) => [o.id, parseTreeObject(o.bytes)]));
  return (id: string) => {
    const tree = byId.get(id);
    if (tree === undefined) throw new Error(`no tree ${id}`);
    return tree;
  };
}

Deno.test("checkDirTree() refuses a root whose own files take it past 2,000,000 entries after its last subtree, as expandDirTree() does", () => {
  const files = Array.from({ length: 2000 }, (_, i) => ({ ...fileEntry, name: `f${1000 + i}` }));
  const leaf = treeObject({ version: 2, entries: files, skipped: [] });
  const wide = treeObject({
    version: 2,
    entries: Array.from({ length: 1000 }, (_, i) => ({
      name: `d${1000 + i}`,
      type: "tree",
      tree: leaf.id,
    })),
    skipped: [],
  });
  // Exactly 2,000,000 entries below "a", then one more file after it.
  const root = treeObject({
    version: 2,
    entries: [{ name: "a", type: "tree", tree: wide.id }, { ...fileEntry, name: "b" }],
    skipped: [],
  });
  const read = objectReader([leaf, wide, root]);
  assertThrows(
    () => checkDirTree(root.id, read(root.id) as DirTree, read),
    CtxsnapError,
    "more than 2000000 entries",
  );
});

Deno.test("checkDirTree() with a shared memo refuses a root that an earlier, refused root named as a subtree", () => {
  // "x" holds the skipped record "a/b" and a directory "a" holding the record "b": both
  // flatten to "a/b", so x is refused as a root, and so is any root above it.
  const inner = treeObject({ version: 2, entries: [], skipped: [{ name: "b", reason: "secret" }] });
  const x = treeObject({
    version: 2,
    entries: [{ name: "a", type: "tree", tree: inner.id }],
    skipped: [{ name: "a/b", reason: "secret" }],
  });
  const outer = treeObject({
    version: 2,
    entries: [{ name: "p", type: "tree", tree: x.id }],
    skipped: [],
  });
  const read = objectReader([inner, x, outer]);
  assertThrows(() => checkDirTree(x.id, read(x.id) as DirTree, read), CtxsnapError);
  const memo = new Map();
  assertThrows(
    () => checkDirTree(outer.id, read(outer.id) as DirTree, read, { memo }),
    CtxsnapError,
  );
  assertThrows(() => checkDirTree(x.id, read(x.id) as DirTree, read, { memo }), CtxsnapError);
});

Deno.test("Store.putTree() refuses a flat manifest whose skipped record lies below a file entry, storing nothing", async () => {
  // Valid as a flat manifest, but its directory form would need a subtree "a" beside the file
  // "a", which every reader refuses: the writer refuses it instead of storing an unreadable tree.
  const blob = "0".repeat(64);
  const manifest: TreeManifest = {
    version: 1,
    entries: [{ path: "a", type: "file", blob, size: 1, mode: 0o644 }],
    skipped: [{ path: "a/s", reason: "secret" }],
  };
  validateTree(manifest);
  await withStore((store) => {
    const before = treeRows(store);
    assertThrows(
      () => store.transaction("t", () => store.putTree(manifest)),
      CtxsnapError,
      'a skipped record lies below the entry "a"',
    );
    assertEquals(treeRows(store), before, "nothing written on refusal");
  });
  for (const recordFirst of [false, true]) {
    const writer = new DirTreeWriter(() => {});
    assertThrows(() => {
      if (recordFirst) writer.addSkipped(manifest.skipped[0]!);
      writer.addEntry(manifest.entries[0]!);
      if (!recordFirst) writer.addSkipped(manifest.skipped[0]!);
      writer.finish();
    }, CtxsnapError);
  }
});
