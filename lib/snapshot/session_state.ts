/**
 * The live session state: task, progress, decisions, files touched, findings
 * and knowledge. It is what the next snapshot records, and what a restore
 * merges back into.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
 * import { readSessionState, updateSessionState } from "./session_state.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * updateSessionState(store, "main", (s) => ({ ...s, task: "port the parser" }));
 * if (!(readSessionState(store, "main").task === "port the parser")) throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { canonicalize, parseJson } from "../encoding/canonical_json.ts";
import { assertResolved } from "../store/operations.ts";
import type { Store } from "../store/store.ts";
import { emptyContext, type SnapshotContext, validateContext } from "./body.ts";
import { ensureSession } from "./timeline.ts";

/** Reads a session's live state (empty when the session has none yet). */
export function readSessionState(store: Store, session: string): SnapshotContext {
  const row = store.stmt("SELECT state FROM sessions WHERE name = ?").get(session) as
    | { state: string }
    | undefined;
  if (row === undefined || row.state === "{}") return emptyContext();
  return validateContext(parseJson(row.state), `live state of session "${session}"`);
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
    store.stmt("UPDATE sessions SET state = ?, updated_at = ? WHERE name = ?").run(
      canonicalize(next),
      Date.now(),
      session,
    );
    return next;
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
 * Merges a snapshot's context into a live state (docs/DESIGN.md §5): the task is
 * replaced when non-empty, progress is set, lists are merged without
 * duplicates, extensions are replaced per namespace.
 */
export function mergeContext(live: SnapshotContext, incoming: SnapshotContext): SnapshotContext {
  return {
    task: incoming.task !== "" ? incoming.task : live.task,
    progress_pct: incoming.progress_pct,
    decisions: appendUnique(live.decisions, incoming.decisions),
    files_touched: appendUnique(live.files_touched, incoming.files_touched),
    findings: appendUnique(live.findings, incoming.findings),
    knowledge: appendUnique(live.knowledge, incoming.knowledge),
    extensions: { ...live.extensions, ...incoming.extensions },
  };
}
