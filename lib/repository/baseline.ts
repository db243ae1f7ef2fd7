/**
 * The workspace baseline: the tree the workspace was last known to hold.
 *
 * Every three-way plan (restore, switch, undo, redo) compares three trees:
 * the baseline (what ctxsnap last recorded or wrote), the disk now, and the
 * target. The baseline is a store record of its own, separate from branch
 * heads (which say where the next snapshot goes, not what the disk holds):
 *
 * - `create` sets it to the tree it captured (also when it returns the head
 *   unchanged);
 * - a restore, `switch`, `undo`, `redo` and `recover` (finishing) set it to
 *   the tree they moved the workspace to; a local change they kept stays a
 *   difference between the disk and the baseline;
 * - a pointer-only switch, `fork`, `import`, `forget` and `gc` leave it alone.
 *
 * The store has one workspace, so there is one row (table `baseline`, schema
 * 4). `null` means unknown (a new store): then every path on disk counts as
 * untracked. `gc` keeps the baseline's tree. A store opened read-only that
 * was never migrated to schema 4 reads the baseline earlier versions used:
 * the tree of the current branch's head.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { readBaseline, setBaseline } from "./baseline.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * if (readBaseline(store) !== null) throw new Error("a new store has no baseline");
 * const tree = store.transaction("t", () => store.putTree({ version: 1, entries: [], skipped: [] }));
 * store.transaction("t", () => setBaseline(store, tree, null));
 * if (readBaseline(store) !== tree) throw new Error("set");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";

const LEGACY = `
  SELECT s.tree AS tree FROM snapshots s
  WHERE s.id = (
    SELECT b.head FROM branches b
    WHERE b.session = COALESCE((SELECT value FROM meta WHERE key = 'current_session'), 'main')
      AND b.name = COALESCE((
        SELECT current_branch FROM sessions
        WHERE name = COALESCE((SELECT value FROM meta WHERE key = 'current_session'), 'main')
      ), 'main')
  )`;

/** The baseline tree id, or null when unknown. */
export function readBaseline(store: Store): string | null {
  let row: { tree: string | null } | undefined;
  try {
    row = store.stmt("SELECT tree FROM baseline WHERE id = 1").get() as typeof row;
  } catch (error) {
    // A store of schema 3 or older opened read-only has no baseline table yet.
    if (!/no such table/i.test(String((error as Error)?.message))) throw error;
    row = store.stmt(LEGACY).get() as typeof row;
  }
  return row?.tree ?? null;
}

/**
 * Records `tree` as the baseline, set by `operation` (call inside the
 * caller's write transaction, so it commits with what it describes).
 */
export function setBaseline(store: Store, tree: string | null, operation: string | null): void {
  store.stmt(
    `INSERT INTO baseline (id, tree, operation, updated_at) VALUES (1, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET tree = excluded.tree, operation = excluded.operation,
       updated_at = excluded.updated_at`,
  ).run(tree, operation, Date.now());
}
