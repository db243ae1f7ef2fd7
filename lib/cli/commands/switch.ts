/**
 * `ctxsnap switch` (and `ctxsnap branch switch`): move to another branch,
 * moving the workspace files with it.
 * @module
 */
import { UsageError } from "../../errors.ts";
import type { SwitchResult } from "../../workspace/move/switch.ts";
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
} from "../command.ts";
import { esc } from "../output.ts";
import { planLines, showConflicts } from "../_plan.ts";
import { MOVE_FLAGS, SELECTION_FLAGS } from "../flags.ts";
import { switchJson } from "../json.ts";

/** Options of `switch` and `branch switch`. */
export const SWITCH_OPTIONS: Record<string, OptionSpec> = {
  ...MOVE_FLAGS,
  force: {
    ...MOVE_FLAGS.force,
    help: "apply despite conflicts, after snapshotting the current content on the branch left",
  },
  "pointer-only": {
    type: "boolean",
    help: "only change where new snapshots go; leave the files",
  },
  session: SELECTION_FLAGS.session,
};

/** Runs a switch to `name` and reports it. */
export async function runSwitch(
  ctx: CommandContext,
  parsed: Parsed,
  name: string | undefined,
): Promise<number> {
  if (name === undefined) throw new UsageError("switch needs a branch NAME");
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const { switchTo } = await import("../../workspace/move/switch.ts");
    let result: SwitchResult;
    try {
      result = await switchTo(store, signer, name, {
        dryRun: flag(parsed, "dry-run"),
        force: flag(parsed, "force"),
        pointerOnly: flag(parsed, "pointer-only"),
        onProgress: (done, total) => ctx.out.progress("switching", done, total),
        ...(str(parsed, "session") !== undefined ? { sessionName: str(parsed, "session")! } : {}),
      });
    } catch (error) {
      showConflicts(ctx.out, error);
    }
    ctx.out.result(switchJson(result), () => {
      const lines = result.plan ? planLines(result.plan) : [];
      if (result.dryRun) {
        lines.unshift(
          `plan to switch to ${esc(result.branch)} (head ${
            short(result.head)
          }; dry run, nothing changed):`,
        );
        if (!result.workspace) lines.push("the files would stay as they are");
        return lines.join("\n");
      }
      if (result.preSwitch) {
        lines.unshift(`saved the current content as ${short(result.preSwitch)} (pre-switch)`);
      }
      lines.push(
        result.workspace
          ? `Switched to branch ${esc(result.branch)} (head ${
            short(result.head)
          }); the workspace follows it.`
          : `Switched to branch ${esc(result.branch)} (head ${
            short(result.head)
          }); the files stay as they are, new snapshots go here.`,
      );
      return lines.join("\n");
    });
    return 0;
  } finally {
    store.close();
  }
}

/** The `switch` command. */
export const switchCommand: Command = {
  name: "switch",
  usage: "switch NAME [--dry-run] [--force] [--pointer-only] [--session S]",
  examples: [
    "ctxsnap switch try-zod --dry-run   # what moves",
    "ctxsnap switch try-zod             # files follow; local edits it does not touch are kept",
    "ctxsnap switch main --pointer-only # only where new snapshots go",
  ],
  options: SWITCH_OPTIONS,
  args: [{ name: "NAME", help: "the branch to switch to" }],
  run: (ctx, parsed) => runSwitch(ctx, parsed, parsed.positionals[0]),
};
