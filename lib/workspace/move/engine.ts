/**
 * The move engine (docs/DESIGN.md §5): every command that moves the
 * workspace — restore, switch, undo, redo, recover, and a lean-ctx restore —
 * builds a {@linkcode MoveSpec} (the target tree, the overwrite rule, what
 * finishing changes in sessions and branches, what to record) and
 * {@linkcode runMove} runs it through one set of named phases:
 *
 * 1. **plan**: one walk of the workspace (nothing stored) and the three-way
 *    plan from the baseline (`plan.ts`), unless the spec brings a walk made
 *    after a git checkout.
 * 2. **refuse**: conflicts per the overwrite rule (`overwrite.ts`). A dry
 *    run stops here, with the plan.
 * 3. **record**: one store transaction holding the record walk (the disk
 *    stored as `pre_tree`, refused if a planned path changed since the
 *    plan; skipped when there is nothing to write and every file is
 *    stored), the **saved** snapshot of that same capture when the rule
 *    overwrote local work (`saved`: one name for what `restore --force`,
 *    `switch --force` and `undo --force` keep), and the `applying`
 *    operation whose plan stores the spec (`_stored_plan.ts`).
 * 4. **apply**: deletes, then atomic writes that never follow a symlink,
 *    then one flush; a failure puts the touched paths back (`failed`) and
 *    switches git back where the spec checked it out.
 * 5. **finish**: one transaction: the spec's effects (the session's
 *    context, its current branch, or a side of an undo record), the
 *    snapshot recording the move (its tree is the record walk with the plan
 *    applied: no walk), the baseline, the undo record, `done`.
 *
 * A move without files (a session-only or lean-ctx restore) records and
 * finishes in one transaction. `finish` always reads the effects back from
 * the stored plan ({@linkcode effectsOf}), so `recover` re-runs exactly the
 * stored spec ({@linkcode finishMove}) after re-applying its files.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { createSnapshot } from "../../history/create.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * import { runMove } from "./engine.ts";
 * const ws = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${ws}/a.txt`, "v1\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const first = await createSnapshot(store, me, {});
 * await Deno.writeTextFile(`${ws}/a.txt`, "v2\n");
 * await createSnapshot(store, me, {});
 * const tree = first.envelope.body.workspace!.tree;
 * const done = await runMove(store, me, {
 *   kind: "restore", session: "main", branch: "main", sessions: ["main"],
 *   source: null, target: first.id, tree: store.getTree(tree), treeId: tree,
 *   overwrite: "none", setsBaseline: true,
 *   effects: { session: null, currentBranch: null, view: null, recordAs: first.id, git: null },
 *   extra: { session: false, session_mode: "merge", git_commit: null },
 *   save: null,
 * });
 * if (done.operation === null || await Deno.readTextFile(`${ws}/a.txt`) !== "v1\n") {
 *   throw new Error("moved");
 * }
 * store.close();
 * ```
 * @module
 */
import type { JsonValue } from "../../encoding/canonical_json.ts";
import { IntegrityError, NotFoundError, quote } from "../../errors.ts";
import { setBaseline } from "../../repository/baseline.ts";
import type { Operation } from "../../repository/operations.ts";
import { setCurrentBranch } from "../../repository/session_rows.ts";
import type { Store } from "../../repository/store.ts";
import { type TreeEntry, type TreeManifest, validateTree } from "../../format/tree.ts";
import type { CaptureResult } from "../capture.ts";
import type { SnapshotContext } from "../../format/body.ts";
import type { Signer } from "../../format/envelope.ts";
import { gitAnchor, gitSwitch, gitTrackedFiles } from "../../integrations/git/git.ts";
import {
  appendSnapshot,
  createSnapshot,
  snapshotBody,
  workspaceRef,
} from "../../history/create.ts";
import { applyView, captureView, readUndoRecord } from "../../history/oplog.ts";
import { mergeContext, readSessionState, updateSessionState } from "../../history/session_state.ts";
import { checkName, ensureBranch, readEnvelope } from "../../history/timeline.ts";
import { entryMap } from "../../repository/diff.ts";
import { restoredMode } from "../io/mode.ts";
import { umask } from "../../runtime.ts";
import type { MovePlan } from "../plan.ts";
import { MoveConflictError, type Overwrite, refuseConflicts } from "../overwrite.ts";
import {
  applyRecordedMove,
  completeMove,
  type MoveStart,
  planPhase,
  recordPhase,
  recordWalk,
  type StoredMovePlan,
  storedMovePlan,
  treeAfter,
} from "./move.ts";

/** The kinds of operation that move the workspace. */
export type MoveKind = "restore" | "switch" | "undo" | "redo";

/** How a restore treats the live session. */
export type SessionMode = "merge" | "replace";

/** What the live session becomes under `mode`. */
export function restoredContext(
  live: SnapshotContext,
  recorded: SnapshotContext,
  mode: SessionMode,
): SnapshotContext {
  return mode === "replace" ? structuredClone(recorded) : mergeContext(live, recorded);
}

/**
 * What finishing a move changes besides the files. A move with files
 * stores these in its plan (its kind's fields), and `finish` reads them
 * back from there ({@linkcode effectsOf}).
 */
export interface MoveEffects {
  /**
   * The live session's new context: snapshot `from`'s, merged or replaced
   * (`mode`), or a context computed already (`context`: a lean-ctx merge,
   * for a move without files only); null: the session is left.
   */
  session: { from: string; mode: SessionMode } | { context: SnapshotContext } | null;
  /** The session's current branch becomes this; null: left. */
  currentBranch: string | null;
  /** A side of operation `reverts`' undo record is put back (heads, sessions, baseline). */
  view: { reverts: string; side: "before" | "after" } | null;
  /** Record the move in a snapshot whose `metadata.reverted_to` is this id; null: none. */
  recordAs: string | null;
  /** The recording snapshot's reason (default `restore ID12`). */
  reason?: string;
  /** Where git goes back to when the move fails or is aborted (a ref), or null. */
  git: { back: string } | null;
}

/** How the **saved** snapshot (the disk before a forced overwrite) is recorded. */
export interface SaveSpec {
  /** Its reason (`pre-restore`, `pre-switch`, `pre-undo`, `pre-redo`). */
  reason: string;
  /** Session and branch it is recorded on. */
  session: string;
  /** Branch. */
  branch: string;
  /** Recorded without moving the branch head, as part of the move (undo, redo). */
  detached: boolean;
  /** Its `facets.metadata` (which move it was saved for). */
  metadata: Record<string, JsonValue>;
}

/** A move, as data: what {@linkcode runMove} runs. */
export interface MoveSpec {
  /** Operation kind. */
  kind: MoveKind;
  /** The session the operation is recorded on. */
  session: string;
  /** The branch it is recorded on. */
  branch: string;
  /** Sessions it may change (their view goes into the undo record). */
  sessions: string[];
  /** The head before, or null. */
  source: string | null;
  /** The target snapshot (or lean-ctx id), or null. */
  target: string | null;
  /** The operation it reverts (undo, redo). */
  reverts?: string | null;
  /** The operation id (default: a fresh one). */
  id?: string;
  /** The tree to move the workspace to; null: no file moves. */
  tree: TreeManifest | null;
  /** Its stored id, or null to store it in the record phase. */
  treeId: string | null;
  /** The tree to plan from (default: the baseline). */
  base?: TreeManifest | null;
  /** A walk already made of the workspace as it is now (default: the plan phase walks). */
  disk?: TreeManifest;
  /**
   * Git checked a commit out just before the move (`restore --git`): the
   * base is then the record walk for what git tracks now, and `base` for
   * every other path unless git tracked it before (`trackedBefore`); the
   * plan is made from the record walk inside the record transaction.
   */
  checkedOut?: { trackedBefore: ReadonlySet<string> };
  /** The overwrite rule. */
  overwrite: Overwrite;
  /** Whether the baseline becomes `treeId` when done (else the effects set it). */
  setsBaseline: boolean;
  /** What finishing changes. */
  effects: MoveEffects;
  /** The kind's own stored fields that are not effects (FORMAT.md §9). */
  extra: Record<string, JsonValue>;
  /** How to save the disk before the rule overwrites local work, or null. */
  save: SaveSpec | null;
  /** A snapshot already saved before the move (restore --git saves before its checkout). */
  saved?: string | null;
  /** Only plan. */
  dryRun?: boolean;
  /** Progress while writing. */
  onProgress?: (done: number, total: number) => void;
}

/** What {@linkcode runMove} did (or, for a dry run, would do). */
export interface MoveOutcome {
  /** The plan, or null (no files). */
  plan: MovePlan | null;
  /** The operation, or null (dry run). */
  operation: string | null;
  /** The **saved** snapshot, or null. */
  saved: string | null;
  /** The snapshot recording the move, or null. */
  snapshot: string | null;
}

/** A restore refused because of conflicts; carries the plan. */
export class RestoreConflictError extends MoveConflictError {
  /** The plan whose conflicts were refused. */
  readonly plan: MovePlan;

  /** Wraps a policy refusal with the plan. */
  constructor(error: MoveConflictError, plan: MovePlan) {
    super(error.message, error.conflicts, { hint: error.hint ?? "" });
    this.name = "RestoreConflictError";
    this.plan = plan;
  }
}

/** The refuse phase: conflicts per the overwrite rule; a restore's refusal carries its plan. */
function refusePhase(kind: MoveKind, plan: MovePlan): void {
  try {
    refuseConflicts(plan.conflicts, capitalized(kind));
  } catch (error) {
    if (kind === "restore" && error instanceof MoveConflictError) {
      throw new RestoreConflictError(error, plan);
    }
    throw error;
  }
}

/** The effects a stored move plan records for its kind (the stored spec, read back). */
export function effectsOf(op: Operation, plan: StoredMovePlan): MoveEffects {
  const extra = plan.extra;
  const none: MoveEffects = {
    session: null,
    currentBranch: null,
    view: null,
    recordAs: null,
    git: null,
  };
  if (op.kind === "restore") {
    const mode: SessionMode = extra.session_mode === "replace" ? "replace" : "merge";
    return {
      ...none,
      session: extra.session === true ? { from: op.target!, mode } : null,
      recordAs: op.target!,
      git: typeof extra.git_back === "string" ? { back: extra.git_back } : null,
    };
  }
  if (op.kind === "switch") {
    const to = extra.to_branch;
    return { ...none, currentBranch: typeof to === "string" ? checkName(to, "branch") : null };
  }
  const reverts = extra.reverts;
  if (typeof reverts !== "string") {
    throw new IntegrityError(`Operation ${quote(op.id)} reverts no operation`);
  }
  return { ...none, view: { reverts, side: op.kind === "undo" ? "before" : "after" } };
}

/** The stored kind fields for `spec` (see {@linkcode effectsOf}, which reads them back). */
function storedFields(spec: MoveSpec, saved: string | null): Record<string, JsonValue> {
  const e = spec.effects;
  if (spec.kind === "restore") {
    return {
      ...spec.extra,
      session: e.session !== null,
      session_mode: e.session !== null && "mode" in e.session
        ? e.session.mode
        : (spec.extra.session_mode ?? "merge"),
      pre_restore: saved,
      git_back: e.git?.back ?? null,
    };
  }
  if (spec.kind === "switch") return { ...spec.extra, to_branch: e.currentBranch! };
  return { ...spec.extra, reverts: e.view!.reverts };
}

/** Puts git back where the move checked it out from (as a ref, never a path). */
function gitBack(store: Store, effects: MoveEffects): void {
  if (effects.git !== null) gitSwitch(store.workspaceRoot, effects.git.back);
}

/** Stores a computed target tree and keeps it for the later phases (they read it back). */
function keptAsPut(store: Store, tree: TreeManifest): string {
  const id = store.putTree(tree);
  store.keepTree(id, validateTree(tree));
  return id;
}

/**
 * Runs `spec` through plan, refuse, record, apply and finish (see the module
 * doc), reading each tree the phases look at once (`Store.keepingTrees`).
 */
export function runMove(
  store: Store,
  signer: Signer,
  spec: MoveSpec,
): Promise<MoveOutcome> {
  return store.keepingTrees(() => runPhases(store, signer, spec));
}

async function runPhases(
  store: Store,
  signer: Signer,
  spec: MoveSpec,
): Promise<MoveOutcome> {
  const out: MoveOutcome = {
    plan: null,
    operation: null,
    saved: spec.saved ?? null,
    snapshot: null,
  };
  if (spec.tree === null) return await moveWithoutFiles(store, signer, spec, out);
  let op: Operation;
  try {
    // After a git checkout the plan is made inside the record transaction,
    // from the record walk: one walk serves the checked-out baseline, the
    // plan and `pre_tree`.
    const checkedOut = spec.checkedOut !== undefined && !spec.dryRun ? spec.checkedOut : null;
    // plan
    let plan: MovePlan | null = null;
    let disk: TreeManifest | null = null;
    if (checkedOut === null) {
      ({ plan, disk } = planPhase(store, spec.tree, spec.base, spec.overwrite, spec.disk));
      out.plan = plan;
      if (spec.dryRun) return out;
      // refuse
      refusePhase(spec.kind, plan);
    }
    // record (with the saved snapshot of the same walk)
    op = await store.transactionAsync(spec.kind, async () => {
      const pre = store.transaction(spec.kind, () => recordWalk(store, startOf(spec, plan, disk)));
      if (checkedOut !== null) {
        const base = checkedOutBase(store, spec.base ?? null, checkedOut.trackedBefore, pre.tree);
        plan = planPhase(store, spec.tree!, base, spec.overwrite, pre.tree).plan;
        out.plan = plan;
        disk = pre.tree;
        refusePhase(spec.kind, plan);
      }
      if (plan!.forced.length > 0 && spec.save !== null && out.saved === null) {
        out.saved = await save(store, signer, spec, pre);
      }
      const treeId = spec.treeId ?? keptAsPut(store, spec.tree!);
      return recordPhase(store, {
        ...startOf(spec, plan, disk),
        pre,
        targetTree: treeId,
        baseline: spec.setsBaseline ? treeId : null,
        extra: storedFields(spec, out.saved),
      });
    });
  } catch (error) {
    // Refused before anything changed: put git back where it was.
    if (!spec.dryRun) gitBack(store, spec.effects);
    throw error;
  }
  out.operation = op.id;
  // apply
  applyRecordedMove(store, op, spec.tree, out.plan!, spec.onProgress, () => {
    gitBack(store, spec.effects);
  });
  // finish
  out.snapshot = await finishMove(store, signer, op);
  return out;
}

/**
 * The baseline after `--git` checked a commit out of a clean tree: what git
 * tracks now is in its history, so it is taken as it is on disk; every other
 * path keeps its entry in the baseline from before (`before`), unless git
 * tracked it then. So a file git stopped ignoring with the checkout (its
 * `.gitignore` line gone) is untracked, never taken for part of the commit
 * and deleted.
 */
function checkedOutBase(
  store: Store,
  before: TreeManifest | null,
  trackedBefore: ReadonlySet<string>,
  disk: TreeManifest,
): TreeManifest {
  const trackedNow = gitTrackedFiles(store.workspaceRoot);
  const entries = disk.entries.filter((e) => trackedNow.has(e.path));
  for (const entry of before?.entries ?? []) {
    if (!trackedNow.has(entry.path) && !trackedBefore.has(entry.path)) entries.push(entry);
  }
  entries.sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return { version: 1, entries, skipped: disk.skipped };
}

/** What the record phase records for `spec`. */
function startOf(spec: MoveSpec, plan: MovePlan | null, disk: TreeManifest | null): MoveStart {
  return {
    kind: spec.kind,
    session: spec.session,
    branch: spec.branch,
    source: spec.source,
    target: spec.target,
    targetTree: null,
    plan,
    planned: disk,
    baseline: null,
    sessions: spec.sessions,
    extra: {},
    reverts: spec.reverts ?? null,
    ...(spec.id !== undefined ? { id: spec.id } : {}),
  };
}

/** The saved phase: records the record walk `pre` as a snapshot, as `spec.save` says. */
async function save(
  store: Store,
  signer: Signer,
  spec: MoveSpec,
  pre: CaptureResult,
): Promise<string> {
  const s = spec.save!;
  const created = await createSnapshot(store, signer, {
    reason: s.reason,
    session: s.session,
    branch: s.branch,
    metadata: s.metadata,
    captured: pre,
    ...(s.detached ? { detached: true, allowUnchanged: true, operation: spec.id! } : {}),
  });
  return created.id;
}

/**
 * A move without files (a session-only or lean-ctx restore): record (one
 * walk, for the recording snapshot) and finish in one transaction, so
 * nothing is left to recover.
 */
async function moveWithoutFiles(
  store: Store,
  signer: Signer,
  spec: MoveSpec,
  out: MoveOutcome,
): Promise<MoveOutcome> {
  if (spec.dryRun) return out;
  try {
    await store.transactionAsync(spec.kind, async () => {
      const start = startOf(spec, null, null);
      const pre = recordWalk(store, start);
      const viewBefore = captureView(store, spec.sessions);
      const op = recordPhase(store, { ...start, pre, extra: storedFields(spec, out.saved) });
      out.operation = op.id;
      const plan: StoredMovePlan = {
        target_tree: null,
        pre_tree: pre.treeId,
        writes: [],
        deletes: [],
        workspace: false,
        baseline: null,
        sessions: spec.sessions,
        view_before: viewBefore,
        extra: {},
      };
      out.snapshot = await finishWith(store, signer, op, plan, spec.effects);
    });
  } catch (error) {
    gitBack(store, spec.effects);
    throw error;
  }
  return out;
}

/**
 * Finish phase of a recorded move: re-runs the stored spec (its plan read
 * back and validated, its effects from {@linkcode effectsOf}). Returns the
 * recording snapshot's id, or null. `recover` calls it after re-applying.
 */
export async function finishMove(
  store: Store,
  signer: Signer,
  op: Operation,
): Promise<string | null> {
  const plan = storedMovePlan(store, op); // validated: stored data is untrusted
  return await finishWith(store, signer, op, plan, effectsOf(op, plan));
}

/**
 * In one transaction: the effects, the snapshot recording the move, the
 * baseline, the undo record and `done`.
 */
async function finishWith(
  store: Store,
  signer: Signer,
  op: Operation,
  plan: StoredMovePlan,
  effects: MoveEffects,
): Promise<string | null> {
  const session = effects.session;
  const from = session !== null && "from" in session
    ? await readEnvelope(store, session.from) // id and signature checked
    : null;
  const record = effects.view === null ? null : readUndoRecord(store, effects.view.reverts);
  if (effects.view !== null && record === null) {
    throw new NotFoundError(
      `Operation ${quote(op.id)} reverts ${quote(effects.view.reverts)}, which has no undo record`,
    );
  }
  const git = effects.recordAs === null ? null : gitAnchor(store.workspaceRoot, store.dir);
  return await store.transactionAsync(op.kind, async () => {
    if (session !== null) {
      updateSessionState(
        store,
        op.session!,
        (live) =>
          "context" in session
            ? session.context
            : restoredContext(live, from!.body.context, session.mode),
        op.id,
      );
    }
    if (effects.currentBranch !== null) setCurrentBranch(store, op.session!, effects.currentBranch);
    if (record !== null) applyView(store, record, effects.view!.side);
    let snapshot: string | null = null;
    if (effects.recordAs !== null) {
      const branch = ensureBranch(store, op.session!, op.branch!);
      const tree = recordedTree(store, plan);
      const body = snapshotBody({
        session: op.session!,
        branch: op.branch!,
        parent: branch.head,
        reason: effects.reason ?? `restore ${effects.recordAs.slice(0, 12)}`,
        source: null,
        git,
        workspace: workspaceRef(store.putTree(tree), tree),
        live: readSessionState(store, op.session!),
        metadata: { reverted_to: effects.recordAs, operation: op.id },
      });
      snapshot = (await appendSnapshot(store, signer, body)).id;
    }
    completeMove(store, op, plan);
    if (record !== null && record.baseline !== null) {
      setBaseline(store, record.baseline[effects.view!.side], op.id);
    }
    return snapshot;
  });
}

/**
 * The workspace the recording snapshot holds: the record walk with the
 * plan applied (no walk). A written file has the mode the write gave it
 * under this process's umask, as a capture would read it back.
 */
function recordedTree(store: Store, plan: StoredMovePlan): TreeManifest {
  const pre = store.getTree(plan.pre_tree);
  if (!plan.workspace) return pre;
  const after = store.getTree(treeAfter(store, plan));
  const written = new Set(plan.writes);
  const mask = umask();
  const entries: TreeEntry[] = after.entries.map((e) =>
    e.type === "file" && written.has(e.path) ? { ...e, mode: restoredMode(e.mode, mask) } : e
  );
  const kept = entryMap(after);
  const touched = [...plan.writes, ...plan.deletes];
  const skipped = pre.skipped.filter((s) =>
    !kept.has(s.path) && !touched.some((t) => s.path === t || s.path.startsWith(`${t}/`))
  );
  return { version: 1, entries, skipped };
}

function capitalized(text: string): string {
  return text.slice(0, 1).toUpperCase() + text.slice(1);
}
