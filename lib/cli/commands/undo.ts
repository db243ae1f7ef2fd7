/**
 * `ctxsnap undo`, `ctxsnap redo`: revert the last operation, or re-apply it.
 * @module
 */
import type { RevertResult } from "../../workspace/move/undo.ts";
import type { Output } from "../output.ts";
import {
  type Command,
  type CommandContext,
  flag,
  identity,
  openStore,
  type Parsed,
} from "../command.ts";
import { planLines, showConflicts } from "../_plan.ts";
import { MOVE_FLAGS } from "../flags.ts";
import { revertJson } from "../json.ts";
import { esc } from "../output.ts";

const OPTIONS = {
  "dry-run": { ...MOVE_FLAGS["dry-run"], help: "print what would change, change nothing" },
  force: {
    ...MOVE_FLAGS.force,
    help: "overwrite files changed since, after saving them in a snapshot",
  },
};

function report(out: Output, result: RevertResult): void {
  out.result(revertJson(result), () => {
    const what = `${result.reverts.kind} ${result.reverts.id} (${
      result.reverts.finishedAt.replace("T", " ").slice(0, 19)
    })`;
    const lines = result.plan ? planLines(result.plan) : [];
    if (result.dryRun) {
      lines.unshift(`${result.direction} would revert ${what} (dry run, nothing changed):`);
      return lines.join("\n");
    }
    if (result.saved) {
      lines.unshift(`saved the files it overwrites as ${result.saved.slice(0, 12)}`);
    }
    lines.push(
      `${result.direction === "undo" ? "Undid" : "Redid"} ${what}; recorded as ${result.operation}`,
    );
    const git = result.git;
    const where = (ref: string) =>
      /^[0-9a-f]{40,64}$/.test(ref)
        ? `commit ${ref.slice(0, 12)} (detached)`
        : `branch ${esc(ref)}`;
    if (git !== null && git.moved) {
      lines.push(`git: switched HEAD back to ${where(git.to)}`);
    } else if (git !== null && git.reason === "head_moved") {
      lines.push(
        `git: HEAD was moved since the restore; left where it is (before, it was on ${
          where(git.to)
        })`,
      );
    } else if (git !== null) {
      lines.push(
        `git: HEAD stays on ${where(git.from)}: ${
          git.reason === "gone" ? `${where(git.to)} no longer exists` : "git refused to switch"
        }${git.detail ? ` (${esc(git.detail.split("\n")[0]!)})` : ""}`,
        `git: it was on ${where(git.to)}; commit or stash your changes, then: ${esc(git.hint!)}`,
      );
    }
    return lines.join("\n");
  });
}

async function run(
  ctx: CommandContext,
  parsed: Parsed,
  direction: "undo" | "redo",
): Promise<number> {
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const module = await import("../../workspace/move/undo.ts");
    const options = {
      dryRun: flag(parsed, "dry-run"),
      force: flag(parsed, "force"),
      onProgress: (done: number, total: number) => ctx.out.progress(direction, done, total),
    };
    let result: RevertResult;
    try {
      result = direction === "undo"
        ? await module.undo(store, signer, options)
        : await module.redo(store, signer, options);
    } catch (error) {
      showConflicts(ctx.out, error);
    }
    report(ctx.out, result);
    return 0;
  } finally {
    store.close();
  }
}

/** The `undo` command. */
export const undo: Command = {
  name: "undo",
  usage: "undo [--dry-run] [--force]",
  examples: [
    "ctxsnap undo --dry-run     # what the last operation was, and what undoing it changes",
    "ctxsnap undo               # revert it; run again to revert the one before",
    "ctxsnap redo               # re-apply what undo reverted",
  ],
  options: OPTIONS,
  args: [],
  run: (ctx, parsed) => run(ctx, parsed, "undo"),
};

/** The `redo` command. */
export const redo: Command = {
  name: "redo",
  usage: "redo [--dry-run] [--force]",
  examples: ["ctxsnap redo --dry-run", "ctxsnap redo"],
  options: OPTIONS,
  args: [],
  run: (ctx, parsed) => run(ctx, parsed, "redo"),
};
