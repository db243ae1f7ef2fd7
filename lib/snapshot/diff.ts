/**
 * Differences between two trees: paths added, changed (content, mode, kind
 * or link target) and removed.
 *
 * @example
 * ```ts
 * import { diffTrees } from "./diff.ts";
 * const a = { version: 1 as const, skipped: [], entries: [{ path: "x", type: "symlink" as const, target: "y" }] };
 * const b = { version: 1 as const, skipped: [], entries: [] };
 * if (!(diffTrees(a, b).removed[0] === "x")) throw new Error("Example failed");
 * ```
 * @module
 */
import type { TreeEntry, TreeManifest } from "../store/tree.ts";

/** The result of {@linkcode diffTrees}. */
export interface TreeDiff {
  /** In `b`, not in `a`. */
  added: string[];
  /** In both, different. */
  changed: string[];
  /** In `a`, not in `b`. */
  removed: string[];
}

/** Whether two entries describe the same content. */
export function sameEntry(a: TreeEntry | undefined, b: TreeEntry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.type === "file" && b.type === "file") return a.blob === b.blob && a.mode === b.mode;
  if (a.type === "symlink" && b.type === "symlink") return a.target === b.target;
  return false;
}

/** Maps a tree's entries by path. */
export function entryMap(tree: TreeManifest): Map<string, TreeEntry> {
  return new Map(tree.entries.map((entry) => [entry.path, entry]));
}

/** Compares two trees (either may be empty). Lists are sorted. */
export function diffTrees(a: TreeManifest, b: TreeManifest): TreeDiff {
  const left = entryMap(a);
  const right = entryMap(b);
  const diff: TreeDiff = { added: [], changed: [], removed: [] };
  for (const [path, entry] of right) {
    const before = left.get(path);
    if (before === undefined) diff.added.push(path);
    else if (!sameEntry(before, entry)) diff.changed.push(path);
  }
  for (const path of left.keys()) if (!right.has(path)) diff.removed.push(path);
  diff.removed.sort();
  return diff;
}
