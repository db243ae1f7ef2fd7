/**
 * `ctxsnap branch list`: the branches of a session, the current one marked.
 * @module
 */
import { branchJson } from "../../json.ts";
import { summarizeBranch } from "../../../history/summary.ts";
import { listBranches, selection } from "../../../history/timeline.ts";
import { type Command, openStore, short, str } from "../../command.ts";
import { esc } from "../../output.ts";
import { SELECTION_FLAGS } from "../../flags.ts";

/** The `branch list` command. */
export const branchList: Command = {
  name: "branch list",
  usage: "branch [list] [--session S]",
  examples: ["ctxsnap branch", "ctxsnap branch list --session experiment --json"],
  options: { session: SELECTION_FLAGS.session },
  args: [],
  run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return store.read(() => {
        const sel = selection(store, str(parsed, "session"));
        const rows = listBranches(store, sel.session);
        ctx.out.result(
          {
            session: sel.session,
            current: sel.branch,
            branches: rows.map((r) => branchJson(summarizeBranch(r, sel.branch))),
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
      });
    } finally {
      store.close();
    }
  },
};
