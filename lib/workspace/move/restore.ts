/**
 * Restore (docs/DESIGN.md §5, §3 invariant 5): move the workspace to a snapshot's
 * tree and rewind or merge the live session to what it recorded.
 *
 * `restoreSnapshot` resolves what to restore (files, session or both),
 * with `--git` checks what git would not protect and checks the anchor
 * out, then builds a move spec and hands it to the move engine
 * (`engine.ts`), which runs it through its named phases: **plan**,
 * **refuse**, **record** (with the **saved** `pre-restore` snapshot under
 * `--force`), **apply** and **finish** (the session change, a snapshot
 * whose `facets.metadata.reverted_to` names the target, the baseline set to
 * the target's tree, the undo record, `done`, in one transaction).
 *
 * A crash between record and finish leaves the operation `applying`:
 * changes to its session and every move of the workspace are refused until
 * `recover` finishes or aborts it (`recover.ts`).
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { createSnapshot } from "../../history/create.ts";
 * import { restoreSnapshot } from "./restore.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${ws}/a.txt`, "v1\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const first = await createSnapshot(store, me, { reason: "v1" });
 * await Deno.writeTextFile(`${ws}/a.txt`, "v2\n");
 * await createSnapshot(store, me, { reason: "v2" });
 * await restoreSnapshot(store, me, first.id);
 * if (await Deno.readTextFile(`${ws}/a.txt`) !== "v1\n") throw new Error("restored");
 * store.close();
 * ```
 * @module
 */
import {
  ConflictError,
  type CtxsnapError,
  NotFoundError,
  quote,
  UsageError,
} from "../../errors.ts";
import { captureWorkspace } from "../capture.ts";
import { assertResolved, assertWorkspaceResolved } from "../../repository/operations.ts";
import type { Store } from "../../repository/store.ts";
import type { SkippedEntry, TreeManifest } from "../../format/tree.ts";
import { createSnapshot } from "../../history/create.ts";
import type { Envelope, Signer } from "../../format/envelope.ts";
import {
  gitSwitch,
  gitTrackedFiles,
  isBranchName,
  readGitStatus,
} from "../../integrations/git/git.ts";
import {
  readSessionState,
  type SessionChange,
  sessionChange,
} from "../../history/session_state.ts";
import { getBranch, readEnvelope, selection } from "../../history/timeline.ts";
import { baseline } from "./move.ts";
import { expandFrom } from "../../repository/diff.ts";
import { readBaseline } from "../../repository/baseline.ts";
import {
  type MoveSpec,
  RestoreConflictError,
  restoredContext,
  runMove,
  type SessionMode,
} from "./engine.ts";
import { refuseStorePaths } from "../restore_paths.ts";
import { type RestoreGitState, restoreGitState } from "./_git_state.ts";
export type { GitPosition, RestoreGitState } from "./_git_state.ts";
export { RestoreConflictError, restoredContext, type SessionMode } from "./engine.ts";
import { type MovePlan, planMove } from "../plan.ts";
import { MoveConflictError, refuseConflicts } from "../overwrite.ts";

/** Options of {@linkcode restoreSnapshot}. */
export interface RestoreOptions {
  /** Restore workspace files (default true unless only `session` is set). */
  workspace?: boolean;
  /** Restore the session (default true unless only `workspace` is set). */
  session?: boolean;
  /**
   * `merge` (default): the snapshot's context is merged into the live
   * session (one rule for every field: a task or progress the snapshot set
   * replaces, one it left unset is kept; lists joined without duplicates,
   * extensions replaced per namespace); `replace`: the live
   * session becomes exactly what the snapshot recorded.
   */
  sessionMode?: SessionMode;
  /** Check out the anchored git commit (detached) first; refuses a dirty tree. */
  git?: boolean;
  /** Apply despite content conflicts, after capturing the current content into a snapshot. */
  force?: boolean;
  /** Only plan. */
  dryRun?: boolean;
  /** Session (default current). */
  sessionName?: string;
  /** Branch the restore is recorded on (default the session's current). */
  branch?: string;
  /** Progress callback while writing. */
  onProgress?: (done: number, total: number) => void;
}

/** The session part of a restore plan. */
export interface SessionPlan {
  /** `merge` or `replace`. */
  mode: SessionMode;
  /** What changes in the live session. */
  change: SessionChange;
}

/** What a restore did (or, with `dryRun`, would do); `--json` prints it in snake_case (`lib/cli/json.ts`). */
export interface RestoreResult {
  /** Target snapshot id. */
  target: string;
  /** The workspace plan, or null when files are not restored. */
  plan: MovePlan | null;
  /** The session plan, or null when the session is not restored. */
  session: SessionPlan | null;
  /** Whether this was only a plan. */
  dryRun: boolean;
  /** Operation id, or null for a dry run. */
  operation: string | null;
  /** The new snapshot recording the restore, or null for a dry run. */
  snapshot: string | null;
  /** The `pre-restore` snapshot taken because of `--force`, or null. */
  preRestore: string | null;
  /** The commit checked out with `--git`, or null. */
  gitCommit: string | null;
  /**
   * Where HEAD was against the target's git anchor and what `--git` does
   * there, or null when the workspace is not in a git work tree.
   */
  git: RestoreGitState | null;
  /**
   * With `dryRun`: every reason the real run would refuse (empty when it
   * would go ahead). Always empty otherwise: a real run throws instead.
   */
  wouldRefuse: Refusal[];
  /**
   * Paths that existed at the target but were never captured (its tree's
   * skipped records but `reserved`), with why: a restore cannot bring them back.
   */
  notCaptured: SkippedEntry[];
}

/** Why a restore refuses (a dry run lists them all). */
export interface Refusal {
  /**
   * `conflicts` (the plan's), `git_dirty` (`--git` over blocking changes),
   * `git_untracked_changed` (`--git`, paths git does not track changed since
   * the baseline).
   */
  reason: "conflicts" | "git_dirty" | "git_untracked_changed";
  /** The error the real run prints. */
  message: string;
  /** Its hint, or null. */
  hint: string | null;
}

/**
 * The workspace tree a snapshot recorded, or null when it recorded none or it
 * is not here. Given the workspace baseline (its id and verified tree), it is
 * built from the baseline and the stored differences (`expandFrom`): the
 * subtrees it shares with the baseline are not read (and the result is kept
 * for the move's later phases, `Store.keepTree`).
 */
export function workspaceTree(
  store: Store,
  envelope: Envelope,
  base: { id: string; tree: TreeManifest } | null = null,
): TreeManifest | null {
  const ref = envelope.body.workspace;
  if (ref === null) return null;
  try {
    if (base === null) return store.getTree(ref.tree);
    const tree = expandFrom(store, base.id, base.tree, ref.tree);
    store.keepTree(ref.tree, tree);
    return tree;
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/**
 * The snapshot's tree, refusing one without workspace or whose content is
 * not in this store; read against `base` as {@linkcode workspaceTree} does.
 */
export function requireContent(
  store: Store,
  envelope: Envelope,
  base: { id: string; tree: TreeManifest } | null = null,
): TreeManifest {
  if (envelope.body.workspace === null) {
    throw new UsageError(`Snapshot ${envelope.id.slice(0, 12)} recorded no workspace`, {
      hint: "restore only its session state with --session-state",
    });
  }
  const tree = workspaceTree(store, envelope, base);
  if (tree === null) {
    throw new NotFoundError(
      `Snapshot ${envelope.id.slice(0, 12)} has no workspace content in this store (tree ${
        envelope.body.workspace.tree.slice(0, 12)
      } is missing)`,
      { hint: "it was imported as an envelope only; import its bundle (publish --with-workspace)" },
    );
  }
  let missing = 0;
  for (const entry of tree.entries) {
    if (entry.type === "file" && !store.hasObject(entry.blob)) missing += 1;
  }
  if (missing > 0) {
    throw new NotFoundError(
      `Snapshot ${envelope.id.slice(0, 12)} is missing ${missing} file contents in this store`,
      { hint: "run `ctxsnap verify --all`; import the snapshot's bundle again" },
    );
  }
  return tree;
}

/** Refuses a plan's conflicts, keeping the plan in the error for the caller to show. */
function refuse(plan: MovePlan, what: string): void {
  try {
    refuseConflicts(plan.conflicts, what);
  } catch (error) {
    if (error instanceof MoveConflictError) throw new RestoreConflictError(error, plan);
    throw error;
  }
}

/**
 * Plans and (unless `dryRun`) applies a restore of snapshot `targetId`. Each
 * tree it looks at (the target, the baseline, the tree before the move) is
 * read once (`Store.keepingTrees`).
 */
export function restoreSnapshot(
  store: Store,
  signer: Signer,
  targetId: string,
  options: RestoreOptions = {},
): Promise<RestoreResult> {
  return store.keepingTrees(() => restoreWith(store, signer, targetId, options));
}

async function restoreWith(
  store: Store,
  signer: Signer,
  targetId: string,
  options: RestoreOptions,
): Promise<RestoreResult> {
  // 1. resolve
  const sel = selection(store, options.sessionName, options.branch);
  const onlySession = options.session === true && options.workspace !== true;
  const onlyWorkspace = options.workspace === true && options.session !== true;
  const doWorkspace = !onlySession;
  const doSession = !onlyWorkspace;
  const mode: SessionMode = options.sessionMode ?? "merge";
  assertResolved(store, sel.session);
  if (doWorkspace) assertWorkspaceResolved(store);
  const envelope = await readEnvelope(store, targetId); // id and signature checked
  const result: RestoreResult = {
    target: targetId,
    plan: null,
    session: doSession
      ? {
        mode,
        change: sessionChange(
          readSessionState(store, sel.session),
          restoredContext(readSessionState(store, sel.session), envelope.body.context, mode),
        ),
      }
      : null,
    dryRun: options.dryRun === true,
    operation: null,
    snapshot: null,
    preRestore: null,
    gitCommit: null,
    git: null,
    wouldRefuse: [],
    notCaptured: [],
  };
  /** `--force`: records the current content in a `pre-restore` snapshot before it is overwritten. */
  const snapshotBeforeRestore = async (): Promise<void> => {
    const pre = await createSnapshot(store, signer, {
      reason: "pre-restore",
      session: sel.session,
      branch: sel.branch,
      metadata: { pre_restore_for: targetId },
    });
    result.preRestore = pre.id;
  };
  // The workspace as it is now (nothing stored), walked at most once before the plan.
  let disk: TreeManifest | null = null;
  let diskId: string | null = null;
  const diskTree = (): TreeManifest => {
    if (disk === null) {
      const walked = captureWorkspace(store, { persist: false });
      disk = walked.tree;
      diskId = walked.treeId;
    }
    return disk;
  };
  // The baseline first: the target is read as its differences from it. A
  // disk whose root id is the baseline's holds exactly the baseline, so its
  // walk (the plan's, made first) stands in for reading the baseline's trees.
  // With --git the plan walks after the checkout instead.
  const baselineId = readBaseline(store);
  let baselineNow: { id: string; tree: TreeManifest } | null = null;
  if (
    doWorkspace && !options.git && baselineId !== null && store.hasObject(baselineId) &&
    envelope.body.workspace !== null && store.hasObject(envelope.body.workspace.tree)
  ) {
    const walked = diskTree();
    if (diskId === baselineId) {
      baselineNow = { id: baselineId, tree: walked };
      store.keepTree(baselineId, {
        version: 1,
        entries: [...walked.entries],
        skipped: [...walked.skipped],
      });
    }
  }
  baselineNow ??= baseline(store);
  const base = baselineNow?.tree ?? null;
  const targetTree = doWorkspace ? requireContent(store, envelope, baselineNow) : null;
  if (targetTree !== null) {
    result.notCaptured = targetTree.skipped.filter((s) => s.reason !== "reserved");
    // Before anything changes (git included): never a path in the store's own location.
    refuseStorePaths(store.workspaceRoot, store.dir, targetTree.entries.map((e) => e.path));
  }
  /** Refuses now, or in a dry run notes the refusal and goes on planning. */
  const refuseOrNote = (reason: Refusal["reason"], error: CtxsnapError): void => {
    if (!result.dryRun) throw error;
    result.wouldRefuse.push({ reason, message: error.message, hint: error.hint ?? null });
  };
  const anchor = envelope.body.git;
  /** Where HEAD is against the anchor; the capture it may need is the plan's when there is one. */
  const readGitState = () =>
    restoreGitState(
      store.workspaceRoot,
      store.dir,
      anchor,
      () => new Set(diskTree().entries.map((e) => e.path)),
    );
  // Before anything changes; its walk (when git lists untracked files) is the plan's.
  result.git = readGitState();
  let gitCommit: string | null = null;
  if (options.git) {
    if (anchor === null || anchor.commit === null) {
      throw new UsageError(`Snapshot ${targetId.slice(0, 12)} has no git anchor to check out`, {
        hint: "restore without --git",
      });
    }
    const state = result.git;
    if (state === null) {
      throw new UsageError(`The workspace ${quote(store.workspaceRoot)} is not a git work tree`);
    }
    if (state.blocking > 0) {
      refuseOrNote(
        "git_dirty",
        new ConflictError(
          `The git work tree has ${state.blocking} uncommitted change(s) or untracked file(s) ` +
            `ctxsnap captures; --git refuses to check out over them: ${
              state.blockingPaths.join(", ")
            }${state.blocking > state.blockingPaths.length ? ", …" : ""}`,
          {
            hint: "commit or stash them, then retry; files git ignores do not count, " +
              "and restoring without --git leaves HEAD where it is",
          },
        ),
      );
    }
    gitCommit = anchor.commit;
  }

  // git (before the engine: the checkout, after refusing changes git would not protect)
  let gitBack: string | null = null;
  let trackedBefore: Set<string> | null = null;
  if (gitCommit !== null && targetTree !== null) {
    // git protects only what it tracks. Files it ignores but ctxsnap captures
    // (.git/info/exclude, re-included by .ctxsnapignore) keep the usual
    // three-way rule against the baseline.
    const tracked = trackedBefore = gitTrackedFiles(store.workspaceRoot);
    const risky = planMove({ target: targetTree, base, disk: diskTree() }).conflicts
      .filter((c) => !tracked.has(c.path));
    if (risky.length > 0) {
      if (!options.force) {
        refuseOrNote(
          "git_untracked_changed",
          new ConflictError(
            `Restore refused: ${risky.length} path(s) that git does not track changed since the baseline: ${
              risky.slice(0, 20).map((c) => c.path).join(", ")
            }`,
            { hint: "git cannot bring them back; --force first snapshots the current content" },
          ),
        );
      } else if (!result.dryRun) await snapshotBeforeRestore();
    }
  }
  if (gitCommit !== null && !result.dryRun) {
    const before = readGitStatus(store.workspaceRoot, store.dir);
    const branch = before?.branch ?? null;
    gitBack = branch !== null && isBranchName(branch) ? branch : before?.commit ?? null;
    const checkout = gitSwitch(store.workspaceRoot, gitCommit);
    if (checkout.status !== 0) {
      throw new ConflictError(
        `git checkout ${gitCommit.slice(0, 12)} failed: ${checkout.stderr.trim()}`,
      );
    }
    result.gitCommit = gitCommit;
  }

  // the engine: plan, refuse, record (saved), apply, finish
  const spec: MoveSpec = {
    kind: "restore",
    session: sel.session,
    branch: sel.branch,
    sessions: [sel.session],
    source: getBranch(store, sel.session, sel.branch)?.head ?? null,
    target: targetId,
    tree: targetTree,
    treeId: targetTree === null ? null : envelope.body.workspace!.tree,
    base,
    // After the checkout the engine walks once, in its record transaction.
    ...(result.gitCommit !== null
      ? { checkedOut: { trackedBefore: trackedBefore ?? new Set<string>() } }
      : disk !== null && targetTree !== null
      ? { disk }
      : {}),
    overwrite: options.force ? "local" : "none",
    setsBaseline: true,
    effects: {
      session: doSession ? { from: targetId, mode } : null,
      currentBranch: null,
      view: null,
      recordAs: targetId,
      git: gitBack === null ? null : { back: gitBack },
    },
    extra: { session_mode: mode, git_commit: gitCommit },
    save: {
      reason: "pre-restore",
      session: sel.session,
      branch: sel.branch,
      detached: false,
      metadata: { pre_restore_for: targetId },
    },
    saved: result.preRestore,
    dryRun: result.dryRun,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  const moved = await runMove(store, signer, spec);
  result.plan = moved.plan;
  if (result.dryRun) {
    if (moved.plan !== null) {
      try {
        refuse(moved.plan, "Restore");
      } catch (error) {
        if (!(error instanceof RestoreConflictError)) throw error;
        refuseOrNote("conflicts", error);
      }
    }
    return result;
  }
  result.preRestore = moved.saved;
  result.operation = moved.operation;
  result.snapshot = moved.snapshot;
  return result;
}
