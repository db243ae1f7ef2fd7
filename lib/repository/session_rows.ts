/**
 * The `sessions` table: one row per session, holding its current branch and
 * its live state (the context the next snapshot records) as canonical JSON
 * text, `{}` when empty. A session without a row reads as branch `main` with
 * an empty state; rows are created on first use. Which session is current is
 * the store setting `current_session` (`Store.getMeta`).
 *
 * This layer stores the state as text; parsing and validating it is
 * `lib/history/session_state.ts`. Call the writing functions inside the
 * caller's write transaction.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import {
 *   insertSessionIfMissing,
 *   sessionCurrentBranch,
 *   sessionStateText,
 *   setSessionStateText,
 * } from "./session_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * if (sessionCurrentBranch(store, "main") !== null) throw new Error("no row yet");
 * store.transaction("t", () => {
 *   insertSessionIfMissing(store, "main", "main");
 *   setSessionStateText(store, "main", '{"task":"x"}');
 * });
 * if (sessionCurrentBranch(store, "main") !== "main") throw new Error("branch");
 * if (sessionStateText(store, "main") !== '{"task":"x"}') throw new Error("state");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";

/** A session's name, current branch and last change, as `session list` shows them. */
export interface SessionListRow {
  /** Session name. */
  name: string;
  /** Its current branch. */
  current_branch: string;
  /** Last change to its row (ms since the epoch). */
  updated_at: number;
}

/** A session's current branch, or null when it has no row. */
export function sessionCurrentBranch(store: Store, name: string): string | null {
  const row = store.stmt("SELECT current_branch FROM sessions WHERE name = ?").get(name) as
    | { current_branch: string }
    | undefined;
  return row?.current_branch ?? null;
}

/** Creates the session row with `branch` current and an empty state, if missing. */
export function insertSessionIfMissing(store: Store, name: string, branch: string): void {
  const now = Date.now();
  store.stmt(
    "INSERT OR IGNORE INTO sessions (name, current_branch, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  ).run(name, branch, "{}", now, now);
}

/** A session's live state as stored (canonical JSON text), or null when it has no row. */
export function sessionStateText(store: Store, name: string): string | null {
  const row = store.stmt("SELECT state FROM sessions WHERE name = ?").get(name) as
    | { state: string }
    | undefined;
  return row?.state ?? null;
}

/** Replaces a session's live state (canonical JSON text); no row, no change. */
export function setSessionStateText(store: Store, name: string, state: string): void {
  store.stmt("UPDATE sessions SET state = ?, updated_at = ? WHERE name = ?").run(
    state,
    Date.now(),
    name,
  );
}

/** A session's current branch and stored state together, or null when it has no row. */
export function sessionPointerRow(
  store: Store,
  name: string,
): { current_branch: string; state: string } | null {
  const row = store.stmt("SELECT current_branch, state FROM sessions WHERE name = ?").get(
    name,
  ) as { current_branch: string; state: string } | undefined;
  return row ?? null;
}

/**
 * Creates the session with this current branch and state (canonical JSON
 * text), or sets them on the existing row (its creation time is kept);
 * `now` stamps the change.
 */
export function putSession(
  store: Store,
  name: string,
  branch: string,
  state: string,
  now: number = Date.now(),
): void {
  store.stmt(
    `INSERT INTO sessions (name, current_branch, state, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET current_branch = excluded.current_branch,
         state = excluded.state, updated_at = excluded.updated_at`,
  ).run(name, branch, state, now, now);
}

/** Makes `branch` the session's current branch; no row, no change. */
export function setCurrentBranch(store: Store, name: string, branch: string): void {
  store.stmt(
    "UPDATE sessions SET current_branch = ?, updated_at = ? WHERE name = ?",
  ).run(branch, Date.now(), name);
}

/**
 * Makes `main` the session's current branch if it is `branch` (which is
 * being deleted); its `updated_at` is left alone.
 */
export function leaveBranch(store: Store, name: string, branch: string): void {
  store.stmt(
    "UPDATE sessions SET current_branch = 'main' WHERE name = ? AND current_branch = ?",
  ).run(name, branch);
}

/** Every session row, by name. */
export function listSessionRows(store: Store): SessionListRow[] {
  return store.stmt(
    "SELECT name, current_branch, updated_at FROM sessions ORDER BY name",
  ).all() as unknown as SessionListRow[];
}

/** The names of the sessions whose live state is not empty, sorted. */
export function sessionsWithLiveState(store: Store): string[] {
  return (store.stmt(
    "SELECT name FROM sessions WHERE state <> '{}' ORDER BY name",
  ).all() as { name: string }[]).map((row) => row.name);
}
