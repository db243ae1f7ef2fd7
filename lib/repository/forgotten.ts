/**
 * The `forgotten` table: the ids of snapshots removed by `forget`, each with
 * the operation that removed it. A snapshot row leaves only here, and only
 * while a `forget` operation is `applying` (the schema's trigger refuses any
 * other `DELETE`; docs/DESIGN.md §3, invariant 4), so a chain check can tell
 * a parent forgotten on purpose from one that went missing.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { forgetSnapshotRow, forgottenIds } from "./forgotten.ts";
 * import { finishOperation, startOperation } from "./operations.ts";
 * import { hasSnapshot, insertSnapshotRow } from "./snapshot_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const id = "ab".repeat(32);
 * store.transaction("t", () =>
 *   insertSnapshotRow(store, {
 *     id, session: "main", branch: "main", parent: null, created_at: "2026-01-01T00:00:00.000Z",
 *     tree: null, source_kind: null, source_id: null, key_id: "cd".repeat(8), imported: false,
 *     envelope: new Uint8Array(),
 *   }));
 * store.transaction("forget", () => {
 *   const op = startOperation(store, { kind: "forget", plan: {} });
 *   if (!forgetSnapshotRow(store, id, op.id, Date.now())) throw new Error("forget");
 *   finishOperation(store, op.id, "done");
 * });
 * if (hasSnapshot(store, id) || forgottenIds(store)[0] !== id) throw new Error("forgotten");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { deleteLeanCtxRow } from "./leanctx_rows.ts";
import type { Store } from "./store.ts";

/**
 * Deletes the snapshot row `id` and records it as forgotten by `operation`
 * at `at` (ms since the epoch); returns false, recording nothing, when the
 * store has no such row. A snapshot kept as itself (an imported lean-ctx
 * file, `leanctx_rows.ts`) is deleted without a `forgotten` record: no
 * chain ever names it as a parent. Call it inside the write transaction of
 * an `applying` forget operation.
 */
export function forgetSnapshotRow(
  store: Store,
  id: string,
  operation: string,
  at: number,
): boolean {
  if (store.stmt("DELETE FROM snapshots WHERE id = ?").run(id).changes !== 1) {
    return deleteLeanCtxRow(store, id);
  }
  store.stmt("INSERT OR IGNORE INTO forgotten (id, operation, forgotten_at) VALUES (?, ?, ?)")
    .run(id, operation, at);
  return true;
}

/** Every forgotten snapshot id, in no particular order. */
export function forgottenIds(store: Store): string[] {
  return (store.stmt("SELECT id FROM forgotten").all() as { id: string }[]).map((row) => row.id);
}
