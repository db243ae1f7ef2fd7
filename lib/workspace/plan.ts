/**
 * Three-way planning of a workspace move (docs/DESIGN.md §5): base (the workspace
 * baseline), disk (the workspace now, captured without storing) and target.
 * Each path is decided by the conflict policy (`policy.ts`); this module
 * turns the decisions into lists and adds the structural checks a move of
 * files needs (a parent that stays a file, a directory that stays non-empty,
 * something the capture does not record in the way).
 *
 * - **writes**: paths to create or replace with the target's entry;
 * - **deletes**: paths to remove (deleted first, so a file can give way to a
 *   directory and the reverse);
 * - **conflicts**: paths that cannot be moved without losing someone's
 *   change, with the policy's reason;
 * - **unchanged**: paths already equal to the target;
 * - **preserved**: paths whose local state the move leaves alone although it
 *   differs from the baseline: an untracked file, a local edit or a local
 *   deletion the target does not touch (a deleted one is listed but absent);
 * - **forced**: the writes and deletes that overwrite a local change or a
 *   conflict because of `overwrite` (`--force`).
 *
 * @example
 * ```ts
 * import { planMove } from "./plan.ts";
 * const file = (path: string, blob: string) => ({ path, type: "file" as const, blob: blob.repeat(64), size: 1, mode: 0o644 });
 * const tree = (...entries: ReturnType<typeof file>[]) => ({ version: 1 as const, entries, skipped: [] });
 * const plan = planMove({
 *   base: tree(file("a", "1"), file("b", "1")),
 *   disk: tree(file("a", "1"), file("b", "2"), file("new", "4")),
 *   target: tree(file("a", "3"), file("b", "1")),
 * });
 * if (plan.writes[0]?.path !== "a") throw new Error("a takes the target");
 * if (plan.preserved.join() !== "b,new") throw new Error("the edit and the untracked file stay");
 * if (plan.conflicts.length !== 0) throw new Error("no conflict");
 * ```
 * @module
 */
import type { TreeEntry, TreeManifest } from "../format/tree.ts";
import { entryMap } from "../repository/diff.ts";
import { type Conflict, decide, type Overwrite } from "./overwrite.ts";

export type { Conflict } from "./overwrite.ts";

/** One planned write. */
export interface PlannedWrite {
  /** Path. */
  path: string;
  /** `create` when nothing is there now, else `replace`. */
  action: "create" | "replace";
  /** The target entry to write. */
  entry: TreeEntry;
}

/** A move plan. */
export interface MovePlan {
  /** Files and symlinks to write. */
  writes: PlannedWrite[];
  /** Paths to delete. */
  deletes: string[];
  /** Paths that cannot be moved without losing someone's change. */
  conflicts: Conflict[];
  /** Paths already equal to the target. */
  unchanged: string[];
  /** Paths whose local state (untracked, edited, deleted) the move leaves alone. */
  preserved: string[];
  /**
   * Paths among the writes and deletes where `--force` overwrites a local
   * change or a conflict (the caller records the disk in a snapshot first).
   */
  forced: string[];
}

/** What is on disk at a path, as far as the plan needs to know. */
export type DiskKind = "none" | "directory" | "other";

/** Facts about the disk that a capture does not record. */
export interface DiskProbe {
  /** What is at `path` on disk (`lstat`, never following). */
  kindAt(path: string): DiskKind;
  /** The first parent component of `path` that is on disk but not a directory, or null. */
  blockedParent(path: string): string | null;
}

/** Inputs of {@linkcode planMove}. */
export interface PlanInput {
  /** The workspace baseline, or null when unknown (then every path on disk is untracked). */
  base: TreeManifest | null;
  /** The workspace now, captured without storing (its `skipped` records count as in the way). */
  disk: TreeManifest;
  /** What to move to. */
  target: TreeManifest;
  /** Disk facts the capture does not record; without it only recorded paths are checked. */
  probe?: DiskProbe;
  /** What the move may overwrite (`--force`; default `none`). */
  overwrite?: Overwrite;
}

function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

function* parents(path: string): Generator<string> {
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) yield path.slice(0, i);
}

/** Computes a three-way move plan. Pure apart from the probe: writes nothing. */
export function planMove(input: PlanInput): MovePlan {
  const base = input.base === null ? new Map<string, TreeEntry>() : entryMap(input.base);
  const disk = entryMap(input.disk);
  const target = entryMap(input.target);
  const plan: MovePlan = {
    writes: [],
    deletes: [],
    conflicts: [],
    unchanged: [],
    preserved: [],
    forced: [],
  };
  // A content conflict that a write would resolve is also checked for
  // structure: if the write could not happen, the conflict is structural.
  const contested: PlannedWrite[] = [];
  const paths = new Set<string>([...base.keys(), ...disk.keys(), ...target.keys()]);
  for (const path of [...paths].sort()) {
    const b = base.get(path);
    const o = disk.get(path);
    const t = target.get(path);
    const decision = decide(b, o, t, input.overwrite ?? "none");
    switch (decision.kind) {
      case "unchanged":
        if (o !== undefined) plan.unchanged.push(path);
        break;
      case "preserve":
        plan.preserved.push(path);
        break;
      case "take":
        if (decision.forced) plan.forced.push(path);
        if (t === undefined) plan.deletes.push(path);
        else plan.writes.push({ path, action: o === undefined ? "create" : "replace", entry: t });
        break;
      case "conflict":
        plan.conflicts.push({ path, reason: decision.reason });
        if (t !== undefined) {
          contested.push({ path, action: o === undefined ? "create" : "replace", entry: t });
        }
    }
  }

  // Structural checks: what stays on disk after the deletes must not be in
  // the way of a write.
  const deleted = new Set(plan.deletes);
  const stays = new Set<string>();
  const staysBelow = new Set<string>(); // directories that keep something
  const keep = (path: string) => {
    stays.add(path);
    for (const dir of parents(path)) staysBelow.add(dir);
  };
  for (const path of disk.keys()) if (!deleted.has(path)) keep(path);
  const emptied = new Set<string>(); // directories holding deleted paths
  for (const path of deleted) for (const dir of parents(path)) emptied.add(dir);
  for (const record of input.disk.skipped) keep(record.path);
  const structural = (write: PlannedWrite): Conflict["reason"] | null => {
    let reason: Conflict["reason"] | null = null;
    for (const dir of parents(write.path)) {
      if (stays.has(dir)) {
        reason = "parent_in_the_way";
        break;
      }
    }
    if (reason === null && input.probe !== undefined) {
      const blocked = input.probe.blockedParent(write.path);
      if (blocked !== null && !deleted.has(blocked)) reason = "parent_in_the_way";
    }
    if (reason === null && staysBelow.has(write.path)) reason = "directory_in_the_way";
    if (reason === null && write.action === "create" && input.probe !== undefined) {
      // Not recorded, yet something is there: an ignored or special file (in
      // the way); or a directory, which is fine only when the deletes empty
      // it (a delete removes the directories it leaves empty) — a directory
      // with nothing recorded in it holds what no snapshot has.
      const kind = input.probe.kindAt(write.path);
      if (kind === "other" || (kind === "directory" && stays.has(write.path))) {
        reason = "untracked_in_the_way";
      } else if (kind === "directory" && !emptied.has(write.path)) {
        reason = "directory_in_the_way";
      }
    }
    return reason;
  };
  const writes: PlannedWrite[] = [];
  for (const write of plan.writes) {
    const reason = structural(write);
    if (reason === null) writes.push(write);
    else plan.conflicts.push({ path: write.path, reason });
  }
  plan.writes = writes;
  for (const write of contested) {
    const reason = structural(write);
    const conflict = plan.conflicts.find((c) => c.path === write.path);
    if (reason !== null && conflict !== undefined) conflict.reason = reason;
  }
  const refused = new Set(plan.conflicts.map((c) => c.path));
  plan.forced = plan.forced.filter((path) => !refused.has(path));
  plan.conflicts.sort(byPath);
  return plan;
}
