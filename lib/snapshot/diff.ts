/**
 * Differences between two trees: paths added, changed (content, mode, kind
 * or link target) and removed.
 *
 * @example
 * ```ts
 * import { diffTrees } from "./diff.ts";
 * const a = { version: 1 as const, skipped: [], entries: [{ path: "x", type: "symlink" as const, target: "y" }] };
 * const b = { version: 1 as const, skipped: [], entries: [] };
 * if (diffTrees(a, b).removed[0] !== "x") throw new Error("removed");
 * ```
 * @module
 */
import { modeMatches } from "../fs/mode.ts";
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

/**
 * Whether an entry captured from disk matches a recorded one: as
 * {@linkcode sameEntry}, except that a file's mode matches when its bits are
 * the recorded ones or what a restore of them leaves under the umask
 * (`modeMatches`, FORMAT.md §2), so a restored workspace compares equal to
 * its snapshot.
 */
export function entriesMatch(
  onDisk: TreeEntry | undefined,
  recorded: TreeEntry | undefined,
): boolean {
  if (onDisk === undefined || recorded === undefined) return onDisk === recorded;
  if (onDisk.type === "file" && recorded.type === "file") {
    return onDisk.blob === recorded.blob && modeMatches(onDisk.mode, recorded.mode);
  }
  return sameEntry(onDisk, recorded);
}

/** Maps a tree's entries by path. */
export function entryMap(tree: TreeManifest): Map<string, TreeEntry> {
  return new Map(tree.entries.map((entry) => [entry.path, entry]));
}

/** Options of {@linkcode diffTrees}. */
export interface DiffOptions {
  /**
   * `b` was captured from disk just now: a file's mode matches `a`'s when it
   * is what restoring `a` leaves ({@linkcode entriesMatch}).
   */
  bIsDisk?: boolean;
}

/** Compares two trees (either may be empty). Lists are sorted. */
export function diffTrees(a: TreeManifest, b: TreeManifest, options: DiffOptions = {}): TreeDiff {
  const left = entryMap(a);
  const right = entryMap(b);
  const same = options.bIsDisk ? (x: TreeEntry, y: TreeEntry) => entriesMatch(y, x) : sameEntry;
  const diff: TreeDiff = { added: [], changed: [], removed: [] };
  for (const [path, entry] of right) {
    const before = left.get(path);
    if (before === undefined) diff.added.push(path);
    else if (!same(before, entry)) diff.changed.push(path);
  }
  for (const path of left.keys()) if (!right.has(path)) diff.removed.push(path);
  diff.removed.sort();
  return diff;
}
