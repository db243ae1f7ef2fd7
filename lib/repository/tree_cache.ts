/**
 * The tree cache's rows (docs/FORMAT.md, table `tree_cache`): for each
 * workspace directory last captured, its entries as `lstat` saw them and the
 * tree it was stored as, so that a capture with no watch process keeps an
 * unchanged directory's tree without looking up, checking or serializing
 * its entries again (git's cache-tree). Capture (`lib/workspace/`) decides
 * when a row may be trusted; this module only reads and writes rows, inside
 * the caller's transaction, and refuses a row it cannot parse exactly.
 *
 * @example
 * ```ts
 * import { mkdtempSync } from "node:fs";
 * import { join } from "node:path";
 * import { Store } from "./store.ts";
 * import { readTreeCache, writeTreeCacheRow } from "./tree_cache.ts";
 *
 * const workspace = mkdtempSync("/tmp/ctxsnap-");
 * const store = Store.init(join(workspace, ".ctxsnap"), workspace);
 * store.transaction("example", () =>
 *   writeTreeCacheRow(store, {
 *     dir: "src",
 *     tree: "ab".repeat(32),
 *     stampMs: 5,
 *     names: "a.ts",
 *     stats: new Float64Array([0o100644, 3, 1, 1, 7, 1]),
 *     files: 1,
 *     symlinks: 0,
 *     bytes: 3,
 *     skipped: [],
 *     subtrees: [],
 *     partial: false,
 *   }));
 * if (readTreeCache(store).get("src")?.names !== "a.ts") throw new Error("Example failed");
 * store.close();
 * ```
 * @module
 */
import { isHex } from "../encoding/hex.ts";
import type { Store } from "./store.ts";

/** How many numbers a row keeps per listed entry: mode, size, mtime, ctime, inode, device. */
export const TREE_CACHE_FIELDS = 6;

/** One directory's row. */
export interface TreeCacheRow {
  /** The directory's workspace path, `/`-separated (`""` for the root). */
  dir: string;
  /** The id of the tree it was stored as. */
  tree: string;
  /** The store filesystem's clock when the listing was taken (racy-entry check). */
  stampMs: number;
  /**
   * Every entry the walk listed, in the walk's order, joined by `/` (which
   * no name holds): compared in place, never split on the hot path.
   */
  names: string;
  /**
   * {@linkcode TREE_CACHE_FIELDS} numbers per name, in the same order:
   * `lstat` mode (with the file type), size, mtime, ctime, inode, device.
   */
  stats: Float64Array;
  /** Files recorded directly in it. */
  files: number;
  /** Symlinks recorded directly in it. */
  symlinks: number;
  /** Bytes of those files. */
  bytes: number;
  /** Its skipped records, `[name, reason]`, as its tree holds them. */
  skipped: readonly (readonly [string, string])[];
  /** Its subtrees, `[name, tree id]`, as its tree holds them. */
  subtrees: readonly (readonly [string, string])[];
  /** Whether its tree is stored, as read (a row written in this capture: true). */
  stored: boolean;
  /**
   * Something in it must be looked at again by every capture (unreadable,
   * changed while read, left out for its content, captured only because it
   * is allowed): the row only vouches for its ignore files.
   */
  partial: boolean;
}

/** Most entries one row may list (a directory object's own limit). */
const MAX_ROW_ENTRIES = 1_000_000;

/**
 * Every row that parses, by directory. A row that does not (a wrong type,
 * a count that does not match, an id that is not hex) is left out: the
 * capture then treats that directory as unknown and reads it again.
 */
export function readTreeCache(store: Store): Map<string, TreeCacheRow> {
  const rows = new Map<string, TreeCacheRow>();
  for (const raw of store.stmt(SELECT_ROWS).all()) {
    const row = parseRow(raw as Record<string, unknown>);
    if (row !== null) rows.set(row.dir, row);
  }
  return rows;
}

/** Records (or replaces) one directory's row. */
export function writeTreeCacheRow(store: Store, row: Omit<TreeCacheRow, "stored">): void {
  const stats = new Uint8Array(row.stats.buffer, row.stats.byteOffset, row.stats.byteLength);
  store.stmt(UPSERT).run(
    row.dir,
    row.tree,
    row.stampMs,
    row.names,
    stats,
    JSON.stringify({
      files: row.files,
      symlinks: row.symlinks,
      bytes: row.bytes,
      skipped: row.skipped,
      subtrees: row.subtrees,
      partial: row.partial,
    }),
  );
}

/** Replaces the tree id and subtrees of `dir`'s row, keeping its listing. */
export function updateTreeCacheTree(
  store: Store,
  row: TreeCacheRow,
  tree: string,
  subtrees: readonly (readonly [string, string])[],
): void {
  writeTreeCacheRow(store, { ...row, tree, subtrees });
}

/**
 * Marks the rows of `dirs` partial: something changed in them that a
 * process writing no rows saw (a watch process's capture), so the next
 * capture reading rows walks them entry by entry (and prunes what went),
 * while their ignore files still vouch for what lies below.
 */
export function markTreeCacheRowsPartial(store: Store, dirs: Iterable<string>): void {
  const mark = store.stmt(
    // A row whose facts are not JSON is ignored by readers anyway: left as it is.
    `UPDATE tree_cache SET facts = json_set(facts, '$.partial', json('true'))
      WHERE dir = ? AND json_valid(facts) AND json_type(facts) = 'object'`,
  );
  for (const dir of dirs) mark.run(dir);
}

/** The directories that have a row. */
export function treeCacheDirs(store: Store): Set<string> {
  const rows = store.stmt("SELECT dir FROM tree_cache").all() as { dir: string }[];
  return new Set(rows.map((row) => row.dir));
}

/** Drops the row of `dir`, if any. */
export function deleteTreeCacheRow(store: Store, dir: string): void {
  store.stmt("DELETE FROM tree_cache WHERE dir = ?").run(dir);
}

/**
 * Empties the tree cache (an adopted store's rows describe another
 * machine's directories). Inside the caller's write transaction.
 */
export function clearTreeCache(store: Store): void {
  store.stmt("DELETE FROM tree_cache").run();
}

/**
 * Drops the rows whose tree is no longer stored: gc calls it in the
 * transaction that deletes objects. A tree that stays is reachable, so
 * every subtree and blob below it stays too.
 */
export function pruneTreeCache(store: Store): void {
  store.stmt("DELETE FROM tree_cache WHERE tree NOT IN (SELECT id FROM objects)").run();
}

/** Every row, with whether its tree is stored (one statement, not a lookup per row). */
const SELECT_ROWS = `SELECT t.dir, t.tree, t.stamp_ms, t.names, t.stats, t.facts,
    EXISTS (SELECT 1 FROM objects o WHERE o.id = t.tree AND o.kind = 'tree') AS stored
  FROM tree_cache t`;

const UPSERT = `INSERT INTO tree_cache (dir, tree, stamp_ms, names, stats, facts)
  VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT(dir) DO UPDATE SET tree = excluded.tree, stamp_ms = excluded.stamp_ms,
    names = excluded.names, stats = excluded.stats, facts = excluded.facts`;

function count(value: unknown): number | null {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? value as number : null;
}

/** A list of `[string, string]` pairs, or null. */
function pairs(value: unknown): [string, string][] | null {
  if (!Array.isArray(value) || value.length > MAX_ROW_ENTRIES) return null;
  for (const pair of value) {
    if (
      !Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" ||
      typeof pair[1] !== "string"
    ) return null;
  }
  return value as [string, string][];
}

/** A row as stored, parsed exactly, or null. */
function parseRow(raw: Record<string, unknown>): TreeCacheRow | null {
  const { dir, tree, stamp_ms: stampMs, names, stats, facts, stored } = raw;
  if (
    typeof dir !== "string" || typeof tree !== "string" || !isHex(tree, 64) ||
    typeof stampMs !== "number" || !Number.isFinite(stampMs) || typeof names !== "string" ||
    names === "" || !(stats instanceof Uint8Array) || typeof facts !== "string"
  ) return null;
  if (names.startsWith("/") || names.endsWith("/") || names.includes("//")) return null;
  let entries = 1;
  for (let at = names.indexOf("/"); at >= 0; at = names.indexOf("/", at + 1)) entries++;
  if (entries > MAX_ROW_ENTRIES || stats.byteLength !== entries * TREE_CACHE_FIELDS * 8) {
    return null;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(facts);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return null;
  const f = parsed as Record<string, unknown>;
  const files = count(f.files);
  const symlinks = count(f.symlinks);
  const bytes = count(f.bytes);
  const skipped = pairs(f.skipped);
  // Subtree ids are only compared with the ids a capture builds: one that is
  // not an id never matches.
  const subtrees = pairs(f.subtrees);
  if (
    files === null || symlinks === null || bytes === null || skipped === null ||
    subtrees === null || typeof f.partial !== "boolean" || Object.keys(f).length !== 6
  ) return null;
  // A view where the driver's bytes are 8-byte aligned, else a copy.
  const numbers = stats.byteOffset % 8 === 0
    ? new Float64Array(stats.buffer, stats.byteOffset, stats.byteLength / 8)
    : new Float64Array(stats.byteLength / 8);
  if (numbers.buffer !== stats.buffer) new Uint8Array(numbers.buffer).set(stats);
  return {
    dir,
    tree,
    stampMs,
    names,
    stats: numbers,
    files,
    symlinks,
    bytes,
    skipped,
    subtrees,
    partial: f.partial,
    stored: stored === 1,
  };
}
