/**
 * Recover: resolve a move of the workspace (restore, switch, undo, redo)
 * that a crash left `applying`.
 *
 * Without `abort` it re-applies the recorded writes and deletes from the
 * target tree (idempotently) and finishes the operation the way its kind
 * does (a restore changes the session and records its snapshot, a switch
 * moves the current branch, an undo or redo puts its record's side back),
 * setting the baseline. With `abort` it returns the managed paths to the
 * tree captured just before the move (`pre_tree`) and marks it `aborted`;
 * for a `--git` restore it then checks the original branch or commit out
 * again. Either way it first removes the temporary files a killed write can
 * leave next to the managed paths. Paths someone else changed since the
 * interruption (neither the content before nor the target's, compared by the
 * conflict policy) are refused unless `force`.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
 * import { recover } from "./recover.ts";
 * import { loadOrCreateIdentity } from "../crypto/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const result = await recover(store, me);
 * if (result.operation !== null) throw new Error("nothing to recover in a new store");
 * store.close();
 * ```
 * @module
 */
import { ConflictError } from "../encoding/errors.ts";
import { SafeWriter } from "../fs/safe_write.ts";
import { type Operation, unresolvedMove, unresolvedOperation } from "../store/operations.ts";
import type { Store } from "../store/store.ts";
import type { Signer } from "../snapshot/envelope.ts";
import { runGit } from "../snapshot/git.ts";
import { selection } from "../snapshot/timeline.ts";
import { abortMove, foreignChanges, reapply, storedMovePlan } from "./move.ts";
import { finishRestore } from "./restore.ts";
import { finishSwitch } from "./switch.ts";
import { finishRevert } from "./undo.ts";

/** What {@linkcode recover} did. */
export interface RecoverResult {
  /** The operation resolved, or null when there was nothing to recover. */
  operation: string | null;
  /** Its kind (`restore`, `switch`, `undo`, `redo`), or null. */
  kind: string | null;
  /** `done` (finished) or `aborted` (returned to the content before it), or null. */
  status: "done" | "aborted" | null;
  /** The snapshot recording a finished restore, or null. */
  snapshot: string | null;
}

/**
 * Resolves the session's interrupted move (without `sessionName`: the
 * current session's, else any session's): finishes it, or with `abort`
 * returns its paths to the content before it.
 */
export async function recover(
  store: Store,
  signer: Signer,
  options: { abort?: boolean; sessionName?: string; force?: boolean } = {},
): Promise<RecoverResult> {
  const sel = selection(store, options.sessionName);
  const op: Operation | null = unresolvedOperation(store, sel.session) ??
    (options.sessionName === undefined ? unresolvedMove(store) : null);
  if (op === null) return { operation: null, kind: null, status: null, snapshot: null };
  const plan = storedMovePlan(op);
  const foreign = foreignChanges(store, op);
  if (foreign.length > 0 && !options.force) {
    throw new ConflictError(
      `${foreign.length} path(s) changed since the ${op.kind} was interrupted: ${
        foreign.slice(0, 10).join(", ")
      }`,
      { hint: "move them aside, or pass --force to overwrite them" },
    );
  }
  // A kill mid-write can leave a temp file next to a managed path.
  if (plan.workspace) {
    new SafeWriter(store.workspaceRoot).removeStrayTemps([...plan.writes, ...plan.deletes]);
  }
  if (options.abort) {
    const back = plan.extra.git_back;
    abortMove(store, op, "aborted", null, () => {
      // The workspace is back to the checked-out commit's state; return git too.
      if (typeof back === "string") runGit(store.workspaceRoot, ["checkout", "--quiet", back]);
    });
    return { operation: op.id, kind: op.kind, status: "aborted", snapshot: null };
  }
  reapply(store, op);
  let snapshot: string | null = null;
  if (op.kind === "restore") snapshot = await finishRestore(store, signer, op);
  else if (op.kind === "switch") finishSwitch(store, op);
  else finishRevert(store, op);
  return { operation: op.id, kind: op.kind, status: "done", snapshot };
}
