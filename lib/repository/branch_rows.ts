/**
 * The `branches` table: each session's branches, keyed by (session, name),
 * with a head (the newest snapshot, null for an empty branch) and a base (the
 * snapshot it was forked from). A head moves by compare-and-swap
 * ({@linkcode compareAndSetHead}) so two writers cannot both extend a branch;
 * the undo log and a pull put recorded pointers back as they were.
 *
 * Call the writing functions inside the caller's write transaction.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { compareAndSetHead, getBranch, insertBranchIfMissing } from "./branch_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const head = "ab".repeat(32);
 * store.transaction("t", () => insertBranchIfMissing(store, "main", "main", null, null));
 * if (getBranch(store, "main", "main")?.head !== null) throw new Error("empty");
 * if (!store.transaction("t", () => compareAndSetHead(store, "main", "main", null, head))) {
 *   throw new Error("swap");
 * }
 * if (store.transaction("t", () => compareAndSetHead(store, "main", "main", null, head))) {
 *   throw new Error("a stale swap must fail");
 * }
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";

/** A branch of a session. */
export interface BranchRow {
  /** Session. */
  session: string;
  /** Branch name. */
  name: string;
  /** Head snapshot id, or null for an empty branch. */
  head: string | null;
  /** Snapshot it was forked from, or null. */
  base: string | null;
  /** Creation time (ms). */
  createdAt: number;
  /** Last head move (ms). */
  updatedAt: number;
}

/** The columns of a {@linkcode BranchRow}, its times in camelCase. */
const BRANCH_COLUMNS =
  "session, name, head, base, created_at AS createdAt, updated_at AS updatedAt";

/** Creates the branch row if missing, with the given head and base; an existing row is kept. */
export function insertBranchIfMissing(
  store: Store,
  session: string,
  name: string,
  head: string | null,
  base: string | null,
): void {
  const now = Date.now();
  store.stmt(
    "INSERT OR IGNORE INTO branches (session, name, head, base, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
  ).run(session, name, head, base, now, now);
}

/** Creates a branch row; one that exists already fails the statement (check first). */
export function insertBranch(
  store: Store,
  session: string,
  name: string,
  head: string | null,
  base: string | null,
): void {
  const now = Date.now();
  store.stmt(
    "INSERT INTO branches (session, name, head, base, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
  ).run(session, name, head, base, now, now);
}

/** Reads a branch, or null. */
export function getBranch(store: Store, session: string, branch: string): BranchRow | null {
  const row = store.stmt(`SELECT ${BRANCH_COLUMNS} FROM branches WHERE session = ? AND name = ?`)
    .get(
      session,
      branch,
    ) as BranchRow | undefined;
  return row ?? null;
}

/** Lists a session's branches (all sessions when `session` is undefined). */
export function listBranches(store: Store, session?: string): BranchRow[] {
  const rows = session === undefined
    ? store.stmt(`SELECT ${BRANCH_COLUMNS} FROM branches ORDER BY session, name`).all()
    : store.stmt(`SELECT ${BRANCH_COLUMNS} FROM branches WHERE session = ? ORDER BY name`).all(
      session,
    );
  return rows as unknown as BranchRow[];
}

/**
 * Moves a branch head from `expected` to `next` if it is still `expected`
 * (compare-and-swap); returns whether it moved.
 */
export function compareAndSetHead(
  store: Store,
  session: string,
  branch: string,
  expected: string | null,
  next: string,
): boolean {
  const result = store.stmt(
    "UPDATE branches SET head = ?, updated_at = ? WHERE session = ? AND name = ? AND head IS ?",
  ).run(next, Date.now(), session, branch, expected);
  return result.changes === 1;
}

/** Sets a branch head whatever it was (a pull moving a tracking branch to the remote's head). */
export function setBranchHead(store: Store, session: string, branch: string, head: string): void {
  store.stmt("UPDATE branches SET head = ?, updated_at = ? WHERE session = ? AND name = ?")
    .run(head, Date.now(), session, branch);
}

/** The head and base of each branch of `session`, in no particular order. */
export function branchPointers(
  store: Store,
  session: string,
): { name: string; head: string | null; base: string | null }[] {
  return store.stmt("SELECT name, head, base FROM branches WHERE session = ?").all(
    session,
  ) as { name: string; head: string | null; base: string | null }[];
}

/**
 * Creates the branch with this head and base, or sets them on the existing
 * row (its creation time is kept); `now` stamps the change.
 */
export function putBranch(
  store: Store,
  session: string,
  name: string,
  head: string | null,
  base: string | null,
  now: number = Date.now(),
): void {
  store.stmt(
    `INSERT INTO branches (session, name, head, base, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (session, name) DO UPDATE SET head = excluded.head, base = excluded.base,
         updated_at = excluded.updated_at`,
  ).run(session, name, head, base, now, now);
}

/** Deletes a branch row (nothing when absent). */
export function deleteBranchRow(store: Store, session: string, name: string): void {
  store.stmt("DELETE FROM branches WHERE session = ? AND name = ?").run(session, name);
}
