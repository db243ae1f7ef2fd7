/**
 * The `leanctx_snapshots` table (schema 3): lean-ctx snapshot files kept as
 * their exact bytes, keyed by lean-ctx id, with an index of columns copied
 * from the verified file. This layer stores and finds rows; it knows nothing
 * of the file format (see `lib/share/leanctx.ts`). A store opened read-only
 * before its migration to schema 3 simply has no rows.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { insertLeanCtxRow, leanCtxRow, leanCtxRows } from "./leanctx_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const row = {
 *   id: "ab".repeat(32), session: "main", branch: "imported/unsigned", key_id: null,
 *   created_at: "2026-01-01T00:00:00Z", file: new TextEncoder().encode("{}"),
 * };
 * if (!store.transaction("t", () => insertLeanCtxRow(store, row))) throw new Error("insert");
 * if (store.transaction("t", () => insertLeanCtxRow(store, row))) throw new Error("twice");
 * if (leanCtxRow(store, row.id)?.branch !== "imported/unsigned") throw new Error("read");
 * if (leanCtxRows(store, {}).length !== 1) throw new Error("list");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";

/** One stored lean-ctx snapshot. */
export interface LeanCtxRow {
  /** Insertion order. */
  seq: number;
  /** The lean-ctx `snapshot_id`. */
  id: string;
  /** The session it was imported into. */
  session: string;
  /** Its quarantine branch, `imported/<key id>` or `imported/unsigned`. */
  branch: string;
  /** Signer key id, or null when unsigned. */
  key_id: string | null;
  /** The file's `created_at`, as written. */
  created_at: string;
  /** When it was imported (ms since the epoch). */
  imported_at: number;
  /** The file's exact bytes. */
  file: Uint8Array;
}

const tableKnown = new WeakMap<Store, boolean>();

/** Whether the store has the table (a read-only open of a schema-2 store has not). */
export function hasLeanCtxTable(store: Store): boolean {
  let known = tableKnown.get(store);
  if (known === undefined) {
    known = store.stmt(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'leanctx_snapshots'",
    ).get() !== undefined;
    tableKnown.set(store, known);
  }
  return known;
}

/** Inserts a row (inside the caller's transaction); false when the id is already stored. */
export function insertLeanCtxRow(
  store: Store,
  row: Omit<LeanCtxRow, "seq" | "imported_at">,
): boolean {
  const result = store.stmt(
    `INSERT OR IGNORE INTO leanctx_snapshots (id, session, branch, key_id, created_at, imported_at, file)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(row.id, row.session, row.branch, row.key_id, row.created_at, Date.now(), row.file);
  return result.changes === 1;
}

/**
 * Deletes the row of `id`; false when there is none. The schema lets a row
 * leave only while a `forget` operation is `applying` (call it inside that
 * operation's write transaction).
 */
export function deleteLeanCtxRow(store: Store, id: string): boolean {
  if (!hasLeanCtxTable(store)) return false;
  return store.stmt("DELETE FROM leanctx_snapshots WHERE id = ?").run(id).changes === 1;
}

/** The row of a full id, or null. */
export function leanCtxRow(store: Store, id: string): LeanCtxRow | null {
  if (!hasLeanCtxTable(store)) return null;
  const row = store.stmt("SELECT * FROM leanctx_snapshots WHERE id = ?").get(id) as
    | LeanCtxRow
    | undefined;
  return row ?? null;
}

/** Full ids starting with `prefix` (lowercase hex), at most `limit`. */
export function leanCtxIdsWithPrefix(store: Store, prefix: string, limit: number): string[] {
  if (!hasLeanCtxTable(store)) return [];
  return (store.stmt(
    "SELECT id FROM leanctx_snapshots WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
  ).all(prefix, prefix + "g", limit) as { id: string }[]).map((r) => r.id);
}

/** Rows newest import first, optionally of one session and branch. */
export function leanCtxRows(
  store: Store,
  filter: { session?: string; branch?: string; limit?: number },
): LeanCtxRow[] {
  if (!hasLeanCtxTable(store)) return [];
  const clauses: string[] = [];
  const params: (string | number)[] = [];
  if (filter.session !== undefined) {
    clauses.push("session = ?");
    params.push(filter.session);
  }
  if (filter.branch !== undefined) {
    clauses.push("branch = ?");
    params.push(filter.branch);
  }
  params.push(filter.limit ?? -1);
  return store.stmt(
    `SELECT * FROM leanctx_snapshots ${clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : ""}
     ORDER BY seq DESC LIMIT ?`,
  ).all(...params) as unknown as LeanCtxRow[];
}
