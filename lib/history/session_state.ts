/**
 * The live session state: task, progress, decisions, files touched, findings
 * and knowledge. It is what the next snapshot records, and what a restore
 * merges back into.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { readSessionState, updateSessionState } from "./session_state.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * updateSessionState(store, "main", (s) => ({ ...s, task: "port the parser" }));
 * if (readSessionState(store, "main").task !== "port the parser") throw new Error("updated");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { canonicalize, parseJson } from "../encoding/canonical_json.ts";
import { assertResolved } from "../repository/operations.ts";
import type { Store } from "../repository/store.ts";
import { sessionStateText, setSessionStateText } from "../repository/session_rows.ts";
import { emptyContext, type SnapshotContext, validateContext } from "../format/body.ts";
import { recordChange } from "./oplog.ts";
import { DEFAULT_NAME, ensureSession } from "./timeline.ts";

/** Reads a session's live state (empty when the session has none yet). */
export function readSessionState(store: Store, session: string): SnapshotContext {
  const state = sessionStateText(store, session);
  if (state === null || state === "{}") return emptyContext();
  return validateContext(parseJson(state), `live state of session "${session}"`);
}

/** Applies `change` to a session's live state in one transaction and returns the result. */
export function updateSessionState(
  store: Store,
  session: string,
  change: (state: SnapshotContext) => SnapshotContext,
  allowOperation: string | null = null,
): SnapshotContext {
  return store.transaction("session update", () => {
    assertResolved(store, session, allowOperation);
    ensureSession(store, session);
    const next = validateContext(change(readSessionState(store, session)), "session state");
    setSessionStateText(store, session, canonicalize(next));
    return next;
  });
}

/**
 * Edits a session's live state as an undoable `session` operation (plan:
 * `{ "edit": what }`) and returns the new state. Nothing is recorded when
 * the edit changes nothing.
 */
export function editSession(
  store: Store,
  session: string,
  what: string,
  change: (state: SnapshotContext) => SnapshotContext,
): SnapshotContext {
  return store.transaction("session edit", () => {
    let next = emptyContext();
    recordChange(store, [session], () => {
      next = updateSessionState(store, session, change);
      return { kind: "session", session, branch: null, plan: { edit: what } };
    });
    return next;
  });
}

/** Makes `name` the current session (created if missing), as an undoable `session` operation. */
export function switchSession(store: Store, name: string): void {
  store.transaction("session switch", () => {
    const current = store.getMeta("current_session") ?? DEFAULT_NAME;
    recordChange(store, [current, name], () => {
      ensureSession(store, name);
      store.setMeta("current_session", name);
      return { kind: "session", session: name, branch: null, plan: { switch: name } };
    });
  });
}

/** Appends items not already present, keeping order (oldest first). */
export function appendUnique(list: readonly string[], items: readonly string[]): string[] {
  const out = [...list];
  const seen = new Set(list);
  for (const item of items) {
    if (!seen.has(item)) {
      seen.add(item);
      out.push(item);
    }
  }
  return out;
}

/**
 * Merges a snapshot's context into a live state (docs/DESIGN.md §5). Every
 * field follows one rule: what the snapshot recorded is brought back, and a
 * field it left unset keeps the live value. So the task and the progress are
 * replaced when the snapshot set them (a non-empty task, a progress above 0)
 * and kept otherwise, lists are joined without duplicates (live items first),
 * and extensions are replaced per namespace the snapshot recorded.
 *
 * @example
 * ```ts
 * import { emptyContext } from "../format/body.ts";
 * import { mergeContext } from "./session_state.ts";
 * const live = { ...emptyContext(), task: "port", progress_pct: 60, decisions: ["keep API"] };
 * const merged = mergeContext(live, emptyContext());
 * if (merged.progress_pct !== 60 || merged.task !== "port") throw new Error("kept");
 * ```
 */
export function mergeContext(live: SnapshotContext, incoming: SnapshotContext): SnapshotContext {
  return {
    task: incoming.task !== "" ? incoming.task : live.task,
    progress_pct: incoming.progress_pct !== 0 ? incoming.progress_pct : live.progress_pct,
    decisions: appendUnique(live.decisions, incoming.decisions),
    files_touched: appendUnique(live.files_touched, incoming.files_touched),
    findings: appendUnique(live.findings, incoming.findings),
    knowledge: appendUnique(live.knowledge, incoming.knowledge),
    extensions: { ...live.extensions, ...incoming.extensions },
  };
}

/** Items a list gained and lost. */
export interface ListChange {
  /** Items in the new list, not in the old. */
  added: string[];
  /** Items in the old list, not in the new. */
  removed: string[];
}

/** What changes from one live state to another (for plans and diffs). */
export interface SessionChange {
  /** The task before and after, or null when unchanged. */
  task: { from: string; to: string } | null;
  /** Progress before and after, or null when unchanged. */
  progress_pct: { from: number; to: number } | null;
  /** Decisions gained and lost. */
  decisions: ListChange;
  /** Files touched gained and lost. */
  files_touched: ListChange;
  /** Findings gained and lost. */
  findings: ListChange;
  /** Knowledge gained and lost. */
  knowledge: ListChange;
  /** Extension namespaces added, changed or removed. */
  extensions: { added: string[]; changed: string[]; removed: string[] };
}

function listChange(from: readonly string[], to: readonly string[]): ListChange {
  const a = new Set(from);
  const b = new Set(to);
  return { added: to.filter((x) => !a.has(x)), removed: from.filter((x) => !b.has(x)) };
}

/** What changes from state `from` to state `to`. */
export function sessionChange(from: SnapshotContext, to: SnapshotContext): SessionChange {
  const ext = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
  for (const [name, value] of Object.entries(to.extensions)) {
    if (!Object.hasOwn(from.extensions, name)) ext.added.push(name);
    else if (canonicalize(from.extensions[name]!) !== canonicalize(value)) ext.changed.push(name);
  }
  for (const name of Object.keys(from.extensions)) {
    if (!Object.hasOwn(to.extensions, name)) ext.removed.push(name);
  }
  return {
    task: from.task === to.task ? null : { from: from.task, to: to.task },
    progress_pct: from.progress_pct === to.progress_pct
      ? null
      : { from: from.progress_pct, to: to.progress_pct },
    decisions: listChange(from.decisions, to.decisions),
    files_touched: listChange(from.files_touched, to.files_touched),
    findings: listChange(from.findings, to.findings),
    knowledge: listChange(from.knowledge, to.knowledge),
    extensions: {
      added: ext.added.sort(),
      changed: ext.changed.sort(),
      removed: ext.removed.sort(),
    },
  };
}

/** Whether a {@linkcode SessionChange} changes nothing. */
export function isEmptyChange(change: SessionChange): boolean {
  const lists = [change.decisions, change.files_touched, change.findings, change.knowledge];
  return change.task === null && change.progress_pct === null &&
    lists.every((l) => l.added.length === 0 && l.removed.length === 0) &&
    change.extensions.added.length + change.extensions.changed.length +
          change.extensions.removed.length === 0;
}
