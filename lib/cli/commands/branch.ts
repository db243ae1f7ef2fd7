/**
 * `ctxsnap branch`, `ctxsnap fork`: branches of a session.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { forkBranch } from "../../history/branch.ts";
import { summarizeBranch } from "../../history/summary.ts";
import { branchJson } from "../json.ts";
import { listBranches, selection } from "../../history/timeline.ts";
import { type Command, openStore, revision, short, str } from "../command.ts";
import { runSwitch, SWITCH_OPTIONS } from "./switch.ts";
import { esc } from "../output.ts";

/** The `branch` command. */
export const branch: Command = {
  name: "branch",
  summary: "list branches, or switch to one (moving the workspace)",
  usage: "branch [list] [--session S]\nbranch switch NAME [--dry-run] [--force] [--pointer-only]",
  examples: ["ctxsnap branch", "ctxsnap branch switch experiment   # same as ctxsnap switch"],
  options: SWITCH_OPTIONS,
  positionals: 2,
  run(ctx, parsed) {
    const [sub = "list", name] = parsed.positionals;
    if (sub === "switch") return runSwitch(ctx, parsed, name);
    if (sub !== "list") {
      throw new UsageError(`Unknown branch subcommand ${JSON.stringify(sub)}`, {
        hint: "list or switch",
      });
    }
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

/** The `fork` command. */
export const fork: Command = {
  name: "fork",
  summary: "start a new branch at a snapshot",
  usage: "fork REVISION [--name NAME]",
  examples: ["ctxsnap fork 3f2a --name try-sqlite", "ctxsnap fork HEAD~2 --name retry"],
  options: { name: { type: "string", arg: "NAME", help: "branch name (default fork-<id8>)" } },
  positionals: 1,
  run(ctx, parsed) {
    const given = parsed.positionals[0];
    if (given === undefined) throw new UsageError("fork needs a snapshot (an id, HEAD, …)");
    const store = openStore(ctx);
    try {
      const id = revision(ctx, store, given);
      const row = forkBranch(store, id, str(parsed, "name"));
      ctx.out.result(
        { session: row.session, branch: row.name, head: row.head },
        () =>
          `Created branch ${esc(row.name)} at ${esc(short(row.head))} in session ${
            esc(row.session)
          }.\nSwitch to it: ctxsnap switch ${esc(row.name)}`,
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
