/**
 * Moving the workspace from its baseline to a target tree: the phases that
 * restore, switch, undo, redo and recover share.
 *
 * 1. **plan** ({@linkcode planPhase}): one walk of the workspace (hashed,
 *    nothing stored), then the three-way plan of `plan.ts` with base = the
 *    workspace baseline, disk = that walk, target = the tree to move to.
 * 2. **record** ({@linkcode recordPhase}): in one transaction, a second walk
 *    that stores the disk as `pre_tree` (so every byte the move may overwrite
 *    is kept), a check that no planned path changed since the plan, and an
 *    `applying` operation holding the plan, the baseline to set when done
 *    and the view of the sessions before (for its undo record).
 * 3. **apply** ({@linkcode applyPhase}): deletes, then atomic writes that
 *    never follow a symlink, then one durability flush. A failure returns
 *    the touched paths to `pre_tree` ({@linkcode abortMove}, `failed`).
 * 4. **finish** ({@linkcode completeMove}, inside the caller's final
 *    transaction): sets the baseline, records the undo record (files before
 *    and after, and what the caller changed in sessions and branches) and
 *    marks the operation `done`.
 *
 * A crash between 2 and 4 leaves the operation `applying`; `recover`
 * re-applies its writes and deletes (idempotent) and finishes it the way its
 * kind does, or with `--abort` returns the paths to `pre_tree`.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
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
import type { JsonValue } from "../encoding/canonical_json.ts";
import { ConflictError, IntegrityError, NotFoundError, quote } from "../encoding/errors.ts";
import { isHex } from "../encoding/hex.ts";
import { errnoOf } from "../fs/_errno.ts";
import { SafeWriter } from "../fs/safe_write.ts";
import { readBaseline, setBaseline } from "../store/baseline.ts";
import { captureWorkspace } from "../store/capture.ts";
import {
  assertResolved,
  assertWorkspaceResolved,
  finishOperation,
  type Operation,
  type OperationKind,
  startOperation,
} from "../store/operations.ts";
import type { Store } from "../store/store.ts";
import type { TreeEntry, TreeManifest } from "../store/tree.ts";
import { entryMap } from "../snapshot/diff.ts";
import { captureView, diffViews, type View } from "../snapshot/oplog.ts";
import { FileWrites, totalBytes } from "./_file_writes.ts";
import { type DiskKind, type DiskProbe, type MovePlan, planMove } from "./plan.ts";
import { entriesMatch } from "../snapshot/diff.ts";
import { changedSinceInterruption, type Overwrite } from "./policy.ts";

/** The empty tree (a snapshot without a workspace moves nothing). */
export const EMPTY_TREE: TreeManifest = { version: 1, entries: [], skipped: [] };

/** The baseline's tree, or null when unknown or no longer in the store. */
export function baselineTree(store: Store): TreeManifest | null {
  const id = readBaseline(store);
  if (id === null) return null;
  try {
    return store.getTree(id);
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
 * Plan phase: walks the workspace once (nothing stored) and plans the move
 * from `base` (default: the workspace baseline) to `target`.
 */
export function planPhase(
  store: Store,
  target: TreeManifest,
  base: TreeManifest | null = baselineTree(store),
  overwrite: Overwrite = "none",
): PlannedMove {
  const disk = captureWorkspace(store, { persist: false }).tree;
  const plan = planMove({ base, disk, target, probe: diskProbe(store), overwrite });
  return { base, disk, plan };
}

/** The plan a move records in its operation. */
export interface StoredMovePlan {
  /** The tree moved to (null when the operation moved no files). */
  target_tree: string | null;
  /** The workspace captured just before the first write. */
  pre_tree: string;
  /** Paths written from `target_tree`. */
  writes: string[];
  /** Paths deleted. */
  deletes: string[];
  /** Whether files were moved. */
  workspace: boolean;
  /** The baseline to record when done (null: leave it). */
  baseline: string | null;
  /** The sessions the operation may change. */
  sessions: string[];
  /** Their view when the operation started (for its undo record), or null (a plan from schema 3 or older). */
  view_before: View | null;
  /** Everything else, per kind. */
  extra: Record<string, JsonValue>;
}

const CORE_FIELDS = [
  "target_tree",
  "pre_tree",
  "writes",
  "deletes",
  "workspace",
  "baseline",
  "sessions",
  "view_before",
];

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
}

/**
 * Record phase: in one transaction, stores the disk as `pre_tree`, refuses
 * if a planned path changed since the plan, and records the `applying`
 * operation.
 */
export function recordPhase(store: Store, start: MoveStart): Operation {
  return store.transaction(start.kind, () => {
    assertResolved(store, start.session);
    for (const session of start.sessions) assertResolved(store, session);
    assertWorkspaceResolved(store);
    const pre = captureWorkspace(store);
    if (start.plan !== null && start.planned !== null) {
      // Anything saved between planning and now would be overwritten unseen.
      const now = entryMap(pre.tree);
      const before = entryMap(start.planned);
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

/** Apply phase: removes `deletes`, writes `writes` from `tree`, makes it all durable. */
export function applyPhase(
  store: Store,
  tree: TreeManifest,
  writes: string[],
  deletes: string[],
  onProgress?: (done: number, total: number) => void,
): void {
  const writer = new SafeWriter(store.workspaceRoot);
  const entries = entryMap(tree);
  const total = writes.length + deletes.length;
  let done = 0;
  // Deletes first, so a file giving way to a directory is gone before the directory is made.
  for (const rel of deletes) {
    writer.remove(rel);
    onProgress?.(++done, total);
  }
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
}

/** Returns the managed paths of a move to its `pre_tree` and closes it with `status`. */
export function abortMove(
  store: Store,
  op: Operation,
  status: "failed" | "aborted",
  error: string | null,
  afterFiles?: () => void,
): void {
  const plan = storedMovePlan(op);
  if (plan.workspace) {
    const pre = store.getTree(plan.pre_tree);
    const preEntries = entryMap(pre);
    const writes: string[] = [];
    const deletes: string[] = [];
    for (const rel of [...plan.writes, ...plan.deletes]) {
      if (preEntries.has(rel)) writes.push(rel);
      else deletes.push(rel);
    }
    applyPhase(store, pre, writes, deletes);
  }
  afterFiles?.();
  store.transaction("recover", () => finishOperation(store, op.id, status, error));
}

/**
 * Paths of a move that someone else changed since it was interrupted (the
 * disk holds neither the content from before the move nor the target's).
 */
export function foreignChanges(store: Store, op: Operation): string[] {
  const plan = storedMovePlan(op);
  if (!plan.workspace) return [];
  const pre = entryMap(store.getTree(plan.pre_tree));
  const target = plan.target_tree === null
    ? new Map<string, TreeEntry>()
    : entryMap(store.getTree(plan.target_tree));
  const current = entryMap(captureWorkspace(store, { persist: false }).tree);
  return [...plan.writes, ...plan.deletes].filter((rel) =>
    changedSinceInterruption(current.get(rel), pre.get(rel), target.get(rel))
  );
}

/** Re-applies an interrupted move's writes and deletes (idempotent). */
export function reapply(store: Store, op: Operation): void {
  const plan = storedMovePlan(op);
  if (!plan.workspace || plan.target_tree === null) return;
  applyPhase(store, store.getTree(plan.target_tree), plan.writes, plan.deletes);
}

/** The tree the workspace holds after the move: `pre_tree` with the writes and deletes applied. */
function treeAfter(store: Store, plan: StoredMovePlan): string {
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
  return store.putTree({ version: 1, entries: kept, skipped: [] });
}

/**
 * Finish phase, inside the caller's final transaction (after it changed the
 * sessions and branches the move is about): sets the baseline, records the
 * undo record and marks the operation `done`.
 */
export function completeMove(store: Store, op: Operation): void {
  const plan = storedMovePlan(op);
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

function malformed(op: Operation, what: string): never {
  throw new IntegrityError(`Operation ${quote(op.id)} has a malformed plan: ${what}`);
}

function treeId(op: Operation, value: JsonValue | undefined, what: string): string {
  if (typeof value !== "string" || !isHex(value, 64)) malformed(op, what);
  return value;
}

function paths(op: Operation, value: JsonValue | undefined, what: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) malformed(op, what);
  return value as string[];
}

/** Reads a move's stored plan, checking every field it acts on (stored data is untrusted). */
export function storedMovePlan(op: Operation): StoredMovePlan {
  const p = op.plan;
  if (p === null || typeof p !== "object" || Array.isArray(p)) malformed(op, "not an object");
  const extra: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(p)) if (!CORE_FIELDS.includes(key)) extra[key] = value;
  // Plans written before schema 4 (an interrupted restore from an older
  // ctxsnap) have no view, sessions or baseline: they still finish or abort.
  const legacy = !("view_before" in p);
  const view = legacy ? null : p.view_before;
  if (!legacy && (view === null || typeof view !== "object" || Array.isArray(view))) {
    malformed(op, "view_before");
  }
  const targetTree = p.target_tree === null || (legacy && p.target_tree === undefined)
    ? null
    : treeId(op, p.target_tree, "target_tree");
  const workspace = p.workspace === true;
  return {
    target_tree: targetTree,
    pre_tree: treeId(op, p.pre_tree, "pre_tree"),
    writes: paths(op, p.writes, "writes"),
    deletes: paths(op, p.deletes, "deletes"),
    workspace,
    baseline: legacy
      ? (workspace ? targetTree : null)
      : p.baseline === null || p.baseline === undefined
      ? null
      : treeId(op, p.baseline, "baseline"),
    sessions: legacy
      ? (op.session === null ? [] : [op.session])
      : paths(op, p.sessions, "sessions"),
    view_before: view as unknown as View | null,
    extra,
  };
}
