/**
 * The one enumeration of what snapshots reach: every tree object (flat
 * manifests and directory trees) and every blob below a set of root trees,
 * each once. gc, verify, push, bundles and publishing all build on
 * {@linkcode reachableObjects}, so a new kind of object (chunked blobs, say)
 * is taught to one function.
 *
 * Objects come children first: a directory's blobs and subtrees before the
 * directory, so a writer that copies them in this order never leaves a tree
 * whose children are missing. A tree already in `seen` (or refused by
 * `descend`) is not read again, which is what makes enumerating a new
 * snapshot after an old one cost only its new directories.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { reachableObjects } from "./reach.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const blob = store.putBlob(new TextEncoder().encode("hi\n"));
 * const root = store.putTree({
 *   version: 1,
 *   entries: [{ path: "d/a.txt", type: "file", blob, size: 3, mode: 0o644 }],
 *   skipped: [],
 * });
 * const kinds = [...reachableObjects(store, [root])].map((o) => o.kind);
 * if (kinds.join() !== "blob,tree,tree") throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { IntegrityError, quote } from "../errors.ts";
import { type DirTree, MAX_TREE_DEPTH } from "../format/dir_tree.ts";
import type { Store } from "./store.ts";
import type { TreeManifest } from "../format/tree.ts";

/** One object {@linkcode reachableObjects} yields. */
export type ReachedObject =
  | {
    /** SHA-256 hex id. */
    id: string;
    /** A tree object of either version, read and verified. */
    kind: "tree";
    /** Its canonical bytes. */
    bytes: Uint8Array;
    /** Its parsed content. */
    tree: TreeManifest | DirTree;
  }
  | {
    /** SHA-256 hex id. */
    id: string;
    /** A blob, named by a file entry (not read). */
    kind: "blob";
    /** The size the naming entry records. */
    size: number;
  };

/** Options of {@linkcode reachableObjects}. */
export interface ReachOptions {
  /**
   * Ids already enumerated (or known to be complete elsewhere): skipped, and
   * a tree in it is not descended. Every id yielded is added to it.
   */
  seen?: Set<string>;
  /**
   * Called before a tree is read; returning false skips it and everything
   * below it (a remote that already holds that tree).
   */
  descend?: (id: string) => boolean;
}

/**
 * Every object the trees `roots` reach, children before parents, each once.
 * Each tree is read and verified (`Store.getTreeObject`); blobs are named,
 * not read. Throws {@linkcode IntegrityError} for a hierarchy that breaks
 * FORMAT.md §2.2 (a subtree that is not a version 2 tree, too deep) and
 * `NotFoundError` for a missing tree.
 */
export function* reachableObjects(
  store: Store,
  roots: Iterable<string>,
  options: ReachOptions = {},
): Generator<ReachedObject> {
  const seen = options.seen ?? new Set<string>();
  function* walk(id: string, depth: number, subtree: boolean): Generator<ReachedObject> {
    if (seen.has(id)) return;
    if (options.descend !== undefined && !options.descend(id)) {
      seen.add(id);
      return;
    }
    const { bytes, tree } = store.getTreeObject(id);
    if (subtree && tree.version !== 2) {
      throw new IntegrityError(
        `Tree ${quote(id)} is named as a subtree but is not a version 2 tree`,
      );
    }
    if (tree.version === 1) {
      for (const entry of tree.entries) {
        if (entry.type !== "file" || seen.has(entry.blob)) continue;
        seen.add(entry.blob);
        yield { id: entry.blob, kind: "blob", size: entry.size };
      }
    } else {
      for (const entry of tree.entries) {
        if (entry.type === "file") {
          if (seen.has(entry.blob)) continue;
          seen.add(entry.blob);
          yield { id: entry.blob, kind: "blob", size: entry.size };
        } else if (entry.type === "tree") {
          if (depth + 1 > MAX_TREE_DEPTH) {
            throw new IntegrityError(
              `Tree ${quote(id)} nests directories deeper than ${MAX_TREE_DEPTH}`,
            );
          }
          yield* walk(entry.tree, depth + 1, true);
        }
      }
    }
    seen.add(id);
    yield { id, kind: "tree", bytes, tree };
  }
  for (const root of roots) yield* walk(root, 0, false);
}
