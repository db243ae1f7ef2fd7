/**
 * `ctxsnap list`: the timeline, newest first.
 * @module
 */
import type { Envelope } from "../../snapshot/envelope.ts";
import {
  branchChain,
  getSnapshotRow,
  listSnapshots,
  readEnvelopeUnverified,
  selection,
  type SnapshotRow,
} from "../../snapshot/timeline.ts";
import { type Command, flag, intOption, openStore, short, str } from "../command.ts";

/** The `list` command. */
export const list: Command = {
  name: "list",
  summary: "list snapshots, newest first",
  usage: "list [--session S] [--branch B] [--all] [--limit N]",
  examples: [
    "ctxsnap list                  # the current branch's timeline",
    "ctxsnap list --all --json     # every snapshot in the store",
  ],
  options: {
    session: { type: "string", arg: "S", help: "session (default: current)" },
    branch: { type: "string", arg: "B", help: "branch (default: the session's current)" },
    all: { type: "boolean", help: "every snapshot of every session and branch" },
    limit: { type: "string", arg: "N", help: "show at most N snapshots" },
  },
  positionals: 0,
  run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      const limit = intOption(parsed, "limit", 1, 1_000_000);
      let rows: SnapshotRow[];
      if (flag(parsed, "all")) {
        rows = listSnapshots(store, limit === undefined ? {} : { limit });
      } else {
        const sel = selection(store, str(parsed, "session"), str(parsed, "branch"));
        const chain = branchChain(store, sel.session, sel.branch);
        rows = (limit === undefined ? chain : chain.slice(0, limit))
          .map((id) => getSnapshotRow(store, id)!)
          .filter((row) => row !== null);
      }
      const items = rows.map((row) => {
        let envelope: Envelope | null = null;
        try {
          envelope = readEnvelopeUnverified(store, row.id); // only its reason is shown
        } catch {
          envelope = null;
        }
        const b = envelope?.body;
        return {
          id: row.id,
          created_at: row.created_at,
          session: row.session,
          branch: row.branch,
          parent: row.parent,
          reason: b?.reason ?? null,
          files: b?.workspace?.files ?? null,
          bytes: b?.workspace?.bytes ?? null,
          git_commit: b?.git?.commit ?? null,
          key_id: row.key_id,
          imported: row.imported === 1,
          readable: envelope !== null,
        };
      });
      ctx.out.result({ snapshots: items }, () => {
        if (items.length === 0) return "No snapshots yet. Run `ctxsnap create -m REASON`.";
        return items.map((item) =>
          [
            short(item.id),
            item.created_at.replace("T", " ").slice(0, 19),
            `${item.session}/${item.branch}`,
            item.files === null ? "no workspace" : `${item.files} files`,
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
