// deno-lint-ignore-file no-explicit-any no-console
/**
 * Counts the tree objects each reader of directory trees reads
 * (`Store.treeReads`) on a generated workspace: `WIDTH` directories in each
 * directory down to `LEVELS` below the root, one file in each, and
 * `SNAPSHOTS` snapshots each one edit of a deepest file apart. Loads the
 * library from `ROOT` (a checkout of the commit to measure), so one script
 * measures before and after. Prints one JSON line; docs/BENCHMARKS.md
 * ("Unchanged subtrees") reports it.
 *
 * @example
 * ```sh
 * deno run -A --no-check scripts/tree_reads.ts . 6 4 10
 * ```
 * @module
 */
import { join } from "node:path";
const [given, w, l, n] = Deno.args;
const root = (await import("node:path")).resolve(given ?? ".");
const width = Number(w), levels = Number(l), count = Number(n);
const m = (p: string) => import(join(root, p));
const { Store } = await m("lib/repository/store.ts");
const { createSnapshot } = await m("lib/history/create.ts");
const { verifyAll, verifySnapshot } = await m("lib/history/verify.ts");
const { liveObjects } = await m("lib/repository/gc.ts");
const { publishToFile } = await m("lib/share/publish.ts");
const { importFile } = await m("lib/share/import.ts");
const { exportLeanCtx } = await m("lib/share/leanctx_export.ts");
const { timelineFromStore } = await m("lib/view/model.ts");
const { restoreSnapshot } = await m("lib/workspace/move/restore.ts");
const { undo } = await m("lib/workspace/move/undo.ts");
const { diffStoredTrees } = await m("lib/repository/diff.ts");
const { generateSeed, keyIdOf, publicKeyFromSeed } = await m("lib/crypto/ed25519.ts");
const { toHex } = await m("lib/encoding/hex.ts");
const T = { isTrusted: () => true, nameOf: () => "t" };
const dir = await Deno.makeTempDir({ prefix: "ctxsnap-tree-reads-" });
let dirs = 0;
let deepest = "";
const make = async (d: string, level: number): Promise<void> => {
  dirs++;
  await Deno.mkdir(join(dir, d), { recursive: true });
  await Deno.writeTextFile(join(dir, d, "a.txt"), `a of ${d}\n`);
  if (level === levels) {
    deepest ||= d;
    return;
  }
  for (let i = 0; i < width; i++) await make(d === "" ? `d${i}` : `${d}/d${i}`, level + 1);
};
await make("", 0);
const store = Store.init(join(dir, ".ctxsnap"), dir);
const seed = generateSeed();
const pk = await publicKeyFromSeed(seed);
const signer = { seed, publicKey: pk, publicKeyHex: toHex(pk), keyId: keyIdOf(pk) };
const ids: string[] = [], roots: string[] = [];
for (let i = 0; i < count; i++) {
  if (i > 0) await Deno.writeTextFile(join(dir, deepest, "a.txt"), `edit ${i}\n`);
  const made = await createSnapshot(store, signer, { reason: `s${i}` });
  ids.push(made.id);
  roots.push(made.envelope.body.workspace.tree);
}
const rows = (s: any) =>
  (s.db.prepare("SELECT count(*) AS n FROM objects WHERE kind='tree'").get()).n;
const out: Record<string, number> = {
  dirs,
  depth: levels + 1,
  snapshots: count,
  distinct_trees: rows(store),
};
const reads = async (name: string, f: () => unknown) => {
  store.treeReads = 0;
  await f();
  out[name] = store.treeReads;
};
await reads("diff A B", () => diffStoredTrees(store, roots[0], roots[1]));
const blobs = new Map();
const trees = new Map();
await verifySnapshot(store, ids[0], T, blobs, trees);
await reads("verify B after A", () => verifySnapshot(store, ids[1], T, blobs, trees));
await reads("verify --all", () => verifyAll(store, T));
await reads("gc mark", () => liveObjects(store, roots));
const file = join(dir, "..", dir.split("/").pop() + ".ctxbundle");
await reads(
  "publish --history all",
  () => publishToFile(store, ids[count - 1], { history: "all", withWorkspace: true, file }),
);
const other = await Deno.makeTempDir({ prefix: "ctxsnap-tree-reads-import-" });
const into = Store.init(join(other, ".ctxsnap"), other);
into.treeReads = 0;
await importFile(into, file, T, { allowUntrusted: true });
out["import"] = into.treeReads;
await reads("view (timeline)", () => timelineFromStore(store, { kind: "all" }, T));
await reads(
  "lean-ctx export",
  () => exportLeanCtx(store, signer, { format: "ctxsnap", id: ids[1] }),
);
await reads(
  "restore A over B (plan, dry run)",
  () => restoreSnapshot(store, signer, ids[count - 2], { dryRun: true }),
);
await reads("restore A over B", () => restoreSnapshot(store, signer, ids[count - 2], {}));
await reads("undo of that restore", () => undo(store, signer));
console.log(JSON.stringify(out));
into.close();
store.close();
await Deno.remove(dir, { recursive: true });
await Deno.remove(other, { recursive: true });
await Deno.remove(file);
