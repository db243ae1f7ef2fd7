/**
 * `ctxsnap forget`: remove snapshots from the store (recorded in the log).
 * @module
 */
import { UsageError } from "../../errors.ts";
import { forgetSnapshots, planForget } from "../../snapshot/forget.ts";
import { resolveSnapshotId, selection } from "../../snapshot/timeline.ts";
import { type Command, flag, intOption, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";

/** The `forget` command. */
export const forget: Command = {
  name: "forget",
  summary: "remove snapshots (objects are freed by gc)",
  usage:
    "forget ID... [--dry-run]\nforget --branch B [--dry-run]\nforget --keep-last N [--dry-run]",
  examples: [
    "ctxsnap forget --keep-last 20 --dry-run",
    "ctxsnap forget --branch experiment && ctxsnap gc",
  ],
  options: {
    branch: { type: "string", arg: "B", help: "forget every snapshot of branch B and the branch" },
    "keep-last": {
      type: "string",
      arg: "N",
      help: "keep the newest N snapshots of the current branch",
    },
    "dry-run": { type: "boolean", help: "list what would be forgotten" },
    session: { type: "string", arg: "S", help: "session (default: current)" },
  },
  positionals: "any",
  run(ctx, parsed) {
    const branch = str(parsed, "branch");
    const keepLast = intOption(parsed, "keep-last", 0, 1_000_000_000);
    const modes =
      [parsed.positionals.length > 0, branch !== undefined, keepLast !== undefined].filter(Boolean)
        .length;
    if (modes !== 1) {
      throw new UsageError("forget takes IDs, or --branch B, or --keep-last N (exactly one)");
    }
    const store = openStore(ctx);
    try {
      const session = selection(store, str(parsed, "session")).session;
      const ids = parsed.positionals.length > 0
        ? parsed.positionals.map((p) => resolveSnapshotId(store, p))
        : planForget(store, {
          session,
          ...(branch !== undefined ? { branch } : {}),
          ...(keepLast !== undefined ? { keepLast } : {}),
        });
      if (flag(parsed, "dry-run")) {
        ctx.out.result(
          { dry_run: true, forget: ids, branch: branch ?? null },
          () =>
            ids.length === 0
              ? "Nothing to forget."
              : [...ids.map((id) => `would forget ${short(id)}`), `${ids.length} snapshot(s)`].join(
                "\n",
              ),
        );
        return Promise.resolve(0);
      }
      const result = forgetSnapshots(
        store,
        ids,
        branch !== undefined ? { deleteBranch: { session, branch } } : {},
      );
      ctx.out.result(
        result,
        () =>
          `Forgot ${result.forgotten.length} snapshot(s)${
            result.branches.length ? ` and branch ${esc(result.branches.join(", "))}` : ""
          } (${esc(result.operation)}). Run \`ctxsnap gc\` to free space.`,
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
