/**
 * Branches and forks: a fork is a new branch whose head is an existing
 * snapshot; switching a branch decides where the session's next snapshot goes.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { forkBranch } from "./branch.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const snap = await createSnapshot(store, me, { reason: "base", workspace: false });
 * const branch = forkBranch(store, snap.id, "experiment");
 * if (!(branch.head === snap.id)) throw new Error("Example failed");
 * store.close();
 * ```
 * @module
 */
import { ConflictError, NotFoundError, quote } from "../errors.ts";
import { assertResolved, finishOperation, startOperation } from "../store/operations.ts";
import type { Store } from "../store/store.ts";
import {
  type BranchRow,
  checkName,
  ensureSession,
  getBranch,
  getSnapshotRow,
  selection,
} from "./timeline.ts";

/** Creates branch `name` (default `fork-<id8>`) in the snapshot's session with head `id`. */
export function forkBranch(store: Store, id: string, name?: string): BranchRow {
  const row = getSnapshotRow(store, id);
  if (row === null) throw new NotFoundError(`No snapshot ${quote(id)}`);
  const branch = checkName(name ?? `fork-${id.slice(0, 8)}`, "branch");
  return store.transaction("fork", () => {
    assertResolved(store, row.session);
    if (getBranch(store, row.session, branch) !== null) {
      throw new ConflictError(
        `Branch ${quote(branch)} already exists in session ${quote(row.session)}`,
        {
          hint: "pick another --name",
        },
      );
    }
    ensureSession(store, row.session);
    const op = startOperation(store, {
      kind: "fork",
      session: row.session,
      branch,
      source: id,
      target: id,
      plan: { from_branch: row.branch, name: branch },
    });
    const now = Date.now();
    store.stmt(
      "INSERT INTO branches (session, name, head, base, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(row.session, branch, id, id, now, now);
    finishOperation(store, op.id, "done");
    return getBranch(store, row.session, branch)!;
  });
}

/** Makes `name` the current branch of the session (it must exist). */
export function switchBranch(store: Store, name: string, session?: string): BranchRow {
  const sel = selection(store, session);
  const branch = checkName(name, "branch");
  return store.transaction("branch switch", () => {
    assertResolved(store, sel.session);
    const row = getBranch(store, sel.session, branch);
    if (row === null) {
      throw new NotFoundError(`No branch ${quote(branch)} in session ${quote(sel.session)}`, {
        hint:
          "list branches with `ctxsnap branch list`, or create one with `ctxsnap fork ID --name NAME`",
      });
    }
    store.stmt("UPDATE sessions SET current_branch = ?, updated_at = ? WHERE name = ?").run(
      branch,
      Date.now(),
      sel.session,
    );
    return row;
  });
}
