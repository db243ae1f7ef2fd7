/**
 * A move plan for people, as `restore`, `switch`,
 * `undo`, `redo` and `recover` print it, and the conflicts of a refused move.
 *
 * @example
 * ```ts
 * import { planLines } from "./_plan.ts";
 * const plan = { writes: [], deletes: ["old.txt"], conflicts: [], unchanged: [], preserved: [], forced: [] };
 * const lines = planLines(plan);
 * if (lines[0] !== "delete   old.txt") {
 *   throw new Error("plan");
 * }
 * ```
 * @module
 */
import type { MovePlan } from "../workspace/plan.ts";
import type { SkippedEntry } from "../format/tree.ts";
import { type ConflictReason, MoveConflictError } from "../workspace/overwrite.ts";
import { esc, type Output } from "./output.ts";

/** The human lines of a move plan. */
export function planLines(plan: MovePlan): string[] {
  const lines: string[] = [];
  const forced = new Set(plan.forced);
  const mark = (path: string) => forced.has(path) ? "  (overwrites a local change: --force)" : "";
  for (const w of plan.writes) {
    lines.push(`${w.action === "create" ? "create " : "replace"}  ${esc(w.path)}${mark(w.path)}`);
  }
  for (const d of plan.deletes) lines.push(`delete   ${esc(d)}${mark(d)}`);
  for (const c of plan.conflicts) {
    lines.push(`CONFLICT ${esc(c.path)}  (${reasonText(c.reason)})`);
  }
  lines.push(
    `${plan.writes.length} to write, ${plan.deletes.length} to delete, ${plan.conflicts.length} conflicts, ` +
      `${plan.unchanged.length} unchanged, ${plan.preserved.length} local changes kept`,
  );
  return lines;
}

/** What a conflict reason means, for people (`--json` keeps the code). */
const REASON_TEXT: Readonly<Record<ConflictReason, string>> = {
  changed_since_baseline: "changed on disk and in the target",
  deleted_target_changed: "changed on disk, deleted in the target",
  deleted_on_disk_target_changed: "deleted on disk, changed in the target",
  untracked_in_the_way: "something no snapshot records in the way",
  parent_in_the_way: "parent in the way: a symlink or file on disk",
  directory_in_the_way: "directory in the way, not empty",
};

function reasonText(reason: ConflictReason): string {
  return REASON_TEXT[reason] ?? esc(reason);
}

/** Notes the conflicts of a refused move on stderr (text mode); rethrows. */
export function showConflicts(out: Output, error: unknown): never {
  if (error instanceof MoveConflictError && !out.json) {
    for (const c of error.conflicts.slice(0, 50)) {
      out.note(`CONFLICT ${esc(c.path)}  (${reasonText(c.reason)})`);
    }
  }
  throw error;
}

/** Most paths named in the text output (`--json` lists all). */
const MAX_NOT_CAPTURED_SHOWN = 20;

/** The lines naming what existed at a target but was never captured. */
export function notCapturedLines(skipped: readonly SkippedEntry[]): string[] {
  if (skipped.length === 0) return [];
  const lines = [
    `${skipped.length} path(s) existed at the target but were never captured; a restore cannot bring them back:`,
    ...skipped.slice(0, MAX_NOT_CAPTURED_SHOWN).map((s) =>
      `  not captured  ${esc(s.path)}  (${esc(s.reason)})`
    ),
  ];
  if (skipped.length > MAX_NOT_CAPTURED_SHOWN) {
    lines.push(`  and ${skipped.length - MAX_NOT_CAPTURED_SHOWN} more (--json lists all)`);
  }
  return lines;
}
