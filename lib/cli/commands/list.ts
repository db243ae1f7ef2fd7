/**
 * `ctxsnap list`: the timeline, newest first.
 * @module
 */
import { parseTime } from "../../snapshot/names.ts";
import { listSnapshots } from "../../snapshot/summary.ts";
import { type Command, flag, intOption, openStore, short, str } from "../command.ts";

/** The `list` command. */
export const list: Command = {
  name: "list",
  summary: "list snapshots, newest first",
  usage: "list [--session S] [--branch B] [--all] [--limit N] [--before TIME]",
  examples: [
    "ctxsnap list                  # the current branch's timeline",
    "ctxsnap list --all --json     # every snapshot in the store",
    "ctxsnap list --before 2026-11-30T10:00   # what existed at 10:00 UTC",
  ],
  options: {
    session: { type: "string", arg: "S", help: "session (default: current)" },
    branch: { type: "string", arg: "B", help: "branch (default: the session's current)" },
    all: { type: "boolean", help: "every snapshot of every session and branch" },
    limit: { type: "string", arg: "N", help: "show at most N snapshots" },
    before: {
      type: "string",
      arg: "TIME",
      help: "only snapshots created at or before TIME (ISO 8601; UTC without a zone)",
    },
  },
  positionals: 0,
  run(ctx, parsed) {
    const limit = intOption(parsed, "limit", 1, 1_000_000);
    const beforeText = str(parsed, "before");
    const before = beforeText === undefined ? undefined : parseTime(beforeText);
    const store = openStore(ctx, { readOnly: true });
    try {
      const session = str(parsed, "session");
      const branch = str(parsed, "branch");
      const items = listSnapshots(store, {
        all: flag(parsed, "all"),
        ...(session !== undefined ? { session } : {}),
        ...(branch !== undefined ? { branch } : {}),
        ...(limit !== undefined ? { limit } : {}),
        ...(before !== undefined ? { before } : {}),
      });
      ctx.out.result({ snapshots: items }, () => {
        if (items.length === 0) return "No snapshots yet. Run `ctxsnap create -m REASON`.";
        return items.map((item) =>
          [
            short(item.id),
            item.created_at.replace("T", " ").slice(0, 19),
            `${item.session}/${item.branch}`,
            item.workspace === null ? "no workspace" : `${item.workspace.files} files`,
            item.readable ? (item.reason || "-") : "(unreadable envelope: run `ctxsnap verify`)",
          ].join("  ")
        ).join("\n");
      });
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
