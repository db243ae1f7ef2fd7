/**
 * Recording and applying undo records (their format and the undo stack are
 * `lib/repository/undo_log.ts`).
 *
 * Every operation that changes the workspace, a session or a branch (create,
 * restore, switch, undo, redo, fork, import, session edits) reads the
 * {@linkcode View} of the sessions it may touch before and after the change
 * and records the difference ({@linkcode diffViews}) as its undo record.
 * Undo puts the "before" side back ({@linkcode applyView}), redo the "after"
 * side, after checking that the other side is what the store holds now
 * ({@linkcode viewMismatches}). So `undo` twice undoes the last two
 * operations, and only `redo` goes forward again.
 *
 * The log is store-wide (the store has one workspace); undo records name
 * sessions explicitly.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { captureView, diffViews } from "./oplog.ts";
 * import { ensureBranch } from "./timeline.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const before = captureView(store, ["main"]);
 * store.transaction("t", () => ensureBranch(store, "main", "exp"));
 * const record = diffViews(before, captureView(store, ["main"]), null);
 * if (record?.branches[0]?.name !== "exp" || record.branches[0].before !== null) {
 *   throw new Error("the new branch is recorded");
 * }
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { canonicalize, type JsonValue, parseJson } from "../encoding/canonical_json.ts";
import { quote } from "../errors.ts";
import { readBaseline } from "../repository/baseline.ts";
import type {
  BranchPointers,
  Change,
  SessionPointers,
  UndoRecord,
} from "../repository/undo_log.ts";
import { newOperationId, type OperationStart, startOperation } from "../repository/operations.ts";
import type { Store } from "../repository/store.ts";
import { branchPointers, deleteBranchRow, putBranch } from "../repository/branch_rows.ts";
import { putSession, sessionPointerRow } from "../repository/session_rows.ts";
import { DEFAULT_NAME } from "./timeline.ts";

export {
  cutBy,
  parseUndoRecord,
  readUndoRecord,
  snapshotsNeeded,
  type StackEntry,
  treesNeeded,
  type UndoStack,
  undoStack,
} from "../repository/undo_log.ts";
export type {
  BranchPointers,
  Change,
  SessionPointers,
  UndoRecord,
} from "../repository/undo_log.ts";

/** What a set of sessions looks like at one instant. */
export interface View {
  /** The workspace baseline tree. */
  baseline: string | null;
  /** The current session. */
  current_session: string;
  /** Each session's pointers (a session without a row: branch `main`, state `{}`). */
  sessions: Record<string, SessionPointers>;
  /** Each session's branches. */
  branches: Record<string, Record<string, BranchPointers>>;
}

/** Reads the view of `sessions` (and the store-wide baseline and current session). */
export function captureView(store: Store, sessions: Iterable<string>): View {
  const view: View = {
    baseline: readBaseline(store),
    current_session: store.getMeta("current_session") ?? DEFAULT_NAME,
    sessions: {},
    branches: {},
  };
  for (const name of new Set(sessions)) {
    const row = sessionPointerRow(store, name);
    view.sessions[name] = row === null
      ? { branch: DEFAULT_NAME, state: {} }
      : { branch: row.current_branch, state: parseJson(row.state) };
    const branches: Record<string, BranchPointers> = {};
    for (const b of branchPointers(store, name)) branches[b.name] = { head: b.head, base: b.base };
    view.branches[name] = branches;
  }
  return view;
}

function same(a: unknown, b: unknown): boolean {
  return canonicalize(a as JsonValue) === canonicalize(b as JsonValue);
}

/**
 * The undo record between two views of the same sessions (plus the files
 * of a move), or null when nothing changed.
 */
export function diffViews(
  before: View,
  after: View,
  files: Change<string> | null,
): UndoRecord | null {
  const record: UndoRecord = {
    files: files !== null && files.before !== files.after ? files : null,
    baseline: before.baseline === after.baseline
      ? null
      : { before: before.baseline, after: after.baseline },
    current_session: before.current_session === after.current_session
      ? null
      : { before: before.current_session, after: after.current_session },
    sessions: [],
    branches: [],
  };
  const names = new Set([...Object.keys(before.sessions), ...Object.keys(after.sessions)]);
  for (const name of [...names].sort()) {
    const b = before.sessions[name];
    const a = after.sessions[name];
    if (b !== undefined && a !== undefined && !same(b, a)) {
      record.sessions.push({ name, before: b, after: a });
    }
    const bb = before.branches[name] ?? {};
    const ab = after.branches[name] ?? {};
    for (const branch of [...new Set([...Object.keys(bb), ...Object.keys(ab)])].sort()) {
      const x = bb[branch] ?? null;
      const y = ab[branch] ?? null;
      if (!same(x, y)) record.branches.push({ session: name, name: branch, before: x, after: y });
    }
  }
  const empty = record.files === null && record.baseline === null &&
    record.current_session === null && record.sessions.length === 0 &&
    record.branches.length === 0;
  return empty ? null : record;
}

/** A change in progress: see {@linkcode beginChange}. */
export interface PendingChange {
  /** The operation id it will be recorded under. */
  id: string;
  /** The sessions it may touch. */
  sessions: string[];
  /** Their view before the change. */
  before: View;
}

/**
 * Starts recording a change to `sessions` (inside the caller's write
 * transaction): reads their view now. Make the change, then call
 * {@linkcode endChange}.
 */
export function beginChange(
  store: Store,
  sessions: Iterable<string>,
  id: string = newOperationId(),
): PendingChange {
  const touched = [...new Set(sessions)];
  return { id, sessions: touched, before: captureView(store, touched) };
}

/**
 * Records a change begun with {@linkcode beginChange} as a done, undoable
 * operation of `start`, with the undo record of what changed (plus the files
 * of a move). Nothing is recorded when nothing changed, unless `always`.
 * Returns the operation id, or null.
 */
export function endChange(
  store: Store,
  pending: PendingChange,
  start: Omit<OperationStart, "status" | "undo" | "id">,
  options: { files?: Change<string> | null; always?: boolean } = {},
): string | null {
  const record = diffViews(
    pending.before,
    captureView(store, pending.sessions),
    options.files ?? null,
  );
  if (record === null && !options.always) return null;
  startOperation(store, {
    ...start,
    id: pending.id,
    status: "done",
    undo: record === null ? null : record as unknown as JsonValue,
  });
  return pending.id;
}

/**
 * Runs `change` (inside the caller's write transaction) and records it as
 * with {@linkcode beginChange} and {@linkcode endChange}. `change` receives
 * the operation id and returns what to record. Returns the operation id, or
 * null when nothing changed.
 */
export function recordChange(
  store: Store,
  sessions: Iterable<string>,
  change: (operation: string) => Omit<OperationStart, "status" | "undo" | "id">,
  options: { always?: boolean } = {},
): string | null {
  const pending = beginChange(store, sessions);
  const start = change(pending.id);
  return endChange(store, pending, start, options);
}

/** Whether the current state matches one side of a record (what undo or redo expects). */
export function viewMismatches(
  store: Store,
  record: UndoRecord,
  side: "before" | "after",
): string[] {
  const problems: string[] = [];
  const view = captureView(
    store,
    record.sessions.map((s) => s.name).concat(
      record.branches.map((b) => b.session),
    ),
  );
  if (record.current_session !== null && view.current_session !== record.current_session[side]) {
    problems.push(`the current session is ${quote(view.current_session)}`);
  }
  for (const s of record.sessions) {
    const now = view.sessions[s.name]!;
    const want = s[side];
    if (now.branch !== want.branch) {
      problems.push(`session ${quote(s.name)} is on branch ${quote(now.branch)}`);
    }
    if (!same(now.state, want.state)) {
      problems.push(`the live state of session ${quote(s.name)} changed`);
    }
  }
  for (const b of record.branches) {
    const now = view.branches[b.session]?.[b.name] ?? null;
    if (!same(now, b[side])) problems.push(`branch ${quote(`${b.session}/${b.name}`)} moved`);
  }
  return problems;
}

/**
 * Puts one side of a record back: branches, sessions, the current session
 * and the baseline (not the files: a move does those). Inside the caller's
 * transaction.
 */
export function applyView(store: Store, record: UndoRecord, side: "before" | "after"): void {
  const now = Date.now();
  for (const b of record.branches) {
    const want = b[side];
    if (want === null) {
      deleteBranchRow(store, b.session, b.name);
      continue;
    }
    putBranch(store, b.session, b.name, want.head, want.base, now);
  }
  for (const s of record.sessions) {
    const want = s[side];
    putSession(store, s.name, want.branch, canonicalize(want.state), now);
  }
  if (record.current_session !== null) {
    store.setMeta("current_session", record.current_session[side]);
  }
}
