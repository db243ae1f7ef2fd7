/**
 * `ctxsnap branch`, `ctxsnap fork`: branches of a session.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { forkBranch, switchBranch } from "../../snapshot/branch.ts";
import { listBranches, resolveSnapshotId, selection } from "../../snapshot/timeline.ts";
import { type Command, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";

/** The `branch` command. */
export const branch: Command = {
  name: "branch",
  summary: "list branches, or switch the branch new snapshots go to",
  usage: "branch [list]\nbranch switch NAME",
  examples: ["ctxsnap branch", "ctxsnap branch switch experiment"],
  options: { session: { type: "string", arg: "S", help: "session (default: current)" } },
  positionals: 2,
  run(ctx, parsed) {
    const [sub = "list", name] = parsed.positionals;
    const store = openStore(ctx);
    try {
      const sel = selection(store, str(parsed, "session"));
      if (sub === "switch") {
        if (name === undefined) throw new UsageError("branch switch needs NAME");
        const row = switchBranch(store, name, sel.session);
        ctx.out.result(
          { session: sel.session, branch: row.name, head: row.head },
          () =>
            `Switched to branch ${esc(row.name)} (head ${
              esc(short(row.head))
            }); new snapshots go here.\n` +
            `To make the workspace match it: ctxsnap restore ${esc(short(row.head))}`,
        );
        return Promise.resolve(0);
      }
      if (sub !== "list") {
        throw new UsageError(`Unknown branch subcommand ${JSON.stringify(sub)}`, {
          hint: "list or switch",
        });
      }
      const rows = listBranches(store, sel.session);
      ctx.out.result(
        {
          session: sel.session,
          current: sel.branch,
          branches: rows.map((r) => ({
            name: r.name,
            head: r.head,
            base: r.base,
            current: r.name === sel.branch,
          })),
        },
        () =>
          rows.length === 0
            ? `* ${esc(sel.branch)} (empty)`
            : rows.map((r) =>
              `${r.name === sel.branch ? "*" : " "} ${esc(r.name).padEnd(24)} ${
                esc(short(r.head))
              }${r.base ? `  forked from ${esc(short(r.base))}` : ""}`
            ).join("\n"),
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};

/** The `fork` command. */
export const fork: Command = {
  name: "fork",
  summary: "start a new branch at a snapshot",
  usage: "fork ID [--name NAME]",
  examples: ["ctxsnap fork 3f2a --name try-sqlite", "ctxsnap branch switch try-sqlite"],
  options: { name: { type: "string", arg: "NAME", help: "branch name (default fork-<id8>)" } },
  positionals: 1,
  run(ctx, parsed) {
    const prefix = parsed.positionals[0];
    if (prefix === undefined) throw new UsageError("fork needs a snapshot ID");
    const store = openStore(ctx);
    try {
      const id = resolveSnapshotId(store, prefix);
      const row = forkBranch(store, id, str(parsed, "name"));
      ctx.out.result(
        { session: row.session, branch: row.name, head: row.head },
        () =>
          `Created branch ${esc(row.name)} at ${esc(short(row.head))} in session ${
            esc(row.session)
          }.\nSwitch to it: ctxsnap branch switch ${esc(row.name)}`,
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
