/**
 * Restoring a stored lean-ctx snapshot: its session slice is merged into the
 * live session the way lean-ctx's own restore merges it (a non-blank task
 * replaces the live task and, when the slice has one, the progress;
 * decisions and files touched are appended without blanks or repeats), and
 * with `git` its anchor commit is checked out (detached), refused on a dirty
 * tree. A lean-ctx snapshot records no workspace, so no file is written.
 *
 * Like every restore it builds a move spec (no files; the merged context as
 * its session effect) and hands it to the move engine
 * (`workspace/move/engine.ts`), which records an operation and a ctxsnap
 * snapshot whose `metadata.reverted_to` names the target (so `ctxsnap undo`
 * returns to the snapshot before it), in one transaction; everything is
 * checked before the checkout, which a failure checks back out.
 *
 * @example
 * ```ts
 * import { mergeLeanCtxSession } from "./leanctx_restore.ts";
 * import { emptyContext } from "../format/body.ts";
 * const live = { ...emptyContext(), decisions: ["keep it"] };
 * const merge = mergeLeanCtxSession(live, {
 *   session_id: null, task: " ship it ", decisions: ["keep it", " new one ", ""],
 *   files_touched: ["a.rs", "a.rs"], progress_pct: 140,
 * });
 * if (merge.context.task !== "ship it" || merge.context.progress_pct !== 100) throw new Error("task");
 * if (merge.decisionsAdded.join() !== "new one" || merge.filesAdded.join() !== "a.rs") throw new Error("lists");
 * ```
 * @module
 */
import { ConflictError, IntegrityError, quote, UsageError } from "../errors.ts";
import { assertResolved } from "../repository/operations.ts";
import type { Store } from "../repository/store.ts";
import { type SnapshotContext, validateContext } from "../format/body.ts";
import type { Signer } from "../format/envelope.ts";
import { gitStatus, readGitStatus, runGit } from "../integrations/git/git.ts";
import { readSessionState } from "../history/session_state.ts";
import { getBranch, selection } from "../history/timeline.ts";
import { runMove } from "../workspace/move/engine.ts";
import type { LeanCtxSession } from "./leanctx.ts";
import { checkStoredLeanCtx } from "./leanctx_store.ts";

/** What merging a lean-ctx session slice changes. */
export interface LeanCtxSessionMerge {
  /** The merged live context. */
  context: SnapshotContext;
  /** The task set, or null when the slice had none. */
  task: string | null;
  /** The progress set, or null. */
  progressPct: number | null;
  /** Decisions appended. */
  decisionsAdded: string[];
  /** Files appended. */
  filesAdded: string[];
}

/**
 * Merges a lean-ctx session slice into a live context (pure). Progress above
 * 100 (lean-ctx allows up to 255) is set as 100.
 */
export function mergeLeanCtxSession(
  live: SnapshotContext,
  slice: LeanCtxSession | null,
): LeanCtxSessionMerge {
  const context: SnapshotContext = {
    ...live,
    decisions: [...live.decisions],
    files_touched: [...live.files_touched],
  };
  const merge: LeanCtxSessionMerge = {
    context,
    task: null,
    progressPct: null,
    decisionsAdded: [],
    filesAdded: [],
  };
  if (slice === null) return merge;
  const task = slice.task?.trim() ?? "";
  if (task !== "") {
    context.task = merge.task = task;
    if (slice.progress_pct !== null) {
      context.progress_pct = merge.progressPct = Math.min(slice.progress_pct, 100);
    }
  }
  const append = (list: string[], items: string[], added: string[]) => {
    for (const item of items.map((i) => i.trim())) {
      if (item === "" || list.includes(item)) continue;
      list.push(item);
      added.push(item);
    }
  };
  append(context.decisions, slice.decisions, merge.decisionsAdded);
  append(context.files_touched, slice.files_touched, merge.filesAdded);
  return merge;
}

/** Options of {@linkcode restoreLeanCtx}. */
export interface LeanCtxRestoreOptions {
  /** Also check out the anchor commit (detached); refuses a dirty tree. */
  git?: boolean;
  /** Only plan. */
  dryRun?: boolean;
  /** Session (default current). */
  sessionName?: string;
  /** Branch that records the restore (default the session's current). */
  branch?: string;
}

/** What {@linkcode restoreLeanCtx} did (or would do). */
export interface LeanCtxRestoreResult {
  /** The lean-ctx id. */
  target: string;
  /** Whether this was only a plan. */
  dryRun: boolean;
  /** The merge (its `context` is what the live session becomes). */
  merge: LeanCtxSessionMerge;
  /** Whether the snapshot had a session slice to merge. */
  sessionMerged: boolean;
  /** The commit checked out with `git`, or null. */
  gitCommit: string | null;
  /** The operation, or null for a dry run. */
  operation: string | null;
  /** The ctxsnap snapshot recording the restore, or null for a dry run. */
  snapshot: string | null;
}

/** Restores stored lean-ctx snapshot `id` (full id). */
export async function restoreLeanCtx(
  store: Store,
  signer: Signer,
  id: string,
  options: LeanCtxRestoreOptions = {},
): Promise<LeanCtxRestoreResult> {
  const sel = selection(store, options.sessionName, options.branch);
  assertResolved(store, sel.session);
  const check = await checkStoredLeanCtx(store, id);
  if (!check.intact) {
    throw new IntegrityError(`Stored lean-ctx snapshot ${quote(id)} does not verify`, {
      hint: "run `ctxsnap verify --all`",
    });
  }
  const lean = check.snapshot;
  if (lean.session === null && !options.git) {
    throw new UsageError(`lean-ctx snapshot ${id.slice(0, 12)} has no session slice to restore`, {
      hint: "restore --git checks out its git anchor",
    });
  }
  const merge = mergeLeanCtxSession(readSessionState(store, sel.session), lean.session);
  validateContext(merge.context, `session state merged from lean-ctx snapshot ${id.slice(0, 12)}`);
  let gitCommit: string | null = null;
  if (options.git) {
    const commit = lean.git.commit;
    if (commit === null || commit === "") {
      throw new UsageError(`lean-ctx snapshot ${id.slice(0, 12)} has no git anchor to check out`, {
        hint: "restore without --git",
      });
    }
    if (!/^[0-9a-f]{4,64}$/.test(commit)) {
      throw new IntegrityError(`The git anchor ${quote(commit)} is not a commit id`);
    }
    const status = gitStatus(store.workspaceRoot, store.dir);
    if (status === null) {
      throw new UsageError(`The workspace ${quote(store.workspaceRoot)} is not a git work tree`);
    }
    if (status.length > 0) {
      throw new ConflictError(
        `The git work tree has ${status.length} uncommitted or untracked change(s); --git refuses to check out over them`,
        { hint: "commit or stash them (untracked files count), then retry" },
      );
    }
    gitCommit = commit;
  }
  const result: LeanCtxRestoreResult = {
    target: id,
    dryRun: options.dryRun === true,
    merge,
    sessionMerged: lean.session !== null,
    gitCommit,
    operation: null,
    snapshot: null,
  };
  if (result.dryRun) return result;

  let gitBack: string | null = null;
  if (gitCommit !== null) {
    const before = readGitStatus(store.workspaceRoot, store.dir);
    gitBack = before?.branch ?? before?.commit ?? null;
    const checkout = runGit(store.workspaceRoot, [
      "checkout",
      "--quiet",
      "--detach",
      `${gitCommit}^{commit}`,
    ]);
    if (checkout.status !== 0) {
      throw new ConflictError(`git checkout ${gitCommit} failed: ${checkout.stderr.trim()}`);
    }
  }
  // A move spec without files: the move engine records one restore operation
  // (undoable like any) and the snapshot recording it, in one transaction.
  const moved = await runMove(store, signer, {
    kind: "restore",
    session: sel.session,
    branch: sel.branch,
    sessions: [sel.session],
    source: getBranch(store, sel.session, sel.branch)?.head ?? null,
    target: id,
    tree: null,
    treeId: null,
    overwrite: "none",
    setsBaseline: false,
    effects: {
      session: result.sessionMerged ? { context: merge.context } : null,
      currentBranch: null,
      view: null,
      recordAs: id,
      reason: `restore lean-ctx ${id.slice(0, 12)}`,
      git: gitBack === null ? null : { back: gitBack },
    },
    extra: { format: "lean-ctx", git_commit: gitCommit },
    save: null,
  });
  result.operation = moved.operation;
  result.snapshot = moved.snapshot;
  return result;
}
