/**
 * Forks: a fork is a new branch whose head (and base) is an existing
 * snapshot, recorded as an undoable `fork` operation. It does not switch to
 * it (`switchTo` in `lib/workspace/move/switch.ts` does, moving the workspace).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { forkBranch } from "./branch.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const snap = await createSnapshot(store, me, { reason: "base", workspace: false });
 * const branch = forkBranch(store, snap.id, "experiment");
 * if (branch.head !== snap.id) throw new Error("forked at the snapshot");
 * store.close();
 * ```
 * @module
 */
import { ConflictError, NotFoundError, quote } from "../errors.ts";
import { assertResolved } from "../repository/operations.ts";
import { insertBranch } from "../repository/branch_rows.ts";
import { recordChange } from "./oplog.ts";
import type { Store } from "../repository/store.ts";
import { type BranchRow, checkName, ensureSession, getBranch, getSnapshotRow } from "./timeline.ts";

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
    recordChange(store, [row.session], () => {
      ensureSession(store, row.session);
      insertBranch(store, row.session, branch, id, id);
      return {
        kind: "fork",
        session: row.session,
        branch,
        source: id,
        target: id,
        plan: { from_branch: row.branch, name: branch },
      };
    });
    return getBranch(store, row.session, branch)!;
  });
}
