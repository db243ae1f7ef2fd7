/**
 * How many of a snapshot's skipped paths are reserved names (`.git`,
 * `.ctxsnap`: docs/FORMAT.md §2). Capture never takes them, by design, so a
 * summary reports them apart from what the capture left out (a secret, a
 * file too large, an unreadable one). The signed body only counts every
 * skipped path; the tree records why, so the split is known only where the
 * tree is at hand (a bundle with its workspace), and null elsewhere.
 *
 * Directory trees are shared between directories and snapshots: each tree
 * is counted once per place it appears, memoised by id, so a hostile file
 * repeating one subtree many times costs one visit per tree. A reader keeps
 * only each tree's {@linkcode ReservedSummary} (its count and the ids of its
 * subtrees), never the trees themselves.
 *
 * @example
 * ```ts
 * import { reservedSkips, reservedSummary } from "./reserved_skips.ts";
 * const trees = new Map([["t", reservedSummary({
 *   version: 1 as const,
 *   entries: [],
 *   skipped: [{ path: ".git", reason: "reserved" }, { path: ".env", reason: "secret" }],
 * })]]);
 * if (reservedSkips("t", trees) !== 1) throw new Error("one reserved");
 * if (reservedSkips("other", trees) !== null) throw new Error("unknown without its tree");
 * ```
 * @module
 */
import type { DirTree } from "../format/dir_tree.ts";
import type { TreeManifest } from "../format/tree.ts";

/** What {@linkcode reservedSkips} needs of one tree: a few numbers and ids, not its entries. */
export interface ReservedSummary {
  /** Skipped records of the tree itself with reason `reserved`. */
  reserved: number;
  /** The ids of its subtrees (a version 2 directory tree's `tree` entries). */
  children: readonly string[];
}

/** The {@linkcode ReservedSummary} of one tree. */
export function reservedSummary(tree: TreeManifest | DirTree): ReservedSummary {
  let reserved = 0;
  for (const record of tree.skipped) if (record.reason === "reserved") reserved++;
  const children: string[] = [];
  if (tree.version === 2) {
    for (const entry of tree.entries) if (entry.type === "tree") children.push(entry.tree);
  }
  return { reserved, children };
}

/**
 * The number of skipped records with reason `reserved` in the workspace
 * whose root tree is `root`, from the summaries of its trees; null when a
 * tree it reaches is not among them.
 */
export function reservedSkips(
  root: string,
  trees: ReadonlyMap<string, ReservedSummary>,
): number | null {
  const counted = new Map<string, number | null>();
  const count = (id: string): number | null => {
    if (counted.has(id)) return counted.get(id)!;
    counted.set(id, null); // content addressing rules out a cycle; a malformed one counts as unknown
    const tree = trees.get(id);
    let n: number | null = null;
    if (tree !== undefined) {
      n = tree.reserved;
      for (const child of tree.children) {
        const below = count(child);
        if (below === null) {
          n = null;
          break;
        }
        n += below;
      }
    }
    counted.set(id, n);
    return n;
  };
  return count(root);
}
