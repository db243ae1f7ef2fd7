/**
 * The `snapshots` table: one row per stored snapshot, holding its envelope's
 * exact bytes and columns copied from its body (session, branch, parent,
 * tree, source, signer). Rows are append-only: the schema refuses every
 * `UPDATE`, and a `DELETE` only while a `forget` operation is `applying`
 * (docs/DESIGN.md §3, invariant 4; see `forgotten.ts`).
 *
 * This layer stores and finds rows and knows nothing of the envelope format;
 * parsing and checking an envelope is `lib/history/timeline.ts`.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { getSnapshotRow, insertSnapshotRow, snapshotIdBySource } from "./snapshot_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const row = {
 *   id: "ab".repeat(32), session: "main", branch: "main", parent: null,
 *   created_at: "2026-01-01T00:00:00.000Z", tree: null, source_kind: "ci", source_id: "42",
 *   key_id: "cd".repeat(8), imported: false, envelope: new TextEncoder().encode("{}"),
 * };
 * if (!store.transaction("t", () => insertSnapshotRow(store, row))) throw new Error("insert");
 * if (store.transaction("t", () => insertSnapshotRow(store, row))) throw new Error("twice");
 * if (getSnapshotRow(store, row.id)?.session !== "main") throw new Error("read");
 * if (snapshotIdBySource(store, "main", "ci", "42", "cd".repeat(8)) !== row.id) throw new Error("source");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";

/** A snapshot row of the index (metadata copied from its body). */
export interface SnapshotRow {
  /** Insertion order. */
  seq: number;
  /** Snapshot id. */
  id: string;
  /** Session. */
  session: string;
  /** Branch. */
  branch: string;
  /** Parent id or null. */
  parent: string | null;
  /** Body's created_at. */
  created_at: string;
  /** Workspace tree id or null. */
  tree: string | null;
  /** Signer key id. */
  key_id: string;
  /** Whether it arrived by import. */
  imported: number;
  /** Body's reason. */
  reason?: string;
}

/** The columns of a new snapshot row, as {@linkcode insertSnapshotRow} writes them. */
export interface NewSnapshotRow {
  /** Snapshot id. */
  id: string;
  /** Session. */
  session: string;
  /** Branch. */
  branch: string;
  /** Parent id or null. */
  parent: string | null;
  /** Body's created_at. */
  created_at: string;
  /** Workspace tree id or null. */
  tree: string | null;
  /** Source kind (`create --source`), or null. */
  source_kind: string | null;
  /** Source id, or null. */
  source_id: string | null;
  /** Signer key id. */
  key_id: string;
  /** Whether it arrived by import. */
  imported: boolean;
  /** The envelope's exact bytes. */
  envelope: Uint8Array;
}

/** Filters for {@linkcode listSnapshotRows}. */
export interface RowFilter {
  /** Only this session. */
  session?: string;
  /** Most rows to return. */
  limit?: number;
}

const ROW_COLUMNS = "seq, id, session, branch, parent, created_at, tree, key_id, imported";

/**
 * Inserts a snapshot row (inside the caller's transaction). Returns false
 * when nothing was inserted: the id is already stored, or the session
 * already holds a snapshot with this source (the unique idempotency key of
 * `create --source`); {@linkcode hasSnapshot} tells which.
 */
export function insertSnapshotRow(store: Store, row: NewSnapshotRow): boolean {
  const result = store.stmt(
    `INSERT OR IGNORE INTO snapshots
       (id, session, branch, parent, created_at, tree, source_kind, source_id, key_id, imported, envelope)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    row.id,
    row.session,
    row.branch,
    row.parent,
    row.created_at,
    row.tree,
    row.source_kind,
    row.source_id,
    row.key_id,
    row.imported ? 1 : 0,
    row.envelope,
  );
  return result.changes === 1;
}

/** Whether a snapshot with this full id exists. */
export function hasSnapshot(store: Store, id: string): boolean {
  return store.stmt("SELECT 1 FROM snapshots WHERE id = ?").get(id) !== undefined;
}

/**
 * The id of the snapshot of `session` with source `kind`:`sourceId` that key
 * `keyId` signed and this store created (never one imported or pulled), or
 * null: the idempotency key of `create --source` is scoped to the signer, so
 * an imported snapshot can never stand in for the user's own.
 */
export function snapshotIdBySource(
  store: Store,
  session: string,
  kind: string,
  sourceId: string,
  keyId: string,
): string | null {
  const row = store.stmt(
    `SELECT id FROM snapshots
     WHERE session = ? AND source_kind = ? AND source_id = ? AND key_id = ? AND imported = 0`,
  ).get(session, kind, sourceId, keyId) as { id: string } | undefined;
  return row?.id ?? null;
}

/** The id of whichever snapshot of `session` holds the source index key, or null. */
export function snapshotIdHoldingSource(
  store: Store,
  session: string,
  kind: string,
  sourceId: string,
): string | null {
  const row = store.stmt(
    "SELECT id FROM snapshots WHERE session = ? AND source_kind = ? AND source_id = ?",
  ).get(session, kind, sourceId) as { id: string } | undefined;
  return row?.id ?? null;
}

/** Full ids starting with `prefix` (lowercase hex), in id order, at most `limit`. */
export function snapshotIdsWithPrefix(store: Store, prefix: string, limit: number): string[] {
  return (store.stmt(
    "SELECT id FROM snapshots WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
  ).all(prefix, prefix + "g", limit) as { id: string }[]).map((row) => row.id);
}

/** Reads a snapshot row by full id, or null. */
export function getSnapshotRow(store: Store, id: string): SnapshotRow | null {
  const row = store.stmt(`SELECT ${ROW_COLUMNS} FROM snapshots WHERE id = ?`).get(id) as
    | SnapshotRow
    | undefined;
  return row ?? null;
}

/** The exact stored envelope bytes of a snapshot, unparsed and unchecked, or null. */
export function snapshotEnvelopeBytes(store: Store, id: string): Uint8Array | null {
  const row = store.stmt("SELECT envelope FROM snapshots WHERE id = ?").get(id) as
    | { envelope: Uint8Array }
    | undefined;
  return row?.envelope ?? null;
}

/**
 * The parent of a stored snapshot: its id, null for the first snapshot of a
 * history, or undefined when the store has no row `id` (forgotten, or
 * never imported).
 */
export function snapshotParent(store: Store, id: string): string | null | undefined {
  const row = store.stmt("SELECT parent FROM snapshots WHERE id = ?").get(id) as
    | { parent: string | null }
    | undefined;
  return row === undefined ? undefined : row.parent;
}

/** The session of a stored snapshot, or null when the store has no row `id`. */
export function snapshotSession(store: Store, id: string): string | null {
  const row = store.stmt("SELECT session FROM snapshots WHERE id = ?").get(id) as
    | { session: string }
    | undefined;
  return row?.session ?? null;
}

/** Every stored snapshot id, in insertion order (`newestFirst`: the reverse). */
export function snapshotIds(store: Store, options: { newestFirst?: boolean } = {}): string[] {
  const sql = options.newestFirst
    ? "SELECT id FROM snapshots ORDER BY seq DESC"
    : "SELECT id FROM snapshots ORDER BY seq";
  return (store.stmt(sql).all() as { id: string }[]).map((row) => row.id);
}

/**
 * Lists stored snapshot rows newest first (insertion order), optionally of
 * one session (every branch).
 */
export function listSnapshotRows(store: Store, filter: RowFilter = {}): SnapshotRow[] {
  const where = filter.session !== undefined ? "WHERE session = ?" : "";
  const params: (string | number)[] = filter.session !== undefined ? [filter.session] : [];
  params.push(filter.limit ?? -1);
  return store.stmt(
    `SELECT ${ROW_COLUMNS} FROM snapshots ${where}
     ORDER BY seq DESC LIMIT ?`,
  ).all(...params) as unknown as SnapshotRow[];
}

/** What the retention policy reads of one snapshot row. */
export interface RetentionRow {
  /** Insertion order. */
  seq: number;
  /** Snapshot id. */
  id: string;
  /** Parent id or null. */
  parent: string | null;
  /** Body's created_at (RFC 3339). */
  created_at: string;
  /** Source kind, or null for a snapshot made without an idempotency source. */
  source_kind: string | null;
  /** Whether it arrived by import or pull. */
  imported: number;
}

/** Every snapshot row's retention columns, keyed by id. */
export function retentionRows(store: Store): Map<string, RetentionRow> {
  const rows = store.stmt(
    "SELECT seq, id, parent, created_at, source_kind, imported FROM snapshots",
  ).all() as unknown as RetentionRow[];
  return new Map(rows.map((row) => [row.id, { ...row }]));
}
