/**
 * The undo log: undo records stored with operations, and the undo and redo
 * stacks replayed from the operations log.
 *
 * An **undo record** (column `operations.undo`, canonical JSON) is what an
 * operation changed: for each thing it touched, the state before and after —
 * the workspace files (two tree ids, for moves), the workspace baseline, the
 * current session, each touched session's current branch and live state,
 * and each touched branch's head and base. Only what changed is kept. It is
 * stored data, so {@linkcode parseUndoRecord} checks it before use.
 *
 * The **stacks** are replayed from the log, oldest first (by finish time):
 * a done operation with an undo record is pushed on the undo stack (and
 * clears the redo stack); an `undo` moves the operation it reverts
 * (`operations.reverts`) from the undo stack to the redo stack; a `redo`
 * moves it back; a `forget` removes the operations its plan lists as
 * `unundoable`. `gc` keeps every tree of files the stacks may move back
 * ({@linkcode treesNeeded}); `forget` cuts the operations whose records name
 * a snapshot it removes ({@linkcode cutBy}). Recording and applying records
 * is `lib/history/oplog.ts`.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { undoStack } from "./undo_log.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const stack = undoStack(store);
 * if (stack.done.length !== 0 || stack.redo.length !== 0) throw new Error("empty log");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { type JsonValue, parseJson } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import type { Store } from "./store.ts";

/** A branch's pointers. */
export interface BranchPointers {
  /** Head snapshot id, or null for an empty branch. */
  head: string | null;
  /** The snapshot it was forked from, or null. */
  base: string | null;
}

/** A session's current branch and live state (the canonical JSON object). */
export interface SessionPointers {
  /** Current branch. */
  branch: string;
  /** Live state: the context object, or `{}` when empty. */
  state: JsonValue;
}

/** A before/after pair. */
export interface Change<T> {
  /** Before the operation. */
  before: T;
  /** After it. */
  after: T;
}

/** What an operation changed: only the parts that differ. */
export interface UndoRecord {
  /** The workspace files before and after a move (tree ids), or null. */
  files: Change<string> | null;
  /** The baseline, or null when unchanged. */
  baseline: Change<string | null> | null;
  /** The current session, or null when unchanged. */
  current_session: Change<string> | null;
  /** Sessions whose current branch or state changed. */
  sessions: ({ name: string } & Change<SessionPointers>)[];
  /** Branches created, deleted or moved (null: no such branch). */
  branches: ({ session: string; name: string } & Change<BranchPointers | null>)[];
}

function fail(op: string, what: string): never {
  throw new IntegrityError(`Operation ${quote(op)} has a malformed undo record: ${what}`);
}

function treeOrNull(op: string, value: unknown, what: string): string | null {
  if (value === null) return null;
  if (typeof value === "string" && isHex(value, 64)) return value;
  return fail(op, what);
}

function object(op: string, value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail(op, what);
  return value as Record<string, unknown>;
}

function changeOf<T>(
  op: string,
  value: unknown,
  what: string,
  item: (v: unknown) => T,
): Change<T> | null {
  if (value === null) return null;
  const o = object(op, value, what);
  return { before: item(o.before), after: item(o.after) };
}

function branchPointers(op: string, value: unknown): BranchPointers | null {
  if (value === null) return null;
  const o = object(op, value, "branch");
  return {
    head: treeOrNull(op, o.head, "branch head"),
    base: treeOrNull(op, o.base, "branch base"),
  };
}

function sessionPointers(op: string, value: unknown): SessionPointers {
  const o = object(op, value, "session");
  if (typeof o.branch !== "string") fail(op, "session branch");
  object(op, o.state, "session state");
  return { branch: o.branch, state: o.state as JsonValue };
}

function text(op: string, value: unknown, what: string): string {
  if (typeof value !== "string") fail(op, what);
  return value;
}

/** Parses and checks a stored undo record. */
export function parseUndoRecord(op: string, raw: string): UndoRecord {
  let value: unknown;
  try {
    value = parseJson(raw, { maxBytes: 64 * 1024 * 1024 });
  } catch (error) {
    throw new IntegrityError(`Operation ${quote(op)} has an unreadable undo record`, {
      cause: error,
    });
  }
  const o = object(op, value, "not an object");
  if (!Array.isArray(o.sessions) || !Array.isArray(o.branches)) fail(op, "lists");
  return {
    files: changeOf(op, o.files ?? null, "files", (v) => {
      const tree = treeOrNull(op, v, "files tree");
      return tree ?? fail(op, "files tree");
    }),
    baseline: changeOf(op, o.baseline ?? null, "baseline", (v) => treeOrNull(op, v, "baseline")),
    current_session: changeOf(
      op,
      o.current_session ?? null,
      "current session",
      (v) => text(op, v, "current session"),
    ),
    sessions: o.sessions.map((s) => {
      const x = object(op, s, "session change");
      return {
        name: text(op, x.name, "session name"),
        before: sessionPointers(op, x.before),
        after: sessionPointers(op, x.after),
      };
    }),
    branches: o.branches.map((b) => {
      const x = object(op, b, "branch change");
      return {
        session: text(op, x.session, "branch session"),
        name: text(op, x.name, "branch name"),
        before: branchPointers(op, x.before),
        after: branchPointers(op, x.after),
      };
    }),
  };
}

/** The undo record of operation `id`, or null when it has none (or is not in the log). */
export function readUndoRecord(store: Store, id: string): UndoRecord | null {
  const row = store.stmt("SELECT undo FROM operations WHERE id = ?").get(id) as
    | { undo: string | null }
    | undefined;
  return row?.undo == null ? null : parseUndoRecord(id, row.undo);
}

/** One entry of the undo or redo stack. */
export interface StackEntry {
  /** Operation id. */
  id: string;
  /** Its kind. */
  kind: string;
  /** Its session, or null. */
  session: string | null;
  /** When it finished (ms). */
  finished_at: number;
  /** What it changed. */
  record: UndoRecord;
}

/** The undo stack (`done`, top last) and the redo stack (`redo`, top last). */
export interface UndoStack {
  /** Operations `undo` can revert, oldest first. */
  done: StackEntry[];
  /** Operations `redo` can re-apply, the next one last. */
  redo: StackEntry[];
}

/** Replays the operations log into the undo and redo stacks. */
export function undoStack(store: Store): UndoStack {
  const rows = store.stmt(
    `SELECT id, kind, session, plan, finished_at, undo, reverts FROM operations
     WHERE status = 'done' AND (undo IS NOT NULL OR kind IN ('undo', 'redo', 'forget'))
     ORDER BY finished_at, seq`,
  ).all() as {
    id: string;
    kind: string;
    session: string | null;
    plan: string;
    finished_at: number;
    undo: string | null;
    reverts: string | null;
  }[];
  const done: StackEntry[] = [];
  const redo: StackEntry[] = [];
  const take = (stack: StackEntry[], id: string | null): StackEntry | null => {
    const at = stack.findIndex((e) => e.id === id);
    return at === -1 ? null : stack.splice(at, 1)[0]!;
  };
  for (const row of rows) {
    if (row.kind === "undo") {
      const entry = take(done, row.reverts);
      if (entry !== null) redo.push(entry);
    } else if (row.kind === "redo") {
      const entry = take(redo, row.reverts);
      if (entry !== null) done.push(entry);
    } else if (row.kind === "forget") {
      const plan = parseJson(row.plan) as Record<string, JsonValue>;
      const cut = Array.isArray(plan.unundoable) ? plan.unundoable : [];
      for (const id of cut) {
        if (typeof id !== "string") continue;
        take(done, id);
        take(redo, id);
      }
    } else if (row.undo !== null) {
      done.push({
        id: row.id,
        kind: row.kind,
        session: row.session,
        finished_at: row.finished_at,
        record: parseUndoRecord(row.id, row.undo),
      });
      redo.length = 0;
    }
  }
  return { done, redo };
}

/** Snapshot ids an undo record needs to exist (branch heads and bases it may restore). */
export function snapshotsNeeded(record: UndoRecord): string[] {
  const ids: string[] = [];
  for (const b of record.branches) {
    for (const side of [b.before, b.after]) {
      if (side?.head) ids.push(side.head);
      if (side?.base) ids.push(side.base);
    }
  }
  return ids;
}

/**
 * Tree ids an undo record needs to exist: the files a move changed (undo and
 * redo move them back). gc keeps them. A baseline the record names need not
 * exist: a baseline whose tree is gone counts as unknown, which only makes
 * later plans more careful (every path untracked).
 */
export function treesNeeded(record: UndoRecord): string[] {
  return record.files === null ? [] : [record.files.before, record.files.after];
}

/**
 * The operations of the stacks that could no longer be undone (or redone)
 * if the snapshots `doomed` were forgotten (and `deletedBranch` deleted):
 * each one whose record needs one of them, and every one below it on its
 * stack (a stack unwinds in order).
 */
export function cutBy(
  stack: UndoStack,
  doomed: ReadonlySet<string>,
  deletedBranch: { session: string; branch: string } | null = null,
): StackEntry[] {
  const cut: StackEntry[] = [];
  const needs = (entry: StackEntry) =>
    snapshotsNeeded(entry.record).some((id) => doomed.has(id)) ||
    (deletedBranch !== null && entry.record.branches.some((b) =>
      b.session === deletedBranch.session && b.name === deletedBranch.branch
    ));
  for (const entries of [stack.done, stack.redo]) {
    let deepest = -1;
    entries.forEach((entry, i) => {
      if (needs(entry)) deepest = i;
    });
    cut.push(...entries.slice(0, deepest + 1));
  }
  return cut;
}
