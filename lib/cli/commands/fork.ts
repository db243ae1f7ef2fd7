/**
 * `ctxsnap fork REVISION`: starts a new branch at a snapshot.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { forkBranch } from "../../history/branch.ts";
import { type Command, openStore, short, str, target } from "../command.ts";
import { esc } from "../output.ts";

/** The `fork` command. */
export const fork: Command = {
  name: "fork",
  usage: "fork REVISION [--name NAME]",
  examples: ["ctxsnap fork 3f2a --name try-sqlite", "ctxsnap fork HEAD~2 --name retry"],
  options: { name: { type: "string", arg: "NAME", help: "branch name (default fork-<id8>)" } },
  args: [{ name: "REVISION", help: "the snapshot the new branch starts at" }],
  async run(ctx, parsed) {
    const given = parsed.positionals[0];
    if (given === undefined) throw new UsageError("fork needs a snapshot (an id, HEAD, …)");
    const store = openStore(ctx);
    try {
      const found = await target(ctx, store, given);
      if (found.kept !== null) {
        // A snapshot kept as itself is never the head or parent of a ctxsnap snapshot.
        throw new UsageError(`Snapshot ${short(found.id)} ${found.kept.notABranchHead}`, {
          hint: `restore it (\`ctxsnap restore ${
            short(found.id)
          }\` merges its session and records a ctxsnap snapshot), then fork HEAD`,
        });
      }
      const id = found.id;
      const row = forkBranch(store, id, str(parsed, "name"));
      ctx.out.result(
        { session: row.session, branch: row.name, head: row.head },
        () =>
          `Created branch ${esc(row.name)} at ${esc(short(row.head))} in session ${
            esc(row.session)
          }.\nSwitch to it: ctxsnap switch ${esc(row.name)}`,
      );
      return 0;
    } finally {
      store.close();
    }
  },
};
