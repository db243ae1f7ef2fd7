/**
 * Undo and redo from the operations log (see `lib/history/oplog.ts` for
 * the records and the stack).
 *
 * `undo` reverts the operation on top of the undo stack — the last one that
 * changed the workspace, a session or a branch, whatever its kind (create,
 * restore, switch, fork, import, session edit, redo) — by putting back the
 * "before" side of its undo record: branch heads, the current branch and
 * session, live session states, the baseline, and for an operation that
 * moved files, those files. `redo` puts the "after" side back for the
 * operation `undo` reverted last. Both are operations of their own (kinds
 * `undo` and `redo`, naming the operation they revert); a second `undo`
 * reverts the operation below, it never redoes.
 *
 * Files move by the same three-way rules as a restore (`policy.ts`): the
 * target is the baseline with only the paths the reverted operation changed
 * set back, so later edits elsewhere are kept and a path edited since is a
 * conflict (exit 5) unless `--force`, which first records the disk in a
 * snapshot that no branch points at (its id is printed). Undo refuses when
 * something the record would put back has moved since by other means (exit
 * 5), and when an unresolved move is pending (run `recover`).
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { createSnapshot } from "../../history/create.ts";
 * import { getBranch } from "../../history/timeline.ts";
 * import { redo, undo } from "./undo.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * await Deno.writeTextFile(`${ws}/a.txt`, "1\n");
 * const first = await createSnapshot(store, me, {});
 * await Deno.writeTextFile(`${ws}/a.txt`, "2\n");
 * const second = await createSnapshot(store, me, {});
 * await undo(store, me);
 * if (getBranch(store, "main", "main")?.head !== first.id) throw new Error("undone");
 * await redo(store, me);
 * if (getBranch(store, "main", "main")?.head !== second.id) throw new Error("redone");
 * store.close();
 * ```
 * @module
 */
import type { JsonValue } from "../../encoding/canonical_json.ts";
import { ConflictError, NotFoundError } from "../../errors.ts";
import { setBaseline } from "../../repository/baseline.ts";
import {
  assertResolved,
  assertWorkspaceResolved,
  getOperation,
  newOperationId,
  startOperation,
} from "../../repository/operations.ts";
import { isObjectId, switchFrom } from "../../integrations/git/git.ts";
import type { Store } from "../../repository/store.ts";
import type { TreeEntry, TreeManifest } from "../../format/tree.ts";
import { diffStoredTrees, entryMap } from "../../repository/diff.ts";
import type { Signer } from "../../format/envelope.ts";
import {
  applyView,
  type StackEntry,
  type UndoRecord,
  undoStack,
  viewMismatches,
} from "../../history/oplog.ts";
import { currentSelection, getSnapshotRow } from "../../history/timeline.ts";
import { EMPTY_TREE, walkWithBaseline } from "./move.ts";
import { runMove } from "./engine.ts";
import type { MovePlan } from "../plan.ts";

/** Options of {@linkcode undo} and {@linkcode redo}. */
export interface RevertOptions {
  /** Only plan. */
  dryRun?: boolean;
  /** Overwrite content conflicts after recording the disk in a snapshot. */
  force?: boolean;
  /** Progress callback while writing. */
  onProgress?: (done: number, total: number) => void;
}

/** The operation an undo or redo reverts. */
export interface RevertedOperation {
  /** Its id. */
  id: string;
  /** Its kind. */
  kind: string;
  /** Its session, or null. */
  session: string | null;
  /** When it finished (ISO 8601 UTC). */
  finishedAt: string;
}

/** What an undo or redo did (or, with `dryRun`, would do); `--json` prints it in snake_case (`lib/cli/json.ts`). */
export interface RevertResult {
  /** `undo` or `redo`. */
  direction: "undo" | "redo";
  /** The operation reverted. */
  reverts: RevertedOperation;
  /** The files plan, or null when the operation moved no files. */
  plan: MovePlan | null;
  /** Whether this was only a plan. */
  dryRun: boolean;
  /** The undo or redo operation recorded, or null for a dry run. */
  operation: string | null;
  /** The snapshot `--force` recorded the disk in (no branch points at it), or null. */
  saved: string | null;
  /**
   * For a reverted `restore --git`: where git's HEAD was put (`to`: the
   * branch, or commit, HEAD was on before the restore, for an undo; the
   * restore's commit, detached, for a redo), whether it was moved, and if
   * not why (`HeadMove.reason`) with the command that does it by hand.
   * Null for anything else, and for a dry run.
   */
  git: RevertGit | null;
}

/** What an undo or redo of a `restore --git` did with git's HEAD. */
export interface RevertGit {
  /** Where HEAD was to go: a branch name, or a full commit id (detached). */
  to: string;
  /** Where the restore had left it (for an undo) or the undo had (for a redo). */
  from: string;
  /** Whether HEAD is now `to`. */
  moved: boolean;
  /** Why it was not moved, or null. */
  reason: "head_moved" | "refused" | "gone" | null;
  /** git's message when it refused, or null. */
  detail: string | null;
  /** The git command that switches it by hand (once local changes are committed or stashed), or null. */
  hint: string | null;
}

function describe(entry: StackEntry): RevertedOperation {
  return {
    id: entry.id,
    kind: entry.kind,
    session: entry.session,
    finishedAt: new Date(entry.finished_at).toISOString(),
  };
}

/** The operation `undo` would revert next, or null. */
export function nextUndo(store: Store): RevertedOperation | null {
  const entry = undoStack(store).done.at(-1);
  return entry === undefined ? null : describe(entry);
}

/** The operation `redo` would re-apply next, or null. */
export function nextRedo(store: Store): RevertedOperation | null {
  const entry = undoStack(store).redo.at(-1);
  return entry === undefined ? null : describe(entry);
}

/** Reverts the last operation that changed the workspace, a session or a branch. */
export function undo(
  store: Store,
  signer: Signer,
  options: RevertOptions = {},
): Promise<RevertResult> {
  return store.keepingTrees(() => revert(store, signer, "undo", options));
}

/** Re-applies the operation the last `undo` reverted. */
export function redo(
  store: Store,
  signer: Signer,
  options: RevertOptions = {},
): Promise<RevertResult> {
  return store.keepingTrees(() => revert(store, signer, "redo", options));
}

function sessionsOf(record: UndoRecord): string[] {
  return [
    ...new Set([...record.sessions.map((s) => s.name), ...record.branches.map((b) => b.session)]),
  ];
}

/**
 * The tree to move to: the baseline, with only the paths the operation
 * changed set to `side`. The two sides are compared as stored trees
 * (`diffStoredTrees`): the subtrees they share are not read, so undoing a
 * one-file change reads the trees on that file's path.
 */
function revertTarget(
  store: Store,
  record: UndoRecord,
  side: "before" | "after",
  base: TreeManifest | null,
): TreeManifest {
  const files = record.files!;
  const step = diffStoredTrees(store, files[side === "before" ? "after" : "before"], files[side]);
  // `side`'s entries at the paths where the two sides differ.
  const want = entryMap(step.right);
  const out = new Map<string, TreeEntry>(entryMap(base ?? EMPTY_TREE));
  for (const path of [...step.diff.added, ...step.diff.changed, ...step.diff.removed]) {
    const w = want.get(path);
    if (w === undefined) out.delete(path);
    else out.set(path, w);
  }
  // A path set back as a file removes what base held below it, and the reverse.
  const sorted = [...out.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const entries: TreeEntry[] = [];
  for (const entry of sorted) {
    const last = entries[entries.length - 1];
    if (last !== undefined && entry.path.startsWith(`${last.path}/`)) {
      if (want.has(last.path)) continue; // the reverted file wins over base's directory
      entries.pop();
    }
    entries.push(entry);
  }
  return { version: 1, entries, skipped: [] };
}

async function revert(
  store: Store,
  signer: Signer,
  direction: "undo" | "redo",
  options: RevertOptions,
): Promise<RevertResult> {
  assertWorkspaceResolved(store);
  const stack = undoStack(store);
  const entry = direction === "undo" ? stack.done.at(-1) : stack.redo.at(-1);
  if (entry === undefined) {
    throw new NotFoundError(direction === "undo" ? "Nothing to undo" : "Nothing to redo", {
      hint: direction === "undo"
        ? "the log has no operation left that can be undone (`ctxsnap log` lists them)"
        : "redo re-applies what `ctxsnap undo` reverted, until another change is made",
    });
  }
  const record = entry.record;
  const from = direction === "undo" ? "after" : "before";
  const to = direction === "undo" ? "before" : "after";
  const sessions = sessionsOf(record);
  for (const session of sessions) assertResolved(store, session);
  const moved = viewMismatches(store, record, from);
  if (moved.length > 0) {
    throw new ConflictError(
      `Cannot ${direction} ${entry.id} (${entry.kind}): ${moved.join("; ")} since`,
      { hint: "that change was made outside the operations undo can revert; change it back first" },
    );
  }
  for (const b of record.branches) {
    const want = b[to];
    for (const id of [want?.head, want?.base]) {
      if (id && getSnapshotRow(store, id) === null) {
        throw new NotFoundError(
          `Cannot ${direction} ${entry.id}: snapshot ${id.slice(0, 12)} was forgotten`,
        );
      }
    }
  }
  const result: RevertResult = {
    direction,
    reverts: describe(entry),
    plan: null,
    dryRun: options.dryRun === true,
    operation: null,
    saved: null,
    git: null,
  };
  const sel = currentSelection(store);
  const baselineAfter = record.baseline === null ? null : record.baseline[to];

  if (record.files === null) {
    if (result.dryRun) return result;
    result.operation = store.transaction(direction, () => {
      assertWorkspaceResolved(store);
      for (const session of sessions) assertResolved(store, session);
      const op = startOperation(store, {
        kind: direction,
        session: entry.session,
        branch: sel.branch,
        reverts: entry.id,
        status: "done",
        plan: { reverts: entry.id, workspace: false },
      });
      applyView(store, record, to);
      if (record.baseline !== null) setBaseline(store, baselineAfter, op.id);
      return op.id;
    });
    return result;
  }

  // The plan's walk, made first: it may stand in for the baseline.
  const walked = walkWithBaseline(store);
  const base = walked.base?.tree ?? null;
  const target = revertTarget(store, record, to, base);
  const id = newOperationId();
  const outcome = await runMove(store, signer, {
    kind: direction,
    session: entry.session ?? sel.session,
    branch: sel.branch,
    sessions,
    source: null,
    target: null,
    reverts: entry.id,
    id,
    tree: target,
    treeId: null,
    base,
    disk: walked.disk,
    overwrite: options.force ? "conflicts" : "none",
    setsBaseline: false, // the record's side sets the baseline
    effects: {
      session: null,
      currentBranch: null,
      view: { reverts: entry.id, side: to },
      recordAs: null,
      git: null,
    },
    extra: {},
    save: {
      reason: `pre-${direction}`,
      session: sel.session,
      branch: sel.branch,
      detached: true,
      metadata: { [`pre_${direction}_for`]: entry.id } as Record<string, JsonValue>,
    },
    dryRun: result.dryRun,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  result.plan = outcome.plan;
  result.operation = outcome.operation;
  result.saved = outcome.saved;
  if (!result.dryRun && entry.kind === "restore") {
    result.git = revertHead(store, entry.id, direction);
  }
  return result;
}

/**
 * After the files of a `restore --git` were reverted, switches HEAD back
 * too (an undo: to the branch, or commit, it was on before; a redo: to the
 * restore's commit, detached), with `git switch`, which brings the files git
 * tracks along and refuses to overwrite a local change. Done only while HEAD
 * is still where the restore (or the undo) left it; otherwise left alone and
 * said.
 */
function revertHead(store: Store, restoreId: string, direction: "undo" | "redo"): RevertGit | null {
  const plan = getOperation(store, restoreId)?.plan as Record<string, JsonValue> | undefined;
  const commit = plan?.git_commit;
  const back = plan?.git_back;
  if (typeof commit !== "string" || typeof back !== "string") return null;
  const [from, to] = direction === "undo" ? [commit, back] : [back, commit];
  const move = switchFrom(store.workspaceRoot, from, to);
  return {
    to,
    from,
    moved: move.moved,
    reason: move.reason,
    detail: move.detail,
    hint: move.moved || move.reason === "head_moved"
      ? null
      : `git switch ${isObjectId(to) ? `--detach ${to}` : to}`,
  };
}
