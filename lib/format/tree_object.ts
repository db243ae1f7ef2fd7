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
  MAX_TREE_BYTES as MAX_FLAT_TREE_BYTES,
  MAX_TREE_ENTRIES,
  MAX_TREE_SKIPPED,
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
  validateTree,
} from "./tree.ts";

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
      const where = path === "" ? entry.name : `${path}/${entry.name}`;
      if (depth + 1 > MAX_TREE_DEPTH) {
        throw new IntegrityError(
          `Invalid tree ${quote(rootId)}: directories nest deeper than ${MAX_TREE_DEPTH} at ${
            quote(where)
          }`,
        );
      }
      if (!objects.has(entry.tree)) {
        const object = read(entry.tree);
        if (object.version !== 2) {
          throw new IntegrityError(
            `Invalid tree ${quote(id)}: subtree ${quote(where)} is not a version 2 tree`,
          );
        }
        if (object.entries.length === 0 && object.skipped.length === 0) {
          throw new IntegrityError(`Invalid tree ${quote(id)}: subtree ${quote(where)} is empty`);
        }
        objects.set(entry.tree, object);
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
