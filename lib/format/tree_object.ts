/**
 * Reading tree objects of either version: a flat manifest (version 1, what
 * ctxsnap wrote before directory trees, still read everywhere) or one
 * directory (version 2, `dir_tree.ts`), and expanding a version 2 root into
 * the flat manifest every consumer of a whole tree works on.
 *
 * Expansion is where a hierarchy is checked as a whole: subtrees must be
 * version 2 trees, non-empty, at most {@linkcode MAX_TREE_DEPTH} deep; the
 * resulting manifest must pass {@linkcode validateTree} (path rules, at most
 * `MAX_TREE_ENTRIES` entries in all). A subtree shared by several
 * directories is read once per expansion.
 *
 * @example
 * ```ts
 * import { parseTreeObject } from "./tree_object.ts";
 * const tree = parseTreeObject(new TextEncoder().encode('{"entries":[],"skipped":[],"version":2}'));
 * if (tree.version !== 2) throw new Error("Example failed");
 * ```
 * @module
 */
import { parseCanonical } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import {
  type DirTree,
  flatEntry,
  flatSkipped,
  MAX_DIR_TREE_BYTES,
  MAX_TREE_DEPTH,
  validateDirTree,
} from "./dir_tree.ts";
import {
  compareSkipped,
  MAX_NAME_LENGTH,
  MAX_TREE_BYTES as MAX_FLAT_TREE_BYTES,
  MAX_TREE_ENTRIES,
  MAX_TREE_SKIPPED,
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
  validateTree,
} from "./tree.ts";
import { MAX_PATH_BYTES } from "../workspace/io/path.ts";

/** Largest tree object of either version, in bytes (a version 1 manifest's bound). */
export const MAX_TREE_BYTES: number = MAX_FLAT_TREE_BYTES;

/** Parses and validates the canonical bytes of one tree object of either version. */
export function parseTreeObject(bytes: Uint8Array): TreeManifest | DirTree {
  const value = parseCanonical(bytes, { maxBytes: MAX_TREE_BYTES }) as { version?: unknown };
  if (value !== null && typeof value === "object" && value.version === 2) {
    if (bytes.byteLength > MAX_DIR_TREE_BYTES) {
      throw new IntegrityError(
        `Invalid directory tree: larger than ${MAX_DIR_TREE_BYTES} bytes`,
      );
    }
    return validateDirTree(value);
  }
  return validateTree(value);
}

/** The path of subtree `name` of the directory at `path`; refuses nesting past the limit. */
function subtreePath(rootId: string, path: string, name: string, depth: number): string {
  const where = path === "" ? name : `${path}/${name}`;
  if (depth + 1 > MAX_TREE_DEPTH) {
    throw new IntegrityError(
      `Invalid tree ${quote(rootId)}: directories nest deeper than ${MAX_TREE_DEPTH} at ${
        quote(where)
      }`,
    );
  }
  return where;
}

/** Reads subtree `subId` (at `where` below tree `id`): a non-empty version 2 tree, or refused. */
function readSubtree(
  read: (id: string) => TreeManifest | DirTree,
  id: string,
  subId: string,
  where: string,
): DirTree {
  const object = read(subId);
  if (object.version !== 2) {
    throw new IntegrityError(
      `Invalid tree ${quote(id)}: subtree ${quote(where)} is not a version 2 tree`,
    );
  }
  if (object.entries.length === 0 && object.skipped.length === 0) {
    throw new IntegrityError(`Invalid tree ${quote(id)}: subtree ${quote(where)} is empty`);
  }
  return object;
}

/**
 * Expands the version 2 root `root` (id `rootId`) into its flat manifest,
 * reading subtrees through `read`; throws {@linkcode IntegrityError} for a
 * hierarchy that breaks the rules of FORMAT.md §2.2.
 */
export function expandDirTree(
  rootId: string,
  root: DirTree,
  read: (id: string) => TreeManifest | DirTree,
): TreeManifest {
  // First pass: read every distinct directory once, check the hierarchy and
  // count what it expands to, so a small hostile hierarchy that shares
  // subtrees to expand into billions of entries is refused before expanding.
  const objects = new Map<string, DirTree>([[rootId, root]]);
  const sizes = new Map<string, { entries: number; skipped: number; height: number }>();
  const measure = (id: string, path: string, depth: number) => {
    const tree = objects.get(id)!;
    let entries = 0;
    let skipped = tree.skipped.length;
    let height = 0;
    for (const entry of tree.entries) {
      if (entry.type !== "tree") {
        entries += 1;
        continue;
      }
      const where = subtreePath(rootId, path, entry.name, depth);
      if (!objects.has(entry.tree)) {
        objects.set(entry.tree, readSubtree(read, id, entry.tree, where));
      }
      const sub = sizes.get(entry.tree) ?? measure(entry.tree, where, depth + 1);
      if (depth + 1 + sub.height > MAX_TREE_DEPTH) {
        throw new IntegrityError(
          `Invalid tree ${quote(rootId)}: directories nest deeper than ${MAX_TREE_DEPTH} below ${
            quote(where)
          }`,
        );
      }
      entries += sub.entries;
      skipped += sub.skipped;
      height = Math.max(height, sub.height + 1);
      if (entries > MAX_TREE_ENTRIES) {
        throw new IntegrityError(
          `Invalid tree ${quote(rootId)}: more than ${MAX_TREE_ENTRIES} entries`,
        );
      }
      if (skipped > MAX_TREE_SKIPPED) {
        throw new IntegrityError(
          `Invalid tree ${quote(rootId)}: more than ${MAX_TREE_SKIPPED} skipped records`,
        );
      }
    }
    const out = { entries, skipped, height };
    sizes.set(id, out);
    return out;
  };
  measure(rootId, "", 0);
  // Second pass: expand, depth first in git order (which is the flat order).
  const entries: TreeEntry[] = [];
  const skipped: SkippedEntry[] = [];
  const visit = (tree: DirTree, prefix: string): void => {
    for (const record of tree.skipped) skipped.push(flatSkipped(prefix, record));
    for (const entry of tree.entries) {
      if (entry.type === "tree") {
        visit(objects.get(entry.tree)!, prefix === "" ? entry.name : `${prefix}/${entry.name}`);
      } else entries.push(flatEntry(prefix, entry));
    }
  };
  visit(root, "");
  // Records placed in a directory sort among the root's whole-path ones.
  skipped.sort(compareSkipped);
  return validateTree({ version: 1, entries, skipped });
}

/**
 * What {@linkcode checkDirTree} knows of one directory tree and everything
 * below it: enough to decide whether a root that names it expands without
 * expanding it, and the totals a verifier compares with a snapshot's counts.
 */
export interface DirTreeFacts {
  /** Files and symlinks below it, all levels. */
  entries: number;
  /** Skipped records below it, all levels. */
  skipped: number;
  /** Directory levels below it (0 for a directory without subdirectories). */
  height: number;
  /** Files below it. */
  files: number;
  /** Their bytes. */
  bytes: number;
  /** UTF-16 length of its longest entry path, relative to it. */
  longestPath: number;
  /** UTF-16 length of its longest skipped path, relative to it. */
  longestSkipped: number;
  /** Whether a skipped record below it has a name with a slash (it may collide once flattened). */
  slashSkipped: boolean;
  /** Whether `visit` flagged it or a directory below it. */
  flagged: boolean;
}

/** Options of {@linkcode checkDirTree}. */
export interface CheckDirTreeOptions {
  /**
   * Facts of subtrees already checked, by id: a subtree found here is not
   * read again, and every subtree checked is added. Share one map across
   * roots (the snapshots of a store, the roots of a bundle) to read each
   * distinct directory once.
   */
  memo?: Map<string, DirTreeFacts>;
  /** Called once for each directory read (not found in `memo`); returning true flags it. */
  visit?: (id: string, tree: DirTree) => boolean;
}

/**
 * Checks that the version 2 root `root` (id `rootId`) obeys FORMAT.md §2.2
 * and expands to a valid flat manifest — exactly when
 * {@linkcode expandDirTree} would succeed, and throwing what it throws — but
 * without expanding it: each directory is read once through `read`, and a
 * subtree in `options.memo` is not read at all. So checking a snapshot one
 * file apart from one already checked reads the directories on that file's
 * path. A hierarchy whose flat form needs checks the facts cannot prove
 * (very long paths, skipped names holding a slash) is expanded instead.
 */
export function checkDirTree(
  rootId: string,
  root: DirTree,
  read: (id: string) => TreeManifest | DirTree,
  options: CheckDirTreeOptions = {},
): DirTreeFacts {
  const memo = options.memo ?? new Map<string, DirTreeFacts>();
  const known = memo.get(rootId);
  if (known !== undefined) return known;
  const measure = (id: string, tree: DirTree, path: string, depth: number): DirTreeFacts => {
    const facts: DirTreeFacts = {
      entries: 0,
      skipped: tree.skipped.length,
      height: 0,
      files: 0,
      bytes: 0,
      longestPath: 0,
      longestSkipped: 0,
      slashSkipped: false,
      flagged: options.visit?.(id, tree) ?? false,
    };
    for (const record of tree.skipped) {
      facts.longestSkipped = Math.max(facts.longestSkipped, record.name.length);
      if (record.name.includes("/")) facts.slashSkipped = true;
    }
    for (const entry of tree.entries) {
      if (entry.type !== "tree") {
        facts.entries += 1;
        facts.longestPath = Math.max(facts.longestPath, entry.name.length);
        if (entry.type === "file") {
          facts.files += 1;
          facts.bytes += entry.size;
        }
        continue;
      }
      const where = subtreePath(rootId, path, entry.name, depth);
      let sub = memo.get(entry.tree);
      if (sub !== undefined && sub.entries === 0 && sub.skipped === 0) {
        // An empty root checked before, named here as a subtree.
        throw new IntegrityError(`Invalid tree ${quote(id)}: subtree ${quote(where)} is empty`);
      }
      if (sub === undefined) {
        const named = readSubtree(read, id, entry.tree, where);
        sub = measure(entry.tree, named, where, depth + 1);
        memo.set(entry.tree, sub);
        added.push(entry.tree);
      }
      if (depth + 1 + sub.height > MAX_TREE_DEPTH) {
        throw new IntegrityError(
          `Invalid tree ${quote(rootId)}: directories nest deeper than ${MAX_TREE_DEPTH} below ${
            quote(where)
          }`,
        );
      }
      facts.entries += sub.entries;
      facts.skipped += sub.skipped;
      facts.height = Math.max(facts.height, sub.height + 1);
      facts.files += sub.files;
      facts.bytes += sub.bytes;
      if (sub.entries > 0) {
        facts.longestPath = Math.max(facts.longestPath, entry.name.length + 1 + sub.longestPath);
      }
      if (sub.skipped > 0) {
        facts.longestSkipped = Math.max(
          facts.longestSkipped,
          entry.name.length + 1 + sub.longestSkipped,
        );
      }
      facts.slashSkipped ||= sub.slashSkipped;
      facts.flagged ||= sub.flagged;
      if (facts.entries > MAX_TREE_ENTRIES) tooManyEntries();
      if (facts.skipped > MAX_TREE_SKIPPED) {
        throw new IntegrityError(
          `Invalid tree ${quote(rootId)}: more than ${MAX_TREE_SKIPPED} skipped records`,
        );
      }
    }
    // Files after the last subtree count too (the flat manifest's limit).
    if (facts.entries > MAX_TREE_ENTRIES) tooManyEntries();
    return facts;
  };
  const tooManyEntries = (): never => {
    throw new IntegrityError(
      `Invalid tree ${quote(rootId)}: more than ${MAX_TREE_ENTRIES} entries`,
    );
  };
  // Subtrees measured for a root that is then refused leave the memo again:
  // a later root naming one of them must not skip the checks that refused it.
  const added: string[] = [];
  let facts: DirTreeFacts;
  try {
    facts = measure(rootId, root, "", 0);
    // A path's UTF-8 form is at most three bytes per UTF-16 unit: paths this
    // short pass the flat manifest's length rule without encoding them.
    if (
      facts.longestPath * 3 > MAX_PATH_BYTES || facts.longestSkipped > MAX_NAME_LENGTH ||
      facts.slashSkipped
    ) {
      expandDirTree(rootId, root, read); // throws what the flat manifest breaks, if anything
    }
  } catch (error) {
    for (const id of added) memo.delete(id);
    throw error;
  }
  memo.set(rootId, facts);
  return facts;
}
