/**
 * Forgetting snapshots: the only way a snapshot row leaves the store
 * (docs/DESIGN.md §3, invariant 4). Each forget is recorded in the operations log,
 * and every forgotten id is remembered so chain checks know a missing parent
 * was intended. Objects are freed later by `gc`. A forget cannot be undone;
 * operations whose undo needs a forgotten snapshot (or the deleted branch)
 * can no longer be undone either: {@linkcode forgetImpact} names them before
 * (`--dry-run`), the result names them after, and the forget's plan records
 * them (`unundoable`) so the undo stack drops them.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { forgetSnapshots, planForget } from "./forget.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * for (const reason of ["a", "b", "c"]) {
 *   await createSnapshot(store, me, { reason, workspace: false, allowUnchanged: true });
 * }
 * const ids = planForget(store, { keepLast: 1 });
 * const result = forgetSnapshots(store, ids);
 * if (result.forgotten.length !== 2) throw new Error("two forgotten");
 * // Undoing the last create needs its parent, which is gone: that create is cut.
 * if (result.unundoable.length !== 3) throw new Error("every create is un-undoable now");
 * store.close();
 * ```
 * @module
 */
import { ConflictError, quote, UsageError } from "../errors.ts";
import {
  applyingTargets,
  assertResolved,
  finishOperation,
  startOperation,
} from "../repository/operations.ts";
import type { Store } from "../repository/store.ts";
import { snapshotSession } from "../repository/snapshot_rows.ts";
import { deleteBranchRow } from "../repository/branch_rows.ts";
import { forgetSnapshotRow } from "../repository/forgotten.ts";
import { leaveBranch } from "../repository/session_rows.ts";
import { cutBy, undoStack } from "./oplog.ts";
import { branchChain, getBranch, listBranches, selection } from "./timeline.ts";

/** What to forget. */
export interface ForgetSelector {
  /** Explicit snapshot ids (full). */
  ids?: string[];
  /** The branch and every snapshot of its timeline that no other branch's timeline holds. */
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
    // The branch's timeline (its chain from the head), less whatever another
    // branch's timeline still needs.
    const kept = new Set<string>();
    for (const other of listBranches(store)) {
      if (other.session === sel.session && other.name === selector.branch) continue;
      for (const id of branchChain(store, other.session, other.name)) kept.add(id);
    }
    return branchChain(store, sel.session, selector.branch).filter((id) => !kept.has(id));
  }
  if (selector.keepLast !== undefined) {
    return branchChain(store, sel.session, sel.branch).slice(selector.keepLast);
  }
  return selector.ids ?? [];
}

/** An operation that a forget makes impossible to undo or redo. */
export interface Unundoable {
  /** Operation id. */
  id: string;
  /** Its kind. */
  kind: string;
}

/**
 * The operations that could no longer be undone or redone if `ids` were
 * forgotten (and `deleteBranch` deleted): undo needs the snapshots its
 * records name.
 */
export function forgetImpact(
  store: Store,
  ids: string[],
  deleteBranch: { session: string; branch: string } | null = null,
): Unundoable[] {
  return cutBy(undoStack(store), new Set(ids), deleteBranch).map((e) => ({
    id: e.id,
    kind: e.kind,
  }));
}

/** What {@linkcode forgetSnapshots} did. */
export interface ForgetResult {
  /** Operation id. */
  operation: string;
  /** Ids removed. */
  forgotten: string[];
  /** Branches deleted (with `deleteBranch`). */
  branches: string[];
  /** Operations that can no longer be undone or redone because of this forget. */
  unundoable: Unundoable[];
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
    const sessions = new Set<string>();
    for (const id of ids) {
      const session = snapshotSession(store, id);
      if (session !== null) sessions.add(session);
    }
    if (options.deleteBranch) sessions.add(options.deleteBranch.session);
    for (const session of sessions) assertResolved(store, session);
    // An interrupted restore still needs its target to finish.
    for (const target of applyingTargets(store)) {
      if (doomed.has(target)) {
        throw new ConflictError(
          `Snapshot ${target.slice(0, 12)} is the target of an unresolved restore`,
          {
            hint: "run `ctxsnap recover` (or `recover --abort`) first",
          },
        );
      }
    }
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
    const unundoable = forgetImpact(store, ids, deleted ?? null);
    const op = startOperation(store, {
      kind: "forget",
      session: deleted?.session ?? null,
      branch: deleted?.branch ?? null,
      plan: { ids, branch: deleted?.branch ?? null, unundoable: unundoable.map((u) => u.id) },
    });
    const now = Date.now();
    const forgotten: string[] = [];
    for (const id of ids) {
      if (forgetSnapshotRow(store, id, op.id, now)) forgotten.push(id);
    }
    const branches: string[] = [];
    if (deleted !== undefined) {
      deleteBranchRow(store, deleted.session, deleted.branch);
      leaveBranch(store, deleted.session, deleted.branch);
      branches.push(deleted.branch);
    }
    finishOperation(store, op.id, "done");
    return { operation: op.id, forgotten, branches, unundoable };
  });
}
