/**
 * The phases of a move of the workspace, as primitives the move engine
 * (`engine.ts`) runs in order for restore, switch, undo, redo and recover:
 *
 * - **plan** ({@linkcode planPhase}): one walk of the workspace (hashed,
 *   nothing stored) unless one is given, then the three-way plan of
 *   `plan.ts` with base = the workspace baseline, disk = that walk, target
 *   = the tree to move to.
 * - **record** ({@linkcode recordWalk}, {@linkcode recordPhase}): in one
 *   transaction, the record walk that stores the disk as `pre_tree` (so
 *   every byte the move may overwrite is kept; skipped when nothing is
 *   written and every file is stored), a check that no planned path
 *   changed since the plan, and an `applying` operation holding the plan,
 *   the baseline to set when done and the view of the sessions before (for
 *   its undo record).
 * - **apply** ({@linkcode applyPhase}): deletes, then atomic writes that
 *   never follow a symlink, then one durability flush. A failure returns
 *   the touched paths to `pre_tree` ({@linkcode abortMove}, `failed`).
 * - **finish** ({@linkcode completeMove}, inside the engine's finish
 *   transaction): sets the baseline, records the undo record (files before
 *   and after, and what the effects changed in sessions and branches) and
 *   marks the operation `done`.
 *
 * A crash between record and finish leaves the operation `applying`;
 * `recover` validates its stored plan (`_stored_plan.ts`: a store may have
 * been edited), looks at every managed path as it is on disk
 * (`_on_disk.ts`, never through the capture's ignore and secret rules),
 * then moves each one to the target (idempotent) and re-runs the stored
 * spec's finish (`engine.ts`), or with `--abort` moves them back to
 * `pre_tree`. Every write and delete goes through `SafeWriter` (a
 * descriptor of its directory, re-checked right before each change) and
 * never into the store's own location.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { planPhase } from "./move.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const { plan } = planPhase(store, { version: 1, entries: [], skipped: [] });
 * // No baseline yet: a.txt is untracked, so moving to an empty tree keeps it.
 * if (plan.preserved[0] !== "a.txt" || plan.deletes.length !== 0) throw new Error("kept");
 * store.close();
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { JsonValue } from "../../encoding/canonical_json.ts";
import { ConflictError, IntegrityError, NotFoundError, quote } from "../../errors.ts";
import { errnoOf } from "../../errors.ts";
import { SafeWriter } from "../io/safe_write.ts";
import { readBaseline, setBaseline } from "../../repository/baseline.ts";
import { type CaptureResult, type CaptureStats, captureWorkspace } from "../capture.ts";
import {
  assertResolved,
  assertWorkspaceResolved,
  finishOperation,
  type Operation,
  type OperationKind,
  startOperation,
} from "../../repository/operations.ts";
import type { Store } from "../../repository/store.ts";
import type { TreeEntry, TreeManifest } from "../../format/tree.ts";
import { entryMap } from "../../repository/diff.ts";
import { captureView, diffViews } from "../../history/oplog.ts";
import { entriesMatch } from "../../repository/diff.ts";
import { FileWrites, totalBytes } from "../file_writes.ts";
import { impliedDirectories, inspectPath } from "../on_disk.ts";
import { refuseStorePaths } from "../restore_paths.ts";
import { checkPlanAgainstTrees, type StoredMovePlan, validateStoredPlan } from "./_stored_plan.ts";
import { type DiskKind, type DiskProbe, type MovePlan, planMove } from "../plan.ts";
import { changedSinceInterruption, type Overwrite } from "../overwrite.ts";

export type { StoredMovePlan } from "./_stored_plan.ts";

/** The empty tree (a snapshot without a workspace moves nothing). */
export const EMPTY_TREE: TreeManifest = { version: 1, entries: [], skipped: [] };

/** The baseline's tree, or null when unknown or no longer in the store. */
export function baselineTree(store: Store): TreeManifest | null {
  return baseline(store)?.tree ?? null;
}

/**
 * The plan's walk of the workspace (nothing stored), made first, and the
 * baseline: a walk whose root id is the baseline's holds exactly the
 * baseline and stands in for reading its trees (docs/DESIGN.md §5); any
 * other walk reads the baseline whole.
 */
export function walkWithBaseline(
  store: Store,
): { disk: TreeManifest; base: { id: string; tree: TreeManifest } | null } {
  const walked = captureWorkspace(store, { persist: false });
  const id = readBaseline(store);
  if (id !== null && walked.treeId === id && store.hasObject(id)) {
    store.keepTree(id, {
      version: 1,
      entries: [...walked.tree.entries],
      skipped: [...walked.tree.skipped],
    });
    return { disk: walked.tree, base: { id, tree: walked.tree } };
  }
  return { disk: walked.tree, base: baseline(store) };
}

/** The baseline's tree id and tree, or null when unknown or no longer in the store. */
export function baseline(store: Store): { id: string; tree: TreeManifest } | null {
  const id = readBaseline(store);
  if (id === null) return null;
  try {
    return { id, tree: store.getTree(id) };
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/** Disk facts for the planner, read with `lstat` (never following a symlink). */
export function diskProbe(store: Store): DiskProbe {
  const root = store.workspaceRoot;
  const writer = new SafeWriter(root);
  return {
    kindAt(rel: string): DiskKind {
      try {
        return fs.lstatSync(path.join(root, rel)).isDirectory() ? "directory" : "other";
      } catch (error) {
        const code = errnoOf(error);
        if (code === "ENOENT" || code === "ENOTDIR") return "none";
        return "other";
      }
    },
    blockedParent: (rel: string) => writer.blockedParent(rel),
  };
}

/** What the plan phase found. */
export interface PlannedMove {
  /** The baseline used (null: unknown). */
  base: TreeManifest | null;
  /** The workspace as walked. */
  disk: TreeManifest;
  /** The three-way plan. */
  plan: MovePlan;
}

/**
 * Plan phase: refuses a target naming a path inside the store's own
 * location, walks the workspace once (nothing stored; none when `walked`
 * is given) and plans the move from `base` (default: the workspace
 * baseline) to `target`.
 */
export function planPhase(
  store: Store,
  target: TreeManifest,
  base: TreeManifest | null = baselineTree(store),
  overwrite: Overwrite = "none",
  walked?: TreeManifest,
): PlannedMove {
  refuseStorePaths(store.workspaceRoot, store.dir, target.entries.map((e) => e.path));
  const disk = walked ?? captureWorkspace(store, { persist: false }).tree;
  const plan = planMove({ base, disk, target, probe: diskProbe(store), overwrite });
  return { base, disk, plan };
}

/** What {@linkcode recordPhase} records. */
export interface MoveStart {
  /** Operation kind. */
  kind: OperationKind;
  /** Session and branch it acts on. */
  session: string;
  /** Branch. */
  branch: string;
  /** Source snapshot (the head before), or null. */
  source: string | null;
  /** Target snapshot, or null. */
  target: string | null;
  /** The tree moved to, or null (no files). */
  targetTree: string | null;
  /** The plan to apply, or null (no files). */
  plan: MovePlan | null;
  /** The walk the plan was made from. */
  planned: TreeManifest | null;
  /** Baseline to record when done (null: leave it). */
  baseline: string | null;
  /** Sessions the operation may change. */
  sessions: string[];
  /** Kind-specific plan fields. */
  extra: Record<string, JsonValue>;
  /** Reverted operation (undo, redo). */
  reverts?: string | null;
  /** The operation id (default: a fresh one). */
  id?: string;
  /** The record walk, already made in this transaction (default: made by {@linkcode recordPhase}). */
  pre?: CaptureResult;
}

/**
 * The record phase's walk, inside its transaction: refuses while a move is
 * unresolved, stores the disk (the `pre_tree`, so every byte the move may
 * overwrite is kept) and refuses if a planned path changed since the plan.
 * A plan with nothing to write or delete needs no second walk when every
 * file the plan walk saw is already stored: the plan's walk is stored as is.
 */
export function recordWalk(store: Store, start: MoveStart): CaptureResult {
  assertResolved(store, start.session);
  for (const session of start.sessions) assertResolved(store, session);
  assertWorkspaceResolved(store);
  const planned = start.planned;
  if (
    start.plan !== null && planned !== null && start.plan.writes.length === 0 &&
    start.plan.deletes.length === 0 &&
    planned.entries.every((e) => e.type !== "file" || store.hasObject(e.blob))
  ) {
    return storedWalk(store, planned);
  }
  const pre = captureWorkspace(store);
  if (start.plan !== null && planned !== null) {
    // Anything saved between planning and now would be overwritten unseen.
    const now = entryMap(pre.tree);
    const before = entryMap(planned);
    const moved = [...start.plan.writes.map((w) => w.path), ...start.plan.deletes]
      .filter((rel) => !entriesMatch(now.get(rel), before.get(rel)));
    if (moved.length > 0) {
      throw new ConflictError(
        `${
          capitalized(start.kind)
        } refused: ${moved.length} path(s) changed while it was being planned: ${
          moved.slice(0, 10).join(", ")
        }`,
        { hint: "something is editing the workspace; retry when it is quiet" },
      );
    }
  }
  return pre;
}

/** A walk whose every file is stored, recorded as a capture (its tree stored, nothing read). */
function storedWalk(store: Store, tree: TreeManifest): CaptureResult {
  const stats: CaptureStats = {
    files: 0,
    symlinks: 0,
    skipped: tree.skipped.length,
    bytes: 0,
    hashed: 0,
    reused: 0,
  };
  for (const entry of tree.entries) {
    if (entry.type === "file") {
      stats.files += 1;
      stats.bytes += entry.size;
    } else if (entry.type === "symlink") stats.symlinks += 1;
  }
  stats.reused = stats.files;
  const treeId = store.putTree(tree);
  // The later phases read pre_tree back; kept as a frozen copy (the caller keeps `tree`).
  store.keepTree(treeId, { version: 1, entries: [...tree.entries], skipped: [...tree.skipped] });
  return { treeId, tree, skipped: tree.skipped, stats };
}

/**
 * Record phase: in one transaction, the record walk ({@linkcode recordWalk},
 * or `start.pre` when the engine already made it in this transaction) and
 * the `applying` operation.
 */
export function recordPhase(store: Store, start: MoveStart): Operation {
  return store.transaction(start.kind, () => {
    const pre = start.pre ?? recordWalk(store, start);
    return startOperation(store, {
      kind: start.kind,
      session: start.session,
      branch: start.branch,
      source: start.source,
      target: start.target,
      reverts: start.reverts ?? null,
      ...(start.id !== undefined ? { id: start.id } : {}),
      plan: {
        ...start.extra,
        target_tree: start.targetTree,
        pre_tree: pre.treeId,
        writes: start.plan?.writes.map((w) => w.path) ?? [],
        deletes: start.plan?.deletes ?? [],
        workspace: start.plan !== null,
        baseline: start.baseline,
        sessions: start.sessions,
        view_before: captureView(store, start.sessions) as unknown as JsonValue,
      },
    });
  });
}

function capitalized(text: string): string {
  return text.slice(0, 1).toUpperCase() + text.slice(1);
}

/**
 * Apply phase: removes `deletes` (and then the empty directories
 * `emptyDirs`, left by a killed move where a file belongs), writes `writes`
 * from `entries`, makes it all durable. Every path is first checked to lie
 * outside the store's own location.
 */
export function applyPhase(
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
        throw new IntegrityError(`The move's plan names ${quote(rel)}, absent from its tree`);
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

/** A move operation's plan, validated, with the two trees it moves between. */
interface Recovery {
  plan: StoredMovePlan;
  pre: Map<string, TreeEntry>;
  target: Map<string, TreeEntry>;
  /** Directories the tree before the move implies. */
  preDirs: Set<string>;
  /** Directories the target tree implies. */
  targetDirs: Set<string>;
}

/** Reads and checks everything `recover` (or an abort) acts on, before it acts on any of it. */
function loadRecovery(store: Store, op: Operation): Recovery {
  const plan = storedMovePlan(store, op);
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
 * What moves the managed paths to `to` (the tree before the move, or the
 * target): every path `to` holds is written, an empty directory in its way
 * removed first; every other path is deleted, unless it is already absent
 * (or cannot exist: a parent is a file or symlink) or is a directory `to`
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

/**
 * Applies a recorded move's plan (see {@linkcode applyPhase}) to `target`;
 * when that fails, ends the operation as `failed` (putting back what it
 * had changed, then `afterFiles`, see {@linkcode abortMove}) and rethrows.
 * Restore, switch, undo and redo apply through here.
 */
export function applyRecordedMove(
  store: Store,
  op: Operation,
  target: TreeManifest,
  plan: { writes: { path: string }[]; deletes: string[] },
  onProgress?: (done: number, total: number) => void,
  afterFiles?: (plan: StoredMovePlan) => void,
): void {
  try {
    applyPhase(
      store,
      entryMap(target),
      plan.writes.map((w) => w.path),
      plan.deletes,
      onProgress ? { onProgress } : {},
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    abortMove(store, op, "failed", message, afterFiles);
    throw error;
  }
}

/**
 * Returns the managed paths of a move to its `pre_tree` (after validating
 * its stored plan) and closes it with `status`.
 */
export function abortMove(
  store: Store,
  op: Operation,
  status: "failed" | "aborted",
  error: string | null,
  afterFiles?: (plan: StoredMovePlan) => void,
): void {
  const r = loadRecovery(store, op);
  if (r.plan.workspace) {
    const moves = movesTo(store, r, r.pre, r.preDirs);
    applyPhase(store, r.pre, moves.writes, moves.deletes, { emptyDirs: moves.emptyDirs });
  }
  afterFiles?.(r.plan);
  store.transaction("recover", () => finishOperation(store, op.id, status, error));
}

/**
 * Paths of a move that someone else changed since it was interrupted: what
 * is on disk, looked at directly, is neither the content from before the
 * move nor the target's (the conflict policy's rule). Validates the stored
 * plan first.
 */
export function foreignChanges(store: Store, op: Operation): string[] {
  const r = loadRecovery(store, op);
  if (!r.plan.workspace) return [];
  return [...r.plan.writes, ...r.plan.deletes].filter((rel) =>
    changedSinceInterruption(
      inspectPath(store.workspaceRoot, rel, sizesAt(r, rel)),
      { entry: r.pre.get(rel), impliedDir: r.preDirs.has(rel) },
      { entry: r.target.get(rel), impliedDir: r.targetDirs.has(rel) },
    )
  );
}

/** Moves an interrupted move's managed paths to its target (idempotent). */
export function reapply(store: Store, op: Operation): void {
  const r = loadRecovery(store, op);
  if (!r.plan.workspace) return;
  const moves = movesTo(store, r, r.target, r.targetDirs);
  applyPhase(store, r.target, moves.writes, moves.deletes, { emptyDirs: moves.emptyDirs });
}

/**
 * The tree the workspace holds after the move: `pre_tree` with the writes
 * and deletes applied (stored; returns its id).
 */
export function treeAfter(store: Store, plan: StoredMovePlan): string {
  if (!plan.workspace || plan.target_tree === null) return plan.pre_tree;
  const entries = entryMap(store.getTree(plan.pre_tree));
  const target = entryMap(store.getTree(plan.target_tree));
  for (const rel of plan.deletes) entries.delete(rel);
  for (const rel of plan.writes) {
    const entry = target.get(rel);
    if (entry === undefined) {
      throw new IntegrityError(`The move's plan names ${quote(rel)}, absent from its tree`);
    }
    // A file written over a directory replaces everything below it.
    for (const other of entries.keys()) if (other.startsWith(`${rel}/`)) entries.delete(other);
    entries.set(rel, entry);
  }
  const sorted = [...entries.values()].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0
  );
  // A directory written over a file: the file gave way (deleted above, or
  // the plan was refused). Keep the tree valid either way.
  const kept: TreeEntry[] = [];
  for (const entry of sorted) {
    const last = kept[kept.length - 1];
    if (last !== undefined && entry.path.startsWith(`${last.path}/`)) kept.pop();
    kept.push(entry);
  }
  const after: TreeManifest = { version: 1, entries: kept, skipped: [] };
  const id = store.putTree(after);
  store.keepTree(id, after); // finish reads it back (recordedTree)
  return id;
}

/**
 * Finish phase, inside the engine's finish transaction (after the effects
 * changed the sessions and branches the move is about): sets the baseline,
 * records the undo record and marks the operation `done`. `plan` is the
 * stored plan (default: read back and validated).
 */
export function completeMove(
  store: Store,
  op: Operation,
  plan: StoredMovePlan = storedMovePlan(store, op),
): void {
  const after = plan.workspace ? treeAfter(store, plan) : plan.pre_tree;
  if (plan.baseline !== null) setBaseline(store, plan.baseline, op.id);
  // A plan recorded before undo records existed finishes without one.
  const record = plan.view_before === null ? null : diffViews(
    plan.view_before,
    captureView(store, plan.sessions),
    plan.workspace ? { before: plan.pre_tree, after } : null,
  );
  finishOperation(store, op.id, "done", null, record as unknown as JsonValue);
}

/**
 * Reads a move's stored plan, checking every field it acts on (stored data
 * is untrusted; see `_stored_plan.ts`). Throws {@linkcode IntegrityError}.
 */
export function storedMovePlan(store: Store, op: Operation): StoredMovePlan {
  return validateStoredPlan(op, store.workspaceRoot, store.dir);
}
