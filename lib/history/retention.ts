/**
 * Retention: which agent checkpoints a store keeps (docs/CLI.md,
 * "Retention"; the policy file is docs/FORMAT.md 8.5).
 *
 * The policy thins **agent checkpoints**: the local snapshots an agent
 * event created (every agent-hook checkpoint, recorded in `agent_events`),
 * and those recorded with an idempotency source (MCP `checkpoint` and
 * `create --source` when given one). A snapshot is kept when any rule keeps
 * it:
 *
 * - it is not an agent checkpoint (a snapshot someone made and named with
 *   `ctxsnap create`, a pre-restore snapshot, anything imported or pulled);
 * - it is among the newest `keep-last` agent checkpoints of a branch's chain;
 * - it is younger than `keep-within`;
 * - it holds the workspace before one of the newest `keep-last` prompts of an
 *   agent session (what `prompt:N` and a resume from prompt N restore);
 * - it is the head or the fork base of any branch (tracking and imported
 *   branches included);
 * - it is the head this store last pushed to, or accepted from, a remote
 *   ref (`remote-ref:` settings);
 * - the redo stack, or one of the newest `keep-last` − 1 entries of the undo
 *   stack, needs it (deeper undo entries are cut, as any forget cuts them);
 * - it is the target of an unresolved restore.
 *
 * Everything else on a branch's chain is dropped, through `forgetSnapshots`
 * (one recorded `forget` operation). The automatic pass after a checkpoint
 * waits until the policy drops at least {@linkcode RETENTION_SLACK}, then
 * drops at most {@linkcode RETENTION_BATCH} snapshots, oldest first, and
 * runs gc once {@linkcode RETENTION_GC_EVERY} snapshots have been dropped
 * since its last gc, so its work per checkpoint is bounded.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { planRetention } from "./retention.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * for (let i = 0; i < 4; i++) {
 *   await createSnapshot(store, me, {
 *     reason: `turn ${i}`, workspace: false, allowUnchanged: true, source: { kind: "demo", id: `${i}` },
 *   });
 * }
 * const plan = planRetention(store, { keepLast: 2, keepWithinMs: 0, auto: true });
 * if (plan.drop.length !== 2) throw new Error("the two oldest checkpoints go");
 * store.close();
 * ```
 * @module
 */
import { parseJson } from "../encoding/canonical_json.ts";
import { CtxsnapError } from "../errors.ts";
import { agentCreatedSnapshots, recentPromptSnapshots } from "../repository/agent_rows.ts";
import { applyingTargets } from "../repository/operations.ts";
import type { RetentionPolicy } from "../repository/retention_file.ts";
import { retentionRows } from "../repository/snapshot_rows.ts";
import type { Store } from "../repository/store.ts";
import { snapshotsNeeded, undoStack } from "../repository/undo_log.ts";
import { collectGarbage, type GcResult } from "../repository/gc.ts";
import { type ForgetResult, forgetSnapshots } from "./forget.ts";
import { branchChain, listBranches } from "./timeline.ts";

export {
  DEFAULT_RETENTION,
  readRetention,
  type RetentionPolicy,
} from "../repository/retention_file.ts";

/** Most snapshots the automatic pass drops after one checkpoint. */
export const RETENTION_BATCH = 50;
/** The automatic pass forgets nothing until the policy drops at least this many (fewer, larger forgets). */
export const RETENTION_SLACK = 10;
/** The automatic pass runs gc once this many snapshots were dropped since its last gc. */
export const RETENTION_GC_EVERY = 100;
const PENDING_KEY = "retention_dropped_since_gc";

/** Why a snapshot on a chain is kept. */
export type KeepReason =
  | "named"
  | "keep-last"
  | "keep-within"
  | "prompt"
  | "head"
  | "pushed"
  | "undo"
  | "unresolved";

/** What the policy keeps and drops. */
export interface RetentionPlan {
  /** Snapshots to drop, oldest (first recorded) first. */
  drop: string[];
  /** How many snapshots on branch chains are kept, by their first reason. */
  kept: Record<KeepReason, number>;
}

/** Works out what `policy` keeps and drops now (`now`: ms since the epoch). */
export function planRetention(
  store: Store,
  policy: RetentionPolicy,
  now: number = Date.now(),
): RetentionPlan {
  const rows = retentionRows(store);
  const keep = new Map<string, KeepReason>();
  const mark = (id: string | null | undefined, why: KeepReason) => {
    if (typeof id === "string" && !keep.has(id)) keep.set(id, why);
  };
  const branches = listBranches(store);
  for (const branch of branches) {
    mark(branch.head, "head");
    mark(branch.base, "head");
  }
  for (const { value } of store.metaWithPrefix("remote-ref:")) {
    try {
      const state = parseJson(value) as { head?: unknown };
      if (typeof state.head === "string") mark(state.head, "pushed");
    } catch {
      // An unreadable record keeps nothing; push and pull refuse it on their own.
    }
  }
  const stack = undoStack(store);
  for (const entry of stack.redo) for (const id of snapshotsNeeded(entry.record)) mark(id, "undo");
  // Undo within the kept history: the newest keep-last − 1 entries (each needs
  // the heads before and after it, so keep-last snapshots of one branch).
  const recent = policy.keepLast <= 1 ? [] : stack.done.slice(-(policy.keepLast - 1));
  for (const entry of recent) for (const id of snapshotsNeeded(entry.record)) mark(id, "undo");
  for (const id of applyingTargets(store)) mark(id, "unresolved");
  for (const id of recentPromptSnapshots(store, policy.keepLast)) mark(id, "prompt");
  // Agent checkpoints: made by an agent event (the hook records no source), or given a source.
  const agentMade = agentCreatedSnapshots(store);
  const chains = new Set<string>();
  for (const branch of branches) {
    let checkpoints = 0;
    for (const id of branchChain(store, branch.session, branch.name)) {
      chains.add(id);
      const row = rows.get(id);
      if (row === undefined) continue;
      if ((row.source_kind === null && !agentMade.has(id)) || row.imported !== 0) {
        mark(id, "named");
        continue;
      }
      if (checkpoints < policy.keepLast) mark(id, "keep-last");
      checkpoints++;
      const at = Date.parse(row.created_at);
      if (policy.keepWithinMs > 0 && !(now - at > policy.keepWithinMs)) mark(id, "keep-within");
    }
  }
  const kept: Record<KeepReason, number> = {
    named: 0,
    "keep-last": 0,
    "keep-within": 0,
    prompt: 0,
    head: 0,
    pushed: 0,
    undo: 0,
    unresolved: 0,
  };
  const drop: { id: string; seq: number }[] = [];
  for (const id of chains) {
    const why = keep.get(id);
    if (why !== undefined) kept[why]++;
    else drop.push({ id, seq: rows.get(id)?.seq ?? 0 });
  }
  // Oldest first: in the order the store recorded them.
  drop.sort((a, b) => a.seq - b.seq);
  return { drop: drop.map((d) => d.id), kept };
}

/** What {@linkcode applyRetention} did. */
export interface RetentionResult {
  /** The forget it recorded, or null when nothing was dropped. */
  forget: ForgetResult | null;
  /** Snapshots the policy would still drop after this run (the batch limit). */
  remaining: number;
  /** The gc it ran, or null. */
  gc: GcResult | null;
}

/**
 * Applies `policy`: drops up to `limit` snapshots (oldest first) in one
 * forget, and with `gcEvery` runs gc once that many were dropped since the
 * last gc this pass ran.
 */
export function applyRetention(
  store: Store,
  policy: RetentionPolicy,
  options: { limit?: number; gcEvery?: number; slack?: number; now?: number } = {},
): RetentionResult {
  const plan = planRetention(store, policy, options.now);
  const limit = plan.drop.length < (options.slack ?? 1) ? 0 : options.limit ?? plan.drop.length;
  const ids = plan.drop.slice(0, limit);
  const forget = ids.length === 0 ? null : forgetSnapshots(store, ids);
  let gc: GcResult | null = null;
  if (options.gcEvery !== undefined) {
    const pending = Number(store.getMeta(PENDING_KEY) ?? "0") + (forget?.forgotten.length ?? 0);
    if (pending >= options.gcEvery) {
      gc = collectGarbage(store);
      store.transaction("retention", () => store.setMeta(PENDING_KEY, "0"));
    } else if (forget !== null) {
      store.transaction("retention", () => store.setMeta(PENDING_KEY, String(pending)));
    }
  }
  return { forget, remaining: plan.drop.length - ids.length, gc };
}

/** What the automatic pass did: its result, or why it was skipped. */
export type AutoRetention = RetentionResult | { skipped: string };

/**
 * The automatic pass after a checkpoint: applies the store's policy when its
 * `auto` is on, within {@linkcode RETENTION_BATCH} and
 * {@linkcode RETENTION_GC_EVERY}; null when `auto` is off. Any refusal (a
 * session with an unresolved move, a busy store, a tree gc cannot read) skips
 * the pass, reported as `skipped`: the checkpoint is already recorded and
 * never fails because of it, and the next checkpoint tries again.
 */
export function retainAfterCheckpoint(store: Store, policy: RetentionPolicy): AutoRetention | null {
  if (!policy.auto) return null;
  try {
    return applyRetention(store, policy, {
      limit: RETENTION_BATCH,
      gcEvery: RETENTION_GC_EVERY,
      slack: RETENTION_SLACK,
    });
  } catch (error) {
    if (error instanceof CtxsnapError) return { skipped: error.message };
    throw error;
  }
}
