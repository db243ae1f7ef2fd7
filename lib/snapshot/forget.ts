/**
 * Forgetting snapshots: the only way a snapshot row leaves the store
 * (DESIGN §3, invariant 4). Each forget is recorded in the operations log,
 * and every forgotten id is remembered so chain checks know a missing parent
 * was intended. Objects are freed later by `gc`.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { forgetSnapshots, planForget } from "./forget.ts";
 * import { loadOrCreateIdentity } from "../crypto/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * for (const reason of ["a", "b", "c"]) await createSnapshot(store, me, { reason, workspace: false });
 * const ids = planForget(store, { keepLast: 1 });
 * console.assert(forgetSnapshots(store, ids).forgotten.length === 2);
 * store.close();
 * ```
 * @module
 */
import { ConflictError, quote, UsageError } from "../encoding/errors.ts";
import { finishOperation, startOperation } from "../store/operations.ts";
import type { Store } from "../store/store.ts";
import { branchChain, getBranch, listBranches, selection } from "./timeline.ts";

/** What to forget. */
export interface ForgetSelector {
  /** Explicit snapshot ids (full). */
  ids?: string[];
  /** Every snapshot recorded on this branch of the session, and the branch itself. */
  branch?: string;
  /** Keep the newest N snapshots of the current branch's chain, forget the older ones. */
  keepLast?: number;
  /** Session (default current). */
  session?: string;
}

/** Resolves a selector to the ids to forget (newest first for keep-last). */
export function planForget(store: Store, selector: ForgetSelector): string[] {
  const sel = selection(store, selector.session);
  if (selector.branch !== undefined) {
    const branch = getBranch(store, sel.session, selector.branch);
    if (branch === null) {
      throw new UsageError(`No branch ${quote(selector.branch)} in session ${quote(sel.session)}`);
    }
    return (store.db.prepare(
      "SELECT id FROM snapshots WHERE session = ? AND branch = ? ORDER BY seq DESC",
    ).all(
      sel.session,
      selector.branch,
    ) as { id: string }[]).map((r) => r.id);
  }
  if (selector.keepLast !== undefined) {
    return branchChain(store, sel.session, sel.branch).slice(selector.keepLast);
  }
  return selector.ids ?? [];
}

/** What {@linkcode forgetSnapshots} did. */
export interface ForgetResult {
  /** Operation id. */
  operation: string;
  /** Ids removed. */
  forgotten: string[];
  /** Branches deleted (with `deleteBranch`). */
  branches: string[];
}

/**
 * Forgets `ids` in one transaction. A snapshot that is still the head of a
 * branch is refused, unless that branch is being deleted (`deleteBranch`).
 */
export function forgetSnapshots(
  store: Store,
  ids: string[],
  options: { deleteBranch?: { session: string; branch: string } } = {},
): ForgetResult {
  return store.transaction("forget", () => {
    const doomed = new Set(ids);
    const deleted = options.deleteBranch;
    for (const branch of listBranches(store)) {
      const dying = deleted !== undefined && branch.session === deleted.session &&
        branch.name === deleted.branch;
      if (!dying && branch.head !== null && doomed.has(branch.head)) {
        throw new ConflictError(
          `Snapshot ${
            branch.head.slice(0, 12)
          } is the head of branch ${branch.session}/${branch.name}`,
          { hint: "forget the whole branch with --branch, or create a newer snapshot on it first" },
        );
      }
    }
    const op = startOperation(store, {
      kind: "forget",
      session: deleted?.session ?? null,
      branch: deleted?.branch ?? null,
      plan: { ids, branch: deleted?.branch ?? null },
    });
    const now = Date.now();
    const remember = store.db.prepare(
      "INSERT OR IGNORE INTO forgotten (id, operation, forgotten_at) VALUES (?, ?, ?)",
    );
    const remove = store.db.prepare("DELETE FROM snapshots WHERE id = ?");
    const forgotten: string[] = [];
    for (const id of ids) {
      if (remove.run(id).changes === 1) {
        remember.run(id, op.id, now);
        forgotten.push(id);
      }
    }
    const branches: string[] = [];
    if (deleted !== undefined) {
      store.db.prepare("DELETE FROM branches WHERE session = ? AND name = ?").run(
        deleted.session,
        deleted.branch,
      );
      store.db.prepare(
        "UPDATE sessions SET current_branch = 'main' WHERE name = ? AND current_branch = ?",
      ).run(deleted.session, deleted.branch);
      branches.push(deleted.branch);
    }
    finishOperation(store, op.id, "done");
    return { operation: op.id, forgotten, branches };
  });
}
