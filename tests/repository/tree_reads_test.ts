/**
 * How many tree objects each reader of directory trees reads
 * (`Store.treeReads`), on a generated workspace of 40 directories four
 * levels deep: an operation on two snapshots one file apart must read the
 * trees on that file's path (O(depth)), not the directories of the whole
 * workspace, and a walk over many snapshots must read each distinct tree
 * once. docs/BENCHMARKS.md ("Unchanged subtrees") reports these counts.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { CtxsnapError } from "../../lib/errors.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { canonicalBytes } from "../../lib/encoding/canonical_json.ts";
import { expandFrom } from "../../lib/repository/diff.ts";
import { writeObjectBytes } from "../_objects.ts";
import { Store } from "../../lib/repository/store.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { type TrustPolicy, verifyAll, verifySnapshot } from "../../lib/history/verify.ts";
import { collectGarbage, liveObjects } from "../../lib/repository/gc.ts";
import { publishToFile } from "../../lib/share/publish.ts";
import { importFile } from "../../lib/share/import.ts";
import { exportLeanCtx } from "../../lib/share/leanctx_export.ts";
import { timelineFromStore } from "../../lib/view/model.ts";
import { restoreSnapshot } from "../../lib/workspace/move/restore.ts";
import { undo } from "../../lib/workspace/move/undo.ts";
import { switchTo } from "../../lib/workspace/move/switch.ts";
import { forkBranch } from "../../lib/history/branch.ts";
import type { DirTreeFacts } from "../../lib/format/tree_object.ts";
import type { Signer } from "../../lib/format/envelope.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { toHex } from "../../lib/encoding/hex.ts";

const TRUST_ALL: TrustPolicy = { isTrusted: () => true, nameOf: () => "test" };
/** Directories of the generated workspace: 1 + 3 + 9 + 27. */
const DIRS = 40;
/** Trees on the path of a file three directories down: the root and three. */
const DEPTH = 4;
/** The file the one-file changes edit. */
const EDITED = "d1/d2/d0/a.txt";

async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

/** Three directories in every directory down to three levels, two files in each. */
async function writeWorkspace(root: string): Promise<void> {
  const make = async (dir: string, level: number): Promise<void> => {
    await Deno.mkdir(join(root, dir), { recursive: true });
    await Deno.writeTextFile(join(root, dir, "a.txt"), `a of ${dir}\n`);
    await Deno.writeTextFile(join(root, dir, "b.txt"), `b of ${dir}\n`);
    if (level === 3) return;
    for (let i = 0; i < 3; i++) await make(dir === "" ? `d${i}` : `${dir}/d${i}`, level + 1);
  };
  await make("", 0);
}

function treeRows(store: Store): number {
  return (store.db.prepare("SELECT count(*) AS n FROM objects WHERE kind = 'tree'").get() as {
    n: number;
  }).n;
}

interface Fixture {
  store: Store;
  dir: string;
  signer: Signer;
  /** Snapshot ids, oldest first, each one file apart from the one before. */
  ids: string[];
  /** Their root trees. */
  roots: string[];
}

/** A store holding `count` snapshots of the generated workspace, each one edit of {@linkcode EDITED} apart. */
async function withSnapshots(
  count: number,
  fn: (fixture: Fixture) => void | Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-tree-reads-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await writeWorkspace(dir);
    const signer = await makeSigner();
    const ids: string[] = [];
    const roots: string[] = [];
    for (let i = 0; i < count; i++) {
      if (i > 0) await Deno.writeTextFile(join(dir, EDITED), `edit ${i}\n`);
      const made = await createSnapshot(store, signer, { reason: `step ${i}` });
      ids.push(made.id);
      roots.push(made.envelope.body.workspace!.tree);
    }
    assertEquals(treeRows(store), DIRS + (count - 1) * DEPTH, "the fixture's trees");
    await fn({ store, dir, signer, ids, roots });
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("verifySnapshot() of a snapshot one file apart from one already verified reads only the trees on that file's path", async () => {
  await withSnapshots(2, async ({ store, ids }) => {
    const blobs = new Map<string, boolean>();
    const trees = new Map<string, DirTreeFacts>();
    store.treeReads = 0;
    const first = await verifySnapshot(store, ids[0]!, TRUST_ALL, blobs, trees);
    assert(first.valid, first.problems.join("; "));
    assertEquals(store.treeReads, DIRS, "the first snapshot reads each of its trees once");
    store.treeReads = 0;
    const second = await verifySnapshot(store, ids[1]!, TRUST_ALL, blobs, trees);
    assert(second.valid, second.problems.join("; "));
    assertEquals(store.treeReads, DEPTH, "the second reads its new trees only");
    assertEquals(second.checked.files, first.checked.files, "the totals come from the memo");
  });
});

Deno.test("verifyAll() reads each tree object once, not once per snapshot", async () => {
  await withSnapshots(5, async ({ store }) => {
    store.treeReads = 0;
    const report = await verifyAll(store, TRUST_ALL);
    assertEquals(report.problems, []);
    assertEquals(report.snapshots.length, 5);
    assert(report.snapshots.every((s) => s.valid && s.checked.files === 80));
    assertEquals(report.objects.checked, treeRows(store) + 80 + 4);
    assertEquals(store.treeReads, treeRows(store), "every tree read once");
  });
});

Deno.test("verifyAll() still names the path of a damaged blob in every snapshot whose shared subtree holds it", async () => {
  await withSnapshots(3, async ({ store, roots }) => {
    const entry = store.getTree(roots[0]!).entries.find((e) => e.path === "d0/d1/b.txt")!;
    assert(entry.type === "file");
    writeObjectBytes(store.db, entry.blob, new TextEncoder().encode("b of d0/d1, damaged\n"));
    const report = await verifyAll(store, TRUST_ALL);
    assertEquals(report.snapshots.map((s) => s.valid), [false, false, false]);
    for (const snapshot of report.snapshots) {
      assertEquals(snapshot.problems, [
        `blob of "d0/d1/b.txt" (${entry.blob}) is missing or corrupt`,
      ]);
    }
  });
});

Deno.test("gc's mark phase reads each tree once across snapshots", async () => {
  await withSnapshots(5, ({ store, roots }) => {
    store.treeReads = 0;
    const live = liveObjects(store, roots);
    assertEquals(live.trees.size, treeRows(store));
    assertEquals(store.treeReads, treeRows(store), "each distinct tree once");
    store.treeReads = 0;
    assertEquals(collectGarbage(store).trees, 0);
    assertEquals(store.treeReads, treeRows(store), "collectGarbage() marks the same way");
  });
});

Deno.test("publish --history all writes each shared subtree once, and import checks each once", async () => {
  await withSnapshots(5, async ({ store, dir, ids }) => {
    const file = join(dir, "..", `${dir.split("/").pop()}.ctxbundle`);
    try {
      store.treeReads = 0;
      const bundle = await publishToFile(store, ids[4]!, {
        history: "all",
        withWorkspace: true,
        file,
      });
      assertEquals(store.treeReads, treeRows(store), "each tree read once to publish it");
      const other = await Deno.makeTempDir({ prefix: "ctxsnap-tree-reads-import-" });
      const into = Store.init(join(other, ".ctxsnap"), other);
      try {
        into.treeReads = 0;
        const imported = await importFile(into, bundle.path, TRUST_ALL, { allowUntrusted: true });
        assertEquals(imported.imported.length, 5);
        assertEquals(treeRows(into), treeRows(store), "each tree written once");
        assert(
          into.treeReads <= treeRows(store),
          `import read ${into.treeReads} trees for ${treeRows(store)} distinct ones`,
        );
      } finally {
        into.close();
        await Deno.remove(other, { recursive: true });
      }
    } finally {
      await Deno.remove(file).catch(() => {});
    }
  });
});

Deno.test("the Replay view reads O(depth) trees per step between snapshots one file apart", async () => {
  await withSnapshots(5, async ({ store, ids, roots }) => {
    store.treeReads = 0;
    const data = await timelineFromStore(store, { kind: "all" }, TRUST_ALL);
    assertEquals(data.snapshots.length, 5);
    assert(
      store.treeReads <= DIRS + 4 * 2 * DEPTH,
      `read ${store.treeReads} trees: the first whole (${DIRS}), then at most ${
        2 * DEPTH
      } per step`,
    );
    // Each later tree is sent as the one-file delta of its parent's.
    for (let i = 1; i < 5; i++) {
      const tree = data.trees[roots[i]!]!;
      assertEquals(tree.base, roots[i - 1]);
      assertEquals(tree.set.map((e) => e[0]), [EDITED]);
      assertEquals(tree.unset, []);
      assertEquals(tree.skipped, null);
      const step = data.snapshots.find((s) => s.id === ids[i])!;
      assertEquals(step.changes, { added: [], changed: [EDITED], removed: [] });
      assertEquals(step.parent_tree, roots[i - 1]);
    }
    assertEquals(data.trees[roots[0]!]!.set.length, 80);
  });
});

Deno.test("lean-ctx export reads no tree", async () => {
  await withSnapshots(2, async ({ store, signer, ids }) => {
    store.treeReads = 0;
    const out = await exportLeanCtx(store, signer, { format: "ctxsnap", id: ids[1]! });
    assert(out.text.length > 0);
    assertEquals(store.treeReads, 0);
  });
});

Deno.test("a restore of a snapshot one file apart over an unchanged workspace reads only the trees on that file's path", async () => {
  await withSnapshots(2, async ({ store, signer, ids }) => {
    store.treeReads = 0;
    const plan = await restoreSnapshot(store, signer, ids[0]!, { dryRun: true });
    assertEquals(plan.plan?.writes.map((w) => w.path), [EDITED]);
    // Three-way safe: the disk is walked whole (the stat cache re-reads no
    // file) and compared whole. Its root id is the baseline's, so the walk
    // stands in for the baseline, and the target is the baseline plus the
    // stored differences (DESIGN.md §5).
    assertEquals(store.treeReads, 2 * DEPTH, "the differing trees on both sides");
    store.treeReads = 0;
    const done = await restoreSnapshot(store, signer, ids[0]!);
    assertEquals(done.plan?.writes.map((w) => w.path), [EDITED]);
    assertEquals(await Deno.readTextFile(join(store.workspaceRoot, EDITED)), "a of d1/d2/d0\n");
    // Plan, record, apply and finish share those reads (Store.keepingTrees).
    assertEquals(store.treeReads, 2 * DEPTH, "nothing read again after the plan");
  });
});

Deno.test("a restore over a workspace edited since its baseline reads the baseline and still sees the edit", async () => {
  await withSnapshots(2, async ({ store, signer, ids, dir }) => {
    await Deno.writeTextFile(join(dir, EDITED), "local work\n");
    await Deno.writeTextFile(join(dir, "d0/d0/d0/a.txt"), "more local work\n");
    store.treeReads = 0;
    const plan = await restoreSnapshot(store, signer, ids[0]!, { dryRun: true });
    assertEquals(store.treeReads, DIRS + 2 * DEPTH, "the baseline whole: the disk is not it");
    assertEquals(plan.plan?.conflicts.map((c) => c.path), [EDITED]);
    assertEquals(plan.plan?.preserved, ["d0/d0/d0/a.txt"]);
    await assertRejects(() => restoreSnapshot(store, signer, ids[0]!), CtxsnapError);
    assertEquals(await Deno.readTextFile(join(dir, EDITED)), "local work\n");
    assertEquals(await Deno.readTextFile(join(dir, "d0/d0/d0/a.txt")), "more local work\n");
  });
});

Deno.test("Store.checkTree() with a shared memo refuses an empty root named as another root's subtree", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-tree-reads-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    const put = (text: string) => {
      const bytes = new TextEncoder().encode(text);
      const id = sha256Hex(bytes);
      store.transaction("t", () => store.putTreeBytes(id, bytes));
      return id;
    };
    const empty = put('{"entries":[],"skipped":[],"version":2}');
    const naming = put(
      `{"entries":[{"name":"x","tree":"${empty}","type":"tree"}],"skipped":[],"version":2}`,
    );
    const memo = new Map<string, DirTreeFacts>();
    assertEquals(store.checkTree(empty, { memo }).entries, 0, "an empty root is a valid tree");
    assertThrows(() => store.checkTree(naming, { memo }), CtxsnapError, "is empty");
    assertThrows(() => store.getTree(naming), CtxsnapError, "is empty");
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("expandFrom() refuses a target whose changed subtree is empty, as Store.getTree() does", async () => {
  await withSnapshots(1, ({ store, roots }) => {
    const put = (text: string) => {
      const bytes = new TextEncoder().encode(text);
      const id = sha256Hex(bytes);
      store.transaction("t", () => store.putTreeBytes(id, bytes));
      return id;
    };
    const empty = put('{"entries":[],"skipped":[],"version":2}');
    const root = store.getTreeObject(roots[0]!).tree;
    assert(root.version === 2);
    // The root with its directory d0 swapped for an empty tree.
    const entries = root.entries.map((e) => e.name === "d0" ? { ...e, tree: empty } : e);
    const hostile = put(new TextDecoder().decode(canonicalBytes({ ...root, entries })));
    const base = store.getTree(roots[0]!);
    assertThrows(() => store.getTree(hostile), CtxsnapError, "is empty");
    assertThrows(() => expandFrom(store, roots[0]!, base, hostile), CtxsnapError, "is empty");
  });
});

Deno.test("expandFrom() builds the target Store.getTree() reads, from the baseline and the differing trees only", async () => {
  await withSnapshots(3, ({ store, roots }) => {
    const base = store.getTree(roots[0]!);
    store.treeReads = 0;
    const built = expandFrom(store, roots[0]!, base, roots[2]!);
    assertEquals(store.treeReads, 2 * DEPTH);
    assertEquals(built, store.getTree(roots[2]!));
  });
});

Deno.test("undo of a one-file restore over an unchanged workspace reads only the trees on that file's path", async () => {
  await withSnapshots(2, async ({ store, signer, ids, dir }) => {
    await restoreSnapshot(store, signer, ids[0]!);
    assertEquals(await Deno.readTextFile(join(dir, EDITED)), "a of d1/d2/d0\n");
    store.treeReads = 0;
    const undone = await undo(store, signer);
    assertEquals(await Deno.readTextFile(join(dir, EDITED)), "edit 1\n");
    assertEquals(undone.plan?.writes.map((w) => w.path), [EDITED]);
    assertEquals(
      store.treeReads,
      2 * DEPTH,
      "the differing trees: the walk stands in for the baseline",
    );
  });
});

Deno.test("switch to a branch one file apart over an unchanged workspace reads only the trees on that file's path", async () => {
  await withSnapshots(2, async ({ store, signer, ids, dir }) => {
    forkBranch(store, ids[0]!, "older");
    store.treeReads = 0;
    const switched = await switchTo(store, signer, "older");
    assertEquals(switched.plan?.writes.map((w) => w.path), [EDITED]);
    assertEquals(await Deno.readTextFile(join(dir, EDITED)), "a of d1/d2/d0\n");
    assertEquals(
      store.treeReads,
      2 * DEPTH,
      "the differing trees: the walk stands in for the baseline",
    );
  });
});

Deno.test("expandFrom() and the Replay view read a target whose skipped records changed whole", async () => {
  await withSnapshots(1, async ({ store, signer, dir, ids, roots }) => {
    const made = await new Deno.Command("mkfifo", { args: [join(dir, "d1/d2/pipe")] }).output();
    assert(made.success, "mkfifo");
    const next = await createSnapshot(store, signer, { reason: "a pipe appears" });
    const root = next.envelope.body.workspace!.tree;
    const whole = store.getTree(root);
    assert(whole.skipped.some((s) => s.path === "d1/d2/pipe"), "the pipe is skipped");
    assertEquals(expandFrom(store, roots[0]!, store.getTree(roots[0]!), root), whole);
    const data = await timelineFromStore(store, { kind: "all" }, TRUST_ALL);
    assertEquals(data.snapshots.map((s) => s.id), [ids[0], next.id]);
    assertEquals(data.trees[root]!.skipped, whole.skipped);
  });
});

Deno.test("switch over a workspace edited since its baseline reads the baseline and refuses to overwrite the edit", async () => {
  await withSnapshots(2, async ({ store, signer, ids, dir }) => {
    forkBranch(store, ids[0]!, "older");
    await Deno.writeTextFile(join(dir, EDITED), "local work\n");
    store.treeReads = 0;
    await assertRejects(() => switchTo(store, signer, "older"), CtxsnapError);
    assert(store.treeReads >= DIRS, `read ${store.treeReads} trees: the baseline whole`);
    assertEquals(await Deno.readTextFile(join(dir, EDITED)), "local work\n");
  });
});

Deno.test("expandFrom() gives Store.getTree()'s entry for a file whose recorded size alone differs from the baseline's", async () => {
  await withSnapshots(1, ({ store, roots }) => {
    const base = store.getTree(roots[0]!);
    const first = base.entries.find((e) => e.type === "file")!;
    assert(first.type === "file");
    // A hostile store: the same blob and mode under another size.
    const entries = base.entries.map((e) => e === first ? { ...first, size: first.size + 1 } : e);
    const other = store.transaction("t", () => store.putTree({ ...base, entries }));
    assertEquals(expandFrom(store, roots[0]!, base, other), store.getTree(other));
  });
});
