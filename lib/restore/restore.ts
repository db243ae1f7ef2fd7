/**
 * Restore, recover and undo (docs/DESIGN.md §5, §3 invariant 5).
 *
 * A restore plans three-way, refuses conflicts unless forced (and then first
 * captures the current content into a `pre-restore` snapshot), records an
 * `applying` operation holding the plan and the pre-restore tree, applies
 * atomic per-file writes, then — in one transaction — merges the session,
 * records a new snapshot whose `metadata.reverted_to` names the target, and
 * marks the operation done. A crash in between leaves the operation
 * `applying`: new snapshots on the session are refused until
 * {@linkcode recover} finishes it or aborts it back to the pre-restore tree.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
 * import { createSnapshot } from "../snapshot/create.ts";
 * import { restoreSnapshot } from "./restore.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${ws}/a.txt`, "v1\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const first = await createSnapshot(store, me, { reason: "v1" });
 * await Deno.writeTextFile(`${ws}/a.txt`, "v2\n");
 * await createSnapshot(store, me, { reason: "v2" });
 * await restoreSnapshot(store, me, first.id);
 * if (!(await Deno.readTextFile(`${ws}/a.txt`) === "v1\n")) throw new Error("Example failed");
 * store.close();
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ConflictError,
  type CtxsnapErrorOptions,
  IntegrityError,
  NotFoundError,
  quote,
  UsageError,
} from "../errors.ts";
import { FileWrites, totalBytes } from "./_file_writes.ts";
import { SafeWriter } from "../fs/safe_write.ts";
import { captureWorkspace } from "../store/capture.ts";
import {
  assertResolved,
  finishOperation,
  type Operation,
  startOperation,
  unresolvedOperation,
} from "../store/operations.ts";
import type { Store } from "../store/store.ts";
import type { TreeEntry, TreeManifest } from "../store/tree.ts";
import { createSnapshot } from "../snapshot/create.ts";
import { entryMap, sameEntry } from "../snapshot/diff.ts";
import type { Envelope, Signer } from "../snapshot/envelope.ts";
import {
  gitStatus,
  gitSwitch,
  gitTrackedFiles,
  isBranchName,
  readGitStatus,
} from "../snapshot/git.ts";
import { mergeContext, updateSessionState } from "../snapshot/session_state.ts";
import { branchChain, getBranch, readEnvelope, selection } from "../snapshot/timeline.ts";
import { planRestore, type RestorePlan } from "./plan.ts";
import { refuseStorePaths } from "./_paths.ts";
import { impliedDirectories, inspectPath, matchesEntry } from "./_on_disk.ts";
import { checkPlanAgainstTrees, type StoredPlan, validateStoredPlan } from "./_stored_plan.ts";

/** A restore refused because of conflicts; carries the plan. */
export class RestoreConflictError extends ConflictError {
  /** The plan whose conflicts were refused. */
  readonly plan: RestorePlan;

  /** Creates the error. */
  constructor(message: string, plan: RestorePlan, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "RestoreConflictError";
    this.plan = plan;
  }
}

/** Options of {@linkcode restoreSnapshot}. */
export interface RestoreOptions {
  /** Restore workspace files (default true unless only `session` is set). */
  workspace?: boolean;
  /** Merge the snapshot's context into the live session (default true unless only `workspace` is set). */
  session?: boolean;
  /** Check out the anchored git commit (detached) first; refuses a dirty tree. */
  git?: boolean;
  /** Apply despite conflicts, after capturing the current content into a snapshot. */
  force?: boolean;
  /** Only plan. */
  dryRun?: boolean;
  /** Session (default current). */
  sessionName?: string;
  /** Branch (default the session's current). */
  branch?: string;
  /** Progress callback while writing. */
  onProgress?: (done: number, total: number) => void;
}

/** What a restore did (or, with `dryRun`, would do). */
export interface RestoreResult {
  /** Target snapshot id. */
  target: string;
  /** The plan. */
  plan: RestorePlan | null;
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
  /** Whether the session was merged. */
  sessionMerged: boolean;
}

const EMPTY_TREE: TreeManifest = { version: 1, entries: [], skipped: [] };

function workspaceTree(store: Store, envelope: Envelope): TreeManifest | null {
  const ref = envelope.body.workspace;
  if (ref === null) return null;
  try {
    return store.getTree(ref.tree);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

function requireContent(store: Store, envelope: Envelope, tree: TreeManifest | null): TreeManifest {
  if (envelope.body.workspace === null) {
    throw new UsageError(`Snapshot ${envelope.id.slice(0, 12)} recorded no workspace`, {
      hint: "restore only its session with --session",
    });
  }
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

function occupiedIn(root: string): (path: string) => boolean {
  return (rel) => {
    try {
      fs.lstatSync(path.join(root, rel));
      return true;
    } catch {
      return false;
    }
  };
}

/** Throws {@linkcode RestoreConflictError} unless the plan may be applied (with `force`). */
function refuseConflicts(plan: RestorePlan, force: boolean): void {
  if (plan.conflicts.length === 0) return;
  const structural = plan.conflicts.filter((c) =>
    c.reason !== "changed_since_baseline" && c.reason !== "deleted_target_changed"
  );
  if (force && structural.length === 0) return;
  const shown = (force ? structural : plan.conflicts).slice(0, 20).map((c) => c.path);
  throw new RestoreConflictError(
    `Restore refused: ${plan.conflicts.length} path(s) changed outside ctxsnap since the branch head: ${
      shown.join(", ")
    }${plan.conflicts.length > shown.length ? ", …" : ""}`,
    plan,
    {
      hint: force
        ? "something ctxsnap cannot capture is in the way; move it aside and retry"
        : "see them with --dry-run; --force first snapshots the current content, then overwrites",
    },
  );
}

/** Plans and (unless `dryRun`) applies a restore of snapshot `targetId`. */
export async function restoreSnapshot(
  store: Store,
  signer: Signer,
  targetId: string,
  options: RestoreOptions = {},
): Promise<RestoreResult> {
  const sel = selection(store, options.sessionName, options.branch);
  const onlySession = options.session === true && options.workspace !== true;
  const onlyWorkspace = options.workspace === true && options.session !== true;
  const doWorkspace = !onlySession;
  const doSession = !onlyWorkspace;
  assertResolved(store, sel.session);
  const envelope = await readEnvelope(store, targetId); // id and signature checked
  const result: RestoreResult = {
    target: targetId,
    plan: null,
    dryRun: options.dryRun === true,
    operation: null,
    snapshot: null,
    preRestore: null,
    gitCommit: null,
    sessionMerged: false,
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

  // --git: everything is checked before anything changes.
  let gitCommit: string | null = null;
  if (options.git) {
    const anchor = envelope.body.git;
    if (anchor === null || anchor.commit === null) {
      throw new UsageError(`Snapshot ${targetId.slice(0, 12)} has no git anchor to check out`, {
        hint: "restore without --git",
      });
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
    gitCommit = anchor.commit;
  }

  const targetTree = doWorkspace
    ? requireContent(store, envelope, workspaceTree(store, envelope))
    : null;
  if (targetTree !== null) {
    refuseStorePaths(store.workspaceRoot, store.dir, targetTree.entries.map((e) => e.path));
  }
  const head = getBranch(store, sel.session, sel.branch)?.head ?? null;
  let baseline: TreeManifest | null = null;
  if (head !== null) {
    const headEnvelope = await readEnvelope(store, head);
    baseline = headEnvelope.body.workspace === null
      ? EMPTY_TREE
      : workspaceTree(store, headEnvelope);
  }

  let undoCheckout: (() => void) | null = null;
  let gitBack: string | null = null;
  if (gitCommit !== null && !result.dryRun && targetTree !== null) {
    // git protects only what it tracks. Files it ignores but ctxsnap captures
    // (.git/info/exclude, re-included by .ctxsnapignore) keep the usual
    // three-way rule: changed since the branch head means conflict.
    const tracked = gitTrackedFiles(store.workspaceRoot);
    const risky = planRestore({
      target: targetTree,
      baseline,
      current: captureWorkspace(store, { persist: false }).tree,
    }).conflicts.filter((c) => !tracked.has(c.path));
    if (risky.length > 0) {
      if (!options.force) {
        throw new ConflictError(
          `Restore refused: ${risky.length} path(s) that git does not track changed since the branch head: ${
            risky.slice(0, 20).map((c) => c.path).join(", ")
          }`,
          { hint: "git cannot bring them back; --force first snapshots the current content" },
        );
      }
      await snapshotBeforeRestore();
    }
  }
  if (gitCommit !== null && !result.dryRun) {
    const before = readGitStatus(store.workspaceRoot, store.dir);
    const branch = before?.branch ?? null;
    const back = branch !== null && isBranchName(branch) ? branch : before?.commit ?? null;
    gitBack = back;
    const checkout = gitSwitch(store.workspaceRoot, gitCommit);
    if (checkout.status !== 0) {
      throw new ConflictError(
        `git checkout ${gitCommit.slice(0, 12)} failed: ${checkout.stderr.trim()}`,
      );
    }
    if (back !== null) {
      undoCheckout = () => void gitSwitch(store.workspaceRoot, back);
    }
    result.gitCommit = gitCommit;
    // The tree was clean, so everything it held is in git history: the
    // checked-out state is a safe baseline.
    baseline = captureWorkspace(store, { persist: false }).tree;
  }

  let plan: RestorePlan | null = null;
  let planned: Map<string, TreeEntry> = new Map();
  try {
    if (targetTree !== null) {
      const current = captureWorkspace(store, { persist: false }).tree;
      planned = entryMap(current);
      const probe = new SafeWriter(store.workspaceRoot);
      plan = planRestore({
        target: targetTree,
        baseline,
        current,
        occupied: occupiedIn(store.workspaceRoot),
        blockedParent: (rel) => probe.blockedParent(rel),
      });
      result.plan = plan;
    }
    if (result.dryRun) return result;
    if (plan !== null) refuseConflicts(plan, options.force === true);
  } catch (error) {
    // Refused before anything else changed: put HEAD back where it was.
    undoCheckout?.();
    throw error;
  }

  if (plan !== null && plan.conflicts.length > 0 && result.preRestore === null) {
    // --force: keep everyone's work in a snapshot first, then overwrite.
    await snapshotBeforeRestore();
  }
  if (plan !== null && plan.conflicts.length > 0) {
    const target = entryMap(targetTree!);
    for (const conflict of plan.conflicts) {
      const entry = target.get(conflict.path);
      if (entry === undefined) plan.deletes.push(conflict.path);
      else plan.writes.push({ path: conflict.path, action: "replace", entry });
    }
    plan.conflicts = [];
  }

  // Record the operation (with the pre-restore tree) before the first write.
  let op: Operation;
  try {
    op = store.transaction("restore", () => {
      assertResolved(store, sel.session);
      const pre = captureWorkspace(store);
      // Anything saved between planning and now would be overwritten unseen.
      const preEntries = entryMap(pre.tree);
      const moved = [...(plan?.writes.map((w) => w.path) ?? []), ...(plan?.deletes ?? [])]
        .filter((rel) => !sameEntry(preEntries.get(rel), planned.get(rel)));
      if (moved.length > 0) {
        throw new ConflictError(
          `Restore refused: ${moved.length} path(s) changed while the restore was being planned: ${
            moved.slice(0, 10).join(", ")
          }`,
          { hint: "something is editing the workspace; retry when it is quiet" },
        );
      }
      return startOperation(store, {
        kind: "restore",
        session: sel.session,
        branch: sel.branch,
        source: head,
        target: targetId,
        plan: {
          target_tree: envelope.body.workspace?.tree ?? null,
          pre_tree: pre.treeId,
          writes: plan?.writes.map((w) => w.path) ?? [],
          deletes: plan?.deletes ?? [],
          workspace: plan !== null,
          session: doSession,
          pre_restore: result.preRestore,
          git_commit: gitCommit,
          git_back: gitBack,
        },
      });
    });
  } catch (error) {
    undoCheckout?.();
    throw error;
  }
  result.operation = op.id;

  if (plan !== null) {
    try {
      applyPaths(
        store,
        entryMap(targetTree!),
        plan.writes.map((w) => w.path),
        plan.deletes,
        options.onProgress ? { onProgress: options.onProgress } : {},
      );
    } catch (error) {
      await abortOperation(
        store,
        op,
        "failed",
        error instanceof Error ? error.message : String(error),
      );
      undoCheckout?.();
      throw error;
    }
  }
  const finished = await finishRestore(store, signer, op);
  result.snapshot = finished.snapshot;
  result.sessionMerged = finished.sessionMerged;
  return result;
}

/**
 * Writes `writes` from `entries` and removes `deletes` (and first the empty
 * directories `emptyDirs`, left by a killed restore where a file belongs);
 * fsyncs touched directories.
 */
function applyPaths(
  store: Store,
  entries: ReadonlyMap<string, TreeEntry>,
  writes: string[],
  deletes: string[],
  options: { emptyDirs?: string[]; onProgress?: (done: number, total: number) => void } = {},
): void {
  const { onProgress } = options;
  refuseStorePaths(store.workspaceRoot, store.dir, [...writes, ...deletes]);
  const writer = new SafeWriter(store.workspaceRoot);
  try {
    const total = writes.length + deletes.length;
    let done = 0;
    // Deletes first, so a file giving way to a directory is gone before the directory is made.
    for (const rel of deletes) {
      writer.remove(rel);
      onProgress?.(++done, total);
    }
    for (const rel of options.emptyDirs ?? []) writer.removeEmptyDirectory(rel);
    const toWrite = writes.map((rel) => {
      const entry = entries.get(rel);
      if (entry === undefined) {
        throw new IntegrityError(`The restore plan names ${quote(rel)}, absent from its tree`);
      }
      return entry;
    });
    const files = new FileWrites(store, writer, totalBytes(toWrite));
    try {
      for (const entry of toWrite) {
        files.write(entry);
        onProgress?.(++done, total);
      }
      files.finish();
    } finally {
      files.close();
    }
    writer.flush();
  } finally {
    writer.close();
  }
}

/** Merges the session, records the restore snapshot and marks the operation done, atomically. */
async function finishRestore(
  store: Store,
  signer: Signer,
  op: Operation,
): Promise<{ snapshot: string; sessionMerged: boolean }> {
  const plan = validateStoredPlan(op, store.workspaceRoot, store.dir);
  const target = await readEnvelope(store, op.target!);
  const created = await createSnapshot(store, signer, {
    reason: `restore ${op.target!.slice(0, 12)}`,
    session: op.session!,
    branch: op.branch!,
    operation: op.id,
    metadata: { reverted_to: op.target!, operation: op.id },
    prepare: () => {
      if (plan.session) {
        updateSessionState(
          store,
          op.session!,
          (live) => mergeContext(live, target.body.context),
          op.id,
        );
      }
    },
    beforeCommit: () => finishOperation(store, op.id, "done"),
  });
  return { snapshot: created.id, sessionMerged: plan.session };
}

/** A restore operation's plan, validated, with the two trees it moves between. */
interface Recovery {
  plan: StoredPlan;
  pre: Map<string, TreeEntry>;
  target: Map<string, TreeEntry>;
  /** Directories the pre-restore tree implies. */
  preDirs: Set<string>;
  /** Directories the target tree implies. */
  targetDirs: Set<string>;
}

/** Reads and checks everything `recover` acts on, before it acts on any of it. */
function loadRecovery(store: Store, op: Operation): Recovery {
  const plan = validateStoredPlan(op, store.workspaceRoot, store.dir);
  const none = new Map<string, TreeEntry>();
  const pre = plan.workspace ? entryMap(store.getTree(plan.pre_tree)) : none;
  const target = plan.workspace && plan.target_tree !== null
    ? entryMap(store.getTree(plan.target_tree))
    : none;
  checkPlanAgainstTrees(op, plan, pre, target);
  return {
    plan,
    pre,
    target,
    preDirs: impliedDirectories(pre.keys()),
    targetDirs: impliedDirectories(target.keys()),
  };
}

/** The file sizes a path could match: of its entries in either tree. */
function sizesAt(r: Recovery, rel: string): number[] {
  const sizes: number[] = [];
  for (const entry of [r.pre.get(rel), r.target.get(rel)]) {
    if (entry?.type === "file") sizes.push(entry.size);
  }
  return sizes;
}

/**
 * What moves the managed paths to `to` (the pre-restore or the target tree):
 * every path `to` holds is written, an empty directory in its way removed
 * first; every other path is deleted, unless it is already absent (or
 * cannot exist: a parent is a file or symlink) or is a directory `to`
 * implies.
 */
function movesTo(
  store: Store,
  r: Recovery,
  to: Map<string, TreeEntry>,
  toDirs: Set<string>,
): { writes: string[]; deletes: string[]; emptyDirs: string[] } {
  const out = { writes: [] as string[], deletes: [] as string[], emptyDirs: [] as string[] };
  for (const rel of [...r.plan.writes, ...r.plan.deletes]) {
    const state = inspectPath(store.workspaceRoot, rel, []);
    if (to.has(rel)) {
      out.writes.push(rel);
      if (state.kind === "dir" && state.empty) out.emptyDirs.push(rel);
    } else if (state.kind === "absent" || state.kind === "blocked") {
      continue;
    } else if (state.kind === "dir" && toDirs.has(rel)) {
      continue;
    } else {
      out.deletes.push(rel);
    }
  }
  out.writes.sort();
  return out;
}

/** Returns the managed paths of `op` to the pre-restore tree and closes it with `status`. */
async function abortOperation(
  store: Store,
  op: Operation,
  status: "failed" | "aborted",
  error: string | null,
): Promise<void> {
  const r = loadRecovery(store, op);
  if (r.plan.workspace) {
    const moves = movesTo(store, r, r.pre, r.preDirs);
    applyPaths(store, r.pre, moves.writes, moves.deletes, { emptyDirs: moves.emptyDirs });
  }
  // The workspace is back to the checked-out commit's state; return git too.
  if (r.plan.git_back !== null) gitSwitch(store.workspaceRoot, r.plan.git_back);
  await Promise.resolve();
  store.transaction("recover", () => finishOperation(store, op.id, status, error));
}

/** What {@linkcode recover} did. */
export interface RecoverResult {
  /** The operation resolved, or null when there was nothing to recover. */
  operation: string | null;
  /** `done` (finished) or `aborted` (returned to the pre-restore content, or discarded). */
  status: "done" | "aborted" | null;
  /** The snapshot recording a finished restore. */
  snapshot: string | null;
  /** Whether the operation was closed without touching the workspace (`discard`). */
  discarded: boolean;
}

/** Options of {@linkcode recover}. */
export interface RecoverOptions {
  /** Return the managed paths to their pre-restore content instead of finishing. */
  abort?: boolean;
  /**
   * Close the operation as `aborted` without reading its plan or touching
   * any file (for a plan that is refused as invalid).
   */
  discard?: boolean;
  /** Session (default current). */
  sessionName?: string;
  /** Overwrite paths changed since the interruption. */
  force?: boolean;
}

/**
 * Resolves the session's interrupted restore: finishes it (idempotently), or
 * with `abort` returns its paths to the pre-restore content. Its stored plan
 * is validated first (an invalid one is refused, exit 1, and only `discard`
 * ends it). Every managed path is looked at as it is on disk: one that holds
 * neither its pre-restore nor its target content was changed by someone
 * else and is a conflict (exit 5) unless `force`.
 */
export async function recover(
  store: Store,
  signer: Signer,
  options: RecoverOptions = {},
): Promise<RecoverResult> {
  const sel = selection(store, options.sessionName);
  const op = unresolvedOperation(store, sel.session);
  if (op === null) return { operation: null, status: null, snapshot: null, discarded: false };
  if (options.discard) {
    store.transaction("recover", () =>
      finishOperation(
        store,
        op.id,
        "aborted",
        "discarded by recover --discard; the workspace was not changed",
      ));
    return { operation: op.id, status: "aborted", snapshot: null, discarded: true };
  }
  const r = loadRecovery(store, op);
  const managed = [...r.plan.writes, ...r.plan.deletes];
  if (r.plan.workspace) {
    const foreign = managed.filter((rel) => {
      const state = inspectPath(store.workspaceRoot, rel, sizesAt(r, rel));
      return !matchesEntry(state, r.pre.get(rel), r.preDirs.has(rel)) &&
        !matchesEntry(state, r.target.get(rel), r.targetDirs.has(rel));
    });
    if (foreign.length > 0 && !options.force) {
      throw new ConflictError(
        `${foreign.length} path(s) changed since the restore was interrupted: ${
          foreign.slice(0, 10).join(", ")
        }`,
        { hint: "move them aside, or pass --force to overwrite them" },
      );
    }
    // A kill mid-write can leave a temp file next to a managed path.
    const writer = new SafeWriter(store.workspaceRoot);
    try {
      writer.removeStrayTemps(managed);
      writer.flush();
    } finally {
      writer.close();
    }
  }
  if (options.abort) {
    if (r.plan.workspace) await abortOperation(store, op, "aborted", null);
    else store.transaction("recover", () => finishOperation(store, op.id, "aborted"));
    return { operation: op.id, status: "aborted", snapshot: null, discarded: false };
  }
  if (r.plan.workspace) {
    const moves = movesTo(store, r, r.target, r.targetDirs);
    applyPaths(store, r.target, moves.writes, moves.deletes, { emptyDirs: moves.emptyDirs });
  }
  const finished = await finishRestore(store, signer, op);
  return { operation: op.id, status: "done", snapshot: finished.snapshot, discarded: false };
}

/**
 * Finds the snapshot `undo` returns to: the parent of the branch's last
 * restore. Every envelope walked is verified (id and signature) first.
 */
export async function undoTarget(
  store: Store,
  sessionName?: string,
  branch?: string,
): Promise<string> {
  const sel = selection(store, sessionName, branch);
  for (const id of branchChain(store, sel.session, sel.branch)) {
    const body = (await readEnvelope(store, id)).body;
    if (typeof body.facets.metadata.reverted_to === "string") {
      if (body.parent === null) break;
      return body.parent;
    }
  }
  throw new NotFoundError(`Branch ${sel.session}/${sel.branch} has no restore to undo`);
}
