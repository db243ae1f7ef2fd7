/**
 * Recover: resolve a move of the workspace (restore, switch, undo, redo)
 * that a crash left `applying`.
 *
 * Without `abort` it re-applies the recorded writes and deletes from the
 * target tree (idempotently) and re-runs the stored spec's finish phase
 * (`engine.ts`: `finishMove` reads the effects back from the stored plan —
 * a restore's session change and recording snapshot, a switch's current
 * branch, an undo's or redo's record side — and sets the baseline). With
 * `abort` it returns the managed paths to the
 * tree captured just before the move (`pre_tree`) and marks it `aborted`;
 * for a `--git` restore it then switches back to the original branch or
 * commit (as a ref, never a path). Its stored plan is validated first
 * (`_stored_plan.ts`): an invalid one is refused (exit 1) and only
 * `discard` ends it, closing it as `aborted` without reading the plan or
 * touching any file. Every managed path is looked at as it is on disk: one
 * that holds neither its content before the move nor the target's was
 * changed by someone else and is a conflict (exit 5) unless `force`. Either
 * way it first removes the temporary files a killed write can leave next to
 * the managed paths.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { recover } from "./recover.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const result = await recover(store, me);
 * if (result.operation !== null) throw new Error("nothing to recover in a new store");
 * store.close();
 * ```
 * @module
 */
import { ConflictError } from "../../errors.ts";
import { SafeWriter } from "../io/safe_write.ts";
import {
  finishOperation,
  type Operation,
  unresolvedMove,
  unresolvedOperation,
} from "../../repository/operations.ts";
import type { Store } from "../../repository/store.ts";
import type { Signer } from "../../format/envelope.ts";
import { gitSwitch } from "../../integrations/git/git.ts";
import { selection } from "../../history/timeline.ts";
import { abortMove, foreignChanges, reapply, storedMovePlan } from "./move.ts";
import { effectsOf, finishMove } from "./engine.ts";

/** What {@linkcode recover} did. */
export interface RecoverResult {
  /** The operation resolved, or null when there was nothing to recover. */
  operation: string | null;
  /** Its kind (`restore`, `switch`, `undo`, `redo`), or null. */
  kind: string | null;
  /** `done` (finished) or `aborted` (returned to the content before it, or discarded), or null. */
  status: "done" | "aborted" | null;
  /** The snapshot recording a finished restore, or null. */
  snapshot: string | null;
  /** Whether the operation was closed without touching the workspace (`discard`). */
  discarded: boolean;
}

/** Options of {@linkcode recover}. */
export interface RecoverOptions {
  /** Return the managed paths to their content before the move instead of finishing. */
  abort?: boolean;
  /**
   * Close the operation as `aborted` without reading its plan or touching
   * any file (for a plan that is refused as invalid).
   */
  discard?: boolean;
  /** Session (default current, else any session's move). */
  sessionName?: string;
  /** Overwrite paths changed since the interruption. */
  force?: boolean;
}

/**
 * Resolves the session's interrupted move (without `sessionName`: the
 * current session's, else any session's): finishes it, with `abort`
 * returns its paths to the content before it, or with `discard` closes it
 * changing nothing.
 */
export async function recover(
  store: Store,
  signer: Signer,
  options: RecoverOptions = {},
): Promise<RecoverResult> {
  const sel = selection(store, options.sessionName);
  const op: Operation | null = unresolvedOperation(store, sel.session) ??
    (options.sessionName === undefined ? unresolvedMove(store) : null);
  if (op === null) {
    return { operation: null, kind: null, status: null, snapshot: null, discarded: false };
  }
  if (options.discard) {
    store.transaction("recover", () =>
      finishOperation(
        store,
        op.id,
        "aborted",
        "discarded by recover --discard; the workspace was not changed",
      ));
    return { operation: op.id, kind: op.kind, status: "aborted", snapshot: null, discarded: true };
  }
  const plan = storedMovePlan(store, op);
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
    const writer = new SafeWriter(store.workspaceRoot);
    try {
      writer.removeStrayTemps([...plan.writes, ...plan.deletes]);
      writer.flush();
    } finally {
      writer.close();
    }
  }
  if (options.abort) {
    abortMove(store, op, "aborted", null, (checked) => {
      // The workspace is back to the checked-out commit's state; return git too.
      const git = effectsOf(op, checked).git;
      if (git !== null) gitSwitch(store.workspaceRoot, git.back);
    });
    return { operation: op.id, kind: op.kind, status: "aborted", snapshot: null, discarded: false };
  }
  reapply(store, op);
  // The stored spec, run again from its finish phase.
  const snapshot = await finishMove(store, signer, op);
  return { operation: op.id, kind: op.kind, status: "done", snapshot, discarded: false };
}
