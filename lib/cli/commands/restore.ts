/**
 * `ctxsnap restore`: three-way restore of a snapshot's files and session.
 * @module
 */
import { UsageError } from "../../errors.ts";
import type { Store } from "../../repository/store.ts";
// The restore machinery loads only when a restore runs (start-up stays light).
import type {
  GitPosition,
  RestoreOptions,
  RestoreResult,
  SessionPlan,
} from "../../workspace/move/restore.ts";
const restoreModule = () => import("../../workspace/move/restore.ts");
import { isEmptyChange } from "../../history/session_state.ts";
import { notCapturedLines, planLines, showConflicts } from "../_plan.ts";
import { MOVE_FLAGS, SELECTION_FLAGS } from "../flags.ts";
import { esc, type Output } from "../output.ts";
import { restoreJson } from "../json.ts";
import {
  type Command,
  type CommandContext,
  flag,
  identity,
  openStore,
  type OptionSpec,
  type Parsed,
  short,
  str,
  type Target,
  target,
} from "../command.ts";

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

const RESTORE_OPTIONS: Record<string, OptionSpec> = {
  ...MOVE_FLAGS,
  files: {
    type: "boolean",
    help: "restore the workspace files (default: files and session state)",
  },
  "session-state": {
    type: "boolean",
    values: ["merge", "replace"],
    help: "restore the session state; =merge (default) joins it into the live one, " +
      "=replace rewinds it exactly",
  },
  git: {
    type: "boolean",
    help: "also check out the anchored commit (refuses a dirty tree)",
  },
  branch: {
    ...SELECTION_FLAGS.branch,
    help: "branch the restore is recorded on (default: current)",
  },
  before: SELECTION_FLAGS.before,
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

async function runRestore(
  ctx: CommandContext,
  parsed: Parsed,
  target: string,
  store: Store,
): Promise<number> {
  const signer = await identity();
  {
    const session = parsed.values["session-state"];
    const options: RestoreOptions = {
      workspace: flag(parsed, "files"),
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
  }
}

/**
 * `restore` of a stored snapshot of a format kept as itself (lean-ctx): it
 * records no workspace, so its format merges its session slice and, with
 * --git, checks out its anchor.
 */
async function runKeptRestore(
  ctx: CommandContext,
  parsed: Parsed,
  found: Target,
  store: Store,
): Promise<number> {
  const kept = found.kept!;
  for (const option of ["files", "force"]) {
    if (flag(parsed, option)) {
      throw new UsageError(
        `--${option} does not apply to a ${kept.name} snapshot (it has no workspace)`,
        {
          hint: "restore its session (the default) and, with --git, its git anchor",
        },
      );
    }
  }
  const signer = await identity();
  {
    const done = await kept.restoreSession(store, signer, found.id, {
      git: flag(parsed, "git"),
      dryRun: flag(parsed, "dry-run"),
      ...(str(parsed, "branch") !== undefined ? { branch: str(parsed, "branch")! } : {}),
    });
    ctx.out.result(done.document, done.text);
    return 0;
  }
}

/** The `restore` command. */
export const restore: Command = {
  name: "restore",
  usage:
    "restore REVISION [--dry-run] [--files] [--session-state[=merge|replace]] [--git] [--force] [--branch B] [--before TIME]",
  examples: [
    "ctxsnap restore 3f2a --dry-run          # what would change",
    "ctxsnap restore HEAD~1                  # files and session, one snapshot back",
    "ctxsnap restore prompt:3:3f6c --dry-run # before prompt 3 of agent session 3f6c…",
    "ctxsnap restore 3f2a --session-state    # only merge the session state",
    "ctxsnap restore 3f2a --files --session-state=replace   # files, and rewind the session exactly",
    "ctxsnap restore main --before 2026-11-30T10:00      # main as it was at 10:00 UTC",
    "ctxsnap restore 3f2a --force            # snapshot current work, then overwrite conflicts",
    "ctxsnap restore 3707b221 --git          # a lean-ctx snapshot: merge its session, check out its commit",
  ],
  options: RESTORE_OPTIONS,
  renamed: { workspace: "--files", session: "--session-state[=merge|replace]" },
  args: [{
    name: "REVISION",
    help: "the snapshot to restore (with --before, default HEAD)",
    optional: true,
  }],
  async run(ctx, parsed) {
    const given = parsed.positionals[0];
    if (given === undefined && str(parsed, "before") === undefined) {
      throw new UsageError("restore needs a snapshot (an id, HEAD~N, a branch, …)", {
        hint: "ctxsnap list",
      });
    }
    // One open serves the lookup and the restore.
    const store = openStore(ctx);
    try {
      const found = await target(ctx, store, given ?? "HEAD", { before: str(parsed, "before") });
      if (found.kept !== null) return await runKeptRestore(ctx, parsed, found, store);
      return await runRestore(ctx, parsed, found.id, store);
    } finally {
      store.close();
    }
  },
};
