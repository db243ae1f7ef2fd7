/**
 * Garbage collection: removes trees and blobs that no retained snapshot, no
 * unresolved operation, not the workspace baseline and no operation that can
 * still be undone references (docs/DESIGN.md §3, invariant 3), and the kept
 * agent transcripts that no agent event of a retained snapshot names.
 *
 * It runs inside one write transaction, so it can never interleave with a
 * capture (which holds the write lock from its first blob to its snapshot
 * row). It fails closed: a reachable tree that cannot be read stops it with
 * nothing deleted. Object files are unlinked in a second transaction from a
 * `gc_pending` list, so a crash at any instant leaves no row without its file.
 * Last, the index's free pages go back to the filesystem (`vacuum.ts`).
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { collectGarbage } from "./gc.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * store.putBlob(new TextEncoder().encode("unreferenced"));
 * if (collectGarbage(store).blobs !== 1) throw new Error("the unreferenced blob is removed");
 * store.close();
 * ```
 * @module
 */
import { parseJson } from "../encoding/canonical_json.ts";
import { ConflictError, CtxsnapError, IntegrityError, quote, StoreTrustError } from "../errors.ts";
import { SafeWriter } from "../workspace/io/safe_write.ts";
import { readBaseline } from "./baseline.ts";
import { reachableObjects } from "./reach.ts";
import { finishOperation, startOperation } from "./operations.ts";
import { treesNeeded, undoStack } from "./undo_log.ts";
import type { Store } from "./store.ts";
import { returnFreePages, type VacuumResult } from "./vacuum.ts";
import { deleteTranscriptChain, unneededTranscriptChains } from "./transcript_rows.ts";
import { pruneTreeCache } from "./tree_cache.ts";

/** What {@linkcode collectGarbage} removed (or, dry, would remove). */
export interface GcResult {
  /** Trees removed. */
  trees: number;
  /** Blobs removed. */
  blobs: number;
  /** Bytes of object content freed. */
  bytes: number;
  /** Trees and blobs kept. */
  kept: { trees: number; blobs: number };
  /**
   * Kept agent transcripts removed: the chains no agent event of a retained
   * snapshot names, their segments and bytes.
   */
  transcripts: { chains: number; segments: number; bytes: number };
  /** Stray files removed (object files without rows, leftover temp files). */
  strays: number;
  /** Whether this was a dry run. */
  dryRun: boolean;
  /** Operation id, or null for a dry run. */
  operation: string | null;
  /** The index pages handed back to the filesystem (null for a dry run). */
  index: VacuumResult | null;
}

function rootTrees(store: Store): Set<string> {
  const roots = new Set<string>();
  const baseline = readBaseline(store);
  if (baseline !== null) roots.add(baseline);
  // Whatever undo or redo may still put back.
  const stack = undoStack(store);
  for (const entry of [...stack.done, ...stack.redo]) {
    for (const tree of treesNeeded(entry.record)) roots.add(tree);
  }
  for (
    const row of store.stmt("SELECT DISTINCT tree FROM snapshots WHERE tree IS NOT NULL")
      .iterate()
  ) {
    roots.add((row as { tree: string }).tree);
  }
  for (
    const row of store.stmt(
      "SELECT id, plan FROM operations WHERE status IN ('applying', 'planned')",
    ).iterate()
  ) {
    const op = row as { id: string; plan: string };
    let plan: unknown;
    try {
      plan = parseJson(op.plan, { maxBytes: 512 * 1024 * 1024 });
    } catch (error) {
      throw new IntegrityError(`gc stopped: operation ${quote(op.id)} has an unreadable plan`, {
        cause: error,
      });
    }
    for (const key of ["pre_tree", "target_tree", "baseline"]) {
      const value = (plan as Record<string, unknown>)[key];
      if (typeof value === "string") roots.add(value);
    }
  }
  return roots;
}

/**
 * Every object gc must keep for the trees `roots`: each tree of their
 * hierarchy, their blobs ({@linkcode reachableObjects}, the one place that
 * knows what a tree reaches), and the chunks of chunked blobs (FORMAT.md
 * 8.6). Fails closed on a tree or chunk list it cannot read.
 */
export function liveObjects(
  store: Store,
  roots: Iterable<string>,
): { trees: Set<string>; blobs: Set<string> } {
  const liveBlobs = new Set<string>();
  const liveTrees = new Set<string>();
  const seen = new Set<string>();
  for (const id of roots) {
    if (!store.hasObject(id)) continue; // an envelope-only import: nothing to keep
    try {
      for (const object of reachableObjects(store, [id], { seen })) {
        if (object.kind === "tree") liveTrees.add(object.id);
        else liveBlobs.add(object.id);
      }
    } catch (error) {
      if (error instanceof CtxsnapError) {
        throw new IntegrityError(
          `gc stopped with nothing deleted: tree ${quote(id)} cannot be read`,
          { cause: error, hint: "run `ctxsnap verify --all` to find the damage" },
        );
      }
      throw error;
    }
  }
  // A chunked blob keeps its chunks (FORMAT.md 8.6).
  for (const blob of [...liveBlobs]) {
    let chunks: string[] | null;
    try {
      chunks = store.blobChunks(blob);
    } catch (error) {
      throw new IntegrityError(
        `gc stopped with nothing deleted: blob ${quote(blob)} has a malformed chunk list`,
        { cause: error, hint: "run `ctxsnap verify --all` to find the damage" },
      );
    }
    for (const chunk of chunks ?? []) liveBlobs.add(chunk);
  }
  return { trees: liveTrees, blobs: liveBlobs };
}

/** The `meta` key naming the last gc operation (FORMAT.md §8.2). */
const LAST_GC_META = "last_gc";

/**
 * The id of the last gc that ran on `store`, or null: one row read, however
 * long the store's history. A long-lived process that reuses stored objects
 * between transactions (the watch) compares it to learn that gc may have
 * removed some.
 */
export function lastGc(store: Store): string | null {
  return store.getMeta(LAST_GC_META);
}

/** Removes unreachable objects; with `dryRun` only counts them. */
export function collectGarbage(store: Store, options: { dryRun?: boolean } = {}): GcResult {
  const dryRun = options.dryRun ?? false;
  const result = store.transaction("gc", () => {
    const roots = rootTrees(store);
    const { trees: liveTrees, blobs: liveBlobs } = liveObjects(store, roots);
    const doomed: { id: string; kind: string; size: number; encoding: string }[] = [];
    let keptTrees = 0;
    let keptBlobs = 0;
    for (const row of store.stmt("SELECT id, kind, size, encoding FROM objects").iterate()) {
      const object = row as { id: string; kind: string; size: number; encoding: string };
      const live = object.kind === "tree" ? liveTrees.has(object.id) : liveBlobs.has(object.id);
      if (live) {
        if (object.kind === "tree") keptTrees++;
        else keptBlobs++;
      } else doomed.push(object);
    }
    // Kept transcripts go with the last retained snapshot whose events name them (FORMAT.md 8.3).
    const chains = unneededTranscriptChains(store);
    const out: GcResult = {
      trees: doomed.filter((o) => o.kind === "tree").length,
      blobs: doomed.filter((o) => o.kind === "blob").length,
      // A chunked blob's bytes are its chunks' (counted with them).
      bytes: doomed.reduce((sum, o) => sum + (o.encoding === "chunks" ? 0 : o.size), 0),
      kept: { trees: keptTrees, blobs: keptBlobs },
      transcripts: {
        chains: chains.length,
        segments: chains.reduce((sum, c) => sum + c.segments, 0),
        bytes: chains.reduce((sum, c) => sum + c.bytes, 0),
      },
      strays: 0,
      dryRun: dryRun,
      operation: null,
      index: null,
    };
    if (dryRun) return out;
    const op = startOperation(store, {
      kind: "gc",
      plan: {
        trees: out.trees,
        blobs: out.blobs,
        bytes: out.bytes,
        transcript_chains: out.transcripts.chains,
      },
    });
    const remove = store.stmt("DELETE FROM objects WHERE id = ?");
    const pending = store.stmt("INSERT OR IGNORE INTO gc_pending (id) VALUES (?)");
    for (const object of doomed) {
      remove.run(object.id);
      if (object.encoding === "file") pending.run(object.id);
    }
    for (const chain of chains) deleteTranscriptChain(store, chain.agent_session, chain.chain);
    // The stat cache may only name blobs that exist (capture trusts its hits).
    store.stmt("DELETE FROM stat_cache WHERE blob NOT IN (SELECT id FROM objects)").run();
    // So may the tree cache's trees (capture keeps a cached tree as it is).
    pruneTreeCache(store);
    finishOperation(store, op.id, "done");
    // What a watch process compares to learn that objects may have gone (lastGc).
    store.setMeta(LAST_GC_META, op.id);
    out.operation = op.id;
    return out;
  });
  if (!dryRun) {
    result.strays = sweepFiles(store);
    result.index = returnFreePages(store);
  }
  return result;
}

/**
 * Unlinks object files whose rows are gone (pending or stray) and leftover
 * temp files, holding the write lock so no capture is mid-way. It never
 * follows a symlink: every directory is opened without following one and
 * every unlink goes through that directory's descriptor (`SafeWriter`), so a
 * `tmp/` or `objects/xx` swapped for a symlink stops the sweep (exit 1)
 * instead of reaching outside the store. Directories in `tmp/` are left.
 */
export function sweepFiles(store: Store): number {
  return store.transaction("gc sweep", () => {
    const writer = new SafeWriter(store.dir);
    try {
      return sweepWith(store, writer);
    } catch (error) {
      if (error instanceof ConflictError) {
        throw new StoreTrustError(`gc stopped: ${error.message}`, {
          cause: error,
          hint: "a store path was replaced by a symlink or file; inspect the store",
        });
      }
      throw error;
    } finally {
      writer.close();
    }
  });
}

function sweepWith(store: Store, writer: SafeWriter): number {
  let removed = 0;
  const has = store.stmt("SELECT 1 FROM objects WHERE id = ?");
  const unlink = (rel: string): boolean => {
    try {
      writer.remove(rel, { prune: false });
      return true;
    } catch (error) {
      if (error instanceof ConflictError && /is a directory/.test(error.message)) return false;
      throw error;
    }
  };
  for (const row of store.stmt("SELECT id FROM gc_pending").all() as { id: string }[]) {
    if (!/^[0-9a-f]{64}$/.test(row.id)) continue;
    if (has.get(row.id) === undefined) unlink(`objects/${row.id.slice(0, 2)}/${row.id}`);
  }
  store.stmt("DELETE FROM gc_pending").run();
  for (const prefix of writer.list("objects") ?? []) {
    if (!/^[0-9a-f]{2}$/.test(prefix)) continue;
    for (const name of writer.list(`objects/${prefix}`) ?? []) {
      if (/^[0-9a-f]{64}$/.test(name) && has.get(name) !== undefined) continue;
      if (unlink(`objects/${prefix}/${name}`)) removed++;
    }
  }
  for (const name of writer.list("tmp") ?? []) {
    if (name === "stamp") continue;
    if (unlink(`tmp/${name}`)) removed++;
  }
  writer.flush();
  return removed;
}
