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
import { modeMatches } from "../workspace/io/mode.ts";
import { IntegrityError, quote } from "../errors.ts";
import type { Store } from "./store.ts";
import {
  MAX_TREE_ENTRIES,
  type TreeEntry,
  type TreeManifest,
  validateTree,
} from "../format/tree.ts";
import { type DirEntry, type DirTree, flatEntry, MAX_TREE_DEPTH } from "../format/dir_tree.ts";
import { expandDirTree } from "../format/tree_object.ts";

/** The result of {@linkcode diffTrees}. */
export interface TreeDiff {
  /** In `b`, not in `a`. */
  added: string[];
  /** In both, different. */
  changed: string[];
  /** In `a`, not in `b`. */
  removed: string[];
}

/**
 * Whether two entries are the same record (a file's size too: equal for one
 * blob in any sound store, so a tree built from differences, `expandFrom`,
 * is exactly the stored one even where a hostile store says otherwise).
 */
export function sameEntry(a: TreeEntry | undefined, b: TreeEntry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.type === "file" && b.type === "file") {
    return a.blob === b.blob && a.mode === b.mode && a.size === b.size;
  }
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

/** What {@linkcode diffStoredTrees} returns. */
export interface StoredTreeDiff {
  /** The paths added, changed and removed, as {@linkcode diffTrees} lists them. */
  diff: TreeDiff;
  /** `a`'s entries at the paths that differ (all of `a` when it is a flat manifest). */
  left: TreeManifest;
  /** `b`'s entries at the paths that differ (all of `b` when it is a flat manifest). */
  right: TreeManifest;
  /** Whether the two trees' skipped records differ (always set by {@linkcode diffStoredTrees}). */
  skippedChanged?: boolean;
}

/** Whether two lists of skipped records are the same, records named by `key`. */
function sameSkipped<T extends { reason: string }>(
  x: readonly T[],
  y: readonly T[],
  key: (record: T) => string,
): boolean {
  return x.length === y.length &&
    x.every((r, i) => key(r) === key(y[i]!) && r.reason === y[i]!.reason);
}

const NO_TREE: TreeManifest = { version: 1, entries: [], skipped: [] };

/**
 * Compares the stored trees `a` and `b` (ids, or null for no workspace).
 * Two directory trees are walked side by side and an equal subtree is never
 * read, so snapshots one file apart cost the trees on that file's path
 * (O(depth) reads, `Store.treeReads`). A flat (version 1) tree on either
 * side is compared whole. Entries are returned only for the paths that
 * differ, which is all `fileChanges` needs.
 */
export function diffStoredTrees(store: Store, a: string | null, b: string | null): StoredTreeDiff {
  if (a !== null && a === b) {
    return {
      diff: { added: [], changed: [], removed: [] },
      left: NO_TREE,
      right: NO_TREE,
      skippedChanged: false,
    };
  }
  const rootA = a === null ? null : store.getTreeObject(a).tree;
  const rootB = b === null ? null : store.getTreeObject(b).tree;
  if (rootA?.version !== 2 || rootB?.version !== 2) {
    const left = rootA === null ? NO_TREE : store.getTree(a!);
    const right = rootB === null ? NO_TREE : store.getTree(b!);
    const skippedChanged = !sameSkipped(
      left.skipped,
      right.skipped,
      (r: { path: string }) => r.path,
    );
    return { diff: diffTrees(left, right), left, right, skippedChanged };
  }
  const diff: TreeDiff = { added: [], changed: [], removed: [] };
  const left: TreeEntry[] = [];
  const right: TreeEntry[] = [];
  let skippedChanged = false;
  const read = (id: string) => store.getTreeObject(id).tree;
  /** Every file and symlink of subtree `id` at `prefix`. */
  const whole = (id: string, prefix: string): TreeEntry[] => {
    const tree = read(id);
    if (tree.version !== 2) {
      throw new IntegrityError(`Subtree ${quote(prefix)} is not a version 2 tree`);
    }
    if (tree.entries.length === 0 && tree.skipped.length === 0) {
      throw new IntegrityError(`Subtree ${quote(prefix)} is empty`);
    }
    const flat = expandDirTree(id, tree, read);
    if (flat.skipped.length > 0) skippedChanged = true; // on one side only
    // The subtree's own expansion bounds its depth from itself; bound it
    // from the root as Store.getTree does.
    const depth = prefix.split("/").length;
    for (const record of [...flat.entries, ...flat.skipped]) {
      if (depth + record.path.split("/").length - 1 > MAX_TREE_DEPTH) {
        throw new IntegrityError(`Trees nest directories deeper than ${MAX_TREE_DEPTH}`);
      }
    }
    return flat.entries.map((e) => ({
      ...e,
      path: `${prefix}/${e.path}`,
    }));
  };
  const onlyLeft = (entry: DirEntry, path: string) => {
    const gone = entry.type === "tree"
      ? whole(entry.tree, path)
      : [flatEntry("", { ...entry, name: path })];
    for (const e of gone) {
      diff.removed.push(e.path);
      left.push(e);
    }
    bounded(left);
  };
  /** A hostile pair of trees must not grow the lists past one manifest's bound. */
  const bounded = (list: TreeEntry[]) => {
    if (list.length > MAX_TREE_ENTRIES) {
      throw new IntegrityError(
        `Trees ${quote(a)} and ${quote(b)} differ in more than ${MAX_TREE_ENTRIES} entries`,
      );
    }
  };
  const onlyRight = (entry: DirEntry, path: string) => {
    const come = entry.type === "tree"
      ? whole(entry.tree, path)
      : [flatEntry("", { ...entry, name: path })];
    for (const e of come) {
      diff.added.push(e.path);
      right.push(e);
    }
    bounded(right);
  };
  const walk = (x: DirTree, y: DirTree, prefix: string, depth: number): void => {
    if (depth > MAX_TREE_DEPTH) {
      throw new IntegrityError(`Trees nest directories deeper than ${MAX_TREE_DEPTH}`);
    }
    if (!sameSkipped(x.skipped, y.skipped, (r: { name: string }) => r.name)) {
      skippedChanged = true;
    }
    const theirs = new Map(y.entries.map((e) => [e.name, e]));
    for (const ex of x.entries) {
      const path = prefix === "" ? ex.name : `${prefix}/${ex.name}`;
      const ey = theirs.get(ex.name);
      theirs.delete(ex.name);
      if (ey === undefined) {
        onlyLeft(ex, path);
      } else if (ex.type === "tree" && ey.type === "tree") {
        if (ex.tree === ey.tree) continue; // the same directory: nothing below differs
        const sx = read(ex.tree);
        const sy = read(ey.tree);
        if (sx.version !== 2 || sy.version !== 2) {
          throw new IntegrityError(`Subtree ${quote(path)} is not a version 2 tree`);
        }
        if (
          sx.entries.length + sx.skipped.length === 0 || sy.entries.length + sy.skipped.length === 0
        ) {
          throw new IntegrityError(`Subtree ${quote(path)} is empty`);
        }
        walk(sx, sy, path, depth + 1);
      } else if (ex.type === "tree" || ey.type === "tree") {
        onlyLeft(ex, path);
        onlyRight(ey, path);
      } else {
        const fx = flatEntry(prefix, ex);
        const fy = flatEntry(prefix, ey);
        if (!sameEntry(fx, fy)) {
          diff.changed.push(path);
          left.push(fx);
          right.push(fy);
        }
      }
    }
    for (const [name, ey] of theirs) onlyRight(ey, prefix === "" ? name : `${prefix}/${name}`);
  };
  walk(rootA, rootB, "", 0);
  // A file replaced by a directory of the same name (or back) is a removal
  // and additions, as the flat comparison reports it.
  const byPath = (
    p: { path: string },
    q: { path: string },
  ) => (p.path < q.path ? -1 : p.path > q.path ? 1 : 0);
  diff.added.sort();
  diff.changed.sort();
  diff.removed.sort();
  left.sort(byPath);
  right.sort(byPath);
  return {
    diff,
    left: { version: 1, entries: left, skipped: [] },
    right: { version: 1, entries: right, skipped: [] },
    skippedChanged,
  };
}

/**
 * The flat manifest of the stored tree `id`, built from `base` (the verified
 * flat manifest of the stored tree `baseId`) and the differences between the
 * two ({@linkcode diffStoredTrees}): the subtrees `id` shares with `baseId`
 * are not read. Returns what `Store.getTree(id)` returns — the result passes
 * the same `validateTree` — and reads `id` whole when the skipped records
 * differ (they are not part of the differences) or either tree is flat.
 */
export function expandFrom(
  store: Store,
  baseId: string,
  base: TreeManifest,
  id: string,
): TreeManifest {
  if (id === baseId) return base;
  const step = diffStoredTrees(store, baseId, id);
  if (step.skippedChanged !== false) return store.getTree(id);
  const entries = entryMap(base);
  for (const path of step.diff.removed) entries.delete(path);
  for (const entry of step.right.entries) entries.set(entry.path, entry);
  const sorted = [...entries.values()].sort((x, y) =>
    x.path < y.path ? -1 : x.path > y.path ? 1 : 0
  );
  return validateTree({ version: 1, entries: sorted, skipped: base.skipped });
}
