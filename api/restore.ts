/**
 * Restore: move the workspace (and the session) to a snapshot three-way,
 * against the tree ctxsnap last knew the workspace to hold, so that work it
 * did not create is never destroyed; plan first with `dryRun`; switch
 * branches; undo and redo any operation; recover one a crash interrupted;
 * materialize a snapshot into a new directory.
 *
 * A restore that would overwrite unsaved work throws a
 * {@linkcode RestoreConflictError} carrying the plan a dry run shows.
 *
 * @example Restore an earlier snapshot, refuse over unsaved work, undo
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity, resolveRevision } from "./snapshot.ts";
 * import { RestoreConflictError, restoreSnapshot, undo } from "./restore.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v1\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * await createSnapshot(store, me, { reason: "v1" });
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v2\n");
 * await createSnapshot(store, me, { reason: "v2" });
 *
 * const v1 = resolveRevision(store, "HEAD~1");
 * const dry = await restoreSnapshot(store, me, v1, { dryRun: true });
 * if (!(dry.dryRun && dry.plan?.writes[0]?.path === "a.txt")) throw new Error("example failed");
 * await restoreSnapshot(store, me, v1);
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "v1\n")) throw new Error("example failed");
 * await undo(store, me); // the restore, reverted from the operations log
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "v2\n")) throw new Error("example failed");
 *
 * await Deno.writeTextFile(`${workspace}/a.txt`, "mine, not in any snapshot\n");
 * try {
 *   await restoreSnapshot(store, me, v1);
 *   throw new Error("example failed: the restore was not refused");
 * } catch (error) {
 *   if (!(error instanceof RestoreConflictError)) throw error;
 *   if (!(error.plan.conflicts[0]?.path === "a.txt")) throw new Error("example failed");
 * }
 * store.close();
 * await Deno.remove(workspace, { recursive: true });
 * ```
 * @module
 */
export { RestoreConflictError, restoreSnapshot } from "../lib/workspace/move/restore.ts";
export { MoveConflictError } from "../lib/workspace/overwrite.ts";
export { switchTo } from "../lib/workspace/move/switch.ts";
export { nextRedo, nextUndo, redo, undo } from "../lib/workspace/move/undo.ts";
export { recover } from "../lib/workspace/move/recover.ts";
export { materialize } from "../lib/workspace/move/materialize.ts";
export { readBaseline } from "../lib/repository/baseline.ts";

// Types the signatures above mention.
export { ConflictError, CtxsnapError } from "../lib/errors.ts";
export type { ErrorCode } from "../lib/errors.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "../lib/format/dir_tree.ts";
export type { CheckDirTreeOptions, DirTreeFacts } from "../lib/format/tree_object.ts";
export type { Signer } from "../lib/format/envelope.ts";
export type {
  FileEntry,
  SkippedEntry,
  SymlinkEntry,
  TreeEntry,
  TreeManifest,
} from "../lib/format/tree.ts";
export type { ListChange, SessionChange } from "../lib/history/session_state.ts";
export { Store } from "../lib/repository/store.ts";
export type { MaterializeResult } from "../lib/workspace/move/materialize.ts";
export type { RecoverOptions, RecoverResult } from "../lib/workspace/move/recover.ts";
export type {
  GitPosition,
  Refusal,
  RestoreGitState,
  RestoreOptions,
  RestoreResult,
  SessionMode,
  SessionPlan,
} from "../lib/workspace/move/restore.ts";
export type { SwitchOptions, SwitchResult } from "../lib/workspace/move/switch.ts";
export type {
  RevertedOperation,
  RevertGit,
  RevertOptions,
  RevertResult,
} from "../lib/workspace/move/undo.ts";
export type { Conflict, ConflictReason } from "../lib/workspace/overwrite.ts";
export type { MovePlan, PlannedWrite } from "../lib/workspace/plan.ts";
