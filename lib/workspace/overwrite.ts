/**
 * The conflict policy: the one place that decides, path by path, what a
 * three-way move of the workspace does, what counts as a conflict, what
 * `--force` may override and what is preserved. Restore, switch, undo, redo
 * and recover all consult it (restic keeps one overwrite policy the same way).
 *
 * A move compares three states of each path: **base** (the workspace
 * baseline, the tree ctxsnap last recorded or wrote), **disk** (what the
 * workspace holds now) and **target**. The rules are those of `git checkout`
 * and jj, applied to every file and symlink path ({@linkcode decide}):
 *
 * | disk vs target | target vs base | disk vs base | outcome                                         |
 * | -------------- | -------------- | ------------ | ----------------------------------------------- |
 * | equal          | –              | –            | `unchanged`: nothing to do                      |
 * | differ         | equal          | –            | `preserve`: the disk's version (or deletion) stays |
 * | differ         | differ         | equal        | `take`: write or delete to match the target     |
 * | differ         | differ         | differ       | `conflict`                                      |
 *
 * (`--force` turns some `preserve` and `conflict` outcomes into `take`: see
 * {@linkcode Overwrite}.)
 *
 * "Equal" compares content, kind (file or symlink), link target and mode; a
 * file on disk matches a recorded mode when its bits are the recorded ones or
 * what restoring them leaves (`entriesMatch` in `lib/repository/diff.ts`). Absent equals
 * absent. So a path deleted on disk that the target leaves unchanged stays
 * deleted, and one deleted on disk that the target changed is a conflict.
 * A directory is the set of paths below it: changing a file into a directory
 * is a delete plus writes, planned like any other.
 *
 * Conflicts ({@linkcode ConflictReason}) come in two kinds. **Content**
 * conflicts (both sides changed the path) may be overridden by `--force`
 * ({@linkcode Overwrite}), after the caller records the disk in a snapshot so
 * nothing is lost. **Structural** conflicts (something the capture cannot
 * record is in the way: an ignored or special file, a non-directory parent,
 * a non-empty directory) are refused even with `--force`, because
 * overwriting them would destroy what no snapshot holds. Untracked paths
 * (in neither the baseline nor the target) are always preserved.
 *
 * @example
 * ```ts
 * import { decide } from "./overwrite.ts";
 * const file = (blob: string) => ({ path: "a", type: "file" as const, blob: blob.repeat(64), size: 1, mode: 0o644 });
 * // An edit to a file the target does not change is kept.
 * if (decide(file("1"), file("2"), file("1")).kind !== "preserve") throw new Error("kept");
 * // A file nobody touched takes the target.
 * if (decide(file("1"), file("1"), file("3")).kind !== "take") throw new Error("take");
 * // Deleted on disk and changed in the target: a conflict.
 * const d = decide(file("1"), undefined, file("3"));
 * if (d.kind !== "conflict" || d.reason !== "deleted_on_disk_target_changed") throw new Error("conflict");
 * ```
 * @module
 */
import { ConflictError, type CtxsnapErrorOptions } from "../errors.ts";
import type { TreeEntry } from "../format/tree.ts";
import { entriesMatch, sameEntry } from "../repository/diff.ts";
import { type DiskState, matchesEntry } from "./on_disk.ts";

/** Why a path cannot be moved without losing someone's change. */
export type ConflictReason =
  /** Disk and target both changed the path since the baseline, differently. */
  | "changed_since_baseline"
  /** The target removes the path; the disk changed it. */
  | "deleted_target_changed"
  /** The disk removed the path; the target changed it. */
  | "deleted_on_disk_target_changed"
  /** Something the capture does not record (ignored, secret, special, empty directory) is where the target writes. */
  | "untracked_in_the_way"
  /** A parent of the path is, on disk, a symlink or a non-directory that stays. */
  | "parent_in_the_way"
  /** A directory that stays non-empty is where the target writes a file or symlink. */
  | "directory_in_the_way";

/** Content conflicts: `--force` may overwrite them after recording the disk in a snapshot. */
export const CONTENT_CONFLICTS: readonly ConflictReason[] = [
  "changed_since_baseline",
  "deleted_target_changed",
  "deleted_on_disk_target_changed",
];

/** Whether `--force` may override a conflict of this reason. */
export function forceable(reason: ConflictReason): boolean {
  return CONTENT_CONFLICTS.includes(reason);
}

/**
 * What a move may overwrite besides what the rules take:
 * - `none`: nothing (conflicts are refused, local changes kept);
 * - `conflicts`: content conflicts (`undo --force`, `redo --force`);
 * - `local`: content conflicts and every local change to a path the
 *   baseline tracks, so the tracked paths end exactly as the target
 *   (`restore --force`, `switch --force`). Untracked paths are never
 *   overwritten or deleted, and structural conflicts are never overridden.
 *
 * Whatever is overwritten is first recorded in a snapshot by the caller.
 */
export type Overwrite = "none" | "conflicts" | "local";

/** What a move does with one path. */
export type Decision =
  | { kind: "unchanged" }
  | { kind: "preserve" }
  | { kind: "take"; forced: boolean }
  | { kind: "conflict"; reason: ConflictReason };

/**
 * Decides what a move does with one path, given its base, disk and target
 * entries (the table in the module doc), and what it may overwrite.
 */
export function decide(
  base: TreeEntry | undefined,
  disk: TreeEntry | undefined,
  target: TreeEntry | undefined,
  overwrite: Overwrite = "none",
): Decision {
  if (entriesMatch(disk, target)) return { kind: "unchanged" };
  if (sameEntry(target, base)) {
    return overwrite === "local" && base !== undefined
      ? { kind: "take", forced: true }
      : { kind: "preserve" };
  }
  if (entriesMatch(disk, base)) return { kind: "take", forced: false };
  if (overwrite !== "none") return { kind: "take", forced: true };
  if (target === undefined) return { kind: "conflict", reason: "deleted_target_changed" };
  if (disk === undefined) return { kind: "conflict", reason: "deleted_on_disk_target_changed" };
  return { kind: "conflict", reason: "changed_since_baseline" };
}

/** One conflict of a plan. */
export interface Conflict {
  /** Path. */
  path: string;
  /** Why. */
  reason: ConflictReason;
}

/** A move refused because of conflicts; carries the plan's conflicts. */
export class MoveConflictError extends ConflictError {
  /** The conflicts that were refused. */
  readonly conflicts: Conflict[];

  /** Creates the error. */
  constructor(message: string, conflicts: Conflict[], options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "MoveConflictError";
    this.conflicts = conflicts;
  }
}

/**
 * Refuses a plan that has conflicts (what `--force` may override is already
 * planned as forced writes, so what is left is refused). `what` names the
 * move in the message ("Restore", "Switch", "Undo", …).
 */
export function refuseConflicts(conflicts: Conflict[], what: string): void {
  if (conflicts.length === 0) return;
  const shown = conflicts.slice(0, 20).map((c) => c.path);
  const structural = conflicts.every((c) => !forceable(c.reason));
  throw new MoveConflictError(
    `${what} refused: ${conflicts.length} path(s) in conflict with the workspace: ${
      shown.join(", ")
    }${conflicts.length > shown.length ? ", …" : ""}`,
    conflicts,
    {
      hint: structural
        ? "something no snapshot records is in the way; move it aside and retry"
        : "see them with --dry-run; --force first snapshots the current content, then overwrites",
    },
  );
}

/** One side of an interrupted move at a path: its tree's entry, and whether that tree has entries below the path. */
export interface RecordedSide {
  /** The tree's entry at the path, or undefined. */
  entry: TreeEntry | undefined;
  /** Whether the tree implies a directory at the path. */
  impliedDir: boolean;
}

/**
 * For `recover`: whether a managed path was changed by someone else since
 * the interrupted move, i.e. what is on disk (`disk`, looked at directly,
 * never through the capture's ignore and secret rules) is neither the
 * content from before the move nor the target's.
 */
export function changedSinceInterruption(
  disk: DiskState,
  before: RecordedSide,
  target: RecordedSide,
): boolean {
  return !matchesEntry(disk, before.entry, before.impliedDir) &&
    !matchesEntry(disk, target.entry, target.impliedDir);
}
