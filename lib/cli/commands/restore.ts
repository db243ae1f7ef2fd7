/**
 * `ctxsnap restore`: three-way restore of a snapshot's files and session;
 * the plan rendering that `switch`, `undo` and `redo` share.
 * @module
 */
import { UsageError } from "../../errors.ts";
import type { MovePlan } from "../../workspace/plan.ts";
import type { SkippedEntry } from "../../format/tree.ts";
// The restore machinery loads only when a restore runs (start-up stays light).
import type {
  GitPosition,
  RestoreOptions,
  RestoreResult,
  SessionPlan,
} from "../../workspace/move/restore.ts";
const restoreModule = () => import("../../workspace/move/restore.ts");
import { type ConflictReason, MoveConflictError } from "../../workspace/overwrite.ts";
import { isEmptyChange } from "../../history/session_state.ts";
import { esc, type Output } from "../output.ts";
import { restoreJson } from "../json.ts";
import {
  type Command,
  type CommandContext,
  flag,
  identity,
  openStore,
  type Parsed,
  short,
  str,
  target,
} from "../command.ts";

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

function sessionLine(session: SessionPlan): string {
  const c = session.change;
  if (isEmptyChange(c)) return `session: ${session.mode}, no change`;
  const parts: string[] = [];
  if (c.task) {
    parts.push(`task ${esc(JSON.stringify(c.task.from))} → ${esc(JSON.stringify(c.task.to))}`);
  }
  if (c.progress_pct) parts.push(`progress ${c.progress_pct.from}% → ${c.progress_pct.to}%`);
  for (const name of ["decisions", "findings", "knowledge", "files_touched"] as const) {
    const l = c[name];
    const label = name.replace("_", " ");
    if (l.added.length) parts.push(`+${l.added.length} ${label}`);
    if (l.removed.length) parts.push(`-${l.removed.length} ${label}`);
  }
  const e = c.extensions;
  if (e.added.length + e.changed.length + e.removed.length > 0) {
    parts.push(`extensions ${esc([...e.added, ...e.changed, ...e.removed].join(", "))}`);
  }
  return `session: ${session.mode}: ${parts.join("; ")}`;
}

const RESTORE_OPTIONS = {
  "dry-run": { type: "boolean" as const, help: "print the plan, change nothing" },
  workspace: {
    type: "boolean" as const,
    help: "restore workspace files (default: files and session)",
  },
  session: {
    type: "boolean" as const,
    values: ["merge", "replace"] as const,
    help: "restore the session; =merge (default) joins it into the live one, " +
      "=replace rewinds it exactly",
  },
  git: {
    type: "boolean" as const,
    help: "also check out the anchored commit (refuses a dirty tree)",
  },
  force: {
    type: "boolean" as const,
    help: "also overwrite conflicts and local changes, after snapshotting the current content",
  },
  branch: {
    type: "string" as const,
    arg: "B",
    help: "branch the restore is recorded on (default: current)",
  },
  before: {
    type: "string" as const,
    arg: "TIME",
    help: "the newest snapshot of REVISION's history at or before TIME",
  },
};

function position(p: GitPosition): string {
  const at = p.commit === null ? "no commit" : short(p.commit);
  return p.branch === null ? `${at} (detached)` : `${esc(p.branch)} at ${at}`;
}

/** The git line of a restore: where HEAD is against the target's anchor, and what --git does. */
function gitLines(result: RestoreResult): string[] {
  const git = result.git;
  if (git === null || result.gitCommit !== null) return [];
  if (git.anchor === null) return ["git: the snapshot recorded no git anchor; HEAD not moved"];
  if (!git.differs) return [];
  const lines = [
    `git: HEAD is on ${position(git.head)}; the snapshot was taken on ${position(git.anchor)}`,
  ];
  const moved = result.dryRun ? "HEAD would not move" : "HEAD was not moved";
  if (git.withGit === "checkout") {
    lines.push(
      `  ${moved}; with --git, restore checks out ${short(git.anchor.commit!)} (detached)`,
    );
  } else if (git.withGit === "refuse") {
    lines.push(
      `  ${moved}; --git would refuse: ${git.blocking} uncommitted change(s) or untracked ` +
        `file(s) ctxsnap captures (${esc(git.blockingPaths.slice(0, 5).join(", "))}${
          git.blocking > 5 ? ", …" : ""
        })`,
    );
  } else lines.push(`  ${moved}; the anchor has no commit to check out`);
  return lines;
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

function report(out: Output, result: RestoreResult): void {
  out.result(restoreJson(result), () => {
    const lines = result.plan ? planLines(result.plan) : ["workspace not restored"];
    if (result.session) lines.push(sessionLine(result.session));
    lines.push(...gitLines(result));
    lines.push(...notCapturedLines(result.notCaptured));
    if (result.dryRun) {
      lines.unshift(`plan to restore ${short(result.target)} (dry run, nothing changed):`);
      for (const refusal of result.wouldRefuse) {
        lines.push(`the restore would be refused: ${esc(refusal.message)}`);
        if (refusal.hint !== null) lines.push(`  hint: ${esc(refusal.hint)}`);
      }
      return lines.join("\n");
    }
    if (result.preRestore) {
      lines.unshift(`saved the current content as ${short(result.preRestore)} (pre-restore)`);
    }
    if (result.gitCommit) lines.push(`checked out ${short(result.gitCommit)} (detached)`);
    lines.push(`restored ${short(result.target)}; recorded as ${short(result.snapshot)}`);
    return lines.join("\n");
  });
}

async function runRestore(ctx: CommandContext, parsed: Parsed, target: string): Promise<number> {
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const session = parsed.values.session;
    const options: RestoreOptions = {
      workspace: flag(parsed, "workspace"),
      session: session !== undefined && session !== false,
      sessionMode: session === "replace" ? "replace" : "merge",
      git: flag(parsed, "git"),
      force: flag(parsed, "force"),
      dryRun: flag(parsed, "dry-run"),
      onProgress: (done, total) => ctx.out.progress("restoring", done, total),
      ...(str(parsed, "branch") !== undefined ? { branch: str(parsed, "branch")! } : {}),
    };
    let result: RestoreResult;
    try {
      result = await (await restoreModule()).restoreSnapshot(store, signer, target, options);
    } catch (error) {
      showConflicts(ctx.out, error);
    }
    report(ctx.out, result);
    // A dry run shows the whole plan; its exit status says whether the real run would refuse.
    return result.wouldRefuse.length > 0 ? 5 : 0;
  } finally {
    store.close();
  }
}

/** `restore` of a stored lean-ctx snapshot: its session slice, and with --git its anchor. */
async function runLeanCtxRestore(ctx: CommandContext, parsed: Parsed, id: string): Promise<number> {
  for (const option of ["workspace", "force"]) {
    if (flag(parsed, option)) {
      throw new UsageError(
        `--${option} does not apply to a lean-ctx snapshot (it has no workspace)`,
        {
          hint: "restore its session (the default) and, with --git, its git anchor",
        },
      );
    }
  }
  const { restoreLeanCtx } = await import("../../share/leanctx_restore.ts");
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const result = await restoreLeanCtx(store, signer, id, {
      git: flag(parsed, "git"),
      dryRun: flag(parsed, "dry-run"),
      ...(str(parsed, "branch") !== undefined ? { branch: str(parsed, "branch")! } : {}),
    });
    const m = result.merge;
    ctx.out.result({
      target: result.target,
      format: "lean-ctx",
      dry_run: result.dryRun,
      session_merged: result.sessionMerged,
      task: m.task,
      progress_pct: m.progressPct,
      decisions_added: m.decisionsAdded,
      files_added: m.filesAdded,
      git_commit: result.gitCommit,
      operation: result.operation,
      snapshot: result.snapshot,
    }, () => {
      const lines = [
        result.dryRun
          ? `plan to restore lean-ctx ${short(result.target)} (dry run, nothing changed):`
          : `restored lean-ctx ${short(result.target)}; recorded as ${short(result.snapshot)}`,
      ];
      if (!result.sessionMerged) lines.push("  no session slice to merge");
      else {
        if (m.task !== null) lines.push(`  task       ${esc(m.task)}`);
        if (m.progressPct !== null) lines.push(`  progress   ${m.progressPct}%`);
        lines.push(
          `  ${m.decisionsAdded.length} decision(s) and ${m.filesAdded.length} file(s) added to the live session`,
        );
      }
      if (result.gitCommit !== null) {
        lines.push(
          `  ${result.dryRun ? "would check out" : "checked out"} ${result.gitCommit} (detached)`,
        );
      }
      return lines.join("\n");
    });
    return 0;
  } finally {
    store.close();
  }
}

/** The `restore` command. */
export const restore: Command = {
  name: "restore",
  summary: "restore a snapshot's workspace and session, three-way, losing nothing",
  usage:
    "restore REVISION [--dry-run] [--workspace] [--session[=merge|replace]] [--git] [--force] [--before TIME]",
  examples: [
    "ctxsnap restore 3f2a --dry-run          # what would change",
    "ctxsnap restore HEAD~1                  # files and session, one snapshot back",
    "ctxsnap restore prompt:3:3f6c --dry-run # before prompt 3 of agent session 3f6c…",
    "ctxsnap restore 3f2a --session          # only merge the session state",
    "ctxsnap restore 3f2a --workspace --session=replace   # files, and rewind the session exactly",
    "ctxsnap restore main --before 2026-11-30T10:00      # main as it was at 10:00 UTC",
    "ctxsnap restore 3f2a --force            # snapshot current work, then overwrite conflicts",
    "ctxsnap restore 3707b221 --git          # a lean-ctx snapshot: merge its session, check out its commit",
  ],
  options: RESTORE_OPTIONS,
  positionals: 1,
  async run(ctx, parsed) {
    const given = parsed.positionals[0];
    if (given === undefined && str(parsed, "before") === undefined) {
      throw new UsageError("restore needs a snapshot (an id, HEAD~N, a branch, …)", {
        hint: "ctxsnap list",
      });
    }
    const probe = openStore(ctx, { readOnly: true });
    let found;
    try {
      found = await target(ctx, probe, given ?? "HEAD", { before: str(parsed, "before") });
    } finally {
      probe.close();
    }
    if (found.format === "lean-ctx") return await runLeanCtxRestore(ctx, parsed, found.id);
    return runRestore(ctx, parsed, found.id);
  },
};
