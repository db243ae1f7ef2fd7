/**
 * Three-way restore planning (docs/DESIGN.md §5): the target tree, the baseline (the
 * tree the branch head recorded) and the workspace as it is now.
 *
 * - **writes**: paths whose current content differs from the target and that
 *   nobody changed since the baseline (create or replace);
 * - **deletes**: paths the baseline had, the target omits, and nobody changed;
 * - **conflicts**: paths changed outside ctxsnap since the baseline (or, with
 *   no baseline, present and different) whose target differs; and paths
 *   where something untracked is in the way;
 * - **unchanged**: already equal to the target;
 * - **preserved**: untracked paths the restore leaves alone.
 *
 * @example
 * ```ts
 * import { planRestore } from "./plan.ts";
 * const file = (path: string, blob: string) => ({ path, type: "file" as const, blob: blob.repeat(64), size: 1, mode: 0o644 });
 * const tree = (...entries: ReturnType<typeof file>[]) => ({ version: 1 as const, entries, skipped: [] });
 * const plan = planRestore({ target: tree(file("a", "1")), baseline: tree(file("a", "2")), current: tree(file("a", "3"), file("new", "4")) });
 * if (!(plan.conflicts[0]?.path === "a" && plan.preserved[0] === "new")) throw new Error("Example failed");
 * ```
 * @module
 */
import type { TreeEntry, TreeManifest } from "../store/tree.ts";
import { entryMap, sameEntry } from "../snapshot/diff.ts";

/** One planned write. */
export interface PlannedWrite {
  /** Path. */
  path: string;
  /** `create` when nothing is there now, else `replace`. */
  action: "create" | "replace";
  /** The target entry to write. */
  entry: TreeEntry;
}

/** One conflict. */
export interface PlannedConflict {
  /** Path. */
  path: string;
  /** Why it cannot be applied safely. */
  reason:
    | "changed_since_baseline"
    | "deleted_target_changed"
    | "untracked_in_the_way"
    | "parent_in_the_way"
    | "directory_in_the_way";
}

/** A restore plan. */
export interface RestorePlan {
  /** Files and symlinks to write. */
  writes: PlannedWrite[];
  /** Paths to delete. */
  deletes: string[];
  /** Paths that cannot be applied without losing someone's change. */
  conflicts: PlannedConflict[];
  /** Paths already equal to the target. */
  unchanged: string[];
  /** Untracked paths left alone. */
  preserved: string[];
}

/** Inputs of {@linkcode planRestore}. */
export interface PlanInput {
  /** What to restore. */
  target: TreeManifest;
  /** What the branch head recorded, or null when unknown (then every difference is a conflict). */
  baseline: TreeManifest | null;
  /** The workspace now (as captured without storing). */
  current: TreeManifest;
  /**
   * Paths that exist on disk but are not in `current` (skipped: ignored,
   * secrets, special files). A write onto one of them is a conflict.
   */
  occupied?: (path: string) => boolean;
  /**
   * The parent component of a path that is on disk but not a directory (say
   * an ignored symlink), or null. A write below it is a conflict unless the
   * plan deletes that component first.
   */
  blockedParent?: (path: string) => string | null;
}

/** Computes a three-way restore plan. Pure: reads and writes nothing. */
export function planRestore(input: PlanInput): RestorePlan {
  const target = entryMap(input.target);
  const baseline = input.baseline === null ? null : entryMap(input.baseline);
  const current = entryMap(input.current);
  const plan: RestorePlan = {
    writes: [],
    deletes: [],
    conflicts: [],
    unchanged: [],
    preserved: [],
  };
  const paths = new Set<string>([...target.keys(), ...(baseline?.keys() ?? [])]);
  for (const path of [...paths].sort()) {
    const desired = target.get(path);
    const before = baseline?.get(path);
    const actual = current.get(path);
    const changedOutside = baseline === null ? actual !== undefined : !sameEntry(actual, before);
    if (desired === undefined) {
      if (actual === undefined) continue;
      if (changedOutside) plan.conflicts.push({ path, reason: "deleted_target_changed" });
      else plan.deletes.push(path);
      continue;
    }
    if (sameEntry(actual, desired)) {
      plan.unchanged.push(path);
      continue;
    }
    if (actual !== undefined && changedOutside) {
      plan.conflicts.push({ path, reason: "changed_since_baseline" });
      continue;
    }
    if (actual === undefined && input.occupied?.(path)) {
      plan.conflicts.push({ path, reason: "untracked_in_the_way" });
      continue;
    }
    plan.writes.push({ path, action: actual === undefined ? "create" : "replace", entry: desired });
  }
  for (const path of current.keys()) if (!paths.has(path)) plan.preserved.push(path);
  plan.preserved.sort();

  // Structural collisions: a file where the target needs a directory, or the reverse.
  const deleted = new Set(plan.deletes);
  const remaining = new Set<string>();
  const remainingDirs = new Set<string>();
  for (const path of current.keys()) {
    if (deleted.has(path)) continue;
    remaining.add(path);
    for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
      remainingDirs.add(path.slice(0, i));
    }
  }
  const writes: PlannedWrite[] = [];
  for (const write of plan.writes) {
    let blocked: PlannedConflict["reason"] | null = null;
    for (let i = write.path.indexOf("/"); i !== -1; i = write.path.indexOf("/", i + 1)) {
      if (remaining.has(write.path.slice(0, i))) {
        blocked = "parent_in_the_way";
        break;
      }
    }
    if (blocked === null && remainingDirs.has(write.path)) blocked = "directory_in_the_way";
    if (blocked === null && input.blockedParent) {
      const parent = input.blockedParent(write.path);
      if (parent !== null && !deleted.has(parent)) blocked = "parent_in_the_way";
    }
    if (blocked === null) writes.push(write);
    else plan.conflicts.push({ path: write.path, reason: blocked });
  }
  plan.writes = writes;
  plan.conflicts.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return plan;
}
