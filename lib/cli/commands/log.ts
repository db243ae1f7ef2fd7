/**
 * `ctxsnap log`: the operations log, and what `undo` and `redo` would revert.
 * @module
 */
import { listOperations } from "../../repository/operations.ts";
import { undoStack } from "../../repository/undo_log.ts";
import type { Store } from "../../repository/store.ts";
import { type Command, flag, intOption, iso, openStore, short } from "../command.ts";
import { selection } from "../../history/timeline.ts";
import { operationJson } from "../json.ts";
import { esc } from "../output.ts";

/** The ids undo and redo would revert next (null for a store not yet migrated, opened read-only). */
function nextReverts(store: Store): { undo: string | null; redo: string | null } {
  try {
    const stack = undoStack(store);
    return { undo: stack.done.at(-1)?.id ?? null, redo: stack.redo.at(-1)?.id ?? null };
  } catch {
    return { undo: null, redo: null };
  }
}

/** The `log` command. */
export const log: Command = {
  name: "log",
  summary: "show the operations log: creates, restores, switches, undos, edits, forks, imports, gc",
  usage: "log [--all] [--limit N]",
  examples: ["ctxsnap log", "ctxsnap log --all --json"],
  options: {
    all: {
      type: "boolean",
      help: "every session (default: current session and store-wide operations)",
    },
    limit: { type: "string", arg: "N", help: "at most N entries" },
  },
  positionals: 0,
  run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return store.read(() => {
        const limit = intOption(parsed, "limit", 1, 1_000_000);
        const ops = listOperations(store, {
          ...(flag(parsed, "all") ? {} : { session: selection(store).session }),
          ...(limit === undefined ? {} : { limit }),
        });
        const next = nextReverts(store);
        ctx.out.result(
          { operations: ops.map(operationJson), next_undo: next.undo, next_redo: next.redo },
          () =>
            ops.length === 0 ? "No operations yet." : ops.map((op) =>
              [
                iso(op.createdAt)!.replace("T", " ").slice(0, 19),
                esc(op.id),
                esc(op.kind).padEnd(8),
                esc(op.status).padEnd(8),
                op.session ? `${esc(op.session)}/${esc(op.branch ?? "-")}` : "store",
                op.target ? `→ ${esc(short(op.target))}` : "",
                op.id === next.undo ? "(undo reverts this)" : "",
                op.id === next.redo ? "(redo re-applies this)" : "",
                op.error ? `error: ${esc(op.error)}` : "",
              ].filter((s) => s !== "").join("  ")
            ).join("\n"),
        );
        return Promise.resolve(0);
      });
    } finally {
      store.close();
    }
  },
};
