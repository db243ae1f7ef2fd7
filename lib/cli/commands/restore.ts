/**
 * `ctxsnap restore`, `ctxsnap undo`: three-way restore of a snapshot.
 * @module
 */
import { UsageError } from "../../errors.ts";
import type { RestorePlan } from "../../restore/plan.ts";
// The restore machinery loads only when a restore runs (start-up stays light).
import type { RestoreOptions, RestoreResult } from "../../restore/restore.ts";
const restoreModule = () => import("../../restore/restore.ts");
import { esc, type Output } from "../output.ts";
import {
  type Command,
  type CommandContext,
  flag,
  identity,
  openStore,
  type Parsed,
  short,
  str,
} from "../command.ts";

function planText(plan: RestorePlan): string[] {
  const lines: string[] = [];
  for (const w of plan.writes) {
    lines.push(`${w.action === "create" ? "create " : "replace"}  ${esc(w.path)}`);
  }
  for (const d of plan.deletes) lines.push(`delete   ${esc(d)}`);
  for (const c of plan.conflicts) {
    lines.push(`CONFLICT ${esc(c.path)}  (${esc(c.reason.replaceAll("_", " "))})`);
  }
  lines.push(
    `${plan.writes.length} to write, ${plan.deletes.length} to delete, ${plan.conflicts.length} conflicts, ` +
      `${plan.unchanged.length} unchanged, ${plan.preserved.length} untracked kept`,
  );
  return lines;
}

function planJson(plan: RestorePlan | null): unknown {
  if (plan === null) return null;
  return {
    writes: plan.writes.map((w) => ({ path: w.path, action: w.action, type: w.entry.type })),
    deletes: plan.deletes,
    conflicts: plan.conflicts,
    unchanged: plan.unchanged,
    preserved: plan.preserved,
  };
}

const RESTORE_OPTIONS = {
  "dry-run": { type: "boolean" as const, help: "print the plan, change nothing" },
  workspace: {
    type: "boolean" as const,
    help: "restore workspace files (default: files and session)",
  },
  session: { type: "boolean" as const, help: "merge the snapshot's session into the live session" },
  git: {
    type: "boolean" as const,
    help: "also check out the anchored commit (refuses a dirty tree)",
  },
  force: {
    type: "boolean" as const,
    help: "apply despite conflicts, after snapshotting the current content",
  },
  branch: {
    type: "string" as const,
    arg: "B",
    help: "branch whose head is the baseline (default: current)",
  },
};

async function runRestore(
  ctx: CommandContext,
  parsed: Parsed,
  resolve: (store: ReturnType<typeof openStore>) => string | Promise<string>,
): Promise<number> {
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const target = await resolve(store);
    const options: RestoreOptions = {
      workspace: flag(parsed, "workspace"),
      session: flag(parsed, "session"),
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
      if (error instanceof (await restoreModule()).RestoreConflictError && !ctx.out.json) {
        for (const line of planText(error.plan).filter((l) => l.startsWith("CONFLICT"))) {
          ctx.out.note(line);
        }
      }
      throw error;
    }
    report(ctx.out, result);
    return 0;
  } finally {
    store.close();
  }
}

function report(out: Output, result: RestoreResult): void {
  out.result({ ...result, plan: planJson(result.plan) }, () => {
    const lines = result.plan ? planText(result.plan) : ["workspace not restored"];
    if (result.dryRun) {
      lines.unshift(`plan to restore ${short(result.target)} (dry run, nothing changed):`);
      return lines.join("\n");
    }
    if (result.preRestore) {
      lines.unshift(`saved the current content as ${short(result.preRestore)} (pre-restore)`);
    }
    if (result.gitCommit) lines.push(`checked out ${short(result.gitCommit)} (detached)`);
    if (result.sessionMerged) lines.push("merged the snapshot's session into the live session");
    lines.push(`restored ${short(result.target)}; recorded as ${short(result.snapshot)}`);
    return lines.join("\n");
  });
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
  usage: "restore ID [--dry-run] [--workspace] [--session] [--git] [--force]",
  examples: [
    "ctxsnap restore 3f2a --dry-run          # what would change",
    "ctxsnap restore 3f2a                    # files and session",
    "ctxsnap restore 3f2a --session          # only merge the session state",
    "ctxsnap restore 3f2a --force            # snapshot current work, then overwrite conflicts",
    "ctxsnap restore 3707b221 --git          # a lean-ctx snapshot: merge its session, check out its commit",
  ],
  options: RESTORE_OPTIONS,
  positionals: 1,
  async run(ctx, parsed) {
    const prefix = parsed.positionals[0];
    if (prefix === undefined) {
      throw new UsageError("restore needs a snapshot ID", { hint: "ctxsnap list" });
    }
    const { resolveAnyId } = await import("../../share/leanctx_store.ts");
    const probe = openStore(ctx, { readOnly: true });
    let target;
    try {
      target = resolveAnyId(probe, prefix);
    } finally {
      probe.close();
    }
    if (target.format === "lean-ctx") return await runLeanCtxRestore(ctx, parsed, target.id);
    return runRestore(ctx, parsed, () => target.id);
  },
};

/** The `undo` command. */
export const undo: Command = {
  name: "undo",
  summary: "return to the state before the last restore on this branch",
  usage: "undo [--dry-run] [--force]",
  examples: ["ctxsnap undo --dry-run", "ctxsnap undo"],
  options: RESTORE_OPTIONS,
  positionals: 0,
  run(ctx, parsed) {
    return restoreModule().then(({ undoTarget }) =>
      runRestore(ctx, parsed, (store) => undoTarget(store, undefined, str(parsed, "branch")))
    );
  },
};
