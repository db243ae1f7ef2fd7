/**
 * `ctxsnap session list`: the sessions of the store, the current one marked.
 * @module
 */
import { selection } from "../../../history/timeline.ts";
import { listSessionRows } from "../../../repository/session_rows.ts";
import { type Command, iso, openStore } from "../../command.ts";
import { esc } from "../../output.ts";

/** The `session list` command. */
export const sessionList: Command = {
  name: "session list",
  usage: "session list",
  examples: ["ctxsnap session list --json"],
  options: {},
  args: [],
  run(ctx) {
    const store = openStore(ctx);
    try {
      const current = selection(store).session;
      const rows = listSessionRows(store);
      ctx.out.result(
        {
          current,
          sessions: rows.map((r) => ({
            name: r.name,
            branch: r.current_branch,
            current: r.name === current,
            updated_at: iso(r.updated_at),
          })),
        },
        () =>
          rows.length === 0
            ? `* ${esc(current)} (no snapshots yet)`
            : rows.map((r) =>
              `${r.name === current ? "*" : " "} ${esc(r.name)}  (branch ${esc(r.current_branch)})`
            ).join("\n"),
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
